#!/usr/bin/env bash
# Total variation against BART 0.8's (issue 12, "Non-quadratic priors"):
# `bart pics -R T:7:0:LAMBDA -i ITERS` and `larmor-cli recon --reg tv` on the
# same cfl trajectory and k-space, plus Larmor's Tikhonov for reference, each
# at a sweep of lambdas. Usage: bench/bench-bart-tv.sh [PROBLEM] [LARMOR_ITERS]
# Writes under ./bench-bart/PROBLEM-tv; prints one line per run: wall, user
# and system CPU seconds (whole commands; Larmor computes Q, no cache) and
# the error (BART's scale-matched: its output needs a scale factor).
# OpenMP threads wait passively: on a shared machine spinning threads at
# barriers otherwise dominate both programs' times (5-6x seen here).
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-B64n}; IT=${2:-10}
CLI=$(realpath "${LARMOR_CLI:-build/cli/larmor-cli}")
D=bench-bart/$P-tv
command -v bart >/dev/null || { echo "bart is not installed (apt-get install bart)"; exit 1; }
mkdir -p $D
[ -f $D/traj.cfl ] || $CLI phantom --problem "$P" --out $D >/dev/null
N=$(echo "$P" | tr -dc 0-9)
bart ones 4 $N $N $N 1 $D/sens
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
run() { /usr/bin/time -o $D/time -f "%e %U %S" taskset -c 0,1 "$@"; read -r w u s < $D/time; }
for L in ${BART_LAMBDAS:-0.0005 0.001 0.002 0.003}; do
  run bart pics -S -R T:7:0:$L -i 30 -t $D/traj $D/kspace $D/sens $D/bart-$L >$D/bart-$L.log 2>&1
  e=$($CLI metrics --truth $D/truth.nii.gz --image $D/bart-$L.cfl --scale-match --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["percent_error"],2))')
  echo "bart pics -S -R T:7:0:$L -i 30: wall $w s, CPU $u + $s s, error $e % (scale-matched)"
done
rec() {
  local reg=$1 L=$2 I=$3
  run $CLI recon --traj $D/traj.cfl --kspace $D/kspace.cfl --matrix $N --method cg --variant cpu-nufft --reg $reg \
      --lambda $L --iters $I --no-cache --truth $D/truth.nii.gz --out $D/larmor-$reg-$L-$I.nii.gz --json >$D/larmor.json
  e=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["percent_error"],2))' $D/larmor.json)
  echo "larmor-cli recon --reg $reg --lambda $L --iters $I: wall $w s, CPU $u + $s s, error $e %"
}
for L in ${TV_LAMBDAS:-0.0015 0.002 0.003}; do rec tv $L $IT; done
rec tv 0.002 30
for L in ${TIK_LAMBDAS:-10 30 100}; do rec identity $L 60; done
