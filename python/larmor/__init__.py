"""Larmor from Python: numpy arrays in and out, over the shared library.

Conventions (the repository's docs/conventions.md):

* trajectory: (M, 3) float32, cycles per field of view (|k| <= n/2);
* k-space: (coils, M) complex64 (a 1-D array is one coil);
* images: indexed [x, y, z] as nibabel gives them (2-D data: nz = 1);
* coil maps: (nx, ny, nz, coils), as a 4-D NIfTI or BART's [x, y, z, coils];
* field map: (nx, ny, nz) float32 in Hz; sample times: (M,) float32 in s.

Every failure raises :class:`Error` (a ``ValueError``) with the library's
one-line message; nothing here exits or crashes the interpreter.
"""

import ctypes
import os

import numpy as np

from ._libpath import LIBRARY as _LIBRARY_DEFAULT

__all__ = ["Error", "phantom", "recon", "Session", "nufft_forward", "nufft_adjoint", "version"]


class Error(ValueError):
    """A Larmor error: the library's one-line message."""


class _LmError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


def _load():
    path = os.environ.get("LARMOR_LIBRARY", _LIBRARY_DEFAULT)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"larmor: cannot load the shared library {path}: {e}") from None
    p, i64, i32, dbl, cs = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double, ctypes.c_char_p
    err = ctypes.POINTER(_LmError)
    sigs = {
        "larmor_version": ([], cs),
        "larmor_job_new": ([p, i64, i64, p, p, ctypes.POINTER(p), err], i32),
        "larmor_job_free": ([p], None),
        "larmor_job_set_sens": ([p, p, err], i32),
        "larmor_job_set_fieldmap": ([p, p, p, err], i32),
        "larmor_job_set": ([p, cs, cs, err], i32),
        "larmor_job_run": ([p, p, err], i32),
        "larmor_session_new": ([p, ctypes.POINTER(p), err], i32),
        "larmor_session_free": ([p], None),
        "larmor_session_solve": ([p, dbl, i32, p, err], i32),
        "larmor_nufft": ([i32, p, i64, p, cs, p, p, err], i32),
        "larmor_phantom_new": ([cs, ctypes.POINTER(p), err], i32),
        "larmor_phantom_free": ([p], None),
        "larmor_phantom_shape": ([p, cs, p], i32),
        "larmor_phantom_copy": ([p, cs, p, err], i32),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, res
    return lib


_lib = _load()


def version():
    """The library's version string."""
    return _lib.larmor_version().decode()


def _call(fn, *args):
    e = _LmError()
    if fn(*args, ctypes.byref(e)) != 0:
        raise Error(e.msg.decode(errors="replace"))


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def _matrix(matrix):
    if isinstance(matrix, (int, np.integer)):
        n = (int(matrix),) * 3
    else:
        n = tuple(int(v) for v in matrix)
        if len(n) == 2:
            n = n + (1,)
    if len(n) != 3 or any(v < 1 for v in n):
        raise Error(f"matrix {matrix!r}: give n, (nx, ny) or (nx, ny, nz) with sizes >= 1")
    return n


def _array(a, name, dtype, shape=None):
    """a as a C-contiguous array of dtype, checked against shape (None: any)."""
    if a is None:
        raise Error(f"{name}: missing")
    arr = np.asarray(a)
    if arr.dtype.kind not in "fc" or (np.dtype(dtype).kind == "f" and arr.dtype.kind == "c"):
        raise Error(f"{name}: {arr.dtype} is not {np.dtype(dtype).name}")
    if shape is not None and arr.shape != shape:
        raise Error(f"{name}: shape {arr.shape}, expected {shape}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _image_in(a, name, n, dtype):
    """An [x, y, z] volume as x-fastest memory."""
    arr = np.asarray(a)
    if arr.ndim == 2 and n[2] == 1:
        arr = arr[:, :, None]
    if arr.shape != n:
        raise Error(f"{name}: shape {arr.shape}, expected {n} (indexed [x, y, z])")
    return _array(arr.transpose(2, 1, 0), name, dtype)


def _image_out(buf, n):
    """x-fastest memory as an [x, y, z] volume (2-D data too: nz = 1)."""
    return buf.reshape(n[2], n[1], n[0]).transpose(2, 1, 0)


class _Job:
    def __init__(self, traj, kspace, matrix, sens, fieldmap, times, options):
        self.h = ctypes.c_void_p()
        self.n = _matrix(matrix)
        traj = _array(traj, "traj", np.float32)
        if traj.ndim != 2 or traj.shape[1] != 3:
            raise Error(f"traj: shape {traj.shape}, expected (M, 3) in cycles/FOV")
        m = traj.shape[0]
        k = np.asarray(kspace)
        if k.ndim == 1:
            k = k[None, :]
        if k.ndim != 2 or k.shape[1] != m:
            raise Error(f"kspace: shape {np.shape(kspace)}, expected (coils, {m}) to match traj's {m} samples")
        if k.dtype.kind != "c":
            raise Error(f"kspace: {k.dtype} is not complex64")
        k = _array(k, "kspace", np.complex64)
        self.coils = k.shape[0]
        n3 = (ctypes.c_int64 * 3)(*self.n)
        _call(_lib.larmor_job_new, n3, m, self.coils, _ptr(traj), _ptr(k), ctypes.byref(self.h))
        try:
            if sens is not None:
                s = np.asarray(sens)
                if s.ndim == 3 and self.n[2] == 1:
                    s = s[:, :, None, :]
                want = self.n + (self.coils,)
                if s.shape != want:
                    raise Error(f"sens: shape {np.shape(sens)}, expected {want} ([x, y, z, coils])")
                s = _array(s.transpose(3, 2, 1, 0), "sens", np.complex64)
                _call(_lib.larmor_job_set_sens, self.h, _ptr(s))
            if (fieldmap is None) != (times is None):
                raise Error("fieldmap and times: give both or neither")
            if fieldmap is not None:
                f = _image_in(fieldmap, "fieldmap", self.n, np.float32)
                t = _array(times, "times", np.float32, (m,))
                _call(_lib.larmor_job_set_fieldmap, self.h, _ptr(f), _ptr(t))
            for key, value in options.items():
                if value is None:
                    continue
                _call(_lib.larmor_job_set, self.h, key.encode(), str(value).encode())
        except Exception:
            self.close()
            raise

    def close(self):
        if self.h:
            _lib.larmor_job_free(self.h)
            self.h = ctypes.c_void_p()

    def __del__(self):
        self.close()


def _options(method, reg, lam, iters, variant, extra):
    o = {"method": method, "reg": reg, "lambda": lam, "iters": iters, "variant": variant}
    o.update(extra)
    return o


def recon(traj, kspace, matrix, sens=None, fieldmap=None, times=None, method="cg", reg="identity", lam=0.01,
          iters=60, variant="auto", **options):
    """Reconstructs one image, complex64 indexed [x, y, z].

    Further options by their command-line names (tol, segments, combine,
    fallback, threads, fov, cache)."""
    job = _Job(traj, kspace, matrix, sens, fieldmap, times, _options(method, reg, lam, iters, variant, options))
    try:
        out = np.empty(int(np.prod(job.n)), np.complex64)
        _call(_lib.larmor_job_run, job.h, _ptr(out))
        return _image_out(out, job.n)
    finally:
        job.close()


class Session:
    """Set up once (Q, E^H d); ``solve(lam)`` re-solves, warm-started."""

    def __init__(self, traj, kspace, matrix, sens=None, fieldmap=None, times=None, reg="identity", lam=0.01,
                 iters=60, variant="auto", **options):
        self.h = ctypes.c_void_p()
        job = _Job(traj, kspace, matrix, sens, fieldmap, times, _options("cg", reg, lam, iters, variant, options))
        self.n = job.n
        try:
            _call(_lib.larmor_session_new, job.h, ctypes.byref(self.h))
        finally:
            job.close()

    def solve(self, lam, warm=True):
        """The image at lam (complex64, [x, y, z])."""
        if not self.h:
            raise Error("session: closed")
        out = np.empty(int(np.prod(self.n)), np.complex64)
        _call(_lib.larmor_session_solve, self.h, float(lam), 1 if warm else 0, _ptr(out))
        return _image_out(out, self.n)

    def close(self):
        if self.h:
            _lib.larmor_session_free(self.h)
            self.h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def _nufft(adjoint, traj, data, matrix, variant):
    n = _matrix(matrix)
    traj = _array(traj, "traj", np.float32)
    if traj.ndim != 2 or traj.shape[1] != 3:
        raise Error(f"traj: shape {traj.shape}, expected (M, 3) in cycles/FOV")
    m = traj.shape[0]
    n3 = (ctypes.c_int64 * 3)(*n)
    if adjoint:
        d = _array(data, "data", np.complex64, (m,))
        out = np.empty(int(np.prod(n)), np.complex64)
    else:
        d = _image_in(data, "image", n, np.complex64)
        out = np.empty(m, np.complex64)
    _call(_lib.larmor_nufft, 1 if adjoint else 0, n3, m, _ptr(traj), (variant or "auto").encode(), _ptr(d),
          _ptr(out))
    return _image_out(out, n) if adjoint else out


def nufft_forward(traj, image, variant="auto"):
    """d(m) = (1/N) phi(k_m) sum_n image(x_n) exp(-i 2 pi k_m . x_n): the encoding model of one coil."""
    img = np.asarray(image)
    matrix = img.shape if img.ndim == 3 else img.shape[:2]
    return _nufft(False, traj, img, matrix, variant)


def nufft_adjoint(traj, data, matrix, variant="auto"):
    """Its adjoint: (1/N) sum_m phi(k_m) d(m) exp(+i 2 pi k_m . x_n), complex64 [x, y, z]."""
    return _nufft(True, traj, data, matrix, variant)


def phantom(problem):
    """A benchmark problem ("B32", "B64c8", "S128c8f", ...) as a dict of
    traj, kspace, truth and, where the problem has them, sens, fieldmap and
    times, in the conventions above."""
    h = ctypes.c_void_p()
    _call(_lib.larmor_phantom_new, str(problem).encode(), ctypes.byref(h))
    try:
        out = {}
        for part, dtype in (("traj", np.float32), ("kspace", np.complex64), ("truth", np.complex64),
                            ("sens", np.complex64), ("fieldmap", np.float32), ("times", np.float32)):
            dims = (ctypes.c_int64 * 4)()
            nd = _lib.larmor_phantom_shape(h, part.encode(), dims)
            if nd <= 0:
                continue
            shape = tuple(dims[:nd])
            a = np.empty(shape, dtype)
            _call(_lib.larmor_phantom_copy, h, part.encode(), _ptr(a))
            if part in ("truth", "fieldmap"):
                a = a.transpose(2, 1, 0)
            elif part == "sens":
                a = a.transpose(3, 2, 1, 0)
            out[part] = a
        return out
    finally:
        _lib.larmor_phantom_free(h)
