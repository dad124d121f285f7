#!/usr/bin/env bash
# Discovery (lm_acq_discover) through larmor-cli: for data sets written by
# `phantom` (B64c8: traj, kspace, sens, truth, ref; S128c8f: also times and
# fieldmap), the directory and each of its files find the same data set;
# recon --traj DIR uses the companions (maps from file, the field map with
# the sample times) and says so on one stderr line, which --quiet drops.
#   test_acq.sh LARMOR_CLI
set -u
CLI=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
# The files convert finds from PATH (its stderr line, after "found").
found() { "$CLI" convert --traj "$1" --out "$T/x" 2>&1 >/dev/null | sed -n 's/^convert: .*: found //p'; }

"$CLI" phantom --problem B64c8 --out "$T/b" >/dev/null 2>&1
"$CLI" phantom --problem S128c8f --out "$T/s" >/dev/null 2>&1
check "B64c8 from its directory" [ "$(found "$T/b")" = "traj.cfl, kspace.cfl, sens.cfl, truth.nii.gz, ref.nii.gz" ]
check "S128c8f from its directory" [ "$(found "$T/s")" = "traj.cfl, kspace.cfl, sens.cfl, fieldmap.nii.gz, times.cfl, truth.nii.gz" ]
for d in b s; do
    want=$(found "$T/$d")
    for f in "$T/$d"/*.cfl "$T/$d"/*.hdr "$T/$d"/*.nii.gz; do
        check "$d: $(basename "$f") finds the same data set" [ "$(found "$f")" = "$want" ]
    done
done
"$CLI" convert --traj "$T/s/times.cfl" --times-out --out "$T/y" >/dev/null 2>&1
check "convert from times.cfl writes the sample times it found" [ -s "$T/y/times.cfl" ]

# recon --traj DIR: maps from file and the field map with the discovered times.
"$CLI" recon --traj "$T/s" --matrix 128x128 --iters 2 --out "$T/o.nii.gz" --json >"$T/o.json" 2>"$T/o.err"
check "recon --traj S128c8f-dir: maps from file" grep -q '"sens_source": "from file"' "$T/o.json"
check "recon --traj S128c8f-dir: the field map beside the data" grep -q '"fieldmap": "[^"]*fieldmap.nii.gz"' "$T/o.json"
"$CLI" recon --traj "$T/s/truth.nii.gz" --matrix 128x128 --iters 2 --out "$T/o.nii.gz" 2>"$T/o.err" >/dev/null
check "recon names what it found on one stderr line" grep -q "^recon: .*truth.nii.gz: found traj.cfl, kspace.cfl, sens.cfl, fieldmap.nii.gz, times.cfl" "$T/o.err"
"$CLI" recon --traj "$T/s" --quiet --matrix 128x128 --iters 2 --out "$T/o.nii.gz" 2>"$T/o.err" >/dev/null
check "--quiet: no discovery line" bash -c "! grep -q found '$T/o.err'"
# A flag overrides what discovery finds: times of another length.
printf '# Dimensions\n1 5 1\n' >"$T/t.hdr"
head -c 40 /dev/zero >"$T/t.cfl"
"$CLI" recon --traj "$T/s" --times "$T/t.cfl" --matrix 128x128 --iters 2 --out "$T/o.nii.gz" >/dev/null 2>"$T/o.err"
check "--times overrides the discovered times (one line naming it)" bash -c "[ \$(wc -l <'$T/o.err') -eq 1 ] && grep -q 't.cfl' '$T/o.err'"
check "a directory without data: one line" bash -c "mkdir -p '$T/empty' && ! '$CLI' recon --traj '$T/empty' --out '$T/o.nii.gz' 2>'$T/e' && [ \$(wc -l <'$T/e') -eq 1 ] && grep -q 'no data set there' '$T/e'"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
