#!/usr/bin/env bash
# IMPATIENT MRI's own GPU reconstruction against Larmor's on the same GPU
# (issue 11), on its 64x64x16 4-coil stack of spirals: IMPATIENT's Toeplitz
# path with gridding (-toeplitzGridding; its sound one: -toeplitzDirect
# never clears Q between time segments, its brute-force path is 2D only),
# 30 CG iterations, no regularisation (-fdp 0: lambda 0), against
# larmor-cli recon --method cg --lambda 0 --iters 30 with the same maps
# (sensi_r/i, read from the same directory). Both whole commands are timed
# (wall clock: data read, Q, F^H d, CG, write; CUDA start-up included), and
# the images compared (relative difference after the best complex scale,
# bench/impatient-compare.py).
#   bench/bench-impatient-gpu.sh [IMPSRC] [DATA] [RUNS]
#     IMPSRC: IMPATIENT's source (default .impatient-src/src), DATA: the
#     64x64x16-4coils directory (default .impatient-src/data/64x64x16-4coils),
#     both made by bench/impatient-prepare.sh; RUNS timed runs (default 3)
#   env: OUT (logs, default ./gpu-out), LARMOR_CLI (use this larmor-cli, no
#     build), SERVED=1 (Larmor's commands through a warm larmor-cli serve), SEGS (IMPATIENT's -ntime_segs, default
#     "1 8": the field map is zero; 8 is its demos' setting), VARIANTS (Larmor's,
#     default "gpu-nufft gpu-phasor"), ARCH (default sm_90)
# Larmor is built as tests/gpu/run.sh builds it (its sysroot and pkg-config
# set-up is taken from that script), into build-dev.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
IMPSRC=${1:-.impatient-src/src}
DATA=${2:-.impatient-src/data/64x64x16-4coils}
RUNS=${3:-3}
OUT=${OUT:-$ROOT/gpu-out}
SEGS=${SEGS:-1 8}
VARIANTS=${VARIANTS:-gpu-nufft gpu-phasor}
ITERS=30
mkdir -p "$OUT"
exec > >(tee -a "$OUT/impatient.log") 2>&1
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1
T0=$(date +%s)
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; } # no bc on the device

# 1. IMPATIENT (in the background while Larmor builds)
bash bench/impatient-gpu-build.sh "$IMPSRC" /tmp/impatient-build "${ARCH:-sm_90}" >"$OUT/impatient-build.out" 2>&1 &
IMP_PID=$!

# 2. larmor-cli with CUDA, as tests/gpu/run.sh builds it (or LARMOR_CLI,
# a larmor-cli built elsewhere)
if [ -n "${LARMOR_CLI:-}" ]; then
    CLI=$LARMOR_CLI
else
    eval "$(sed -n '/^SYS=\/tmp\/sysroot/,/^echo "meson:/p' tests/gpu/run.sh)"
    B=build-dev
    $MESON setup $B -Dgui=disabled -Dismrmrd=disabled -Dcuda=enabled -Dnifti_include=$SYS/usr/include/nifti \
        >"$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; echo "meson setup failed"; exit 1; }
    ninja -C $B cli/larmor-cli cli/larmor-cli-full >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -20; echo "larmor build failed"; exit 1; }
    echo "larmor-cli built after $(( $(date +%s) - T0 )) s"
    CLI=./$B/cli/larmor-cli
fi
wait $IMP_PID
IMPRC=$?
cat "$OUT/impatient-build.out"
export XDG_CACHE_HOME=/tmp/larmor-cache

# IMPATIENT writes ixQ.dat, Q, FhD.file and out.file into its input folder
W=/tmp/impatient-data
rm -rf $W && cp -r "$DATA" $W
if [ $IMPRC -eq 0 ]; then
    MRI=$(tail -1 "$OUT/impatient-build.out")
    for L in $SEGS; do
        for _ in $(seq "$RUNS"); do
            rm -f $W/out.file
            t0=$(now)
            "$MRI" -idir $W -cg_num $ITERS -toeplitzGridding -ntime_segs $L -fdp 0 -gpu_id 0 >$OUT/imp_run.log 2>&1
            rc=$?
            t1=$(now)
            echo "impatient -toeplitzGridding -ntime_segs $L -cg_num $ITERS: rc $rc, wall $(sub $t1 $t0) s, $(grep -o 'CG Execution Time: [0-9.]* (ms)' $OUT/imp_run.log)"
        done
        [ -f $W/out.file ] && cp $W/out.file /tmp/imp_out_$L.file
        grep -iE "error|Q matri|Step|time" $OUT/imp_run.log | head -12
    done
else
    echo "IMPATIENT did not build: no IMPATIENT runs"
fi

# 3. Larmor on the same directory and GPU; SERVED=1: each command through a
# warm `larmor-cli serve` (started and warmed by one untimed command first)
if [ -n "${SERVED:-}" ]; then
    "$CLI" serve --socket /tmp/larmor-bench.sock --idle-exit 600 2>"$OUT/serve.log" &
    SERVE_PID=$!
    export LARMOR_SERVER=/tmp/larmor-bench.sock
    for _ in $(seq 50); do [ -S $LARMOR_SERVER ] && break; sleep 0.1; done
    $CLI recon --traj "$DATA" --method cg --variant gpu-nufft --lambda 0 --iters 2 --no-cache --out /tmp/warm.nii \
        >/dev/null 2>&1
    echo "larmor-cli commands below go through a warm server"
