#!/usr/bin/env python3
"""A paced MRD sender for bench/bench-realtime.sh: streams an MRD file's
acquisitions to `larmor-cli serve --mrd` at a fixed rate, as a scanner
would, and times the real-time frames that come back.

    rt_sender.py FILE.h5 --port P --rate SPOKES_PER_S --config "--realtime 34:8 ..." [--oversample 2]

--oversample 2 resamples each acquisition to twice its samples over the
same k-space line (linear interpolation of trajectory and data; a 2x
oversampled readout, as scanners acquire). Prints one JSON line: frames,
the client's latency per frame (the frame's last acquisition sent to its
image received; median, p95, max, ms), the server's latency_s attribute
(same statistics), and the sustained frame rate (frames over the time
from the first image to the last)."""
import argparse
import json
import os
import socket
import struct
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from mrd_proto import CLOSE, CONFIG_TEXT, HEADER, acq_msg, file_acquisitions, read_messages, text_msg  # noqa: E402


def oversample(head, traj, data, f):
    """f-fold samples along the same line: linear interpolation, the last interval extrapolated."""
    ns, td = int(head["number_of_samples"]), int(head["trajectory_dimensions"])
    x = np.arange(ns)
    xn = np.arange(ns * f) / f
    t = traj.reshape(ns, td)
    tn = np.stack([np.interp(xn, x, t[:, a], right=None) + np.where(xn > ns - 1, (xn - (ns - 1)) *
                   (t[-1, a] - t[-2, a]), 0) for a in range(td)], 1).astype(np.float32)
    dn = np.stack([np.interp(xn, x, c.real) + 1j * np.interp(xn, x, c.imag) for c in data]).astype(np.complex64)
    h = dict(head)
    h["number_of_samples"] = ns * f
    h["center_sample"] = int(head.get("center_sample", 0)) * f
    return h, tn.ravel(), dn


def stats(v):
    v = np.asarray(v) * 1e3
    return {"median": round(float(np.median(v)), 2), "p95": round(float(np.percentile(v, 95)), 2),
            "max": round(float(v.max()), 2)} if len(v) else {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=float, required=True, help="acquisitions per second")
    ap.add_argument("--config", required=True)
    ap.add_argument("--oversample", type=int, default=1)
    ap.add_argument("--skip", type=int, default=3, help="frames left out of the statistics (warm-up)")
    a = ap.parse_args()
    window, step = (int(x) for x in a.config.split("--realtime")[1].split()[0].split(":"))
    xml, acqs = file_acquisitions(a.file)
    if a.oversample > 1:
        acqs = [oversample(h, t, d, a.oversample) for h, t, d in acqs]
    msgs = [acq_msg(h, t, d) for h, t, d in acqs]
    s = socket.create_connection(("127.0.0.1", a.port), timeout=300)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(text_msg(CONFIG_TEXT, a.config))
    s.sendall(text_msg(HEADER, xml))
    got = []
    box = {}
    rd = threading.Thread(target=lambda: box.update(r=read_messages(s, lambda n: got.append(time.perf_counter()))))
    rd.start()
    sent = []
    t0 = time.perf_counter()
    for i, m in enumerate(msgs):
        wait = t0 + i / a.rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        s.sendall(m)
        sent.append(time.perf_counter())
    send_s = time.perf_counter() - t0
    s.sendall(struct.pack("<H", CLOSE))
    rd.join()
    s.close()
    images, closed, error = box["r"]
    if error or not closed:
        print(json.dumps({"error": error or "closed early"}))
        return 1
    lat_client, lat_server = [], []
    for f, (h, attr, _) in enumerate(images):
        last = window - 1 + f * step
        if f >= a.skip:
            lat_client.append(got[f] - sent[last])
            lat_server.append(float(attr.split("<name>latency_s</name><value>")[1].split("<")[0]))
    span = got[-1] - got[a.skip] if len(got) > a.skip + 1 else float("nan")
    print(json.dumps({"acquisitions": len(msgs), "samples": int(acqs[0][0]["number_of_samples"]),
                      "rate_acq_per_s": a.rate, "send_s": round(send_s, 3), "frames": len(images),
                      "frames_per_s_paced": round(a.rate / step, 2),
                      "frames_per_s_sustained": round((len(got) - 1 - a.skip) / span, 2),
                      "latency_client_ms": stats(lat_client), "latency_server_ms": stats(lat_server),
                      "config": a.config}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
