#!/usr/bin/env bash
# Field-map corrected reconstruction against BART 0.8's uncorrected one on
# the same data (issue 26, speed 5): S128c8f (2D spiral, 8 coils, 25 ms
# readouts, field map up to 150 Hz) from `larmor-cli phantom`, written as
# cfl. BART cannot correct off-resonance, so `bart pics -l2` reconstructs
# without it; Larmor reconstructs with the field map (time-segmented,
# --segments auto) and, for reference, without it. Both with the true coil
# maps, the same iterations, whole commands timed (Larmor computes Q: no
# cache), interleaved REPS times, pinned to two cores.
# Usage: bench/bench-bart-fieldmap.sh [ITERS] [REPS] [LAMBDA]
# Prints one line per run (wall, user and system CPU seconds, error %; BART's
# scale-matched), then per tool the minimum and the spread of wall and CPU.
# OpenMP threads wait passively, as in bench-bart-tv.sh; WAIT=default leaves
# the OpenMP wait policy as a user's shell has it (unset: threads spin a
# while before they sleep). LARMOR_CLI_BEFORE=path adds another build's
# corrected reconstruction to each round (a before/after comparison).
set -euo pipefail
cd "$(dirname "$0")/.."
IT=${1:-40}; REPS=${2:-3}; LAMBDA=${3:-0.01}
CLI=$(realpath "${LARMOR_CLI:-build/cli/larmor-cli}")
D=bench-bart/S128c8f
command -v bart >/dev/null || { echo "bart is not installed (apt-get install bart)"; exit 1; }
mkdir -p $D
[ -f $D/times.cfl ] || $CLI phantom --problem S128c8f --out $D >/dev/null
export OMP_NUM_THREADS=2
if [ "${WAIT:-passive}" = passive ]; then export OMP_WAIT_POLICY=passive; else unset OMP_WAIT_POLICY; fi
BEFORE=${LARMOR_CLI_BEFORE:+$(realpath "$LARMOR_CLI_BEFORE")}
run() { /usr/bin/time -o $D/time -f "%e %U %S" taskset -c 0,1 "$@"; read -r w u s < $D/time; }
pe() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["percent_error"],2))' "$1"; }
: >$D/runs
for r in $(seq "$REPS"); do
  run bart pics -S -l2 -r "$LAMBDA" -i "$IT" -t $D/traj $D/kspace $D/sens $D/bart >$D/bart.log 2>&1
  $CLI metrics --truth $D/truth.nii.gz --image $D/bart.cfl --scale-match --json >$D/bart.json
  echo "bart-uncorrected $w $u $s $(pe $D/bart.json)" | tee -a $D/runs
  for mode in corrected uncorrected ${BEFORE:+before-corrected}; do
    fm=(); [ $mode != uncorrected ] && fm=(--fieldmap $D/fieldmap.nii.gz --times $D/times.cfl)
    cli=$CLI; [ $mode = before-corrected ] && cli=$BEFORE
    run $cli recon --traj $D/traj.cfl --kspace $D/kspace.cfl --sens $D/sens.cfl "${fm[@]}" --matrix 128x128x1 \
        --method cg --variant cpu-nufft --lambda "$LAMBDA" --iters "$IT" --no-cache --truth $D/truth.nii.gz \
        --out $D/larmor-$mode.nii.gz --json >$D/larmor-$mode.json
    echo "larmor-$mode $w $u $s $(pe $D/larmor-$mode.json) L=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["segments"])' $D/larmor-$mode.json)" | tee -a $D/runs
  done
done
python3 - $D/runs <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append((float(f[1]), float(f[2]) + float(f[3])))
for name, v in rows.items():
    w = [a for a, _ in v]; c = [b for _, b in v]
    print(f"{name}: wall min {min(w):.3f} s (spread {min(w):.3f}-{max(w):.3f}), CPU min {min(c):.3f} s "
          f"(spread {min(c):.3f}-{max(c):.3f}), {len(v)} runs")
b = rows.get("bart-uncorrected"); l = rows.get("larmor-corrected")
if b and l:
    print(f"larmor-corrected / bart-uncorrected: wall {min(a for a, _ in l) / min(a for a, _ in b):.2f}x, "
          f"CPU {min(c for _, c in l) / min(c for _, c in b):.2f}x (minimum over minimum)")
EOF
