#!/usr/bin/env bash
# larmor-cli with off-resonance inputs and IMPATIENT data directories:
# --times, --fieldmap, --segments, --fov per axis, non-cubic matrices, an
# IMPATIENT directory converted from a phantom reconstructs as its .cfl
# does, and bad inputs exit non-zero with one stderr line naming the file
# and write nothing.
#   test_fieldmap.sh LARMOR_CLI
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
# expected-substring, command...: fails with one stderr line holding it, and no $T/o.nii.gz
one_line_error() {
    local want=$1; shift
    rm -f "$T/o.nii.gz"
    "$@" >"$T/out" 2>"$T/err" && return 1
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err" && [ ! -e "$T/o.nii.gz" ] ||
        { cat "$T/err" >&2; return 1; }
}

"$CLI" phantom --matrix 32 --phantom shepp-logan-2d --traj spiral2d --out "$T/p" >/dev/null 2>&1
check "2D spiral phantom" [ -s "$T/p/traj.cfl" ]

# Times and field maps written with python (cfl: complex64 little-endian).
python3 - "$T" <<'PY'
import struct, sys, math
T = sys.argv[1]
def dims(name):
    lines = open(f'{T}/p/{name}.hdr').read().split('\n')
    return [int(x) for x in lines[lines.index('# Dimensions') + 1].split()]
def write_cfl(base, d, vals):
    open(base + '.hdr', 'w').write('# Dimensions\n' + ' '.join(map(str, d)) + '\n')
    with open(base + '.cfl', 'wb') as f:
        for v in vals: f.write(struct.pack('<ff', v, 0.0))
d = dims('traj'); ro, sp = d[1], d[2] if len(d) > 2 else 1
t = [(i % ro) * 4e-6 for i in range(ro * sp)]
write_cfl(f'{T}/times', [1, ro, sp], t)
write_cfl(f'{T}/short', [1, ro - 1, sp], t[:(ro - 1) * sp])
bad = list(t); bad[3] = float('nan'); write_cfl(f'{T}/tnan', [1, ro, sp], bad)
bad = list(t); bad[5] = bad[4] - 1e-6; write_cfl(f'{T}/tdown', [1, ro, sp], bad)
write_cfl(f'{T}/fm', [32, 32, 1], [10.0 * (i % 32) - 150 for i in range(1024)])
write_cfl(f'{T}/fm16', [16, 16, 1], [0.0] * 256)
fm = [0.0] * 1024; fm[100] = float('inf'); write_cfl(f'{T}/fminf', [32, 32, 1], fm)
PY

R=(recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32x32x1 --iters 5)
check "info --times: readouts and range" bash -c "'$CLI' info --times '$T/times.cfl' | grep -q 'sample times'"
check "info --fieldmap: range in Hz" bash -c "'$CLI' info --fieldmap '$T/fm.cfl' | grep -q '\[-150, 160\] Hz'"
check "--times of another length" one_line_error "short.cfl: holds" "$CLI" "${R[@]}" --times "$T/short.cfl" --out "$T/o.nii.gz"
check "--times with a NaN" one_line_error "tnan.cfl: element 3" "$CLI" "${R[@]}" --times "$T/tnan.cfl" --out "$T/o.nii.gz"
check "--times decreasing in a readout" one_line_error "tdown.cfl: sample times decrease" "$CLI" "${R[@]}" --times "$T/tdown.cfl" --out "$T/o.nii.gz"
check "--fieldmap without times" one_line_error "fm.cfl: a field map needs the sample times" "$CLI" "${R[@]}" --fieldmap "$T/fm.cfl" --out "$T/o.nii.gz"
check "--fieldmap of another matrix (.cfl)" one_line_error "fm16.cfl: field map is 16x16x1 but the matrix is 32x32x1" "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fm16.cfl" --out "$T/o.nii.gz"
check "--fieldmap with Inf" one_line_error "fminf.cfl: element 100" "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fminf.cfl" --out "$T/o.nii.gz"
check "--fieldmap missing" one_line_error "nothere.nii.gz: cannot open" "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/nothere.nii.gz" --out "$T/o.nii.gz"
check "--segments not a number" one_line_error "--segments" "$CLI" "${R[@]}" --segments lots --out "$T/o.nii.gz"
check "--segments negative" one_line_error "--segments" "$CLI" "${R[@]}" --segments -2 --out "$T/o.nii.gz"
check "--fov with two sizes" one_line_error "--fov: '240x200'" "$CLI" "${R[@]}" --fov 240x200 --out "$T/o.nii.gz"
check "--fov zero" one_line_error "--fov" "$CLI" "${R[@]}" --fov 0 --out "$T/o.nii.gz"

