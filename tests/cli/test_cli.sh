#!/usr/bin/env bash
# End-to-end checks of larmor-cli's contract (GUIDE.md section 5): phantom,
# info, metrics, recon (and the Q cache), q on Parboil's data, variants,
# bench --json, and one-line errors with a non-zero exit for bad input.
#   test_cli.sh LARMOR_CLI
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
json_get() { python3 -c "import json,sys; v=json.load(open('$1'))$2; print(v)"; }
one_line_error() { # expected-substring, command...: must fail with one stderr line naming it
    local want=$1; shift
    "$@" >"$T/out" 2>"$T/err" && return 1
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err"
}

check "phantom B32 writes traj, kspace, truth, ref" \
    bash -c "'$CLI' phantom --problem B32 --out '$T/p' 2>/dev/null && for f in traj.cfl traj.hdr kspace.cfl kspace.hdr truth.nii.gz ref.nii.gz; do [ -s '$T/p/'\$f ] || exit 1; done"
check "info describes each file" bash -c "for f in traj.cfl kspace.cfl truth.nii.gz; do '$CLI' info '$T/p/'\$f | grep -q dimensions || exit 1; done"
"$CLI" metrics --truth "$T/p/truth.nii.gz" --image "$T/p/truth.nii.gz" --json >"$T/m.json"
check "metrics of the truth against itself: percent_error 0" [ "$(json_get "$T/m.json" "['percent_error']")" = 0 ]

"$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method grid-linear \
    --truth "$T/p/truth.nii.gz" --out "$T/g.nii.gz" --json >"$T/g.json" 2>/dev/null
check "grid-linear recon writes NIfTI and a finite error" \
    python3 -c "import json; j=json.load(open('$T/g.json')); assert 20 < j['percent_error'] < 80, j"
for run in 1 2; do
    "$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --variant cpu-simd \
        --iters 20 --truth "$T/p/truth.nii.gz" --out "$T/c.nii.gz" --json >"$T/c$run.json" 2>/dev/null
done
check "cg recon error below 60 %" python3 -c "import json; j=json.load(open('$T/c1.json')); assert j['percent_error'] < 60, j"
check "second recon takes Q from the cache" [ "$(json_get "$T/c2.json" "['q_cached']")" = True ]
"$CLI" metrics --truth "$T/p/truth.nii.gz" --image "$T/c.nii.gz" --json >"$T/m2.json"
check "metrics on the written image match recon's (magnitude vs complex: within 1 %)" \
    python3 -c "import json; a=json.load(open('$T/c2.json'))['percent_error']; b=json.load(open('$T/m2.json'))['percent_error']; assert abs(a-b) < 1, (a,b)"

"$CLI" variants --json >"$T/v.json"
check "variants lists every GUIDE name" python3 -c "
import json; names={v['variant'] for v in json.load(open('$T/v.json'))}
need={'cpu-dp','cpu-sp','cpu-simd','cpu-nufft','gpu-base','gpu-regalloc','gpu-coalesce','gpu-constmem','gpu-fasttrig','gpu-tuned','gpu-multi','gpu-nufft'}
assert need <= names, need - names"
check "unavailable variants give a reason" python3 -c "
import json; assert all(v['available'] or v['reason'] for v in json.load(open('$T/v.json')))"

"$CLI" bench --problem B32 --variants cpu-simd,cpu-nufft --iters 5 --json >"$T/b.json" 2>/dev/null
check "bench --json has the contract's fields" python3 -c "
import json; rows=json.load(open('$T/b.json')); assert len(rows)==2
for r in rows:
    for k in ('variant','time_q_s','time_fhd_s','time_cg_s','time_total_s','gpairs_per_s','gflops','rel_error','psnr_db','percent_error'): assert k in r, k
    assert r['rel_error'] < 1e-4, r"

PB=${LM_SHARED_DATA:-}/parboil-mri-q/small
if [ -f "$PB/32_32_32_dataset.bin" ]; then
    "$CLI" q --variant cpu-simd --parboil "$PB/32_32_32_dataset.bin" --out "$T/q.out" >/dev/null
    check "q on Parboil's small set passes Parboil's rule" python3 -c "
import struct
def rd(p):
    b=open(p,'rb').read(); n=struct.unpack('<I',b[:4])[0]
    v=struct.unpack('<%df'%(2*n),b[4:4+8*n]); return v[:n],v[n:]
r=rd('$PB/32_32_32_dataset.out'); o=rd('$T/q.out')
for a,b in zip(r,o):
    m=max(abs(x) for x in a)
    bad=[i for i,(x,y) in enumerate(zip(a,b)) if abs(x-y)>1e-4*m and abs(x-y)>0.002*abs(x)]
    assert not bad, len(bad)"
else
    echo "skip: Parboil data not found under LM_SHARED_DATA"
fi

head -c 1000 "$T/p/kspace.cfl" >"$T/trunc.cfl"; cp "$T/p/kspace.hdr" "$T/trunc.hdr"
check "truncated cfl: one line naming the file" one_line_error "trunc.cfl" "$CLI" info "$T/trunc.cfl"
cp "$T/p/kspace.cfl" "$T/bad.cfl"; printf '# Dimensions\n1 9999 1 1 1\n' >"$T/bad.hdr"
check "hdr that disagrees with the data size" one_line_error "bad" "$CLI" info "$T/bad.cfl"
check "missing file" one_line_error "nothere" "$CLI" recon --traj "$T/nothere.cfl" --kspace "$T/p/kspace" --matrix 32 --method cg --out "$T/x.nii"
check "unknown variant" one_line_error "cpu-nope" "$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --variant cpu-nope --out "$T/x.nii"
check "absurd matrix" one_line_error "matrix" "$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 100000 --method cg --out "$T/x.nii"
check "negative lambda" one_line_error "lambda" "$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --lambda -1 --out "$T/x.nii"
if command -v bart >/dev/null; then
    check "bart reads Larmor's trajectory" bash -c "bart show -m '$T/p/traj' | grep -q 4447"
fi
if command -v ismrmrd_generate_cartesian_shepp_logan >/dev/null; then
    (cd "$T" && ismrmrd_generate_cartesian_shepp_logan -m 32 -c 4 -O 1 -o sl.h5 -C >/dev/null 2>&1)
    "$CLI" recon --traj "$T/sl.h5" --out "$T/sl.nii.gz" --json >"$T/sl.json" 2>/dev/null
    check "Cartesian ISMRMRD (ismrmrd-tools) reconstructs by FFT, 4 channels by root-sum-of-squares" python3 -c "
import json; j=json.load(open('$T/sl.json'))
assert j['method']=='fft' and j['coils']==4 and j['combine']=='root-sum-of-squares', j"
    check "the FFT image is the phantom: bright rim, dark outside" python3 -c "
import gzip, struct
raw=gzip.open('$T/sl.nii.gz').read(); d=struct.unpack('<8h',raw[40:56]); nx,ny=d[1],d[2]
v=struct.unpack('<%df'%(nx*ny),raw[352:352+4*nx*ny]); m=max(v)
corner=sum(v[i*nx+j] for i in range(3) for j in range(3))/9; centre=v[(ny//2)*nx+nx//2]
assert corner < 0.15*m and centre > 0.1*m, (corner, centre, m)"
fi
echo "test_cli: $fails failure(s)"
[ $fails -eq 0 ]
