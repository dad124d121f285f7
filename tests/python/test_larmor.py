"""The Python module over the shared library: the same images as the
command line on the same data (1e-5), a session's solve equal to a fresh
reconstruction, the NUFFT pair adjoint and equal to a direct sum in double,
phantoms in the documented shapes, and bad input raising larmor.Error with
the library's one-line message."""

import os
import subprocess

import numpy as np
import pytest

import larmor

CLI = os.environ.get("LARMOR_CLI", "larmor-cli")


def read_cfl(base):
    with open(base + ".hdr") as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    dims = [int(v) for v in lines[lines.index("# Dimensions") + 1].split()]
    data = np.fromfile(base + ".cfl", dtype=np.complex64)
    return data.reshape(dims, order="F")


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def b32(tmp_path_factory):
    d = tmp_path_factory.mktemp("b32")
    subprocess.run([CLI, "phantom", "--problem", "B32", "--out", str(d)], check=True, capture_output=True)
    return d


def test_recon_equals_cli(b32):
    out = b32 / "cli.cfl"
    subprocess.run([CLI, "recon", "--traj", str(b32 / "traj"), "--kspace", str(b32 / "kspace"), "--matrix", "32",
                    "--method", "cg", "--variant", "cpu-nufft", "--lambda", "0.01", "--iters", "20",
                    "--out", str(out)], check=True, capture_output=True)
    cli = read_cfl(str(b32 / "cli"))[:, :, :]
    traj = read_cfl(str(b32 / "traj")).real.reshape(3, -1).T
    k = read_cfl(str(b32 / "kspace")).reshape(1, -1)
    img = larmor.recon(traj, k, 32, method="cg", lam=0.01, iters=20, variant="cpu-nufft")
    assert img.shape == (32, 32, 32) and img.dtype == np.complex64
    assert rel(img, cli.reshape(32, 32, 32)) < 1e-5


def test_phantom_and_accuracy():
    d = larmor.phantom("B32")
    assert d["traj"].shape == (4447, 3) and d["traj"].dtype == np.float32
    assert d["kspace"].shape == (1, 4447) and d["kspace"].dtype == np.complex64
    assert d["truth"].shape == (32, 32, 32)
    assert "sens" not in d and "fieldmap" not in d
    assert np.abs(d["traj"]).max() <= 16.0
    img = larmor.recon(d["traj"], d["kspace"], 32, lam=0.01, iters=60)
    err = rel(img, d["truth"])
    assert err < 0.6  # the README's B32 Tikhonov figure is near 48 %


def test_session_equals_fresh_recon():
    d = larmor.phantom("B32")
    with larmor.Session(d["traj"], d["kspace"], 32, iters=30, variant="cpu-nufft") as s:
        for lam in (0.1, 0.003):
            got = s.solve(lam, warm=False)
            want = larmor.recon(d["traj"], d["kspace"], 32, lam=lam, iters=30, variant="cpu-nufft")
            assert rel(got, want) < 1e-5
        # a warm solve goes on from the last: closer to the converged image
        warm = s.solve(0.003, warm=True)
        conv = larmor.recon(d["traj"], d["kspace"], 32, lam=0.003, iters=200, variant="cpu-nufft")
        assert rel(warm, conv) < 0.8 * rel(want, conv)


def test_nufft_pair():
    rng = np.random.default_rng(3)
    n = (8, 6, 1)
    m = 40
    traj = np.zeros((m, 3), np.float32)
    traj[:, 0] = rng.uniform(-4, 4, m)
    traj[:, 1] = rng.uniform(-3, 3, m)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    d = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(np.complex64)
    # the direct sum in double, with phi = sinc(kx/nx) sinc(ky/ny) and 1/N
    pos = [(np.arange(v) - v // 2) / v for v in n]
    X, Y = np.meshgrid(pos[0], pos[1], indexing="ij")
    N = n[0] * n[1]
    phi = np.sinc(traj[:, 0] / n[0]) * np.sinc(traj[:, 1] / n[1])
    E = phi[:, None] * np.exp(-2j * np.pi * (np.outer(traj[:, 0], X.ravel()) + np.outer(traj[:, 1], Y.ravel()))) / N
    fwd = larmor.nufft_forward(traj, x)
    assert rel(fwd, E @ x[:, :, 0].ravel()) < 1e-5
    adj = larmor.nufft_adjoint(traj, d, n)
    assert adj.shape == n
    assert rel(adj[:, :, 0].ravel(), E.conj().T @ d) < 1e-5
    assert abs(np.vdot(fwd, d) - np.vdot(x, adj)) / abs(np.vdot(x, adj)) < 1e-5


def test_multicoil_sense():
    d = larmor.phantom("B64c8")
    assert d["kspace"].shape[0] == 8
    assert d["sens"].shape == (64, 64, 64, 8)
    img = larmor.recon(d["traj"], d["kspace"], 64, sens=d["sens"], lam=0.01, iters=30)
    assert rel(img, d["truth"]) < 0.5
    with pytest.raises(larmor.Error, match="sens"):
        larmor.recon(d["traj"], d["kspace"], 64, sens=d["sens"][..., :7])


def test_bad_input_raises():
    d = larmor.phantom("B32")
    t, k = d["traj"], d["kspace"]
    with pytest.raises(larmor.Error, match="expected"):
        larmor.recon(t, k[:, :100], 32)
    with pytest.raises(larmor.Error, match="complex"):
        larmor.recon(t, k.real, 32)
    with pytest.raises(larmor.Error, match="unknown"):
        larmor.recon(t, k, 32, reg="nonsense")
    with pytest.raises(larmor.Error, match="lambda"):
        larmor.recon(t, k, 32, lam=-1)
    bad = t.copy()
    bad[5, 0] = np.nan
    with pytest.raises(larmor.Error, match="trajectory"):
        larmor.recon(bad, k, 32)
    with pytest.raises(larmor.Error, match="unknown"):
        larmor.phantom("B33")
    with pytest.raises(larmor.Error, match="variant"):
        larmor.recon(t, k, 32, variant="gpu-imaginary")
    assert issubclass(larmor.Error, ValueError)
