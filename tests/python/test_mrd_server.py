"""larmor-cli serve --mrd against an MRD client written here from the
protocol description alone (ISMRMRD's streaming messages; standard library,
numpy and h5py): the images it gets equal `larmor-cli recon FILE.h5`'s,
`larmor-cli send` writes the same, bad input gets ERROR or a close and the
server goes on serving, and 4 clients at once each get their offline image.
Only 127.0.0.1, on a port the OS picks."""
import os
import shutil
import socket
import struct
import subprocess
import threading
import time

import h5py
import numpy as np
import pytest
from mrd_proto import (CLOSE, CONFIG_TEXT, HEADER, acq_msg, config_file_msg, file_acquisitions,
                       read_messages, text_msg)

CLI = os.environ.get("LARMOR_CLI", "larmor-cli")


def stream(port, xml, acqs, config="", config_file=None, timeout=120, images_before_close=0):
    """images_before_close: wait for that many images before sending CLOSE (they must come from the
    acquisitions' flags alone)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(config_file_msg(config_file) if config_file else text_msg(CONFIG_TEXT, config))
        s.sendall(text_msg(HEADER, xml))
        box = {}
        enough = threading.Event()
        t = threading.Thread(target=lambda: box.update(r=read_messages(
            s, lambda n: n >= images_before_close and enough.set())))
        t.start()  # images may come while acquisitions are still being sent
        for head, traj, data in acqs:
            s.sendall(acq_msg(head, traj, data))
        if images_before_close:
            assert enough.wait(120), "no image before CLOSE"
        s.sendall(struct.pack("<H", CLOSE))
        t.join()
        return box["r"]
    finally:
        s.close()


def read_cfl(base):
    with open(base + ".hdr") as f:
        f.readline()
        dims = [int(x) for x in f.readline().split()]
    a = np.fromfile(base + ".cfl", "<c8")
    return a.reshape(dims[::-1])


# ---- data and server --------------------------------------------------------


def run(*args, **kw):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, **kw)
    assert r.returncode == 0, "%s: %s" % (args, r.stderr)
    return r


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("mrd-server")
    e = dict(os.environ, XDG_CACHE_HOME=str(d / "cache"), OMP_NUM_THREADS="2")
    files = {}
    # 3D radial and 2D spiral written by larmor-cli phantom
    run("phantom", "--matrix", "16", "--traj", "radial3d", "--coils", "2", "--format", "ismrmrd", "--noise", "0.02",
        "--out", str(d / "r3"), env=e)
    # alone in a folder: recon would take the phantom's sens.cfl and times.cfl beside it, a stream has none
    (d / "alone").mkdir()
    files["radial3d"] = shutil.copy(d / "r3" / "data.h5", d / "alone" / "radial3d.h5")
    run("phantom", "--matrix", "24", "--phantom", "shepp-logan-2d", "--traj", "spiral2d", "--coils", "2",
        "--format", "ismrmrd", "--out", str(d / "sp"), env=e)
    files["radial3d-2rep"] = make_repetitions(files["radial3d"], str(d / "alone" / "radial3d-2rep.h5"))
    # 2D golden-angle radial, 4 coils, 60 spokes: the real-time case
    run("phantom", "--matrix", "32", "--phantom", "shepp-logan-2d", "--traj", "radial2d", "--readout", "32",
        "--samples", str(32 * 60), "--coils", "4", "--format", "ismrmrd", "--out", str(d / "rt"), env=e)
    files["radial2d"] = shutil.copy(d / "rt" / "data.h5", d / "alone" / "radial2d.h5")
    files["spiral2d-multislice"] = make_multislice(str(d / "sp" / "data.h5"), str(d / "spiral3.h5"))
    if shutil.which("ismrmrd_generate_cartesian_shepp_logan"):
        subprocess.run(["ismrmrd_generate_cartesian_shepp_logan", "-m", "32", "-c", "4", "-C", "-o",
                        str(d / "cart.h5")], check=True, capture_output=True, cwd=str(d))
        files["cartesian"] = str(d / "cart.h5")
    presets = d / "presets"
    presets.mkdir()
    (presets / "fast.conf").write_text("# a preset\n--method cg --iters 6 --lambda 0.02\n")
    port_file = d / "port"
    srv = subprocess.Popen([CLI, "serve", "--mrd", "127.0.0.1:0", "--mrd-port-file", str(port_file),
                            "--mrd-presets", str(presets), "--mrd-send-timeout", "2", "--mrd-max-buffer", "64"],
                           env=e, stderr=open(d / "server.log", "w"))
    for _ in range(600):
        if port_file.exists() or srv.poll() is not None:
            break
        time.sleep(0.1)
    assert srv.poll() is None, (d / "server.log").read_text()
    port = int(port_file.read_text())
    yield {"dir": d, "env": e, "files": files, "port": port, "server": srv, "log": d / "server.log"}
    srv.terminate()
    # a clean stop: SIGTERM ends the server with status 0 (and a sanitized build's reports would be here)
    assert srv.wait(timeout=60) == 0
    log = (d / "server.log").read_text()
    assert "Sanitizer" not in log and "runtime error" not in log, log


def make_multislice(src, dst):
    """Three 2D slices 6 mm apart along z from one 2D file (h5py): slice k's data are the file's times
    (1 + k), its acquisitions the file's with idx.slice k and the centre moved; the last of each slice
    flagged ISMRMRD_ACQ_LAST_IN_SLICE."""
    with h5py.File(src, "r") as f:
        xml = f["dataset/xml"][()]
        rows = f["dataset/data"][:]
        dtype = f["dataset/data"].dtype
    img = rows[(rows["head"]["flags"] & np.uint64(1 << 18)) == 0]  # no noise scans
    n = len(img)
    out = np.concatenate([img] * 3)
    keep = np.uint64(~((1 << 7) | (1 << 24)) & 0xFFFFFFFFFFFFFFFF)
    for j, k in enumerate([1, 2, 0]):  # idx.slice 1 first: the stacking must go by position, not arrival
        part = slice(j * n, (j + 1) * n)
        head = out["head"]
        head["idx"]["slice"][part] = k
        head["position"][part] = [0.0, 0.0, 6.0 * k]
        head["read_dir"][part] = [1.0, 0.0, 0.0]
        head["phase_dir"][part] = [0.0, 1.0, 0.0]
        head["slice_dir"][part] = [0.0, 0.0, 1.0]
        fl = head["flags"][part] & keep
        fl[-1] |= np.uint64(1 << 7)  # ISMRMRD_ACQ_LAST_IN_SLICE (bit 8)
        head["flags"][part] = fl
        for i in range(j * n, (j + 1) * n):
            out["data"][i] = (np.asarray(out["data"][i], np.float32) * (1 + k)).astype(np.float32)
    with h5py.File(dst, "w") as f:
        g = f.create_group("dataset")
        g.create_dataset("xml", data=xml)
        g.create_dataset("data", data=out)
    return dst


def make_repetitions(src, dst):
    """Two repetitions of a 3D file (h5py): the second's data twice the first's; the last acquisition of each
    flagged ISMRMRD_ACQ_LAST_IN_REPETITION, so the server makes each image as soon as its repetition ends."""
    with h5py.File(src, "r") as f:
        xml = f["dataset/xml"][()]
        rows = f["dataset/data"][:]
        dtype = f["dataset/data"].dtype
    n = len(rows)
    out = np.concatenate([rows, rows])
    keep = np.uint64(~((1 << 13) | (1 << 24) | (1 << 7)) & 0xFFFFFFFFFFFFFFFF)
    head = out["head"]
    head["flags"] = head["flags"] & keep
    for r in range(2):
        head["idx"]["repetition"][r * n:(r + 1) * n] = r
        head["flags"][(r + 1) * n - 1] |= np.uint64(1 << 13)  # ISMRMRD_ACQ_LAST_IN_REPETITION (bit 14)
    for i in range(n, 2 * n):
        out["data"][i] = (np.asarray(out["data"][i], np.float32) * 2).astype(np.float32)
    with h5py.File(dst, "w") as f:
        g = f.create_group("dataset")
        g.create_dataset("xml", data=xml)
        g.create_dataset("data", data=out.astype(dtype))
    return dst


OPTS = {"radial3d": "--method cg --iters 6 --lambda 0.01",
        "radial3d-2rep": "--method cg --iters 6 --lambda 0.01",
        "spiral2d-multislice": "--method cg --iters 6 --lambda 0.01",
        "cartesian": ""}


def offline(env, name, opts, tag="x"):
    base = str(env["dir"] / ("%s-%s" % (name, tag)))
    run("recon", "--traj", env["files"][name], *opts.split(), "--quiet", "--out", base + ".cfl", env=env["env"])
    a = read_cfl(base)
    return a.reshape(-1, *a.shape[-2:]) if a.ndim >= 2 else a


def close_enough(got, want, tol=1e-4):
    want = np.asarray(want)
    scale = np.abs(want).max()
    err = np.abs(np.asarray(got) - want).max()
    assert scale > 0 and err <= tol * scale, "max |diff| %g of max %g" % (err, scale)


def server_images(env, name, opts, images_before_close=0):
    xml, acqs = file_acquisitions(env["files"][name])
    images, closed, error = stream(env["port"], xml, acqs, opts, images_before_close=images_before_close)
    assert error is None and closed, error
    return images


@pytest.mark.parametrize("name", ["radial3d", "spiral2d-multislice", "cartesian"])
def test_stream_equals_offline(env, name):
    if name not in env["files"]:
        pytest.skip("ismrmrd_generate_cartesian_shepp_logan (ismrmrd-tools) is not installed")
    # the multi-slice images come as each slice's last acquisition arrives, before CLOSE
    images = server_images(env, name, OPTS[name], images_before_close=3 if "multislice" in name else 0)
    want = np.abs(offline(env, name, OPTS[name]))  # z, y, x
    if name == "spiral2d-multislice":
        assert len(images) == 3
        # offline stacks by position (z = 0, 6, 12 mm: idx.slice 0, 1, 2); images come per slice
        by_slice = {h["slice"]: (h, px) for h, _, px in images}
        for k in range(3):
            h, px = by_slice[k]
            assert h["position"] == pytest.approx([0, 0, 6.0 * k]) and h["slice_dir"] == pytest.approx([0, 0, 1])
            close_enough(px[0], want[k])
        # the slices differ (data scaled by 1, 2, 3)
        assert np.abs(by_slice[2][1]).max() > 2.5 * np.abs(by_slice[0][1]).max()
    else:
        assert len(images) == 1
        h, attr, px = images[0]
        close_enough(px.reshape(want.shape), want)
        assert h["image_index"] == 1 and h["image_type"] == 1 and h["data_type"] == 5
        assert "<name>method</name><value>%s</value>" % ("fft" if name == "cartesian" else "cg") in attr
        assert "<name>time_total_s</name>" in attr and "<name>latency_s</name>" in attr


def test_repetitions_each_as_offline(env):
    name = "radial3d-2rep"
    images = server_images(env, name, OPTS[name], images_before_close=2)
    assert sorted(h["repetition"] for h, _, _ in images) == [0, 1]
    for h, _, px in images:
        want = np.abs(offline(env, name, OPTS[name] + " --repetition %d" % h["repetition"], "rep%d" % h["repetition"]))
        close_enough(px.reshape(want.shape), want)
        assert h["image_index"] == 1 + h["repetition"]


def test_complex_and_preset_and_gadgetron_xml(env):
    name = "radial3d"
    want = offline(env, name, "--method cg --iters 6 --lambda 0.02", "preset")
    xml, acqs = file_acquisitions(env["files"][name])
    # CONFIG_FILE naming the preset
    images, closed, error = stream(env["port"], xml, acqs, config_file="fast")
    assert error is None and closed and len(images) == 1
    close_enough(images[0][2].reshape(want.shape), np.abs(want))
    # Gadgetron's configuration XML: <parameter name value>, complex images on request
    gxml = ('<?xml version="1.0"?><configuration><version>2</version><stream><external><connect port="1"/>'
            '<configuration><parameter name="method" value="cg"/><parameter name="iters" value="6"/>'
            '<parameter name="lambda" value="0.02"/><parameter name="complex" value="true"/>'
            '<parameter name="some_other_gadget_setting" value="7"/></configuration></external></stream>'
            '</configuration>')
    images, closed, error = stream(env["port"], xml, acqs, gxml)
    assert error is None and closed and len(images) == 1
    h, attr, px = images[0]
    assert h["data_type"] == 7 and h["image_type"] == 5
    close_enough(px.reshape(want.shape), want)


def read_nifti(path):
    import gzip
    raw = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    dims = struct.unpack("<8h", raw[40:56])
    dtype = {16: "<f4", 32: "<c8"}[struct.unpack("<h", raw[70:72])[0]]
    off = int(struct.unpack("<f", raw[108:112])[0])
    n = dims[1] * dims[2] * dims[3]
    return np.frombuffer(raw[off:off + n * np.dtype(dtype).itemsize], dtype).reshape(dims[3], dims[2], dims[1])


@pytest.mark.parametrize("name", ["radial3d", "spiral2d-multislice"])
def test_send_equals_offline(env, name):
    opts = OPTS[name]
    out = str(env["dir"] / ("sent-%s.nii.gz" % name))
    run("send", env["files"][name], "--to", "127.0.0.1:%d" % env["port"], "--config", opts, "--out", out,
        env=env["env"])
    ref = str(env["dir"] / ("offline-%s.nii.gz" % name))
    run("recon", "--traj", env["files"][name], *opts.split(), "--quiet", "--out", ref, env=env["env"])
    close_enough(read_nifti(out), read_nifti(ref))
    # the stacked volume's geometry too: the NIfTI headers' sform rows
    with open(out, "rb") as a, open(ref, "rb") as b:
        import gzip
        ha, hb = gzip.decompress(a.read())[280:328], gzip.decompress(b.read())[280:328]
    np.testing.assert_allclose(np.frombuffer(ha, "<f4"), np.frombuffer(hb, "<f4"), atol=1e-4)


# ---- bad input --------------------------------------------------------------


def answer(port, payload, shut=True, timeout=60):
    """Sends payload and reads until the server answers ERROR or closes: the error text, or None on a close."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(payload)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError, OSError) as e:
            # the server may answer and close before the client has sent or
            # shut its side (ENOTCONN, EPIPE): its answer is still there to read
            if not isinstance(e, (BrokenPipeError, ConnectionResetError)) and e.errno != 107:
                raise
        _, closed, error = read_messages(s)
        assert not closed
        return error
    finally:
        s.close()


