#!/usr/bin/env bash
# Automatic lambda against a sweep (issue 12, docs/lambda.md): for each
# problem and the identity and gradient priors, the best lambda of the
# quality sweep's grid (bench/quality-sweep.sh: 0.01 ... 100, plus 300)
# and `--lambda auto`; the target is err_auto <= 1.1 err_best.
# Multi-coil problems are reconstructed by SENSE with the maps that
# `larmor-cli phantom` writes. Usage:
#   bench/lambda-auto-check.sh VARIANT PROBLEM...   (e.g. cpu-nufft B64n B64c8n B128n)
# LARMOR_CLI: the larmor-cli binary (default build/cli/larmor-cli);
# CRITERION: --lambda-criterion for the auto runs (default: the regulariser's);
# REGS: the priors (default "identity gradient"; tv and wavelet take their own
# grids, 0.0005 ... 0.01 and 0.003 ... 0.04, and 10 / 20 ADMM iterations, the
# settings of BENCHMARKS.md "Non-quadratic priors").
set -euo pipefail
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
VARIANT=$1; shift
W=${SWEEP_DIR:-/tmp/larmor-lambda}
mkdir -p $W
: > $W/runs.jsonl
for P in "$@"; do
  D=$W/$P
  N=$(echo "$P" | sed 's/^B\([0-9]*\).*/\1/')
  [ -f $D/traj.cfl ] || $CLI phantom --problem $P --out $D > /dev/null
  common=(--traj $D/traj --kspace $D/kspace --matrix $N --truth $D/truth.nii.gz --out $W/out.nii --json
          --method cg --variant $VARIANT)
  [ -f $D/sens.cfl ] && common+=(--sens $D/sens)
  for reg in ${REGS:-identity gradient}; do
    grid="0.01 0.03 0.1 0.3 1 3 10 30 100 300"; its=()
    [ $reg = tv ] && grid="0.0005 0.001 0.0015 0.002 0.003 0.005 0.01" && its=(--iters 10)
    [ $reg = wavelet ] && grid="0.003 0.005 0.01 0.02 0.04" && its=(--iters 20)
    for lam in $grid; do
      $CLI recon "${common[@]}" "${its[@]}" --reg $reg --lambda $lam | sed "s/^{/{\"problem\": \"$P\", /" >> $W/runs.jsonl
    done
    $CLI recon "${common[@]}" "${its[@]}" --reg $reg --lambda auto ${CRITERION:+--lambda-criterion $CRITERION} \
      2>> $W/auto.log | sed "s/^{/{\"problem\": \"$P\", /" >> $W/runs.jsonl
  done
done
python3 - $W/runs.jsonl <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
probs = []
for r in runs:
    if r["problem"] not in probs: probs.append(r["problem"])
print("| problem | prior | best lambda (sweep) | error % | auto lambda | criterion | error % | ratio | target | "
      "auto cost: trial solves / CG iters / s | final CG s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
ok = True
for p in probs:
    for reg in ("identity", "gradient", "tv", "wavelet"):
        rs = [r for r in runs if r["problem"] == p and r["reg"] == reg]
        if not rs:
            continue
        sweep = [r for r in rs if not r["lambda_auto"]]
        auto = [r for r in rs if r["lambda_auto"]][0]
        best = min(sweep, key=lambda x: x["percent_error"])
        ratio = auto["percent_error"] / best["percent_error"]
        ok &= ratio <= 1.1
        print("| %s | %s | %g | %.2f | %.3g | %s | %.2f | %.3f | %s | %d / %d / %.1f | %.1f |" %
              (p, reg, best["lambda"], best["percent_error"], auto["lambda"], auto["lambda_note"],
               auto["percent_error"], ratio, "met" if ratio <= 1.1 else "MISSED", auto["lambda_solves"],
               auto["lambda_iters"], auto["time_lambda_s"], auto["time_cg_s"]))
print("all targets met" if ok else "some targets missed")
PY
