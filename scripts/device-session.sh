#!/usr/bin/env bash
# The measurements issues 11 and 14 asked for, each as one device call on a
# bundle made here (scripts/device-bundle.sh; carry .devdeps, build-bundle
# and, for `one`, .impatient-src). docs/gpu-notes.md "Next lease" says why.
#
#   scripts/device-session.sh two    # a 2-GPU host: SENSE split traced, gpu-multi and split tests
#   scripts/device-session.sh one    # one GPU (an H200 if possible): served commands, type-1 NUFFT,
#                                    # fasttrig's tile, B128c8f, IMPATIENT with the exact Q
#   scripts/device-session.sh final  # every GPU test, sanitizers on the block product, B128c8f, NUFFT benches
#   scripts/device-session.sh s8     # as final without sanitizers, plus ncu's SASS counts of k_tb_xfused
#   scripts/device-session.sh h100   # every GPU test and B128c8f (the card the call got)
# Logs go to $OUT (the device tool returns it); each step has a time limit
# so that one stuck step cannot eat the lease.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
L=$OUT/session.log
T0=$(date +%s)
# shellcheck disable=SC1091
source build-bundle/run-env.sh
step() { echo "== $* ($(( $(date +%s) - T0 )) s)" | tee -a "$L"; }
run() { # seconds, command...
    local s=$1; shift
    timeout "$s" "$@" >>"$L" 2>&1
    echo "rc $?" >>"$L"
}
{ date -u; nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -4; } >>"$L" 2>&1
gpu_tests() { # every GPU test binary, each with its own log line
    step "every GPU test"
    for t in $B/test_gpu_* $B/test_fieldmap_op; do
        echo "-- $(basename $t)" >>"$L"
        XDG_CACHE_HOME=/tmp/cache-test run 200 $t
    done
}
nufft_benches() { # gpu-nufft's single-coil and 32-coil reconstructions, and its type 1 and 2 on B128
    step "B128 and B128c32, gpu-nufft"
    run 200 $B/larmor-cli bench --problem B128 --variants gpu-nufft
    run 200 $B/larmor-cli bench --problem B128c32 --variants gpu-nufft
    step "bench_nufft B128"; run 120 $B/bench_nufft --problem B128 --reps 30 --no-files
}
c8f_traced() { # runs: B128c8f's time-segmented reconstruction with the operator's phases
    step "B128c8f traced, $1 times"
    for _ in $(seq "$1"); do LARMOR_TRACE=1 run 200 $B/larmor-cli bench --problem B128c8f --variants gpu-nufft; done
}
case ${1:-} in
two)
    for D in 0 0,0 0,1 0,1,0,1; do
        step "B128c32 LARMOR_GPU_DEVICES=$D"
        LARMOR_TRACE=1 LARMOR_GPU_DEVICES=$D run 90 $B/larmor-cli bench --problem B128c32 --variants gpu-nufft
    done
    step "test_gpu_sense_split"; run 90 $B/test_gpu_sense_split
    step "test_gpu_multi"; XDG_CACHE_HOME=/tmp/cache-test run 120 $B/test_gpu_multi
    ;;
one)
    step "bench_nufft B128 (type 1 and 2)"; run 120 $B/bench_nufft --problem B128 --reps 30 --no-files
    step "gpu-fasttrig tile: per layout (default) and 128"
    run 150 $B/gpu_bench --problems B128 --variants gpu-fasttrig --skip-recon --no-tune --budget 60
    LARMOR_GPU_CM_TILE=128 run 150 $B/gpu_bench --problems B128 --variants gpu-fasttrig --skip-recon --no-tune --budget 60
    step "served B128 commands"
    LARMOR_CLI=$B/larmor-cli WORK=/tmp/startup run 200 bash scripts/bench-startup.sh B128 gpu-nufft 7
    step "cli-serve test"; run 120 bash tests/cli/test_cli_serve.sh $B/larmor-cli
    step "B128c8f"; run 200 $B/larmor-cli bench --problem B128c8f --variants gpu-nufft
    step "CPU NUFFT blocking on 16 cores (IMPATIENT's thin grid): slabs only (0) against x blocks (4)"
    for bpt in 0 4 0 4; do
        LARMOR_TRACE=1 LARMOR_NUFFT_BLOCKS_PER_THREAD=$bpt OMP_WAIT_POLICY=passive run 60 $B/larmor-cli recon \
            --traj .impatient-src/data/64x64x16-4coils --method cg --lambda 0 --iters 30 --no-cache \
            --variant cpu-nufft --out /tmp/imp-cpu.nii
    done
    step "IMPATIENT with the exact Q"
    [ -f .impatient-src/q/Q_stone.file ] && REUSE_ONLY=1 LARMOR_CLI=$B/larmor-cli OUT=$OUT run 200 bash scripts/impatient-diagnose.sh
    ;;