def good_session_still_served(env):
    test_stream_equals_offline(env, "radial3d")


def test_bad_inputs_answered_and_server_goes_on(env):
    port = env["port"]
    xml, acqs = file_acquisitions(env["files"]["radial3d"])
    rng = np.random.default_rng(7)
    rnd = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    rnd = struct.pack("<H", 0xBEEF) + rnd  # random bytes whose first id is not a message
    assert "unknown message id" in answer(port, rnd)
    assert "unknown message id 77" in answer(port, struct.pack("<H", 77))
    # HEADER before CONFIG
    assert "HEADER before CONFIG" in answer(port, text_msg(HEADER, xml))
    # an acquisition cut by a disconnect: the server logs it and serves on
    full = text_msg(CONFIG_TEXT, "") + text_msg(HEADER, xml) + acq_msg(*acqs[0])
    err = answer(port, full[:-100])
    assert err is None or "truncated" in err
    # the channel count changing mid-stream
    h2, t2, d2 = acqs[1]
    h2 = dict(h2, active_channels=int(h2["active_channels"]) + 1)
    d2 = np.vstack([d2, d2[:1]])
    err = answer(port, text_msg(CONFIG_TEXT, "") + text_msg(HEADER, xml) + acq_msg(*acqs[0]) + acq_msg(h2, t2, d2))
    assert "channel count" in err
    # announced lengths of 4 GB: HEADER (uint32) and ERROR (uint64)
    assert "more than" in answer(port, text_msg(CONFIG_TEXT, "") + struct.pack("<HI", HEADER, 0xFFFFFFFF), shut=False)
    assert "more than" in answer(port, struct.pack("<HI", CONFIG_TEXT, 0xFFFFFFF0), shut=False)
    # CONFIG_FILE naming a file outside the preset folder
    assert "not a preset name" in answer(port, config_file_msg("../../etc/passwd"))
    # unknown and file-naming options
    assert "unknown option --sens" in answer(port, text_msg(CONFIG_TEXT, "--sens /etc/passwd"))
    # more acquisitions than --mrd-max-buffer 64 (MiB) allows: refused, not held
    nc = int(acqs[0][0]["active_channels"])
    big = dict(acqs[0][0], flags=0, number_of_samples=65535, trajectory_dimensions=3)
    msg = acq_msg(big, np.zeros(3 * 65535, np.float32), np.zeros((nc, 65535), np.complex64))
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        s.sendall(text_msg(CONFIG_TEXT, "") + text_msg(HEADER, xml))
        for _ in range(64 * 2**20 // len(msg) + 2):
            try:
                s.sendall(msg)
            except OSError:
                break
        _, closed, error = read_messages(s)
        assert error is None or "exceed" in error
    finally:
        s.close()
    assert env["server"].poll() is None
    good_session_still_served(env)


def test_client_that_never_reads_is_not_buffered(env):
    """A client with a tiny receive buffer that never reads its (complex, 256^2) images: the server's sends
    stall, it drops the client after --mrd-send-timeout, and serves others meanwhile."""
    xml, acqs = file_acquisitions(env["files"]["spiral2d-multislice"])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", env["port"]))
    s.settimeout(60)
    conf = "--method grid-linear --matrix 512x512x1 --complex"
    s.sendall(text_msg(CONFIG_TEXT, conf) + text_msg(HEADER, xml))
    try:
        for a in acqs * 4:
            s.sendall(acq_msg(*a))
    except OSError:
        pass  # the server dropped us
    good_session_still_served(env)
    log = env["log"]
    for _ in range(600):  # the drop is logged once the send timeout has passed
        if "dropped" in log.read_text():
            break
        time.sleep(0.1)
    s.close()
    assert "dropped" in log.read_text()
    assert env["server"].poll() is None


def gpu_usable(env):
    r = subprocess.run([CLI, "variants"], capture_output=True, text=True, env=env["env"])
    return any(line.split()[:2] == ["gpu-nufft", "available"] for line in r.stdout.splitlines())


# The connections' reconstructions run at once (CPU: the cores split among
# them; GPU: in turn on the one device), each as its offline reconstruction.
@pytest.mark.parametrize("variant", ["cpu-nufft", "gpu-nufft"])
def test_four_clients_at_once(env, variant):
    if variant.startswith("gpu") and not gpu_usable(env):
        pytest.skip("no usable GPU (gpu-nufft not available)")
    opts = {n: OPTS[n] + " --variant " + variant for n in OPTS}
    names = [n for n in ("radial3d", "spiral2d-multislice", "radial3d", "spiral2d-multislice")]
    want = {n: np.abs(offline(env, n, opts[n], "conc-" + variant)) for n in set(names)}
    data = {n: file_acquisitions(env["files"][n]) for n in set(names)}
    results = [None] * 4

    def client(i):
        xml, acqs = data[names[i]]
        results[i] = stream(env["port"], xml, acqs, opts[names[i]])

    ts = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for n, (images, closed, error) in zip(names, results):
        assert error is None and closed
        w = want[n]
        if n == "radial3d":
            close_enough(images[0][2].reshape(w.shape), w)
        else:
            by_slice = {h["slice"]: px for h, _, px in images}
            for k in range(3):
                close_enough(by_slice[k][0], w[k])


# Real time: a frame every STEP acquisitions from the last WINDOW, sent while
# the acquisitions still arrive, each equal to the offline frame
# (larmor-cli recon --realtime: the same library call on the file).
def test_realtime_frames(env):
    W, S = 13, 4
    opts = "--realtime %d:%d --iters 5 --lambda 0.05" % (W, S)
    xml, acqs = file_acquisitions(env["files"]["radial2d"])
    images, closed, error = stream(env["port"], xml, acqs, opts, images_before_close=1)
    assert error is None and closed, error
    n = len(acqs)
    assert len(images) == (n - W) // S + 1
    base = str(env["dir"] / "rt-offline")
    run("recon", "--traj", env["files"]["radial2d"], *opts.split(), "--quiet", "--out", base + ".cfl", env=env["env"])
    want = np.abs(read_cfl(base)).reshape(len(images), 32, 32)
    for i, (h, attr, px) in enumerate(images):
        assert "<name>frame</name><value>%d</value>" % (i + 1) in attr, attr
        latency = float(attr.split("<name>latency_s</name><value>")[1].split("<")[0])
        assert 0 < latency < 60
        assert h["repetition"] == i and h["image_index"] == i + 1
        close_enough(px.reshape(32, 32), want[i])
    # the frames move: golden-angle windows differ, so consecutive frames are not equal
    assert np.abs(images[0][2] - images[-1][2]).max() > 0


@pytest.mark.parametrize("config,why", [("--realtime 0:8", "WINDOW:STEP"), ("--realtime 8", "WINDOW:STEP"),
                                        ("--realtime 8:2 --lambda auto", "fixed --lambda")])
def test_realtime_bad_config(env, config, why):
    s = socket.create_connection(("127.0.0.1", env["port"]), timeout=30)
    try:
        s.sendall(text_msg(CONFIG_TEXT, config))
        images, closed, error = read_messages(s)  # the configuration alone is refused
    finally:
        s.close()
    assert error is not None and why in error and not images, error
