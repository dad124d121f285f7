#!/usr/bin/env bash
# The Q cache on one folder shared by many processes (a cluster's shared
# storage): 16 larmor-cli recon at once on one trajectory all compute Q and
# store the same key together, then 16 at once read it. Every run succeeds,
# every image is byte-identical, the entry left is whole (a later run takes
# it: q_cached true, the same image; a torn or mixed entry fails its
# checksums and would be recomputed) and no temporary file is left behind.
#   test_qcache_concurrent.sh LARMOR_CLI
set -u
CLI=$(realpath "$1")
T=$(mktemp -d)
export XDG_CACHE_HOME=$T/cache OMP_NUM_THREADS=1
trap 'rm -rf "$T"' EXIT
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
N=16
"$CLI" phantom --matrix 16 --traj radial3d --out "$T/p" >/dev/null || { echo "FAIL: phantom"; exit 1; }
recon() { # output name
    "$CLI" recon --traj "$T/p" --matrix 16 --variant cpu-simd --method cg --iters 5 --lambda 0.01 --quiet --json \
        --out "$T/$1.cfl" >"$T/$1.json" 2>"$T/$1.err"
}
wave() { # prefix: N runs at once; 0 when all succeed
    local pids=() bad=0
    for i in $(seq $N); do recon "$1$i" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
    [ "$bad" = 0 ]
}
all_same() { # prefix
    for i in $(seq 2 $N); do cmp -s "$T/${1}1.cfl" "$T/$1$i.cfl" || return 1; done
}
check "$N writers at once all succeed" wave w
check "their images are identical" all_same w
check "one entry, no temporary file left" test "$(ls "$T/cache/larmor" | wc -l)" = 1
check "$N readers at once all succeed" wave r
check "the readers took the entry" test "$(grep -l '"q_cached": true' "$T"/r*.json | wc -l)" = $N
check "the readers' images are the writers'" cmp -s "$T/w1.cfl" "$T/r1.cfl"
check "and identical" all_same r
recon last
check "a later run takes the entry whole" grep -q '"q_cached": true' "$T/last.json"
check "with the same image" cmp -s "$T/w1.cfl" "$T/last.cfl"
echo "$fails failed"
[ "$fails" = 0 ]
