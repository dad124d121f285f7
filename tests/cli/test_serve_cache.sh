#!/usr/bin/env bash
# larmor-cli serve keeps reconstructions' encodings (Q, plans, trajectory)
# between commands: a second served recon of the same trajectory reuses
# the first's (its JSON says encoding_cached) and gives the identical
# image; another trajectory misses; a cap smaller than one entry keeps at
# most one (the least recently used goes first); --cache-mb 0 keeps none.
#   test_serve_cache.sh LARMOR_CLI
set -u
CLI=$(realpath "$1")
T=$(mktemp -d)
export XDG_CACHE_HOME=$T/cache
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
start_server() { # socket, log, extra options
    local s=$1 log=$2; shift 2
    "$CLI" serve --socket "$s" --idle-exit 120 "$@" 2>"$log" &
    PIDS+=($!)
    for _ in $(seq 300); do grep -q listening "$log" 2>/dev/null && [ -S "$s" ] && return 0; sleep 0.1; done
    return 1
}
cached() { # JSON file: prints true/false
    /usr/bin/python3 -c "import json,sys; print(str(json.load(open(sys.argv[1]))['encoding_cached']).lower())" "$1"
}

cd "$T" || exit 1
"$CLI" phantom --problem B32 --out p >/dev/null 2>&1
# another trajectory on the same matrix: every coordinate scaled by 0.9
mkdir -p q && cp p/kspace.* q/ && cp p/traj.hdr q/
/usr/bin/python3 -c "import numpy as np; np.fromfile('p/traj.cfl', np.complex64).__mul__(np.float32(0.9)).astype(np.complex64).tofile('q/traj.cfl')"
R=(recon --kspace p/kspace --matrix 32 --method cg --iters 8 --variant cpu-nufft --no-cache --json)

check "a server with the default cache starts" start_server "$T/s" "$T/s.log"
LARMOR_SERVER=$T/s "$CLI" "${R[@]}" --traj p/traj --out a1.nii >a1.json 2>/dev/null
LARMOR_SERVER=$T/s "$CLI" "${R[@]}" --traj p/traj --out a2.nii >a2.json 2>/dev/null
LARMOR_SERVER=$T/s "$CLI" "${R[@]}" --traj q/traj --out b1.nii >b1.json 2>/dev/null
check "the first recon of a trajectory makes its encoding" [ "$(cached a1.json)" = false ]
check "the second recon of the same trajectory reuses it" [ "$(cached a2.json)" = true ]
check "the two images are identical" cmp -s a1.nii a2.nii
check "another trajectory misses" [ "$(cached b1.json)" = false ]
check "the server's log counts 2 entries, 1 hit, 2 misses" \
    bash -c "grep 'recon (' '$T/s.log' | tail -1 | grep -q '2 entries.*1 hits, 2 misses, 0 evicted'"
"$CLI" "${R[@]}" --traj q/traj --out b0.nii >/dev/null 2>&1
check "the other trajectory's served image is the command's own" cmp -s b0.nii b1.nii

# a cap smaller than one entry: the most recent stays, the one before goes
check "a server with a tiny cap starts" start_server "$T/t" "$T/t.log" --cache-mb 0.001
LARMOR_SERVER=$T/t "$CLI" "${R[@]}" --traj p/traj --out t1.nii >t1.json 2>/dev/null
LARMOR_SERVER=$T/t "$CLI" "${R[@]}" --traj p/traj --out t2.nii >t2.json 2>/dev/null
LARMOR_SERVER=$T/t "$CLI" "${R[@]}" --traj q/traj --out t3.nii >t3.json 2>/dev/null
LARMOR_SERVER=$T/t "$CLI" "${R[@]}" --traj p/traj --out t4.nii >t4.json 2>/dev/null
check "tiny cap: the last entry is kept (the second recon hits)" [ "$(cached t2.json)" = true ]
check "tiny cap: another trajectory misses" [ "$(cached t3.json)" = false ]
check "tiny cap: the first trajectory was evicted (misses again)" [ "$(cached t4.json)" = false ]
check "tiny cap: never more than one entry, evictions logged" \
    bash -c "! grep 'recon (' '$T/t.log' | grep -qv '1 entries' && grep 'recon (' '$T/t.log' | tail -1 | grep -q '2 evicted'"
check "tiny cap: the images are the default server's" bash -c "cmp -s t1.nii a1.nii && cmp -s t4.nii a1.nii && cmp -s t3.nii b1.nii"

# --cache-mb 0: nothing kept
check "a server without a cache starts" start_server "$T/z" "$T/z.log" --cache-mb 0
LARMOR_SERVER=$T/z "$CLI" "${R[@]}" --traj p/traj --out z1.nii >z1.json 2>/dev/null
LARMOR_SERVER=$T/z "$CLI" "${R[@]}" --traj p/traj --out z2.nii >z2.json 2>/dev/null
check "--cache-mb 0: the second recon makes its own encoding" [ "$(cached z2.json)" = false ]
check "a bad --cache-mb is refused in one line" \
    bash -c "! '$CLI' serve --socket '$T/bad' --cache-mb -3 2>'$T/bad.err' && [ \$(wc -l <'$T/bad.err') -eq 1 ]"
exit $fails
