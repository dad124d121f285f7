#!/usr/bin/env bash
# Dynamic reconstruction through larmor-cli (docs/dynamic.md): the D128c8
# phantom (frames in dimension 10, a 4D truth), recon with temporal TV to a
# 4D NIfTI (pixdim[4] the frame duration) and to cfl (frames in dimension
# 10), binning a static acquisition by count (--spokes-per-frame,
# --frames), and bad input: one stderr line naming the file, nothing
# written (time dimensions that disagree, a frame with no samples, maps of
# another matrix).
#   test_dynamic.sh LARMOR_CLI
set -u
CLI=$1
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
json() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
# dim[0..4] and pixdim[4] of a NIfTI-1 header
nifti_dims() { $PY -c "
import gzip, struct, sys
h = gzip.open(sys.argv[1]).read(348)
d = struct.unpack('<8h', h[40:56]); p = struct.unpack('<8f', h[76:108])
print(d[0], d[1], d[2], d[3], d[4], round(p[4], 6))" "$1"; }

"$CLI" phantom --problem D128c8 --out "$T/d" 2>"$T/p.err"
check "phantom D128c8 writes its data" [ -s "$T/d/kspace.cfl" -a -s "$T/d/sens.cfl" -a -s "$T/d/truth.nii.gz" ]
check "traj.hdr: 3 x 128 x 21, 24 frames in dimension 10" grep -q "^3 128 21 1 1 1 1 1 1 1 24 " "$T/d/traj.hdr"
check "kspace.hdr: 1 x 128 x 21 x 8 coils, 24 frames in dimension 10" grep -q "^1 128 21 8 1 1 1 1 1 1 24 " "$T/d/kspace.hdr"
check "truth.nii.gz: 4D 128 x 128 x 1 x 24, 84 ms frames" [ "$(nifti_dims "$T/d/truth.nii.gz")" = "4 128 128 1 24 0.084" ]

D="--traj $T/d/traj.cfl --kspace $T/d/kspace.cfl --sens $T/d/sens.cfl --matrix 128x128"
"$CLI" recon $D --reg ttv --lambda 0.02 --iters 6 --frame-ms 84 --truth "$T/d/truth.nii.gz" --out "$T/o.nii.gz" --json \
    >"$T/o.json" 2>"$T/o.err"
check "recon ttv: 24 frames" [ "$(json "$T/o.json" frames)" = 24 ]
check "recon ttv --frame-ms 84: the output is 4D with the frame duration" [ "$(nifti_dims "$T/o.nii.gz")" = "4 128 128 1 24 0.084" ]
check "recon ttv: error below 30 % after 6 iterations" \
    $PY -c "import json,sys; e=json.load(open(sys.argv[1]))['percent_error']; print(e); sys.exit(not e < 30)" "$T/o.json"
"$CLI" recon $D --reg ttv+tv --lambda 0.02 --lambda-space 0.005 --iters 2 --out "$T/o.cfl" >/dev/null 2>&1
check "recon ttv+tv to cfl: frames in dimension 10" grep -q "^128 128 1 1 1 1 1 1 1 1 24 " "$T/o.hdr"
"$CLI" recon $D --reg llr --lambda 0.02 --iters 2 --out "$T/l.cfl" >/dev/null 2>&1
check "recon llr runs" [ -s "$T/l.cfl" ]

# binning a static acquisition: 100 spokes of 32 samples, 2 coils
"$CLI" phantom --matrix 32 --phantom shepp-logan-2d --traj radial2d --samples 3200 --readout 32 --coils 2 \
    --out "$T/s" >/dev/null 2>&1
S="--traj $T/s/traj.cfl --kspace $T/s/kspace.cfl --sens $T/s/sens.cfl --matrix 32x32"
"$CLI" recon $S --spokes-per-frame 30 --reg ttv --lambda 0.01 --iters 2 --out "$T/b.cfl" --json >"$T/b.json" 2>/dev/null
check "--spokes-per-frame 30 of 100 spokes: 3 frames" [ "$(json "$T/b.json" frames)" = 3 ]
"$CLI" recon $S --frames 4 --reg ttv --lambda 0.01 --iters 2 --out "$T/b.cfl" --json >"$T/b.json" 2>/dev/null
check "--frames 4: 4 frames" [ "$(json "$T/b.json" frames)" = 4 ]
"$CLI" recon $S --frames 4 --reg ttv --lambda auto --iters 4 --out "$T/a.cfl" --json >"$T/a.json" 2>/dev/null
check "--lambda auto: cross-validation trials, a held-out error and the final solve" $PY -c "
import json, sys
j = json.load(open(sys.argv[1]))
print(j['lambda'], j['solves'], j['heldout_error'])
sys.exit(not (j['lambda_auto'] and j['solves'] >= 4 and 0 < j['heldout_error'] < 1 and 1e-5 <= j['lambda'] <= 100))" "$T/a.json"

# bad input: exit 1, one line naming the file, nothing written
refused() { # description, file the message names, then recon's arguments
    local what=$1 name=$2; shift 2
    rm -f "$T/bad.nii.gz"
    "$CLI" recon "$@" --reg ttv --lambda 0.01 --iters 1 --out "$T/bad.nii.gz" >/dev/null 2>"$T/bad.err"
    local rc=$?
    check "$what: refused" [ $rc -ne 0 ]
    check "$what: one line naming $name" [ "$(wc -l <"$T/bad.err")" -eq 1 ]
    check "$what: names $name" grep -q "$name" "$T/bad.err"
    check "$what: nothing written" [ ! -e "$T/bad.nii.gz" ]
    sed 's/^/    /' "$T/bad.err"
}
cp "$T/d/kspace.cfl" "$T/k12.cfl"
echo -e "# Dimensions\n1 128 42 8 1 1 1 1 1 1 12" >"$T/k12.hdr"
refused "time dimensions disagree" k12 --traj "$T/d/traj.cfl" --kspace "$T/k12.cfl" --sens "$T/d/sens.cfl" --matrix 128x128
cp "$T/d/kspace.hdr" "$T/k0.hdr"
$PY -c "
import numpy as np, sys
k = np.fromfile(sys.argv[1], np.complex64).reshape(24, 8, 21 * 128)
k[5] = 0
k.tofile(sys.argv[2])" "$T/d/kspace.cfl" "$T/k0.cfl"
refused "a frame with no samples" "frame 5 has no samples" --traj "$T/d/traj.cfl" --kspace "$T/k0.cfl" \
    --sens "$T/d/sens.cfl" --matrix 128x128
$PY -c "
import numpy as np, sys
np.ones(64 * 64 * 8, np.complex64).tofile(sys.argv[1] + '.cfl')
open(sys.argv[1] + '.hdr', 'w').write('# Dimensions\n64 64 1 8\n')" "$T/s64"
refused "maps of another matrix" s64 --traj "$T/d/traj.cfl" --kspace "$T/d/kspace.cfl" --sens "$T/s64.cfl" --matrix 128x128

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
