#!/usr/bin/env bash
# Builds IMPATIENT MRI's mriSolver (github.com/JiadingGai/Impatient-MRI) with
# a current CUDA (nvcc 13) for one GPU architecture, on a machine without
# internet: the source comes from SRC (default .impatient-src/src, made by
# bench/impatient-prepare.sh; ignored by git, carried to the device).
#   bench/impatient-gpu-build.sh [SRC] [BUILD] [ARCH]
#     BUILD default /tmp/impatient-build; ARCH default sm_90 (H100/H200)
# Prints the path of the binary on its last line. The small fixes for
# CUDA 12+ (APIs removed since IMPATIENT's CUDA 3-4 era) are applied by sed
# to a copy; the source itself is left as it is:
#   cudaThreadSynchronize -> cudaDeviceSynchronize (removed in CUDA 12)
#   cudaThreadExit        -> cudaDeviceReset       (removed in CUDA 12)
#   cudaDeviceProp.deviceOverlap (removed in CUDA 13) -> asyncEngineCount > 0
#   cudaDeviceProp.clockRate (removed in CUDA 13) -> dropped from cutil's
#     "fastest device" guess (multiProcessorCount alone; mriSolver picks
#     its GPU with -gpu_id anyway), 0 in deviceQuery's printout
# The Makefiles' own -arch sm_10/sm_37 are overridden from the command line.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:-.impatient-src/src}
BUILD=${2:-/tmp/impatient-build}
ARCH=${3:-sm_90}
[ -f "$SRC/main_mri.cu" ] || { echo "impatient-gpu-build: $SRC: no IMPATIENT source (bench/impatient-prepare.sh)" >&2; exit 1; }
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
rm -rf "$BUILD"
mkdir -p "$BUILD"
cp -r "$SRC"/. "$BUILD"/
cd "$BUILD"
grep -rlE 'cudaThreadSynchronize|cudaThreadExit|\.clockRate|deviceOverlap' --include='*.cu' --include='*.cuh' --include='*.h' \
    --include='*.cpp' . | while read -r f; do
    sed -i -e 's/cudaThreadSynchronize/cudaDeviceSynchronize/g' -e 's/cudaThreadExit/cudaDeviceReset/g' \
        -e 's/ \* device_properties\.clockRate//g' \
        -e 's/\([A-Za-z_]*\)\.deviceOverlap/(\1.asyncEngineCount > 0)/g' -e 's/deviceProp\.clockRate/0/g' "$f"
done
t0=$(date +%s)
if ! make CUDA_ARCH="-arch $ARCH" -j"$(nproc)" >build.log 2>&1; then
    grep -E "error|Error" build.log | head -30 >&2
    echo "impatient-gpu-build: make failed (log: $BUILD/build.log)" >&2
    exit 1
fi
echo "impatient-gpu-build: built for $ARCH in $(( $(date +%s) - t0 )) s" >&2
echo "$BUILD/mriSolver"
