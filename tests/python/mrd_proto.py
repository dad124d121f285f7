"""The ISMRMRD (MRD) streaming protocol, written from its description
(ISMRMRD doc/mrd_messages.md) with the standard library, numpy and h5py
only: independent of Larmor's C code. Used by the server tests and by the
paced sender of bench/bench-realtime.sh."""
import struct

import h5py
import numpy as np

# ---- the protocol -----------------------------------------------------------
CONFIG_FILE, CONFIG_TEXT, HEADER, CLOSE, TEXT, ERROR = 1, 2, 3, 4, 5, 8
ACQUISITION, IMAGE = 1008, 1022

# MRD AcquisitionHeader, little endian, packed: 340 bytes
ACQ_FMT = ("<HQIII3I" "HHH16Q" "HHHHH" "f" "3f3f3f3f3f" "HHHHHHHHH8H" "8i8f")
ACQ_FIELDS = (["version", "flags", "measurement_uid", "scan_counter", "acquisition_time_stamp",
               ("physiology_time_stamp", 3), "number_of_samples", "available_channels", "active_channels",
               ("channel_mask", 16), "discard_pre", "discard_post", "center_sample", "encoding_space_ref",
               "trajectory_dimensions", "sample_time_us", ("position", 3), ("read_dir", 3), ("phase_dir", 3),
               ("slice_dir", 3), ("patient_table_position", 3)]
              + [("idx." + n) for n in ("kspace_encode_step_1", "kspace_encode_step_2", "average", "slice",
                                        "contrast", "phase", "repetition", "set", "segment")]
              + [("idx.user", 8), ("user_int", 8), ("user_float", 8)])
# MRD ImageHeader: 198 bytes
IMG_FMT = "<HHQI3H3fH3f3f3f3f3fHHHHHHI3IHHH8i8fI"
IMG_NAMES = (["version", "data_type", "flags", "measurement_uid"] + ["matrix"] * 3 + ["fov"] * 3 + ["channels"]
             + ["position"] * 3 + ["read_dir"] * 3 + ["phase_dir"] * 3 + ["slice_dir"] * 3 + ["table"] * 3
             + ["average", "slice", "contrast", "phase", "repetition", "set", "acquisition_time_stamp"]
             + ["physiology"] * 3 + ["image_type", "image_index", "image_series_index"] + ["user_int"] * 8
             + ["user_float"] * 8 + ["attribute_string_len"])
assert struct.calcsize(ACQ_FMT) == 340 and struct.calcsize(IMG_FMT) == 198


def text_msg(mid, text, lenfmt="<I"):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack("<H", mid) + struct.pack(lenfmt, len(b)) + b


def config_file_msg(name):
    return struct.pack("<H", CONFIG_FILE) + name.encode().ljust(1024, b"\0")


def acq_msg(head, traj, data):
    """head: dict name -> value (arrays for the multi-valued ones); data complex64 [channels, samples]."""
    vals = []
    for f in ACQ_FIELDS:
        name, n = (f, 1) if isinstance(f, str) else f
        v = head.get(name, 0)
        vals.extend(np.ravel(v).tolist() if n > 1 else [v.item() if hasattr(v, "item") else v])
    b = struct.pack("<H", ACQUISITION) + struct.pack(ACQ_FMT, *vals)
    return b + np.asarray(traj, "<f4").tobytes() + np.asarray(data, "<c8").tobytes()


def recv_exact(s, n):
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(out), n))
        out += chunk
    return bytes(out)


def read_messages(s, on_image=None):
    """Messages until CLOSE, ERROR or the end: (images, closed, error text)."""
    images = []
    while True:
        try:
            mid = struct.unpack("<H", recv_exact(s, 2))[0]
        except (EOFError, ConnectionResetError):
            return images, False, None
        if mid == CLOSE:
            return images, True, None
        if mid == ERROR:
            n = struct.unpack("<Q", recv_exact(s, 8))[0]
            return images, False, recv_exact(s, n).decode()
        assert mid == IMAGE, "unexpected message %d" % mid
        vals = struct.unpack(IMG_FMT, recv_exact(s, 198))
        h = {}
        for name, v in zip(IMG_NAMES, vals):
            h.setdefault(name, []).append(v)
        h = {k: (v[0] if len(v) == 1 else v) for k, v in h.items()}
        alen = struct.unpack("<Q", recv_exact(s, 8))[0]
        attr = recv_exact(s, alen).decode()
        nx, ny, nz = h["matrix"]
        dt = {5: "<f4", 7: "<c8"}[h["data_type"]]
        px = np.frombuffer(recv_exact(s, nx * ny * nz * h["channels"] * np.dtype(dt).itemsize), dt)
        images.append((h, attr, px.reshape(nz, ny, nx)))
        if on_image:
            on_image(len(images))


def file_acquisitions(path):
    """The MRD file's header and acquisitions as (head dict, traj, data) by h5py."""
    with h5py.File(path, "r") as f:
        xml = f["dataset/xml"][()]
        xml = xml[0] if isinstance(xml, np.ndarray) else xml
        xml = xml.decode() if isinstance(xml, bytes) else xml
        rows = f["dataset/data"][:]
    out = []
    for r in rows:
        hd = r["head"]
        head = {}
        for name in hd.dtype.names:
            if name == "idx":
                for k in hd["idx"].dtype.names:
                    head["idx." + k] = hd["idx"][k]
            else:
                head[name] = hd[name]
        ns, nc, td = int(hd["number_of_samples"]), int(hd["active_channels"]), int(hd["trajectory_dimensions"])
        d = np.asarray(r["data"], np.float32)
        data = (d[0::2] + 1j * d[1::2]).astype(np.complex64).reshape(nc, ns)
        traj = np.asarray(r["traj"], np.float32).reshape(ns * td)
        out.append((head, traj, data))
    return xml, out
