#!/usr/bin/env bash
# Larmor against BART 0.8 on IMPATIENT MRI's real 64x64x16 4-coil stack of
# spirals (issue 11): the same trajectory, data and coil maps (sensi_r/i),
# 30 CG iterations each, Tikhonov (l2) regularisation.
#   bench/bench-impatient-bart.sh [DATA_DIR] [RUNS]
#     DATA_DIR: the IMPATIENT directory 64x64x16-4coils
#               (bench/fetch-impatient-data.sh; default /work/wt-c-data/64x64x16-4coils)
#     RUNS: timed runs of each tool (default 5; the median is reported)
# There is no ground truth on real data, so:
#   * reference: Larmor, 300 CG iterations, lambda 1e-6 (the least-squares
#     solution, "converged");
#   * each tool's 30-iteration image is compared with it (relative
#     difference after the best complex scale, larmor-cli metrics
#     --scale-match), over a small lambda sweep of each tool's own meaning
#     (Larmor: relative to the diagonal of F^H F; BART: -r after its own data
#     scaling); "error no worse" compares each tool at its best lambda;
#   * and the two 30-iteration images at lambda 0 with each other.
# Times: whole commands (read, Q/preparation, F^H d, CG, write), wall clock,
# OMP_WAIT_POLICY=passive, median of RUNS, Larmor without its Q cache.
# Writes under ./bench-bart/impatient/ (ignored, as bench/bench-bart.sh's output).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/work/wt-c-data/64x64x16-4coils}
RUNS=${2:-5}
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
D=bench-bart/impatient
export OMP_WAIT_POLICY=passive
command -v bart >/dev/null || { echo "bart is not installed (apt-get install bart)"; exit 1; }
[ -d "$DATA" ] || { echo "$DATA: no IMPATIENT data (bench/fetch-impatient-data.sh)"; exit 1; }
mkdir -p $D
$CLI convert --traj "$DATA" --out $D/cfl
ITERS=30
now() { date +%s.%N; }
err() { $CLI metrics --truth "$1" --image "$2" --scale-match --json |
    python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['percent_error'])"; }
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
larmor() { # lambda iters out [extra]
    $CLI recon --traj "$DATA" --method cg --variant "${VARIANT:-cpu-nufft}" --lambda "$1" --iters "$2" --no-cache \
        --complex --out "$3" --json "${@:4}"
}
bart_pics() { # r out
    bart pics -S -l2 -r "$1" -i $ITERS -t $D/cfl/traj $D/cfl/kspace $D/cfl/sens "$2" >$D/bart.log 2>&1
}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "BART: $(bart version 2>/dev/null || echo '?'), larmor-cli: $($CLI --version)"
larmor 1e-6 300 $D/ref.cfl >$D/ref.json
echo "reference: larmor-cli recon --lambda 1e-6 --iters 300 (final residual $(python3 -c "import json; print(json.load(open('$D/ref.json'))['final_residual'])"))"
echo
echo "tool lambda error_vs_reference_% (30 iterations)"
best_l=; best_le=1e9; best_b=; best_be=1e9
for l in 0 0.0001 0.001 0.01 0.1; do
    larmor $l $ITERS $D/larmor_$l.cfl >/dev/null
    e=$(err $D/ref.cfl $D/larmor_$l.cfl); echo "larmor $l $e"
    if python3 -c "import sys; sys.exit(not ($e < $best_le))"; then best_le=$e; best_l=$l; fi
done
for r in 0 0.0001 0.001 0.01 0.1 1; do
    bart_pics $r $D/bart_$r
    e=$(err $D/ref.cfl $D/bart_$r.cfl); echo "bart $r $e"
    if python3 -c "import sys; sys.exit(not ($e < $best_be))"; then best_be=$e; best_b=$r; fi
done
echo "best: larmor lambda $best_l ($best_le %), bart -r $best_b ($best_be %)"
echo "larmor vs bart at lambda 0 (each other, scale-matched): $(err $D/larmor_0.cfl $D/bart_0.cfl) %"
echo
lt=(); bt=()
for _ in $(seq "$RUNS"); do
    t0=$(now); larmor "$best_l" $ITERS $D/larmor_t.cfl >$D/larmor_t.json; t1=$(now)
    lt+=("$(echo "$t1 - $t0" | bc)")
    t0=$(now); bart_pics "$best_b" $D/bart_t; t1=$(now)
    bt+=("$(echo "$t1 - $t0" | bc)")
done
lm=$(echo "${lt[*]}" | median); bm=$(echo "${bt[*]}" | median)
echo "larmor-cli recon --lambda $best_l --iters $ITERS --no-cache (${VARIANT:-cpu-nufft}): ${lt[*]} s, median $lm s"
python3 -c "import json; j=json.load(open('$D/larmor_t.json')); print('  last run: Q %.3f s, F^H d %.3f s, CG %.3f s, total in library %.3f s' % (j['time_q_s'], j['time_fhd_s'], j['time_cg_s'], j['time_total_s']))"
echo "bart pics -S -l2 -r $best_b -i $ITERS -t traj: ${bt[*]} s, median $bm s"
echo "ratio larmor/bart: $(echo "scale=3; $lm / $bm" | bc) (target <= 0.333); load after: $(cut -d' ' -f1-3 /proc/loadavg)"
