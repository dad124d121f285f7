#!/usr/bin/env bash
# recon --fallback cpu (issue 14): a GPU variant that cannot run (here no
# GPU; on a GPU machine an injected out-of-memory, LARMOR_GPU_FAULT) runs
# again on its CPU twin: the twin's image, one note on stderr, fell_back and
# fallback_note in --json. Without --fallback: a one-line error, a non-zero
# exit, nothing written.
#   test_fallback.sh LARMOR_CLI
set -u
CLI=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}

"$CLI" phantom --problem B32 --out "$T/p" 2>/dev/null
"$CLI" variants --json >"$T/v.json"
gpu=$(python3 -c "import json; print(int(any(v['variant']=='gpu-nufft' and v['available'] for v in json.load(open('$T/v.json')))))")
if [ "$gpu" = 1 ]; then
    export LARMOR_GPU_FAULT=nomem:plan # the first device allocation fails
    why="out of GPU memory"
else
    why="not available"
fi
R=("$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --iters 10
   --truth "$T/p/truth.nii.gz" --complex --json)

"${R[@]}" --variant cpu-nufft --out "$T/cpu.nii" >"$T/cpu.json" 2>/dev/null
"${R[@]}" --variant gpu-nufft --fallback cpu --out "$T/fb.nii" >"$T/fb.json" 2>"$T/fb.err"
check "--fallback cpu: exit 0 and an image" [ -s "$T/fb.nii" ]
check "--fallback cpu: one note on stderr naming the GPU's problem and the twin" \
    bash -c "[ \$(grep -c 'falling back' '$T/fb.err') -eq 1 ] && grep -q '^recon: gpu-nufft: $why (.*); falling back to cpu-nufft$' '$T/fb.err'"
check "--fallback cpu: --json says fell_back, the twin and why" python3 -c "
import json; j=json.load(open('$T/fb.json'))
assert j['fell_back'] is True and j['variant']=='cpu-nufft' and j['variant_requested']=='gpu-nufft', j
assert '$why' in j['fallback_note'] and 'falling back to cpu-nufft' in j['fallback_note'], j"
check "--fallback cpu: the image is cpu-nufft's" python3 -c "
import json; a=json.load(open('$T/fb.json')); b=json.load(open('$T/cpu.json'))
assert abs(a['percent_error']-b['percent_error']) < 1e-6 and a['iters']==b['iters'], (a['percent_error'], b['percent_error'])"
"$CLI" metrics --truth "$T/cpu.nii" --image "$T/fb.nii" --json >"$T/m.json"
check "--fallback cpu: the written image matches cpu-nufft's to 1e-4 %" python3 -c "
import json; e=json.load(open('$T/m.json'))['percent_error']; assert e < 1e-4, e"
check "cpu-nufft itself: fell_back false" python3 -c "
import json; j=json.load(open('$T/cpu.json')); assert j['fell_back'] is False and j['fallback_note']=='', j"

rm -f "$T/no.nii"
if "${R[@]}" --variant gpu-nufft --out "$T/no.nii" >"$T/no.out" 2>"$T/no.err"; then ok=0; else ok=1; fi
check "without --fallback: non-zero exit" [ $ok = 1 ]
check "without --fallback: one line on stderr naming gpu-nufft's problem" \
    bash -c "[ \$(wc -l <'$T/no.err') -eq 1 ] && grep -qi -e 'gpu-nufft' -e 'GPU memory' '$T/no.err' && ! grep -q 'falling back' '$T/no.err'"
check "without --fallback: nothing written" [ ! -e "$T/no.nii" ]

check "--fallback gpu: refused in one line" bash -c "! '$CLI' recon --traj '$T/p/traj' --kspace '$T/p/kspace' --matrix 32 --fallback gpu --out '$T/x.nii' 2>'$T/bad.err' && [ \$(wc -l <'$T/bad.err') -eq 1 ] && grep -q 'none, cpu' '$T/bad.err'"
"$CLI" recon --help >"$T/help" 2>&1
check "recon --help documents --fallback" grep -q -- "--fallback cpu" "$T/help"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