xfuse)
    step "test_gpu_timeseg3d (x last, fused block product)"; run 120 $B/test_gpu_timeseg3d
    step "B128c8f: x last and fused (default) against separate passes, traced"
    LARMOR_TRACE=1 run 200 $B/larmor-cli bench --problem B128c8f --variants gpu-nufft
    LARMOR_TRACE=1 LARMOR_GPU_BLOCK_XFUSE=0 run 200 $B/larmor-cli bench --problem B128c8f --variants gpu-nufft
    step "ncu: gpu-fasttrig F^H d (complex weights) and Q (real) kernels on B128"
    for w in 1 0; do
        run 200 ncu --clock-control none --set full --kernel-name-base demangled --kernel-name "regex:constmem<.bool.$w" \
            --launch-skip 40 --launch-count 1 -o "$OUT/fasttrig-$w" $B/gpu_bench --problems B128 \
            --variants gpu-fasttrig --skip-recon --no-tune --budget 60
        run 60 ncu --import "$OUT/fasttrig-$w.ncu-rep" --page details --print-units base
    done
    step "IMPATIENT with the exact Q"
    [ -f .impatient-src/q/Q_stone.file ] && REUSE_ONLY=1 LARMOR_CLI=$B/larmor-cli OUT=$OUT run 200 bash scripts/impatient-diagnose.sh
    ;;
fig9)
    step "paper kernels with complex weights and times: tests"
    run 200 $B/test_gpu_ksum
    run 200 $B/test_gpu_time
    step "B128: gpu-constmem and gpu-fasttrig (one constant array per tile)"
    run 200 $B/gpu_bench --problems B128 --variants gpu-constmem,gpu-fasttrig --skip-recon --no-tune --budget 60
    step "B64: the paper's kernels, Figure 9"
    run 300 $B/gpu_bench --problems B64 --variants gpu-base,gpu-regalloc,gpu-coalesce,gpu-constmem,gpu-fasttrig,gpu-tuned \
        --skip-recon --no-tune --budget 60
    step "ncu: the fused x kernel of time segmentation (B128c8f)"
    run 200 ncu --clock-control none --set full --kernel-name-base demangled --kernel-name "regex:k_tb_xfused" \
        --launch-skip 3 --launch-count 1 -o "$OUT/xfused" $B/larmor-cli bench --problem B128c8f --variants gpu-nufft
    run 60 ncu --import "$OUT/xfused.ncu-rep" --page details --print-units base
    ;;
f4)
    gpu_tests
    step "B128c8f traced"
    LARMOR_TRACE=1 run 200 $B/larmor-cli bench --problem B128c8f --variants gpu-nufft
    step "bench_nufft B128"; run 120 $B/bench_nufft --problem B128 --reps 30 --no-files
    step "gpu-constmem: smaller tiles (sincosf's own constants share the cache?)"
    for tile in 16 32; do
        LARMOR_GPU_CM_TILE=$tile run 200 $B/gpu_bench --problems B64 --variants gpu-constmem --skip-recon --no-tune --budget 60
    done
    ;;
s8)
    gpu_tests
    c8f_traced 2
    nufft_benches
    step "ncu: k_tb_xfused, source counters (SASS)"
    run 200 ncu --clock-control none --section SourceCounters --section WarpStateStats --section InstructionStats \
        --section SchedulerStats --section Occupancy --section SpeedOfLight \
        --kernel-name-base demangled --kernel-name "regex:k_tb_xfused" --launch-skip 3 --launch-count 1 \
        -o "$OUT/xf" $B/larmor-cli bench --problem B128c8f --variants gpu-nufft
    run 60 ncu --import "$OUT/xf.ncu-rep" --page details --print-units base
    ncu --import "$OUT/xf.ncu-rep" --page source --csv --print-source sass >"$OUT/xf-sass.csv" 2>>"$L"
    xz -T4 "$OUT/xf-sass.csv"; rm -f "$OUT/xf.ncu-rep"
    ;;
final)
    gpu_tests
    step "compute-sanitizer memcheck and racecheck: test_gpu_timeseg3d (segmented E^H d, fused block product)"
    for tool in memcheck racecheck; do
        XDG_CACHE_HOME=/tmp/cache-san run 300 compute-sanitizer --tool $tool --error-exitcode 9 $B/test_gpu_timeseg3d
    done
    c8f_traced 3
    nufft_benches
    ;;
h100)
    gpu_tests
    c8f_traced 3
    ;;
last)
    step "fallback and served-command tests"
    XDG_CACHE_HOME=/tmp/cache-fb run 200 $B/test_gpu_fallback
    run 120 bash tests/cli/test_cli_serve.sh $B/larmor-cli
    step "Figure 9 on B64 (defaults) and constmem/fasttrig on B128"
    run 300 $B/gpu_bench --problems B64 --variants gpu-base,gpu-regalloc,gpu-coalesce,gpu-constmem,gpu-fasttrig,gpu-tuned \
        --skip-recon --no-tune --budget 60
    run 200 $B/gpu_bench --problems B128 --variants gpu-constmem,gpu-fasttrig,gpu-tuned --skip-recon --no-tune --budget 60
    step "served B128 commands"
    CONFIGS="served" LARMOR_CLI=$B/larmor-cli WORK=/tmp/startup run 200 bash scripts/bench-startup.sh B128 gpu-nufft 7
    ;;
*)
    echo "usage: scripts/device-session.sh one|two|xfuse|fig9|f4|s8|final|h100|last" >&2
    exit 2
    ;;
esac
step "end"
cat "$L"
