#!/bin/bash
# Issue 26, speed 1 and 3, in one run on a GPU host:
#
#   bench/bench-served.sh [REPS]          (default 7; LARMOR_CLI as bench-startup.sh)
#
# 1. A one-GPU command with every GPU visible against one visible: B128
#    gpu-nufft with CUDA_VISIBLE_DEVICES unset (larmor-cli narrows it to the
#    first GPU), set to 0, and unset with LARMOR_GPU_DEVICES listing every
#    GPU (which keeps them all visible: the cost being removed). Target:
#    unset at most 1.1x the "0" wall. With strace installed it also checks
#    that the narrowed command opens no /dev/nvidiaN but /dev/nvidia0.
# 2. The served B128 gpu-nufft command on one trajectory (bench-startup.sh
#    CONFIGS=served), writing .nii and .nii.gz. Targets: wall at most 50 ms,
#    CG at most 25 ms.
set -u
cd "$(dirname "$0")/.."
R=${1:-7}
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
export LARMOR_CLI=$CLI
N=$(nvidia-smi -L 2>/dev/null | wc -l)
ALL=$(seq -s, 0 $((N > 0 ? N - 1 : 0)))
echo "== $(date -u +%FT%TZ) $(hostname): $N GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
wall() { grep -E '^## |WALL|devices counted' ; }
echo "== 1. visible GPUs (B128 gpu-nufft, medians of $R commands, ms)"
echo "-- CUDA_VISIBLE_DEVICES unset (narrowed by larmor-cli)"
(unset CUDA_VISIBLE_DEVICES; CONFIGS=default bash bench/bench-startup.sh B128 gpu-nufft "$R" | wall)
echo "-- CUDA_VISIBLE_DEVICES=0"
CUDA_VISIBLE_DEVICES=0 CONFIGS=default bash bench/bench-startup.sh B128 gpu-nufft "$R" | wall
if [ "$N" -gt 1 ]; then
    echo "-- every GPU visible (LARMOR_GPU_DEVICES=$ALL keeps them: the old cost)"
    (unset CUDA_VISIBLE_DEVICES; LARMOR_GPU_DEVICES=$ALL CONFIGS=default bash bench/bench-startup.sh B128 gpu-nufft "$R" | wall)
fi
if command -v strace >/dev/null; then
    W=${WORK:-/tmp/larmor-startup}
    (unset CUDA_VISIBLE_DEVICES; strace -f -e trace=openat -o "$W/strace.txt" "$CLI" recon --traj "$W/B128/traj" \
        --kspace "$W/B128/kspace" --matrix 128 --variant gpu-nufft --out "$W/out.nii" >/dev/null 2>&1)
    echo "-- device files opened by the narrowed command: $(grep -o '/dev/nvidia[0-9]*' "$W/strace.txt" | sort -u | tr '\n' ' ')"
else
    echo "-- (strace not installed: device files not checked)"
fi
echo "== 2. served B128 gpu-nufft, one trajectory (medians of $R, ms)"
for o in out.nii out.nii.gz; do
    echo "-- $o"
    OUTF=$o CONFIGS=served bash bench/bench-startup.sh B128 gpu-nufft "$R"
done
echo "-- the served CG's trace (LARMOR_TRACE phases of the last command)"
grep -E 'CG|cg' "${WORK:-/tmp/larmor-startup}/run.err" | tail -8
