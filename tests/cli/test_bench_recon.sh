#!/usr/bin/env bash
# bench measures what recon runs (issue 26, defect 4): its CG row goes
# through the reconstruction's own path (lm_recon_run: the session's
# encoding, Q and Toeplitz operator, E^H d, CG), so on the same problem and
# options it reports recon's iteration count and recon's image error. A
# variant whose Q is extrapolated names the stand-alone solver instead.
#   test_bench_recon.sh LARMOR_CLI
set -u
CLI=$(realpath "$1")
T=$(mktemp -d)
export XDG_CACHE_HOME=$T/cache
trap 'rm -rf "$T"' EXIT
fails=0
check() {
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
cd "$T" || exit 1
"$CLI" bench --problem B32 --variants cpu-nufft --iters 7 --lambda 0.02 --json >b.json 2>b.err
"$CLI" phantom --problem B32 --out p >/dev/null 2>&1
"$CLI" recon --traj p/traj --kspace p/kspace --matrix 32 --method cg --variant cpu-nufft --iters 7 --lambda 0.02 \
    --no-cache --truth p/truth.nii.gz --out r.nii --json >r.json 2>r.err
# The same path gives the same image up to the order of float sums across
# threads: the errors agree to 1e-4 relative (a different operator or
# iteration count moves them by far more: B32 after 6 and 7 iterations
# differ by about 1 %).
check "bench's CG is recon's: same path, iterations and error" /usr/bin/python3 -c "
import json
b = json.load(open('b.json'))[0]; r = json.load(open('r.json'))
print('bench', b['cg_path'], b['cg_iters'], b['percent_error'], '| recon', r['iters'], r['percent_error'])
assert b['cg_path'] == 'recon' and b['cg_iters'] == r['iters'] == 7
assert abs(b['percent_error'] - r['percent_error']) <= 1e-4 * r['percent_error']
assert b['time_ehd_s'] > 0 and b['time_cg_s'] > 0 and b['time_q_s'] > 0"
# A budget between F^H d's time and Q's (8x F^H d's pairs): Q is
# extrapolated, so the CG is the solver's on cpu-nufft's Q, and says so.
# The budget is 3x this machine's own F^H d time (cpu-sp, measured first).
"$CLI" bench --problem B32 --variants cpu-sp --iters 1 --budget 1000 --json >s.json 2>s.err
B=$(/usr/bin/python3 -c "import json; print(3 * json.load(open('s.json'))[0]['time_fhd_s'])")
"$CLI" bench --problem B32 --variants cpu-sp --iters 3 --budget "$B" --json >d.json 2>d.err
check "a variant with an extrapolated Q names the solver path" /usr/bin/python3 -c "
import json
d = json.load(open('d.json'))[0]
print(d['cg_path'], d['q_estimated'])
assert d['cg_path'] == 'solver' and d['q_estimated'] and d['cg_iters'] == 3"
exit $fails