# A field map with times goes through to the reconstruction: it either runs
# (the JSON names the map) or is refused in one line until the operators exist.
rm -f "$T/o.nii.gz"
if "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fm.cfl" --segments 4 --out "$T/o.nii.gz" --json >"$T/fm.json" 2>"$T/err"; then
    check "--fieldmap passed through (JSON)" python3 -c "
import json; j=json.load(open('$T/fm.json')); assert j['fieldmap'].endswith('fm.cfl'), j"
else
    check "--fieldmap refused in one line" [ "$(wc -l <"$T/err")" -eq 1 ]
fi

# Non-cubic field of view: NIfTI voxel sizes per axis.
"$CLI" "${R[@]}" --method grid-linear --fov 240x200x5 --out "$T/nc.nii.gz" >/dev/null 2>&1
check "--fov XxYxZ gives per-axis voxel sizes" bash -c "'$CLI' info '$T/nc.nii.gz' | grep -q 'voxel size: 7.5 x 6.25 x 5 mm'"

# The phantom as an IMPATIENT directory (binary headers: positions y fastest;
# k-space times N, IMPATIENT's F has no 1/N) reconstructs as the .cfl does
# with the Dirac basis.
python3 - "$T" <<'PY'
import struct, sys, os
T = sys.argv[1]
def read_cfl(base):
    lines = open(base + '.hdr').read().split('\n')
    d = [int(x) for x in lines[lines.index('# Dimensions') + 1].split()]
    n = 1
    for x in d: n *= x
    raw = open(base + '.cfl', 'rb').read()
    v = struct.unpack('<%df' % (2 * n), raw)
    return d, v[0::2], v[1::2]
def w(dirn, name, vals):
    with open(f'{dirn}/{name}.dat', 'wb') as f:
        f.write(struct.pack('<f4i', 0.2, len(vals), 1, 1, len(vals)))
        f.write(struct.pack('<%df' % len(vals), *vals))
_, tr, _ = read_cfl(f'{T}/p/traj'); _, kr, ki = read_cfl(f'{T}/p/kspace')
m = len(kr); N = 32 * 32
D = f'{T}/imp'; os.mkdir(D)
w(D, 'kx', tr[0::3]); w(D, 'ky', tr[1::3]); w(D, 'kz', tr[2::3])
w(D, 'kdata_r', [x * N for x in kr]); w(D, 'kdata_i', [x * N for x in ki])
w(D, 'ix', [(x - 16) / 32 for x in range(32) for y in range(32)])
w(D, 'iy', [(y - 16) / 32 for x in range(32) for y in range(32)])
w(D, 'iz', [0.0] * N)
w(D, 't', [(i % 64) * 4e-6 for i in range(m)])
PY
check "info on an IMPATIENT directory" bash -c "'$CLI' info '$T/imp' | grep -q 'matrix: 32x32x1'"
"$CLI" recon --traj "$T/imp" --method grid-linear --out "$T/imp.nii.gz" --json >"$T/imp.json" 2>/dev/null
"$CLI" "${R[@]}" --method grid-linear --dirac --out "$T/cfl.nii.gz" >/dev/null 2>&1
"$CLI" metrics --truth "$T/cfl.nii.gz" --image "$T/imp.nii.gz" --json >"$T/m.json" 2>/dev/null
check "IMPATIENT directory reconstructs as its .cfl (error < 0.01 %)" python3 -c "
import json; e=json.load(open('$T/m.json'))['percent_error']; print('  percent error', e); assert e < 0.01, e"
check "IMPATIENT directory with --kspace" one_line_error "drop --kspace" "$CLI" recon --traj "$T/imp" --kspace "$T/p/kspace" --out "$T/o.nii.gz"
rm "$T/imp/kdata_i.dat"
check "IMPATIENT directory without kdata_i.dat" one_line_error "imp/kdata_i.dat: cannot open" "$CLI" recon --traj "$T/imp" --out "$T/o.nii.gz"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
