#!/usr/bin/env bash
# Quality benchmark (issue: CPU engine, "Quality"): for each problem, the two
# gridding baselines (scale-matched, as the paper scores them) and CG with
# each regulariser over a lambda sweep, keeping the best lambda per
# regulariser. Usage: bench/quality-sweep.sh VARIANT PROBLEM...  (e.g.
#   bench/quality-sweep.sh cpu-nufft B64 B64n B128 B128n)
# Set LARMOR_CLI to the larmor-cli binary (default build/cli/larmor-cli).
set -euo pipefail
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
VARIANT=$1; shift
W=${SWEEP_DIR:-/tmp/larmor-sweep}
mkdir -p $W
: > $W/runs.jsonl
for P in "$@"; do
  D=$W/$P
  N=$(echo "$P" | tr -dc 0-9)
  [ -f $D/traj.cfl ] || $CLI phantom --problem $P --out $D
  common=(--traj $D/traj --kspace $D/kspace --matrix $N --truth $D/truth.nii.gz --out $W/out.nii --json)
  for m in grid-linear grid-kb; do
    $CLI recon "${common[@]}" --method $m | sed "s/^{/{\"problem\": \"$P\", /" >> $W/runs.jsonl
  done
  for reg in identity gradient anatomical; do
    for lam in 0.01 0.03 0.1 0.3 1 3 10 30 100; do
      $CLI recon "${common[@]}" --method cg --variant $VARIANT --reg $reg --ref $D/ref.nii.gz --lambda $lam \
        | sed "s/^{/{\"problem\": \"$P\", /" >> $W/runs.jsonl
    done
  done
done
python3 - $W/runs.jsonl <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
probs = []
for r in runs:
    if r["problem"] not in probs: probs.append(r["problem"])
print("%-7s %-22s %8s %9s %9s" % ("problem", "method", "lambda", "PSNR dB", "error %"))
for p in probs:
    rs = [r for r in runs if r["problem"] == p]
    rows = []
    for m in ("grid-linear", "grid-kb"):
        r = [x for x in rs if x["method"] == m][0]
        rows.append((m + " (scaled)", None, r["psnr_db"], r["percent_error"]))
    for reg in ("identity", "gradient", "anatomical"):
        c = [x for x in rs if x["method"] == "cg" and x["reg"] == reg]
        b = min(c, key=lambda x: x["percent_error"])
        rows.append(("cg " + reg, b["lambda"], b["psnr_db"], b["percent_error"]))
    for name, lam, ps, er in rows:
        print("%-7s %-22s %8s %9.2f %9.2f" % (p, name, "" if lam is None else "%g" % lam, ps, er))
    lin = rows[0]; best = min(rows[2:], key=lambda x: x[3])
    print("%-7s best CG (%s, lambda %g): error %.2f %% vs trilinear %.2f %% (ratio %.2f), PSNR %+.2f dB" %
          (p, best[0], best[1], best[3], lin[3], best[3] / lin[3], best[2] - lin[2]))
PY
