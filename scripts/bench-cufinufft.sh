#!/bin/bash
# Larmor's gpu-nufft type 1 against cuFINUFFT on the same GPU (issue 14), on
# B128's trajectory. On a machine with a GPU, after `bash tests/gpu/run.sh
# build` (Larmor in build-dev), with the source tarballs in .benchdeps/
# (scripts/build-cufinufft.sh says how they are made; carry .benchdeps):
#   scripts/bench-cufinufft.sh [REPS]
# Both run back to back on the same device, each in its own process:
# cuFINUFFT's configurations (tests/gpu's bench_nufft prints Larmor's).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
REPS=${1:-30}
W=${WORK:-/tmp/larmor-cufinufft}
B=${B:-build-dev}
mkdir -p "$W"
export LD_LIBRARY_PATH=/tmp/sysroot/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bash scripts/build-cufinufft.sh "$W/cufinufft" > "$W/build.log" 2>&1 || { tail -20 "$W/build.log"; exit 1; }
tail -1 "$W/build.log"
C=$W/cufinufft
nvcc -std=c++17 -O2 -arch=${ARCH:-sm_90} -I"$C/finufft/include" scripts/cufinufft_bench.cu "$C/libcufinufft.a" \
    -lcufft -lcudart -o "$W/cufinufft_bench"
[ -f "$W/B128/traj.cfl" ] || "$B/cli/larmor-cli" phantom --problem B128 --out "$W/B128" > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "FINUFFT commit $(cat .benchdeps/finufft.commit 2>/dev/null || echo unknown)"
"$W/cufinufft_bench" "$W/B128/traj" 128 "$REPS"
echo "Larmor gpu-nufft (tests/gpu/bench_nufft):"
"$B/tests/gpu/bench_nufft" --reps "$REPS" --no-files | grep -E "^type|rel error|device"
