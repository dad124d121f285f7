#!/usr/bin/python3
"""Percent error of a dynamic reconstruction against its 4D truth, over all
frames: plain, and after one least-squares complex scale (BART's output
needs one). Usage: dyn_error.py TRUTH.nii.gz IMAGE.cfl -> "plain matched"."""
import gzip
import struct
import sys

import numpy as np


def read_cfl(base):
    base = base[:-4] if base.endswith(".cfl") else base
    with open(base + ".hdr") as f:
        lines = f.read().splitlines()
    dims = [int(v) for v in lines[lines.index("# Dimensions") + 1].split()]
    return np.fromfile(base + ".cfl", np.complex64).reshape(dims[::-1]).ravel()


def read_nifti(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    dtype = struct.unpack("<h", raw[70:72])[0]
    off = int(struct.unpack("<f", raw[108:112])[0])
    dt = {16: np.float32, 32: np.complex64}[dtype]
    return np.frombuffer(raw[off:], dt).astype(np.complex128)


if __name__ == "__main__":
    truth = read_nifti(sys.argv[1])
    img = read_cfl(sys.argv[2]).astype(np.complex128) if sys.argv[2].endswith(".cfl") else read_nifti(sys.argv[2])
    plain = 100 * np.linalg.norm(img - truth) / np.linalg.norm(truth)
    alpha = np.vdot(img, truth) / np.vdot(img, img)
    matched = 100 * np.linalg.norm(alpha * img - truth) / np.linalg.norm(truth)
    print(f"{plain:.2f} {matched:.2f}")
