#!/usr/bin/env python3
"""Where IMPATIENT's GPU image and Larmor's differ (issue 11), by parts.

Computes, in double precision with numpy, the exact operators of the data
directory's model (IMPATIENT's: forward exp(-i 2 pi k.x), x = ix/iy/iz):
b = E^H d (coil maps conjugated) and the Toeplitz kernel Q(m) = sum_j
exp(i 2 pi k_j.m/N) on the 2N grid, and runs its own CG (x0 = 0, no
regularisation, the loop of IMPATIENT's toeplitz/recon.cu) with any mix of
exact and IMPATIENT-written Q and b. Then compares, each as the relative
difference after the best complex scale:
  * the geometry: exact b against IMPATIENT's -toeplitzDirect FhD.file (its
    own exact sum) and Larmor's 1-iteration images (proportional to E^H d),
    with a search over half-voxel shifts and flips;
  * IMPATIENT's gridded b (FhD.file) and Q (Q_stone.file, -writeQ) against
    the exact ones, and an emulation of its gridding (its kernel, beta, grid
    rounding, deapodisation, and its non-periodic grid edge) with one
    approximation removed at a time;
  * the CG iterates with exact/IMPATIENT Q and b against IMPATIENT's and
    Larmor's images at the same iteration counts.
Arrays are in IMPATIENT's file order [y][x][z] (z fastest); Larmor's .cfl
(x fastest) is transposed into it.
  impatient-diagnose.py DATA_DIR RUNS_DIR [--write-q QDIR]
--write-q writes the exact Q as QDIR/Q_stone.file (2 time segments, the
second zero) for IMPATIENT's -toeplitzDirect -ntime_segs 1 -reuseQ QDIR:
its own CG with exact operators. The exact b and Q are cached in
RUNS_DIR/exact_b_q.npz.
RUNS_DIR holds (any may be missing; its part is then skipped):
  direct_fhd.file direct_it1.file        -toeplitzDirect -cg_num 1
  g{TAG}_fhd.file g{TAG}_Q.file g{TAG}_it{N}.file   -toeplitzGridding, TAG def
        (default -gridOS_Q 1.125 -gridOS_FH 1.5) or os2 (2 and 2)
  larmor_{VARIANT}_it{N}.cfl/.hdr        larmor-cli recon --iters N --complex
  reuse_it{N}.file       -toeplitzDirect -reuseQ QDIR (the exact Q written here)
"""
import itertools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import impatient_dat  # noqa: E402

try:
    import scipy.fft as sfft

    def fftn(a, axes):
        return sfft.fftn(a, axes=axes, workers=-1)

    def ifftn(a, axes):
        return sfft.ifftn(a, axes=axes, workers=-1)
except ImportError:  # numpy's pocketfft: slower, same numbers
    def fftn(a, axes):
        return np.fft.fftn(a, axes=axes)

    def ifftn(a, axes):
        return np.fft.ifftn(a, axes=axes)

ITERS = (1, 5, 10, 20, 30)


def read_dat(path):
    """Floats (float64) and the header of an IMPATIENT .dat file."""
    vals, hdr = impatient_dat.read_dat(path)
    return np.frombuffer(vals, dtype=np.float32).astype(np.float64), hdr


def rel(a, ref):
    """||ref - c a|| / ||ref|| for the best complex c, and c."""
    a, ref = a.ravel(), ref.ravel()
    c = np.vdot(a, ref) / np.vdot(a, a)
    return float(np.linalg.norm(ref - c * a) / np.linalg.norm(ref)), c


def fmt(a, ref):
    r, c = rel(a, ref)
    return '%8.4f %% (|c| %.4f, arg %+.4f)' % (100 * r, abs(c), np.angle(c))


