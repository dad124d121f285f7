#!/usr/bin/env bash
# larmor-cli convert: a small IMPATIENT directory (3D, 2 coils, coil maps,
# field map, times; voxels stored z fastest, then x, then y) written as BART
# cfl files holds the directory's numbers in Larmor's conventions (k as is,
# data / N, maps in x-fastest order, field map / 2 pi, times as is); Larmor
# reads the files back (recon of the cfl gives the directory's image, a
# second convert of the cfl gives the same files); bad inputs fail with one
# stderr line.
#   test_convert.sh LARMOR_CLI
set -u
CLI=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
fails=0
check() {
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
one_line_error() {
    local want=$1; shift
    "$@" >"$T/out" 2>"$T/err" && return 1
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err" || { cat "$T/err" >&2; return 1; }
}

python3 - "$T" <<'PY'
import math, random, struct, sys, os
T = sys.argv[1]
random.seed(7)
n = (8, 6, 4); N = n[0] * n[1] * n[2]; M = 3 * 40; P = 2
d = f'{T}/imp'; os.makedirs(d)
def write(name, vals, coils=1):  # binary header form (version 0.2)
    with open(f'{d}/{name}.dat', 'wb') as f:
        f.write(struct.pack('<f4i', 0.2, len(vals) // coils, coils, 1, len(vals)))
        f.write(struct.pack('<%df' % len(vals), *vals))
# voxels in the order z fastest, then x, then y (IMPATIENT's MATLAB writer)
order = [(x, y, z) for y in range(n[1]) for x in range(n[0]) for z in range(n[2])]
write('ix', [(x - n[0] // 2) / n[0] for x, y, z in order])
write('iy', [(y - n[1] // 2) / n[1] for x, y, z in order])
write('iz', [(z - n[2] // 2) / n[2] for x, y, z in order])
k = [[random.uniform(-n[a] / 2, n[a] / 2) for _ in range(M)] for a in range(3)]
for a, name in enumerate(('kx', 'ky', 'kz')):
    write(name, k[a])
kd = [[random.gauss(0, 1) for _ in range(M * P)] for _ in range(2)]
write('kdata_r', kd[0], P); write('kdata_i', kd[1], P)
s = [[random.gauss(0, 1) for _ in range(N * P)] for _ in range(2)]
write('sensi_r', s[0], P); write('sensi_i', s[1], P)
fm = [random.uniform(-300, 300) for _ in range(N)]
write('fm', fm)
t = [(j % 40) * 1e-5 for j in range(M)]
write('t', t)
# what convert must give, in Larmor's order (x fastest)
lin = lambda x, y, z: (z * n[1] + y) * n[0] + x
want = {'traj': [(k[0][j], k[1][j], k[2][j]) for j in range(M)],
        'kspace': [complex(kd[0][i], kd[1][i]) / N for i in range(M * P)],
        'sens': [0j] * (N * P), 'fieldmap': [0.0] * N, 'times': t}
for c in range(P):
    for v, (x, y, z) in enumerate(order):
        want['sens'][c * N + lin(x, y, z)] = complex(s[0][c * N + v], s[1][c * N + v])
for v, (x, y, z) in enumerate(order):
    want['fieldmap'][lin(x, y, z)] = fm[v] / (2 * math.pi)
import json
json.dump({k2: [[z.real, z.imag] if isinstance(z, complex) else z for z in v] for k2, v in want.items()},
          open(f'{T}/want.json', 'w'))
PY

"$CLI" convert --traj "$T/imp" --out "$T/c" --times-out >"$T/conv.log" 2>&1
check "convert an IMPATIENT directory" grep -q "matrix: 8x6x4" "$T/conv.log"
check "help" bash -c "'$CLI' convert --help | grep -q 'usage: larmor-cli convert'"
check "files hold the directory's numbers in Larmor's conventions (float tolerance)" python3 - "$T" <<'PY'
import json, struct, sys
T = sys.argv[1]
def read_cfl(base):
    lines = open(base + '.hdr').read().split('\n')
    d = [int(x) for x in lines[lines.index('# Dimensions') + 1].split()]
    n = 1
    for x in d: n *= x
    v = struct.unpack('<%df' % (2 * n), open(base + '.cfl', 'rb').read())
    return d, [complex(v[2 * i], v[2 * i + 1]) for i in range(n)]
want = json.load(open(f'{T}/want.json'))
d, tr = read_cfl(f'{T}/c/traj')
assert d[:3] == [3, 40, 3], d
for j, kk in enumerate(want['traj']):
    for a in range(3):
        assert abs(tr[3 * j + a].real - kk[a]) <= 1e-6 * max(1, abs(kk[a])) and tr[3 * j + a].imag == 0, (j, a)
d, ks = read_cfl(f'{T}/c/kspace')
assert d[:4] == [1, 40, 3, 2], d
for i, (re, im) in enumerate(want['kspace']):
    assert abs(ks[i] - complex(re, im)) <= 1e-6 * abs(complex(re, im)) + 1e-9, i
d, s = read_cfl(f'{T}/c/sens')
assert d[:4] == [8, 6, 4, 2], d
for i, (re, im) in enumerate(want['sens']):
    assert abs(s[i] - complex(re, im)) <= 1e-6 * abs(complex(re, im)) + 1e-9, i
d, f = read_cfl(f'{T}/c/fieldmap')
assert d[:3] == [8, 6, 4], d
for i, v in enumerate(want['fieldmap']):
    assert abs(f[i].real - v) <= 1e-5 * abs(v) + 1e-6 and f[i].imag == 0, i
d, t = read_cfl(f'{T}/c/times')
assert d[:3] == [1, 40, 3], d
for i, v in enumerate(want['times']):
    assert abs(t[i].real - v) <= 1e-6 * abs(v) + 1e-12, i
PY

# Larmor's cfl reader on the files: the same reconstruction as the directory
# (field map and times passed back), and a second convert gives the same files.
R=(--method cg --iters 5 --lambda 0.01 --complex --segments 0)
"$CLI" recon --traj "$T/imp" "${R[@]}" --out "$T/dir.cfl" >/dev/null 2>&1
"$CLI" recon --traj "$T/c/traj" --kspace "$T/c/kspace" --sens "$T/c/sens" --fieldmap "$T/c/fieldmap.cfl" \
    --times "$T/c/times.cfl" --matrix 8x6x4 --dirac "${R[@]}" --out "$T/cfl.cfl" >/dev/null 2>&1
check "recon of the converted files = recon of the directory (error < 1e-4 %)" bash -c "
    '$CLI' metrics --truth '$T/dir.cfl' --image '$T/cfl.cfl' --json | python3 -c 'import json,sys; e=json.load(sys.stdin)[\"percent_error\"]; sys.exit(not (e is not None and e < 1e-4))'"
"$CLI" convert --traj "$T/c/traj" --kspace "$T/c/kspace" --sens "$T/c/sens" --out "$T/c2" >/dev/null 2>&1
check "convert of the cfl files gives the same traj, kspace, sens" \
    bash -c "cmp -s '$T/c/traj.cfl' '$T/c2/traj.cfl' && cmp -s '$T/c/kspace.cfl' '$T/c2/kspace.cfl' && cmp -s '$T/c/sens.cfl' '$T/c2/sens.cfl'"

# Bad inputs: one line, non-zero exit.
check "no --out" one_line_error "--out are required" "$CLI" convert --traj "$T/imp"
check "missing input" one_line_error "nothere" "$CLI" convert --traj "$T/nothere.cfl" --kspace "$T/c/kspace" --out "$T/x"
check "unknown option" one_line_error "unknown option" "$CLI" convert --bogus --traj "$T/imp" --out "$T/x"
check "--times-out without times" one_line_error "no sample times" "$CLI" convert --traj "$T/c/traj" --kspace "$T/c/kspace" --out "$T/x" --times-out
check "--sens with other coils" one_line_error "coil maps but" "$CLI" convert --traj "$T/imp" --sens "$T/c/fieldmap" --out "$T/x"
rm -f "$T/imp/kdata_i.dat"
check "IMPATIENT directory without kdata_i.dat" one_line_error "kdata_i.dat: cannot open" "$CLI" convert --traj "$T/imp" --out "$T/x"
check "nothing written on a failure" [ ! -e "$T/x/traj.cfl" ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
