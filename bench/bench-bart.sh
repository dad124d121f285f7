#!/usr/bin/env bash
# Whole-reconstruction comparison with BART 0.8 on the same trajectory and
# k-space (issue: CPU engine, "at most one third of BART's wall time, at no
# more percent error"). Usage: bench/bench-bart.sh [PROBLEM] [LAMBDA] [VARIANT]
# Writes under ./bench-bart/PROBLEM; prints both wall times and errors.
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-B128}; LAMBDA=${2:-0.01}; VARIANT=${3:-cpu-nufft}
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
D=bench-bart/$P
command -v bart >/dev/null || { echo "bart is not installed (apt-get install bart)"; exit 1; }
[ -f $D/traj.cfl ] || $CLI phantom --problem "$P" --out $D
N=$(echo "$P" | tr -dc 0-9)
bart ones 4 $N $N $N 1 $D/sens
# BART's pics, l2 (Tikhonov) regularisation, 60 iterations, single coil.
t0=$(date +%s.%N)
bart pics -S -l2 -r "$LAMBDA" -i 60 -t $D/traj $D/kspace $D/sens $D/bart >$D/bart.log 2>&1
t1=$(date +%s.%N)
bart_s=$(echo "$t1 - $t0" | bc)
# Larmor: Q (no cache), F^H d and 60 CG iterations, whole command timed.
t0=$(date +%s.%N)
$CLI recon --traj $D/traj --kspace $D/kspace --matrix $N --method cg --variant "$VARIANT" \
    --lambda "$LAMBDA" --iters 60 --no-cache --truth $D/truth.nii.gz --out $D/larmor.nii.gz --json >$D/larmor.json
t1=$(date +%s.%N)
larmor_s=$(echo "$t1 - $t0" | bc)
echo "BART pics -l2 -r $LAMBDA -i 60: ${bart_s} s"
$CLI metrics --truth $D/truth.nii.gz --image $D/bart.cfl
$CLI metrics --truth $D/truth.nii.gz --image $D/bart.cfl --scale-match
echo "larmor-cli recon ($VARIANT, lambda $LAMBDA, 60 iterations, no Q cache): ${larmor_s} s"
cat $D/larmor.json
