#!/bin/bash
# Real-time MRD frames (issue 24): the case 2D 128^2, 8 coils, 256 samples
# per spoke (2x oversampled readout), golden-angle radial, a 34-spoke
# window every 8 spokes, streamed by a paced sender (bench/rt_sender.py) to
# `larmor-cli serve --mrd` on 127.0.0.1.
#
#   bench/bench-realtime.sh VARIANT RATE [SPOKES]   (e.g. cpu-nufft 100, gpu-nufft 400)
#
# EXTRA adds options to the configuration (e.g. EXTRA="--iters 4
# --coils-compress 4"); PYTHON names an interpreter with numpy and h5py.
# RATE: spokes per second (a frame every 8: RATE/8 frames/s); SPOKES: how
# many are sent (default 600). LARMOR_CLI as bench-startup.sh. Targets:
# latency at most 100 ms on 2 CPU cores, at most 20 ms and at least 50
# frames/s on one H100/H200.
set -eu
cd "$(dirname "$0")/.."
V=${1:-cpu-nufft}
RATE=${2:-100}
N=${3:-600}
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
PY=${PYTHON:-python3}
W=${WORK:-/tmp/larmor-realtime}
mkdir -p "$W"
[ -f "$W/rt$N/data.h5" ] || "$CLI" phantom --matrix 128 --phantom shepp-logan-2d --traj radial2d --readout 128 \
    --samples $((128 * N)) --coils 8 --format ismrmrd --out "$W/rt$N" >/dev/null
rm -f "$W/port"
"$CLI" serve --mrd 127.0.0.1:0 --mrd-port-file "$W/port" 2>"$W/serve.log" &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null' EXIT
for _ in $(seq 300); do [ -s "$W/port" ] && break; sleep 0.1; done
echo; echo "== $(date -u +%FT%TZ) $(hostname) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $V at $RATE spokes/s"
"$PY" bench/rt_sender.py "$W/rt$N/data.h5" --port "$(cat "$W/port")" --rate "$RATE" --oversample 2 \
    --config "--realtime 34:8 --variant $V --lambda 0.05 ${EXTRA:-}"
