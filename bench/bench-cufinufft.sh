#!/bin/bash
# Issue 14's comparison: cuFINUFFT's type 1 on B128 (128^3 modes, 284,592
# radial samples, tol 1e-5) beside Larmor's gpu-nufft plan, on the device.
# cuFINUFFT is a benchmark dependency only, never a build dependency of
# Larmor: its source travels as a tarball in .benchdeps/ (ignored by git).
#
#   OUT=dir bench/bench-cufinufft.sh [--no-larmor]
#
# Needs: BENCHDEPS (default .benchdeps) holding finufft.tar.gz (git archive
# of flatironinstitute/finufft, prefix finufft/) and poet.tar.gz (its
# header-only dependency, flatironinstitute/poet at the tag FINUFFT's
# CMakeLists names, prefix poet/), with finufft.commit and poet.commit;
# nvcc and cuFFT (CUDA 12 or 13), g++, an sm_90 GPU (ARCH=sm_XX to change,
# read by bench/build-cufinufft.sh).
#
# FINUFFT's CMake fetches CPM.cmake and POET from GitHub at configure time,
# and the device machines have no network, so bench/build-cufinufft.sh
# compiles the library with nvcc and g++ directly, file for file as
# src/cuda/CMakeLists.txt and src/common/CMakeLists.txt list them (Release:
# -O3 -DNDEBUG, C++17, --extended-lambda --extra-device-vectorization, the
# per-method *_inst.cu once per dimension), into libcufinufft.a.
#
# Then, unless --no-larmor: Larmor's GPU targets (tests/gpu/run.sh build, in
# the background while cuFINUFFT compiles) and tests/gpu/bench_nufft on B128,
# which times Larmor's type 1 and writes its inputs and output as cfl files.
# The harness (bench/cufinufft_bench.c) runs first on B128 made by
# Larmor's own generator (phantoms/lm_trajgen.c, lm_phantom.c compiled in),
# then, when bench_nufft wrote them, on its cfl files, comparing with
# Larmor's output. Logs and tables land in $OUT.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
DEPS=${BENCHDEPS:-$ROOT/.benchdeps}
W=${CUFI_WORK:-/tmp/cufi}
JOBS=$(nproc)
LARMOR=1
[ "${1:-}" = --no-larmor ] && LARMOR=0
mkdir -p "$OUT" "$W"
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n), $JOBS cores"
echo "nvcc: $(nvcc --version | tail -2 | head -1); g++: $(g++ --version | head -1); cmake: $(command -v cmake || echo none) (not used)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
echo "FINUFFT commit $(cat "$DEPS/finufft.commit" 2>/dev/null), POET commit $(cat "$DEPS/poet.commit" 2>/dev/null)"

if [ $LARMOR = 1 ]; then
    # Larmor's GPU targets meanwhile (its own log; bench_nufft comes from here)
    # (niced: cuFINUFFT compiles first; its own process group, ended by id at the deadline)
    setsid nice -n 10 bash -c "bash tests/gpu/run.sh build >'$OUT/larmor-build.txt' 2>&1; echo \$? >'$W/larmor-build.rc'" \
        </dev/null >/dev/null 2>&1 &
    LPID=$!
fi

# --- cuFINUFFT: bench/build-cufinufft.sh (reads .benchdeps/) -------------
if [ "$(cd "$DEPS" && pwd)" != "$ROOT/.benchdeps" ]; then
    mkdir -p .benchdeps && cp "$DEPS"/finufft.* "$DEPS"/poet.* .benchdeps/
fi
rm -rf "$W/cufinufft"
bash bench/build-cufinufft.sh "$W/cufinufft" >"$OUT/cufinufft-build.txt" 2>&1 || {
    grep -E "error|FAILED" "$OUT/cufinufft-build.txt" | head -30
    echo "cuFINUFFT build failed"
    exit 1
}
F=$W/cufinufft/finufft
echo "cuFINUFFT built in $(( $(date +%s) - T0 )) s"

# --- the harness, with Larmor's generator compiled in -----------------------
HW=$W/harness
mkdir -p "$HW"
for f in phantoms/lm_trajgen.c phantoms/lm_phantom.c core/lm_types.c core/lm_error.c; do
    gcc -std=c11 -O2 -D_GNU_SOURCE -fopenmp -Icore -Iphantoms -c $f -o "$HW/$(basename $f .c).o" || exit 1
done
gcc -std=c11 -O2 -Wall -fopenmp -Icore -Iphantoms -I$F/include -I/usr/local/cuda/include \
    -c bench/cufinufft_bench.c -o "$HW/cufinufft_bench.o" &&
    g++ -fopenmp -o "$W/cufinufft_bench" "$HW"/*.o "$W/cufinufft/libcufinufft.a" -L/usr/local/cuda/lib64 \
        -lcufft -lcudart -lm || { echo "harness build failed"; exit 1; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "--- cuFINUFFT on B128 from Larmor's generator$([ $LARMOR = 1 ] && echo " (Larmor's build compiling beside it)")"
"$W/cufinufft_bench" --reps 30 --tsv "$OUT/cufinufft-gen.tsv" 2>&1 | tee "$OUT/cufinufft-gen.txt"

[ $LARMOR = 1 ] || exit 0
# --- Larmor's bench_nufft, then cuFINUFFT again on its files ----------------
# DEADLINE: seconds after the start by which Larmor's build must be done
while kill -0 $LPID 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt ${DEADLINE:-330} ]; do sleep 2; done
if kill -0 $LPID 2>/dev/null; then
    kill -- -$LPID 2>/dev/null
    echo "Larmor's build not done after ${DEADLINE:-330} s: skipped (cuFINUFFT's table above stands)"
    tail -3 "$OUT/larmor-build.txt"
    exit 0
fi
echo "Larmor build rc $(cat "$W/larmor-build.rc" 2>/dev/null), $(( $(date +%s) - T0 )) s"
tail -3 "$OUT/larmor-build.txt"
B=build-dev/tests/gpu/bench_nufft
[ -x $B ] || { echo "no $B"; exit 1; }
export LD_LIBRARY_PATH=/tmp/sysroot/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH XDG_CACHE_HOME=/tmp/cache
mkdir -p "$OUT/larmor"
echo "--- Larmor: $B --problem B128 --reps 30 --out $OUT/larmor"
$B --problem B128 --reps 30 --out "$OUT/larmor" 2>&1 | tee "$OUT/larmor-bench.txt"
echo "--- cuFINUFFT on bench_nufft's files (quiet machine)"
"$W/cufinufft_bench" --cfl "$OUT/larmor" --reps 30 --tsv "$OUT/cufinufft-cfl.tsv" 2>&1 | tee "$OUT/cufinufft-cfl.txt"
rm -f "$OUT"/larmor/*.cfl # 16 MB each; the tables are what matter
echo "done after $(( $(date +%s) - T0 )) s"
