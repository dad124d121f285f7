#!/usr/bin/env python3
"""Compares IMPATIENT MRI's Toeplitz output (out.file: N float32 real parts,
then N imaginary parts, voxels in the order of the data directory's ix/iy/iz)
with a Larmor image (.cfl, x fastest): the relative difference
||L - c I|| / ||L|| after the best complex scale c (least squares), and |c|.
Pure Python (no numpy), so it runs anywhere.
  impatient-compare.py DATA_DIR OUT_FILE LARMOR.cfl [--write IMPATIENT.cfl]
--write stores IMPATIENT's image in Larmor's order (a cfl/hdr pair)."""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from impatient_dat import read_dat  # noqa: E402


def read_cfl(base):
    base = base[:-4] if base.endswith('.cfl') else base
    lines = open(base + '.hdr').read().split('\n')
    d = [int(x) for x in lines[lines.index('# Dimensions') + 1].split()]
    n = 1
    for x in d:
        n *= x
    v = struct.unpack('<%df' % (2 * n), open(base + '.cfl', 'rb').read(8 * n))
    return d, [complex(v[2 * i], v[2 * i + 1]) for i in range(n)]


def main():
    a = sys.argv[1:]
    if len(a) < 3:
        sys.exit(__doc__)
    d, oname, lname = a[0], a[1], a[2]
    ix, _ = read_dat(d + '/ix.dat')
    iy, _ = read_dat(d + '/iy.dat')
    iz, _ = read_dat(d + '/iz.dat')
    N = len(ix)
    ld, lar = read_cfl(lname)
    n = (ld + [1, 1, 1])[:3]
    if n[0] * n[1] * n[2] != N:
        sys.exit('%s: %s voxels but %s/ix.dat has %d' % (lname, n, d, N))
    raw = open(oname, 'rb').read()
    if len(raw) != 8 * N:
        sys.exit('%s: %d bytes, expected %d (2 x %d float32)' % (oname, len(raw), 8 * N, N))
    v = struct.unpack('<%df' % (2 * N), raw)
    imp = [0j] * N
    for i in range(N):
        idx = [round(p * m + m // 2) if m > 1 else 0 for p, m in zip((ix[i], iy[i], iz[i]), n)]
        imp[(idx[2] * n[1] + idx[1]) * n[0] + idx[0]] = complex(v[i], v[N + i])
    num = sum(i.conjugate() * l for i, l in zip(imp, lar))
    den = sum(abs(i) ** 2 for i in imp)
    c = num / den if den else 0
    nl = math.sqrt(sum(abs(l) ** 2 for l in lar))
    diff = math.sqrt(sum(abs(l - c * i) ** 2 for i, l in zip(imp, lar)))
    raw_diff = math.sqrt(sum(abs(l - i) ** 2 for i, l in zip(imp, lar)))
    print('relative difference after best complex scale: %.3f %% (scale |c| = %.4g, arg %.3g rad); '
          'without scaling: %.3f %%' % (100 * diff / nl, abs(c), math.atan2(c.imag, c.real), 100 * raw_diff / nl))
    if len(a) > 4 and a[3] == '--write':
        base = a[4][:-4] if a[4].endswith('.cfl') else a[4]
        open(base + '.hdr', 'w').write('# Dimensions\n%d %d %d 1 1\n' % tuple(n))
        with open(base + '.cfl', 'wb') as f:
            for z in imp:
                f.write(struct.pack('<ff', z.real, z.imag))


main()