fi
for v in $VARIANTS; do
    for _ in $(seq "$RUNS"); do
        t0=$(now)
        $CLI recon --traj "$DATA" --method cg --variant $v --lambda 0 --iters $ITERS --no-cache --complex \
            --out /tmp/larmor_$v.cfl --json >/tmp/larmor_$v.json 2>$OUT/larmor_err.log
        rc=$?
        t1=$(now)
        echo "larmor-cli recon --variant $v --lambda 0 --iters $ITERS --no-cache: rc $rc, wall $(sub $t1 $t0) s, $(python3 -c "import json; j=json.load(open('/tmp/larmor_$v.json')); print('Q %.4f s, F^H d %.4f s, CG %.4f s, total %.4f s' % (j['time_q_s'], j['time_fhd_s'], j['time_cg_s'], j['time_total_s']))" 2>&1)"
    done
done
if [ -n "${SERVED:-}" ]; then
    kill "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID" 2>/dev/null
    unset LARMOR_SERVER
fi
# the converged reference (300 iterations) for both
$CLI recon --traj "$DATA" --method cg --lambda 1e-6 --iters 300 --no-cache --complex --out /tmp/larmor_ref.cfl >/dev/null 2>&1

# 4. Images
for L in $SEGS; do
    [ -f /tmp/imp_out_$L.file ] || continue
    for v in $VARIANTS; do
        echo "IMPATIENT (-ntime_segs $L) vs larmor $v: $(python3 bench/impatient-compare.py $W /tmp/imp_out_$L.file /tmp/larmor_$v.cfl)"
    done
    echo "IMPATIENT (-ntime_segs $L) vs 300-iteration reference: $(python3 bench/impatient-compare.py $W /tmp/imp_out_$L.file /tmp/larmor_ref.cfl --write /tmp/imp_$L.cfl)"
done
for v in $VARIANTS; do
    echo "larmor $v vs 300-iteration reference: $($CLI metrics --truth /tmp/larmor_ref.cfl --image /tmp/larmor_$v.cfl --scale-match)"
done
cp /tmp/larmor_gpu-nufft.cfl /tmp/larmor_gpu-nufft.hdr "$OUT"/ 2>/dev/null
cp /tmp/imp_1.cfl /tmp/imp_1.hdr "$OUT"/ 2>/dev/null
# 5. Where the difference comes from (DIAG=1): IMPATIENT at fewer iterations
# and with finer gridding against Larmor at each iteration count. The parts
# (exact E^H d and Q against IMPATIENT's gridded ones, its gridding emulated,
# CG with mixed operators): bench/impatient-diagnose.sh.
if [ -n "${DIAG:-}" ] && [ $IMPRC -eq 0 ]; then
    ITS=${DIAG_ITS:-5 10 20 25 30 40}
    for it in $ITS; do
        $CLI recon --traj "$DATA" --method cg --variant gpu-nufft --lambda 0 --iters $it --no-cache --complex \
            --out /tmp/larmor_it$it.cfl --json >/tmp/larmor_it$it.json 2>/dev/null
        echo "larmor $it iterations: final residual $(python3 -c "import json; print(json.load(open('/tmp/larmor_it$it.json'))['final_residual'])")"
    done
    for it in $ITS; do
        "$MRI" -idir $W -cg_num $it -toeplitzGridding -ntime_segs 1 -fdp 0 -gpu_id 0 >/dev/null 2>&1
        for jt in $ITS; do
            echo "IMPATIENT $it vs larmor $jt iterations: $(python3 bench/impatient-compare.py $W $W/out.file /tmp/larmor_it$jt.cfl | cut -d'(' -f1)"
        done
    done
    t0=$(now); $CLI variants >/dev/null 2>&1; t1=$(now)
    echo "larmor-cli variants (process start + CUDA initialisation, no reconstruction): $(sub $t1 $t0) s"
    for os in "1.5 2.0" "2.0 2.0"; do
        set -- $os
        "$MRI" -idir $W -cg_num $ITERS -toeplitzGridding -ntime_segs 1 -fdp 0 -gpu_id 0 -gridOS_Q $1 -gridOS_FH $2 >/dev/null 2>&1
        echo "$ITERS iterations, -gridOS_Q $1 -gridOS_FH $2: IMPATIENT vs larmor: $(python3 bench/impatient-compare.py $W $W/out.file /tmp/larmor_gpu-nufft.cfl)"
    done
    "$MRI" -idir $W -cg_num $ITERS -toeplitzDirect -ntime_segs 1 -fdp 0 -gpu_id 0 >/dev/null 2>&1
    echo "$ITERS iterations, -toeplitzDirect (exact Q and F^H d; 1 segment, so its Q bug does not matter with fm 0): IMPATIENT vs larmor: $(python3 bench/impatient-compare.py $W $W/out.file /tmp/larmor_gpu-nufft.cfl)"
fi
echo "done after $(( $(date +%s) - T0 )) s"
