#!/usr/bin/env bash
# Where IMPATIENT's GPU image differs from Larmor's (issue 11), by parts:
# runs IMPATIENT (-toeplitzDirect, 1 iteration: its exact F^H d; and
# -toeplitzGridding at its default oversampling and at -gridOS_Q 2
# -gridOS_FH 2, writing Q) and larmor-cli (gpu-nufft, gpu-phasor) at
# 1, 5, 10 and 20 CG iterations (lambda 0, 1 time segment), keeps every
# image, F^H d and Q, then bench/impatient-diagnose.py
# compares them with the exact operators and its own CG. Back in $OUT (the
# device returns at most 8 files): diagnose.txt, diagnose-run.log, runs.tar
# (the images and F^H d) and the two Q files; build and run logs stay in /tmp.
# Last, IMPATIENT's own CG with exact operators (-toeplitzDirect, its exact
# F^H d, and -reuseQ with the exact Q the analysis writes) against Larmor.
#   bench/impatient-diagnose.sh [IMPSRC] [DATA]   (as bench-impatient-gpu.sh)
#   REUSE_ONLY=1 LARMOR_CLI=... bench/impatient-diagnose.sh   (the last stage alone; see below)
# On the device: carry .impatient-src and .devdeps.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
IMPSRC=${1:-.impatient-src/src}
DATA=${2:-.impatient-src/data/64x64x16-4coils}
OUT=${OUT:-$ROOT/gpu-out}
RUNS=/tmp/diag-runs
LOGS=/tmp/diag-logs
rm -rf "$RUNS" && mkdir -p "$RUNS" "$LOGS" "$OUT"
exec > >(tee -a "$OUT/diagnose-run.log") 2>&1
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
T0=$(date +%s)
W=/tmp/impatient-diag
imp() { # TAG ITERS OPTIONS...
    local tag=$1 it=$2
    shift 2
    rm -rf $W && cp -r "$DATA" $W
    # its parser takes -ntime_segs only after -toeplitz*
    "$MRI" -idir $W -cg_num "$it" "$@" -ntime_segs 1 -fdp 0 -gpu_id 0 >"$LOGS/imp_${tag}_it$it.log" 2>&1
    echo "impatient $* -cg_num $it: rc $?"
    cp $W/out.file "$RUNS/${tag}_it$it.file"
    cp $W/FhD.file "$RUNS/${tag}_fhd.file"
    [ -f $W/Q_stone.file ] && cp $W/Q_stone.file "$RUNS/${tag}_Q.file"
    return 0
}
# IMPATIENT's own CG with exact operators: its direct F^H d and the exact Q
# (-reuseQ QDIR; its own direct Q is wrong with more than one segment),
# against Larmor's gpu-phasor at the same iteration counts.
reuse_stage() { # QDIR
    for it in $ITS 30; do
        imp reuse "$it" -toeplitzDirect -reuseQ "$1"
        [ -f "$RUNS/larmor_gpu-phasor_it$it.cfl" ] || $CLI recon --traj "$DATA" --method cg --variant gpu-phasor \
            --lambda 0 --iters "$it" --no-cache --complex --out "$RUNS/larmor_gpu-phasor_it$it.cfl" >/dev/null 2>&1
        echo "IMPATIENT -toeplitzDirect -reuseQ (exact Q), $it iterations vs larmor gpu-phasor $it: $(python3 \
            bench/impatient-compare.py "$DATA" "$RUNS/reuse_it$it.file" "$RUNS/larmor_gpu-phasor_it$it.cfl")"
    done
}
ITS="1 5 10 20"
build_impatient() { # the binary's path goes on the log's last line
    bash bench/impatient-gpu-build.sh "$IMPSRC" /tmp/impatient-build "${ARCH:-sm_90}" >"$LOGS/impatient-build.out" 2>&1
}
if [ -n "${REUSE_ONLY:-}" ]; then
    # Only the last stage: Larmor built elsewhere (LARMOR_CLI),
    # the exact Q written beforehand on any machine by
    # `impatient-diagnose.py DATA RUNS --write-q QDIR` (QEXACT, default
    # .impatient-src/q): no Larmor build, no numpy here.
    build_impatient || { cat "$LOGS/impatient-build.out"; echo "IMPATIENT did not build"; exit 1; }
    MRI=$(tail -1 "$LOGS/impatient-build.out")
    CLI=${LARMOR_CLI:?LARMOR_CLI names the larmor-cli to compare with}
    export XDG_CACHE_HOME=/tmp/larmor-cache
    reuse_stage "${QEXACT:-.impatient-src/q}"
    # the images, for impatient-diagnose.py against the exact CG
    (cd "$RUNS" && tar czf "$OUT/imp-runs.tar.gz" reuse_it*.file larmor_gpu-phasor_it*)
    echo "reuse stage done after $(( $(date +%s) - T0 )) s"
    exit 0
fi
build_impatient &
IMP_PID=$!
eval "$(sed -n '/^SYS=\/tmp\/sysroot/,/^echo "meson:/p' tests/gpu/run.sh)"
B=build-dev
$MESON setup $B -Dgui=disabled -Dismrmrd=disabled -Dcuda=enabled -Dnifti_include=$SYS/usr/include/nifti \
    >"$LOGS/setup.log" 2>&1 || { tail -20 "$LOGS/setup.log"; echo "meson setup failed"; exit 1; }
ninja -C $B cli/larmor-cli cli/larmor-cli-full >"$LOGS/build.log" 2>&1 || { grep -E "error" "$LOGS/build.log" | head -20; echo "larmor build failed"; exit 1; }
wait $IMP_PID || { cat "$LOGS/impatient-build.out"; echo "IMPATIENT did not build"; exit 1; }
MRI=$(tail -1 "$LOGS/impatient-build.out")
echo "both built after $(( $(date +%s) - T0 )) s"
CLI=./$B/cli/larmor-cli
export XDG_CACHE_HOME=/tmp/larmor-cache
imp direct 1 -toeplitzDirect
for it in $ITS; do
    imp gdef "$it" -toeplitzGridding -writeQ
    imp gos2 "$it" -toeplitzGridding -writeQ -gridOS_Q 2 -gridOS_FH 2
done
for v in gpu-nufft gpu-phasor; do
    for it in $ITS; do
        $CLI recon --traj "$DATA" --method cg --variant $v --lambda 0 --iters "$it" --no-cache --complex \
            --out "$RUNS/larmor_${v}_it$it.cfl" >/dev/null 2>"$LOGS/larmor_err.log" || { echo "larmor $v $it failed"; cat "$LOGS/larmor_err.log"; }
    done
done
echo "runs done after $(( $(date +%s) - T0 )) s"
python3 -c "import scipy; print('scipy', scipy.__version__)" 2>&1
python3 bench/impatient-diagnose.py "$DATA" "$RUNS" --write-q /tmp/qexact >"$OUT/diagnose.txt" 2>&1
echo "analysis rc $? after $(( $(date +%s) - T0 )) s"
cat "$OUT/diagnose.txt"
reuse_stage /tmp/qexact
mv "$RUNS"/*_Q.file "$OUT"/ 2>/dev/null
tar -C "$RUNS" --exclude=exact_b_q.npz -cf "$OUT/runs.tar" .
