#!/usr/bin/python3
"""The error floor the voxel basis sets against a sub-voxel-averaged truth
(docs/dynamic.md, "Voxel basis"). Noise-free data are the object's exact
Fourier transform F(k); the truth x0 is the object averaged over each voxel,
whose DFT is about phi(k) F(k), phi(k) = sinc(kx/nx) sinc(ky/ny) the box
voxel's transform. An image that fits the data exactly satisfies
phi(k) DFT(x) = F(k) under the box basis (Larmor's default) and DFT(x) =
F(k) under the Dirac basis (recon --dirac, BART's model): the truth's DFT
divided by phi^2 or by phi. This prints the error of those two images
against the truth, on the whole grid and with the filter only inside the
disc |k| <= n/2 that full radial spokes measure (outside it the truth kept).
Usage: dyn_basis_floor.py TRUTH.nii.gz [NX NY]   (default 128 128, 2D frames)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dyn_error import read_nifti  # noqa: E402  (the bench folder's own reader)

nx, ny = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (128, 128)
t = read_nifti(sys.argv[1]).reshape(-1, ny, nx)  # frames, y, x (x fastest)
kx, ky = np.fft.fftfreq(nx) * nx, np.fft.fftfreq(ny) * ny
phi = np.sinc(ky / ny)[:, None] * np.sinc(kx / nx)[None, :]
disc = (kx[None, :] / (nx / 2)) ** 2 + (ky[:, None] / (ny / 2)) ** 2 <= 1
T = np.fft.fft2(t)
for name, filt in (("box basis (1/phi^2)", 1 / phi**2), ("Dirac basis (1/phi)", 1 / phi)):
    out = []
    for mask in (np.ones_like(disc), disc):
        x = np.fft.ifft2(T * np.where(mask, filt, 1))
        out.append(100 * np.linalg.norm(x - t) / np.linalg.norm(t))
    print(f"{name}: {out[0]:.2f} % (whole grid), {out[1]:.2f} % (inside |k| <= n/2)")
