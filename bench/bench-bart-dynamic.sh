#!/usr/bin/env bash
# Dynamic reconstruction against BART 0.8 (issue 23, docs/dynamic.md): D128c8
# with its true maps, BART `pics -S -R T:1024:0:LAMBDA -i ITERS` (temporal TV
# over dimension 10) against Larmor's temporal TV (bench_dyn: the error,
# also scale-matched, after every ADMM iteration with the solve's time, one
# model for the whole sweep; frame-by-frame SENSE; the automatic lambda),
# then Larmor again with the static runs' box voxel basis. Errors over all
# frames, BART's scale-matched (its output needs a scale factor), by
# bench/dyn_error.py.
# Usage: bench/bench-bart-dynamic.sh [ITERS] [BART_RUNS] [LARMOR_LAMBDAS]
#   BART_RUNS: LAMBDA:ITERS pairs, e.g. "0.001:50 0.001:100"
set -euo pipefail
cd "$(dirname "$0")/.."
IT=${1:-40}; BL=${2:-"0.001:50 0.001:100 0.003:30"}; LL=${3:-"0.015 0.02 0.03"}
CLI=$(realpath "${LARMOR_CLI:-build/cli/larmor-cli}")
D=bench-bart/D128c8
command -v bart >/dev/null || { echo "bart is not installed (apt-get install bart)"; exit 1; }
mkdir -p $D
[ -f $D/traj.cfl ] || $CLI phantom --problem D128c8 --out $D >/dev/null
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
for R in $BL; do
  L=${R%%:*}; I=${R#*:}
  /usr/bin/time -o $D/time -f "%e %U %S" taskset -c 0,1 bart pics -S -R T:1024:0:$L -i $I -t $D/traj $D/kspace \
      $D/sens $D/bart-$L-$I >$D/bart-$L-$I.log 2>&1
  read -r w u s < $D/time
  read -r plain matched < <(/usr/bin/python3 bench/dyn_error.py $D/truth.nii.gz $D/bart-$L-$I.cfl)
  echo "bart pics -S -R T:1024:0:$L -i $I: wall $w s, CPU $u + $s s, error $matched % (scale-matched; $plain unscaled)"
done
# shellcheck disable=SC2086
LM_BENCH_AUTO=1 taskset -c 0,1 build/tests/recon/bench_dyn D128c8 "$IT" ttv $LL
# and with the static runs' box basis (docs/dynamic.md, "Voxel basis")
# shellcheck disable=SC2086
LM_BENCH_BASIS=box taskset -c 0,1 build/tests/recon/bench_dyn D128c8 "$IT" ttv $LL
