#!/bin/bash
# Where one `larmor-cli recon` command's wall time goes (issue 14: B128 with
# gpu-nufft under 0.25 s per command, process start included).
#
#   bench/bench-startup.sh [PROBLEM [VARIANT [REPS]]]     (default B128 gpu-nufft 5)
#
# PROBLEM: a benchmark problem (made by larmor-cli phantom) or a directory
# that `recon --traj DIR` reads whole (IMPATIENT's, with its matrix); EXTRA
# adds options (e.g. "--lambda 0 --iters 30 --no-cache"); OUTF names the
# image written (default out.nii; out.nii.gz for compressed output).
#
# Runs the command REPS times per configuration with LARMOR_TRACE=1
# (larmor-cli and the library print epoch times at their milestones; the
# wrapper notes the process's start and end) and prints, per configuration,
# the median time from each milestone to the next:
#   default      the CUDA context made in the background while inputs are read
#   no-prewarm   LARMOR_GPU_PREWARM=0
#   served       through `larmor-cli serve` (LARMOR_SERVER): one warm server
#                process, started before and warmed by one untimed command
#   cuda-floor   not Larmor: a minimal CUDA program (count devices, make the
#                context, allocate and free 1 GiB, exit), built here with nvcc:
#                what any CUDA program pays on this machine
# Set CONFIGS to choose (default: all three). Measured on the H100 device
# (2026-11-25): skipping the exit handlers (_exit) or trimming the GPU pools
# before exit changed nothing: the ~0.1 s at exit is the driver's teardown.
set -eu
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
P=${1:-B128}
V=${2:-gpu-nufft}
R=${3:-5}
W=${WORK:-/tmp/larmor-startup}
CONFIGS=${CONFIGS:-default no-prewarm served cuda-floor}
OUTF=${OUTF:-out.nii}
mkdir -p "$W"
if [ -d "$P" ]; then
    INPUTS="--traj $P"
elif [ "$CONFIGS" != cuda-floor ]; then
    [ -f "$W/$P/traj.cfl" ] || "$CLI" phantom --problem "$P" --out "$W/$P" >/dev/null
    INPUTS="--traj $W/$P/traj --kspace $W/$P/kspace --matrix $(python3 -c "print({'B32':32,'B64':64,'B128':128}.get('$P', 128))")"
fi
if [[ " $CONFIGS " == *" cuda-floor "* ]]; then
    cat >"$W/floor.cu" <<'CU'
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>
static void mark(const char *w)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(stderr, "larmor-trace %.6f %s\n", ts.tv_sec + 1e-9 * ts.tv_nsec, w);
}
int main(void)
{
    int n = 0;
    void *p = NULL;
    mark("main");
    cudaGetDeviceCount(&n);
    mark("CUDA devices counted");
    cudaFree(0);
    mark("CUDA context made");
    cudaMalloc(&p, 1 << 30);
    cudaMemset(p, 0, 1 << 30);
    cudaDeviceSynchronize();
    cudaFree(p);
    mark("1 GiB allocated, cleared, freed");
    return 0;
}
CU
    nvcc -O2 -o "$W/floor" "$W/floor.cu"
fi
# One configuration's REPS runs of a command: its milestones, between the
# wrapper's own start and end times, labelled with the configuration.
timed_runs() {
    local cfg=$1
    shift
    for i in $(seq "$R"); do
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>"$W/run.err"
        t1=$(date +%s.%N)
        echo "$cfg $t0 process-start"
        grep '^larmor-trace ' "$W/run.err" | sed "s/^larmor-trace /$cfg /"
        echo "$cfg $t1 process-end"
        echo "$cfg - next"
    done
}
for cfg in $CONFIGS; do
    case $cfg in
    cuda-floor) timed_runs "$cfg" "$W/floor"; continue ;;
    default) envs="" ;;
    no-prewarm) envs="LARMOR_GPU_PREWARM=0" ;;
    served)
        rm -f "$W/serve.sock"
        LARMOR_TRACE=1 "$CLI" serve --socket "$W/serve.sock" --idle-exit 300 2>"$W/serve.log" &
        for _ in $(seq 100); do grep -q listening "$W/serve.log" 2>/dev/null && break; sleep 0.1; done
        envs="LARMOR_SERVER=$W/serve.sock"
        env $envs "$CLI" recon $INPUTS --variant "$V" ${EXTRA:-} --out "$W/$OUTF" >/dev/null 2>&1 ;;
    *) echo "unknown configuration $cfg" >&2; exit 2 ;;
    esac
    timed_runs "$cfg" env $envs LARMOR_TRACE=1 "$CLI" recon $INPUTS --variant "$V" ${EXTRA:-} --out "$W/$OUTF"
    [ "$cfg" = served ] && kill %1 2>/dev/null && wait
done | tee "$W/startup.log" | python3 -c "
import sys, statistics as st
runs, cur = {}, []
for line in sys.stdin:
    cfg, t, what = line.rstrip('\n').split(' ', 2)
    if what == 'next':
        runs.setdefault(cfg, []).append(sorted(cur)); cur = []
    else:
        cur.append((float(t), what))
print('$(basename $P) $V ${EXTRA:-}: median over $R commands of the time from each milestone to the next, ms')
for cfg, rs in runs.items():
    steps = {}
    for r in rs:
        for (a, wa), (b, wb) in zip(r, r[1:]):
            steps.setdefault('%s -> %s' % (wa, wb), []).append((b - a) * 1e3)
        steps.setdefault('WALL', []).append((r[-1][0] - r[0][0]) * 1e3)
    print('## %s' % cfg)
    for k, v in steps.items():
        print('  %8.1f  %s%s' % (st.median(v), k, '' if len(v) == len(rs) else ' (in %d of %d runs)' % (len(v), len(rs))))
"