class Problem:
    def __init__(self, d):
        ld = lambda n: read_dat(os.path.join(d, n + '.dat'))
        self.k = np.stack([ld(n)[0] for n in ('kx', 'ky', 'kz')], 1)  # M x 3 (x, y, z)
        kr, hdr = ld('kdata_r')
        ki, _ = ld('kdata_i')
        self.P = int(hdr.get('coil_number', 1))
        M = self.k.shape[0]
        self.d = (kr + 1j * ki).reshape(self.P, M)
        ix, h = ld('ix')
        self.n = (int(h['xDimension']), int(h['yDimension']), int(h['zDimension']))
        nx, ny, nz = self.n
        self.shape = (ny, nx, nz)  # file order [y][x][z]
        pos = np.stack([ix, ld('iy')[0], ld('iz')[0]], 1).reshape(ny, nx, nz, 3)
        # the file's positions must be the grid (i - n/2)/n in [y][x][z] order
        g = [(np.arange(m) - m // 2) / m for m in self.n]
        want = np.stack(np.meshgrid(g[0], g[1], g[2], indexing='xy'), -1)  # [y][x][z]
        self.order_ok = bool(np.allclose(pos, want, atol=1e-6))
        self.grid = g  # x, y, z positions (FOV fractions)
        if self.P > 1:
            sr, _ = ld('sensi_r')
            si, _ = ld('sensi_i')
            self.s = (sr + 1j * si).reshape((self.P,) + self.shape)
        else:
            self.s = np.ones((1,) + self.shape, complex)
        try:
            self.mask = ld('mask')[0]
        except OSError:
            self.mask = None

    def exact_b(self, samples=None):
        """E^H d: sum_c conj(s_c) sum_j d_cj exp(i 2 pi k_j.x), exactly."""
        k = self.k if samples is None else self.k[samples]
        d = self.d if samples is None else self.d[:, samples]
        nx, ny, nz = self.n
        out = np.zeros((self.P, ny, nx * nz), complex)
        for a in range(0, k.shape[0], 4096):
            kk, dd = k[a:a + 4096], d[:, a:a + 4096]
            ex = np.exp(2j * np.pi * kk[:, 0:1] * self.grid[0])  # j x nx
            ey = np.exp(2j * np.pi * kk[:, 1:2] * self.grid[1])
            ez = np.exp(2j * np.pi * kk[:, 2:3] * self.grid[2])
            xz = (ex[:, :, None] * ez[:, None, :]).reshape(len(kk), -1)  # j x (x z)
            for c in range(self.P):
                out[c] += (ey * dd[c][:, None]).T @ xz
        out = out.reshape((self.P,) + self.shape)
        return (np.conj(self.s) * out).sum(0)

    def exact_q(self):
        """Q(m) = sum_j exp(i 2 pi k_j.m/N), m = -N..N-1 per axis, index m + N."""
        nx, ny, nz = self.n
        mx, my, mz = [np.arange(-m, m) / m for m in self.n]
        q = np.zeros((2 * ny, 4 * nx * nz), complex)
        for a in range(0, self.k.shape[0], 4096):
            kk = self.k[a:a + 4096]
            ex = np.exp(2j * np.pi * kk[:, 0:1] * mx)
            ey = np.exp(2j * np.pi * kk[:, 1:2] * my)
            ez = np.exp(2j * np.pi * kk[:, 2:3] * mz)
            q += ey.T @ (ex[:, :, None] * ez[:, None, :]).reshape(len(kk), -1)
        return q.reshape(2 * ny, 2 * nx, 2 * nz)


class Toeplitz:
    """E^H E x = sum_c conj(s_c) (Q conv (s_c x)), as IMPATIENT applies it."""

    def __init__(self, pb, q):
        self.pb = pb
        self.qf = fftn(np.fft.ifftshift(q), (0, 1, 2))
        self.sl = tuple(slice(m // 2, m // 2 + m) for m in pb.shape)

    def __call__(self, x):
        s = self.pb.s
        pad = np.zeros((s.shape[0],) + self.qf.shape, complex)
        pad[(slice(None),) + self.sl] = s * x
        y = ifftn(fftn(pad, (1, 2, 3)) * self.qf, (1, 2, 3))[(slice(None),) + self.sl]
        return (np.conj(s) * y).sum(0)


def cg(A, b, iters):
    """Plain CG on A x = b from 0; the iterates at ITERS and their residuals."""
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = np.vdot(r, r).real
    out = {}
    for it in range(1, max(iters) + 1):
        q = A(p)
        alpha = rr / np.vdot(p, q).real
        x = x + alpha * p
        r = r - alpha * q
        rr_new = np.vdot(r, r).real
        p = r + (rr_new / rr) * p
        rr = rr_new
        if it in iters:
            out[it] = (x.copy(), rr)
    return out


def impatient_params(n, os_req, q=False):
    """IMPATIENT's grid (computeFH/Q.cmem.cu): the oversampling rounded so that
    the z grid is a multiple of 4, x/y grids even; beta by its formula (F^H d
    takes it from the requested oversampling, Q from the rounded one)."""
    nx, ny, nz = [2 * m for m in n] if q else n
    if nz == 1:
        os_ = 2.0 * np.ceil(os_req * nx / 2.0) / nx
    else:
        os_ = 4.0 * np.ceil(np.float32(os_req) * nz / 4.0) / nz
    gx, gy = int(np.ceil(os_ * nx)), int(np.ceil(os_ * ny))
    gx += gx % 2
    gy += gy % 2
    gz = int(np.ceil(os_ * nz)) if nz > 1 else 1
    W = 4.0
    ob = os_ if q else os_req
    beta = np.pi * np.sqrt((ob - 0.5) ** 2 * (W * W * 4.0) / (ob * ob) - 0.8)
    return os_, (gx, gy, gz), W, beta


def beatty_beta(os_, W):
    """Beatty et al.'s beta for a kernel of W * os grid nodes at oversampling os."""
    return np.pi * np.sqrt((W * os_) ** 2 / os_ ** 2 * (os_ - 0.5) ** 2 - 0.8)


def grid_image(k, data, n, os_, G, W, beta, wrap):
    """IMPATIENT's gridding (toeplitz/GPU_kernels.cu gridding_GPU_3D,
    gridding_utils.cu) of data (rows) at k onto matrix n: Kaiser-Bessel of
    width W (k units), node X at k = X/os - n/2, nodes outside [0, G)
    dropped (wrap=True: periodic, as a discrete Fourier sum needs), inverse
    FFT, centre crop, divided by the kernel's transform and os^3. [y][x][z]."""
    half = W / 2
    idx_w = []
    for a in range(3):
        u = os_ * (k[:, a] + n[a] / 2.0)
        X = np.floor(u - half * os_)[:, None] + np.arange(int(np.ceil(2 * half * os_)) + 2)[None, :]
        dist = np.abs(u[:, None] - X) / os_
        arg = np.clip(1 - (2 * dist / W) ** 2, 0, None)
        w = np.where(dist <= half, np.i0(beta * np.sqrt(arg)) / W, 0.0)
        if wrap:
            X = np.mod(X, G[a])
        else:
            w = np.where((X >= 0) & (X < G[a]), w, 0.0)
            X = np.clip(X, 0, G[a] - 1)
        idx_w.append((X.astype(np.int64), w))
    (Xx, wx), (Xy, wy), (Xz, wz) = idx_w
    gx, gy, gz = G
    flat = ((Xy[:, :, None, None] * gx + Xx[:, None, :, None]) * gz + Xz[:, None, None, :])  # [y][x][z]
    wt = wy[:, :, None, None] * wx[:, None, :, None] * wz[:, None, None, :]
    flat = flat.reshape(len(k), -1)
    wt = wt.reshape(len(k), -1)
    keep = wt != 0
    f = flat[keep]
    shape = (n[1], n[0], n[2])
    out = np.zeros((data.shape[0],) + shape, complex)
    sh = (gy, gx, gz)
    for c in range(data.shape[0]):
        v = (wt * data[c][:, None])[keep]
        grid = (np.bincount(f, v.real, gy * gx * gz) + 1j * np.bincount(f, v.imag, gy * gx * gz)).reshape(sh)
        img = np.fft.fftshift(ifftn(np.fft.ifftshift(grid), (0, 1, 2))) * grid.size
        o = [g // 2 - m // 2 for g, m in zip(sh, shape)]
        out[c] = img[o[0]:o[0] + shape[0], o[1]:o[1] + shape[1], o[2]:o[2] + shape[2]]
    deap = 1.0
    for a, ax in ((1, 0), (0, 1), (2, 2)):  # x along axis 1, y axis 0, z axis 2
        m = n[a]
        x = (np.arange(m) - m / 2.0) / m
        e = np.abs(np.pi ** 2 * W ** 2 * x ** 2 - beta ** 2)
        c_ = np.where(np.pi ** 2 * W ** 2 * x ** 2 >= beta ** 2, np.sin(np.sqrt(e)), np.sinh(np.sqrt(e))) / np.sqrt(e)
        shp = [1, 1, 1]
        shp[ax] = m
        deap = deap * c_.reshape(shp)
    return out / deap / os_ ** 3


def emulate_fhd(pb, os_req, wrap=False, beta=None):
    """IMPATIENT's gridded F^H d (-gridOS_FH os_req), coil maps conjugated."""
    os_, G, W, beta_imp = impatient_params(pb.n, os_req)
    img = grid_image(pb.k, pb.d, pb.n, os_, G, W, beta_imp if beta is None else beta, wrap)
    return (np.conj(pb.s) * img).sum(0)


def emulate_q(pb, os_req, wrap=False, beta=None):
    """IMPATIENT's gridded Q (-gridOS_Q os_req): ones at 2k on the 2N matrix."""
    os_, G, W, beta_imp = impatient_params(pb.n, os_req, q=True)
    n2 = tuple(2 * m for m in pb.n)
    ones = np.ones((1, pb.k.shape[0]), complex)
    return grid_image(2 * pb.k, ones, n2, os_, G, W, beta_imp if beta is None else beta, wrap)[0]


def write_q(path, q, segments=2):
    """q as IMPATIENT's Q_stone.file (-reuseQ): segment 0 = q, the others 0."""
    with open(path, 'wb') as f:
        for l in range(segments):
            v = q.ravel() if l == 0 else np.zeros(q.size, complex)
            f.write(v.real.astype('<f4').tobytes())
            f.write(v.imag.astype('<f4').tobytes())


def load_raw(path, shape):
    n = int(np.prod(shape))
    v = np.fromfile(path, '<f4')
    if v.size % (2 * n):
        raise ValueError('%s: %d floats, not a multiple of 2 x %d' % (path, v.size, n))
    v = v.reshape(-1, 2, n)
    return (v[:, 0] + 1j * v[:, 1]).sum(0).reshape(shape)  # sums Q's time segments


def load_cfl(base, pb):
    nx, ny, nz = pb.n
    v = np.fromfile(base + '.cfl', '<c8').astype(complex)
    return v.reshape(nz, ny, nx).transpose(1, 2, 0)


def shift(img, s):
    """img shifted by s voxels along (y, x, z) (Fourier phase ramp, periodic)."""
    f = np.fft.fftn(img)
    for ax, sv in enumerate(s):
        if sv:
            k = np.fft.fftfreq(img.shape[ax])
            shp = [1, 1, 1]
            shp[ax] = -1
            f = f * np.exp(-2j * np.pi * k * sv).reshape(shp)
    return np.fft.ifftn(f)


def flip(img, axes):
    """x -> -x on the grid (i -> (n - i) mod n) along the given axes."""
    for ax in axes:
        img = np.roll(np.flip(img, ax), 1, ax)
    return img


def geometry_search(a, ref, label):
    best = []
    steps = (-1, -0.5, 0, 0.5, 1)
    for fl in itertools.chain.from_iterable(itertools.combinations(range(3), r) for r in range(4)):
        af = flip(a, fl)
        for s in itertools.product(steps, steps, steps):
            best.append((rel(shift(af, s), ref)[0], fl, s))
    best.sort(key=lambda t: t[0])
    print('  %s: best 3 of %d shifts x flips (axes y=0 x=1 z=2; shift in voxels):' % (label, len(best)))
    for r, fl, s in best[:3]:
        print('    %8.4f %%  flip %s shift %s' % (100 * r, fl or '()', s))
    none = [r for r, fl, s in best if not fl and s == (0, 0, 0)][0]
    print('    %8.4f %%  as is (no flip, no shift)' % (100 * none))


def where(a, ref, support, label):
    """Share of ||ref - c a||^2 per z slice and inside/outside the support."""
    _, c = rel(a, ref)
    e = np.abs(ref - c * a) ** 2
    tot = e.sum()
    per_z = e.sum((0, 1)) / tot
    rin = np.sqrt(e[support].sum() / (np.abs(ref[support]) ** 2).sum())
    rout = np.sqrt(e[~support].sum() / max((np.abs(ref[~support]) ** 2).sum(), 1e-300))
    print('  %s: inside the support %.3f %%, outside %.3f %% (each relative to the reference there); '
          'share of the squared difference per z slice: %s' % (
              label, 100 * rin, 100 * rout, ' '.join('%.2f' % v for v in per_z)))


def main():
    args = sys.argv[1:]
    qdir = None
    if len(args) == 4 and args[2] == '--write-q':
        qdir = args[3]
        args = args[:2]
    if len(args) != 2:
        sys.exit(__doc__)
    data, runs = args
    t0 = time.time()
    pb = Problem(data)
    R = lambda n: os.path.join(runs, n)
    have = lambda n: os.path.exists(R(n))
    print('== data: %s, matrix %s, %d samples x %d coils; file order [y][x][z] matches (i - n/2)/n: %s'
          % (data, pb.n, pb.k.shape[0], pb.P, pb.order_ok))
    if pb.mask is not None:
        print('  mask.dat: %d of %d voxels set (IMPATIENT never reads it in its Toeplitz path)' % (
            int((pb.mask != 0).sum()), pb.mask.size))
    kz = np.unique(np.round(pb.k[:, 2], 4))
    print('  kz values: %s; |kx|, |ky| max %.3f %.3f (grid edge N/2 = %s)' % (
        kz, np.abs(pb.k[:, 0]).max(), np.abs(pb.k[:, 1]).max(), [m / 2 for m in pb.n]))
    cache = R('exact_b_q.npz')
    if os.path.exists(cache):
        z = np.load(cache)
        b, Q = z['b'], z['q']
    else:
        b = pb.exact_b()
        Q = pb.exact_q()
        try:
            np.savez(cache, b=b, q=Q)
        except OSError:
            pass
    print('  exact b and Q: %.1f s' % (time.time() - t0))
    if qdir:
        os.makedirs(qdir, exist_ok=True)
        write_q(os.path.join(qdir, 'Q_stone.file'), Q)
        print('  wrote the exact Q as %s/Q_stone.file (-toeplitzDirect -ntime_segs 1 -reuseQ %s)' % (qdir, qdir))
    support = np.abs(b) > 0.1 * np.abs(b).max()
    print('  support (|b| > 10 %% of max): %d voxels' % support.sum())
    edge = np.isin(np.round(pb.k[:, 2]), [kz.min(), kz.min() + 1, kz.max() - 1, kz.max()])
    print('  share of |d|^2 in the two outermost kz partitions each side: %.4f' % (
        (np.abs(pb.d[:, edge]) ** 2).sum() / (np.abs(pb.d) ** 2).sum()))

    print('\n== 1. geometry and coil maps: E^H d (1-iteration images are proportional to it)')
    imgs = {}
    if have('direct_fhd.file'):
        imgs['IMPATIENT -toeplitzDirect FhD'] = load_raw(R('direct_fhd.file'), pb.shape)
    if have('direct_it1.file'):
        imgs['IMPATIENT -toeplitzDirect, 1 iteration'] = load_raw(R('direct_it1.file'), pb.shape)
    for tag in ('def', 'os2'):
        if have('g%s_fhd.file' % tag):
            imgs['IMPATIENT gridded FhD (%s)' % tag] = load_raw(R('g%s_fhd.file' % tag), pb.shape)
        if have('g%s_it1.file' % tag):
            imgs['IMPATIENT gridding (%s), 1 iteration' % tag] = load_raw(R('g%s_it1.file' % tag), pb.shape)
    lar = {}
    for v in ('gpu-nufft', 'gpu-phasor'):
        for it in ITERS:
            base = R('larmor_%s_it%d' % (v, it))
            if os.path.exists(base + '.cfl'):
                lar[(v, it)] = load_cfl(base, pb)
    for v in ('gpu-nufft', 'gpu-phasor'):
        if (v, 1) in lar:
            imgs['Larmor %s, 1 iteration' % v] = lar[(v, 1)]
    for name, img in imgs.items():
        print('  %-42s vs exact b: %s' % (name, fmt(img, b)))
    if 'IMPATIENT -toeplitzDirect FhD' in imgs:
        geometry_search(imgs['IMPATIENT -toeplitzDirect FhD'], b, 'IMPATIENT direct FhD vs exact b')
    if ('gpu-phasor', 1) in lar:
        geometry_search(lar[('gpu-phasor', 1)], b, 'Larmor gpu-phasor 1 iteration vs exact b')
    if 'IMPATIENT gridded FhD (def)' in imgs:
        geometry_search(imgs['IMPATIENT gridded FhD (def)'], b, 'IMPATIENT gridded FhD (def) vs exact b')
        where(imgs['IMPATIENT gridded FhD (def)'], b, support, 'IMPATIENT gridded FhD (def) vs exact b')

    print('\n== 2. IMPATIENT\'s gridded F^H d, emulated (one approximation removed at a time) vs exact b')
    fixed_b, fixed_q = {}, {}
    for tag, os_req in (('def', 1.5), ('os2', 2.0)):
        os_, G, W, beta = impatient_params(pb.n, os_req)
        bopt = beatty_beta(os_, W)
        print('  -gridOS_FH %g: oversampling %g, grid %s, width %g (k units) = %g nodes, beta %.3f '
              '(Beatty for that width: %.3f)' % (os_req, os_, G, W, W * os_, beta, bopt))
        emu = emulate_fhd(pb, os_req)
        print('    emulation as IMPATIENT does it       vs exact b: %s' % fmt(emu, b))
        key = 'IMPATIENT gridded FhD (%s)' % tag
        if key in imgs:
            print('    emulation vs IMPATIENT\'s FhD.file (faithful if small): %s' % fmt(emu, imgs[key]))
        print('    periodic grid edge (wrap)            vs exact b: %s' % fmt(emulate_fhd(pb, os_req, wrap=True), b))
        print('    Beatty beta                          vs exact b: %s' % fmt(emulate_fhd(pb, os_req, beta=bopt), b))
        fixed_b[tag] = emulate_fhd(pb, os_req, wrap=True, beta=bopt)
        print('    wrap and Beatty beta                 vs exact b: %s' % fmt(fixed_b[tag], b))

    print('\n== 3. IMPATIENT\'s gridded Q vs exact Q: all 2N offsets; the offsets Toeplitz uses '
          '(|m| < N); the inner ones (|m| < N/2)')
    used = tuple(slice(1, 2 * m) for m in pb.shape)
    inner = tuple(slice(m // 2, m + m // 2) for m in pb.shape)
    qfmt = lambda a: '%s; used: %s; inner: %s' % (fmt(a, Q), fmt(a[used], Q[used]), fmt(a[inner], Q[inner]))
    qs = {}
    for tag, os_req in (('def', 1.125), ('os2', 2.0)):
        os_, G, W, beta = impatient_params(pb.n, os_req, q=True)
        bopt = beatty_beta(os_, W)
        print('  -gridOS_Q %g: oversampling %g, grid %s, width %g (k units of the 2N grid) = %g nodes, beta %.3f '
              '(Beatty: %.3f)' % (os_req, os_, G, W, W * os_, beta, bopt))
        emu = emulate_q(pb, os_req)
        if have('g%s_Q.file' % tag):
            qs[tag] = load_raw(R('g%s_Q.file' % tag), tuple(2 * m for m in pb.shape))
            print('    IMPATIENT\'s Q_stone.file  vs exact Q: %s' % qfmt(qs[tag]))
            print('    emulation vs IMPATIENT\'s Q (faithful if small): %s' % fmt(emu, qs[tag]))
        print('    emulation as IMPATIENT     vs exact Q: %s' % qfmt(emu))
        print('    periodic grid edge (wrap)  vs exact Q: %s' % qfmt(emulate_q(pb, os_req, wrap=True)))
        print('    Beatty beta                vs exact Q: %s' % qfmt(emulate_q(pb, os_req, beta=bopt)))
        fixed_q[tag] = emulate_q(pb, os_req, wrap=True, beta=bopt)
        print('    wrap and Beatty beta       vs exact Q: %s' % qfmt(fixed_q[tag]))

    print('\n== 4. CG iterates (numpy, complex128) with exact / IMPATIENT Q and b')
    t1 = time.time()
    ref = cg(Toeplitz(pb, Q), b, ITERS)
    print('  exact CG: %.1f s; residual |r|^2 at %s: %s' % (
        time.time() - t1, ITERS, ' '.join('%.4g' % ref[i][1] for i in ITERS)))
    for (v, it), img in sorted(lar.items()):
        print('  Larmor %-10s %2d iterations vs exact CG: %s' % (v, it, fmt(img, ref[it][0])))
    reuse = {it: load_raw(R('reuse_it%d.file' % it), pb.shape) for it in ITERS if have('reuse_it%d.file' % it)}
    if reuse:  # IMPATIENT's own float CG on the exact Q and its exact b (-toeplitzDirect -reuseQ)
        every = tuple(range(1, max(ITERS) + 11))
        ext = cg(Toeplitz(pb, Q), b, every)
        print('  exact CG residual |r|^2 by iteration: %s' % ' '.join('%d:%.4g' % (i, ext[i][1]) for i in every))
    for it, img in sorted(reuse.items()):
        line = '  IMPATIENT -reuseQ exact %2d iterations vs exact CG: %s' % (it, fmt(img, ref[it][0]))
        if ('gpu-phasor', it) in lar:
            line += '; vs Larmor gpu-phasor: %s' % fmt(img, lar[('gpu-phasor', it)])
        near = min(every, key=lambda i: rel(img, ext[i][0])[0])
        print(line + '; closest exact iterate: %d (%s)' % (near, fmt(img, ext[near][0])))
    for tag in ('def', 'os2'):
        key = 'IMPATIENT gridded FhD (%s)' % tag
        runs_imp = {it: load_raw(R('g%s_it%d.file' % (tag, it)), pb.shape) for it in ITERS
                    if have('g%s_it%d.file' % (tag, it))}
        for it, img in sorted(runs_imp.items()):
            line = '  IMPATIENT (%s) %2d iterations vs exact CG: %s' % (tag, it, fmt(img, ref[it][0]))
            if ('gpu-nufft', it) in lar:
                line += '; vs Larmor gpu-nufft: %s' % fmt(img, lar[('gpu-nufft', it)])
            print(line)
        fx = cg(Toeplitz(pb, fixed_q[tag]), fixed_b[tag], ITERS)
        for it in ITERS:
            line = '  (%s) CG, IMPATIENT\'s gridding with wrap and Beatty beta, %2d it. vs exact CG: %s' % (
                tag, it, fmt(fx[it][0], ref[it][0]))
            if ('gpu-nufft', it) in lar:
                line += '; vs Larmor gpu-nufft: %s' % fmt(fx[it][0], lar[('gpu-nufft', it)])
            print(line)
        if key not in imgs or tag not in qs:
            continue
        bi, qi = imgs[key], qs[tag]
        combos = {'Q_imp b_imp': cg(Toeplitz(pb, qi), bi, ITERS),
                  'Q_imp b_exact': cg(Toeplitz(pb, qi), b, ITERS),
                  'Q_exact b_imp': cg(Toeplitz(pb, Q), bi, ITERS)}
        for name, res in combos.items():
            print('  (%s) CG %-14s residual |r|^2 at %s: %s' % (
                tag, name, ITERS, ' '.join('%.4g' % res[i][1] for i in ITERS)))
            for it in ITERS:
                line = '  (%s) CG %-14s %2d it. vs exact CG: %s' % (tag, name, it, fmt(res[it][0], ref[it][0]))
                if it in runs_imp and name == 'Q_imp b_imp':
                    line += '; vs IMPATIENT\'s own: %s' % fmt(res[it][0], runs_imp[it])
                print(line)
        if 5 in runs_imp:
            geometry_search(runs_imp[5], ref[5][0], 'IMPATIENT (%s) 5 iterations vs exact CG' % tag)
            where(runs_imp[5], ref[5][0], support, 'IMPATIENT (%s) 5 iterations vs exact CG' % tag)
    print('\ndone in %.1f s' % (time.time() - t0))


main()
