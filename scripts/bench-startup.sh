#!/bin/bash
# Where one `larmor-cli recon` command's wall time goes (issue 14: B128 with
# gpu-nufft under 0.25 s per command, process start included).
#
#   scripts/bench-startup.sh [PROBLEM [VARIANT [REPS]]]     (default B128 gpu-nufft 5)
#
# Runs the command REPS times with LARMOR_TRACE=1 (larmor-cli prints epoch
# times at its milestones), once with the CUDA context made in the
# background while the inputs are read (the default) and once without
# (LARMOR_GPU_PREWARM=0), and prints per phase the median over the runs:
# exec (the wrapper's start to main()), options, reading, the reconstruction
# call (with its own stage times from --json), writing, exit.
set -eu
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
P=${1:-B128}
V=${2:-gpu-nufft}
R=${3:-5}
W=${WORK:-/tmp/larmor-startup}
mkdir -p "$W"
[ -f "$W/$P/traj.cfl" ] || "$CLI" phantom --problem "$P" --out "$W/$P" >/dev/null
N=$(python3 -c "import sys; print({'B32':32,'B64':64,'B128':128}.get('$P', 128))")
run_set() {
    local label=$1
    shift
    for i in $(seq "$R"); do
        local t0 t1
        t0=$(date +%s.%N)
        env "$@" LARMOR_TRACE=1 "$CLI" recon --traj "$W/$P/traj" --kspace "$W/$P/kspace" --matrix "$N" \
            --variant "$V" --out "$W/out.nii" --json >"$W/run.json" 2>"$W/run.err"
        t1=$(date +%s.%N)
        python3 - "$label" "$t0" "$t1" "$W/run.json" "$W/run.err" <<'PY'
import json, sys
label, t0, t1, js, er = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
tr = {}
for line in open(er):
    if line.startswith("larmor-trace "):
        _, t, what = line.rstrip("\n").split(" ", 2)
        tr[what] = float(t)
j = json.load(open(js))
ph = [("exec+link", t0, tr["main"]), ("options", tr["main"], tr["options parsed"]),
      ("read", tr["options parsed"], tr["inputs read"]), ("recon call", tr["reconstruction starts"], tr["reconstruction done"]),
      ("write", tr["reconstruction done"], tr["outputs written"]), ("exit", tr["outputs written"], t1)]
row = {k: (b - a) * 1e3 for k, a, b in ph}
row["wall"] = (t1 - t0) * 1e3
for k in ("time_q_s", "time_fhd_s", "time_cg_s", "time_total_s"):
    row[k[5:-2]] = j.get(k, float("nan")) * 1e3
print(label, json.dumps(row))
PY
    done
}
{
    run_set prewarm
    run_set no-prewarm LARMOR_GPU_PREWARM=0
} | tee "$W/startup.log" | python3 -c "
import json, sys, statistics as st
rows = {}
for line in sys.stdin:
    label, js = line.split(' ', 1)
    rows.setdefault(label, []).append(json.loads(js))
keys = list(next(iter(rows.values()))[0].keys())
print('$P $V, median of $R commands, ms')
print('| run | ' + ' | '.join(keys) + ' |')
print('|---|' + '---|' * len(keys))
for label, rs in rows.items():
    print('| %s | ' % label + ' | '.join('%.1f' % st.median(r[k] for r in rs) for k in keys) + ' |')
"
