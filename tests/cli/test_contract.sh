#!/usr/bin/env bash
# End-to-end checks of larmor-cli's contract (docs/conventions.md section 5): phantom,
# info, metrics, recon (and the Q cache), q on Parboil's data, variants,
# bench --json, and one-line errors with a non-zero exit for bad input.
#   test_contract.sh LARMOR_CLI
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
check "metrics --scale-match --magnitude scores magnitudes (as the workbench scores rss and estimated maps)" \
    sh -c "'$CLI' metrics --truth '$T/p/truth.nii.gz' --image '$T/c.nii.gz' --scale-match --magnitude | grep -q '(magnitudes, scale-matched)'"

"$CLI" variants --json >"$T/v.json"
check "variants lists every variant name" python3 -c "
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
check "gcv with tv: GCV needs a linear solver" one_line_error "GCV" "$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --reg tv --lambda auto --lambda-criterion gcv --out "$T/x.nii"
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

# Multi-coil phantoms (--coils, B64c8): kspace [1, samples, spokes, coils],
# sens [nx, ny, nz, coils], sizes that match the headers, and data that
# agree with the maps: d_c(0) = integral s_c rho ~ mean over voxels of
# sens_c x truth (truth sub-voxel averaged; within 0.1 % of max |d_c(0)|,
# measured 1e-4; conjugate maps miss by 7 % or more).
hdr_dims() { sed -n 2p "$1" | awk '{ n=NF; while (n > 1 && $n == 1) n--; for (i=1; i<=n; i++) printf "%s%s", $i, (i<n?" ":""); }'; }
"$CLI" phantom --problem B64c8 --out "$T/c8" 2>/dev/null
check "phantom B64c8: kspace.hdr is 1 x 35574 x 1 x 8" [ "$(hdr_dims "$T/c8/kspace.hdr")" = "1 35574 1 8" ]
check "phantom B64c8: sens.hdr is 64 x 64 x 64 x 8" [ "$(hdr_dims "$T/c8/sens.hdr")" = "64 64 64 8" ]
check "phantom B64c8: cfl sizes match their headers" bash -c "cfl_size_ok() { [ \$(stat -c %s \$1.cfl) -eq \$(sed -n 2p \$1.hdr | awk '{ p=8; for (i=1; i<=NF; i++) p*=\$i; print p }') ]; }; cfl_size_ok '$T/c8/kspace' && cfl_size_ok '$T/c8/sens' && [ -s '$T/c8/truth.nii.gz' ] && [ -s '$T/c8/ref.nii.gz' ]"
check "phantom B64c8: RSS of the maps is 1 at the centre, d_c(0) = mean(sens_c x truth)" python3 -c "
import array, gzip, struct
def cfl(p):
    a = array.array('f'); a.frombytes(open(p, 'rb').read()); return a
s = cfl('$T/c8/sens.cfl'); k = cfl('$T/c8/kspace.cfl'); t = cfl('$T/c8/traj.cfl')
raw = gzip.open('$T/c8/truth.nii.gz').read(); off = int(struct.unpack('<f', raw[108:112])[0])
rho = array.array('f'); rho.frombytes(raw[off:off + 4 * 64**3])
V = 64**3; m = 35574; c0 = (32 * 64 + 32) * 64 + 32
assert t[0] == t[2] == t[4] == 0, 'sample 0 is not k = 0'
rss = sum(s[2 * (c * V + c0)]**2 + s[2 * (c * V + c0) + 1]**2 for c in range(8)) ** 0.5
assert abs(rss - 1) < 1e-5, rss
d0 = [complex(k[2 * c * m], k[2 * c * m + 1]) for c in range(8)]
idx = [v for v in range(V) if rho[v] != 0]
for c in range(8):
    e = sum(complex(s[2 * (c * V + v)], s[2 * (c * V + v) + 1]) * rho[v] for v in idx) / V
    assert abs(e - d0[c]) < 0.001 * max(abs(x) for x in d0), (c, e, d0[c])"
"$CLI" phantom --matrix 32 --phantom shepp-logan-2d --coils 4 --noise 0.05 --out "$T/c2d" 2>/dev/null
check "phantom 2D --coils 4: kspace [1, readout, spokes, 4] as traj [3, readout, spokes], sens 32 x 32 x 1 x 4" \
    bash -c "[ \"\$(sed -n 2p '$T/c2d/traj.hdr' | awk '{print \$2, \$3}')\" = \"\$(sed -n 2p '$T/c2d/kspace.hdr' | awk '{print \$2, \$3}')\" ] && \
             [ \"\$(sed -n 2p '$T/c2d/kspace.hdr' | awk '{print \$1, \$4}')\" = '1 4' ] && [ \"\$(sed -n 2p '$T/c2d/sens.hdr' | awk '{print \$1, \$2, \$3, \$4}')\" = '32 32 1 4' ]"
check "phantom --coils 1 writes no sens" bash -c "'$CLI' phantom --problem B32 --coils 1 --out '$T/c1' 2>/dev/null && [ ! -e '$T/c1/sens.cfl' ] && sed -n 2p '$T/c1/kspace.hdr' | grep -q '^1 4447 1 1 '"
check "phantom --coils 65: one line naming --coils" one_line_error "coils" "$CLI" phantom --problem B32 --coils 65 --out "$T/cx"
# Off-resonance (issue 11): --fieldmap-hz writes fieldmap.nii.gz (Hz, signed
# float32 on the matrix, largest |f| the given value) and times.cfl
# [1, samples, spokes] (s, 0 .. R per spiral-out readout) beside the rest.
"$CLI" phantom --matrix 16 --phantom shepp-logan-2d --traj spiral2d --coils 2 --fieldmap-hz 120 --readout-ms 8 \
    --out "$T/fm" 2>/dev/null
check "phantom --fieldmap-hz: times.hdr is traj.hdr's [1, samples, spokes], kspace [.., 2], sizes match" \
    bash -c "[ \"\$(sed -n 2p '$T/fm/traj.hdr' | awk '{print \$2, \$3}')\" = \"\$(sed -n 2p '$T/fm/times.hdr' | awk '{print \$2, \$3}')\" ] && \
             [ \"\$(sed -n 2p '$T/fm/times.hdr' | awk '{print \$1}')\" = 1 ] && [ \"\$(sed -n 2p '$T/fm/kspace.hdr' | awk '{print \$4}')\" = 2 ] && \
             [ \$(stat -c %s '$T/fm/times.cfl') -eq \$(sed -n 2p '$T/fm/times.hdr' | awk '{ p=8; for (i=1; i<=NF; i++) p*=\$i; print p }') ] && \
             [ -s '$T/fm/sens.cfl' ] && [ -s '$T/fm/truth.nii.gz' ]"
check "phantom --fieldmap-hz: fieldmap.nii.gz is float32 16 x 16 with max |f| 120 Hz; times run 0 .. 8 ms" python3 -c "
import array, gzip, struct
b = gzip.open('$T/fm/fieldmap.nii.gz').read()
dims = struct.unpack('<8h', b[40:56]); dtype = struct.unpack('<h', b[70:72])[0]; off = int(struct.unpack('<f', b[108:112])[0])
assert dtype == 16 and dims[1:4] == (16, 16, 1), (dtype, dims)
f = array.array('f'); f.frombytes(b[off:off + 4 * 256])
assert abs(max(abs(x) for x in f) - 120) < 1e-3 and min(f) < 0 < max(f), (min(f), max(f))
t = array.array('f'); t.frombytes(open('$T/fm/times.cfl', 'rb').read())
d = [int(x) for x in open('$T/fm/times.hdr').read().split(chr(10))[1].split()]
r = t[0::2]; n = d[1]
for s in range(d[2]):
    seg = r[s * n:(s + 1) * n]
    assert seg[0] == 0 and abs(seg[-1] - 0.008) < 1e-9 and all(b > a for a, b in zip(seg, seg[1:])), s
assert max(abs(x) for x in t[1::2]) == 0"
for bad in -1 nan 20000 1e9; do
    check "phantom --fieldmap-hz $bad: one line naming --fieldmap-hz" one_line_error "fieldmap-hz" \
        "$CLI" phantom --matrix 16 --phantom shepp-logan-2d --fieldmap-hz $bad --out "$T/fmx"
done
check "phantom --readout-ms 0: one line naming --readout-ms" one_line_error "readout-ms" \
    "$CLI" phantom --matrix 16 --phantom shepp-logan-2d --fieldmap-hz 50 --readout-ms 0 --out "$T/fmx"
check "phantom: refused field maps write nothing" [ ! -e "$T/fmx" ]
# What phantom writes is what recon reads: the 16 x 16 spiral above with its
# field map and times, corrected (exact), beats the uncorrected image.
if "$CLI" recon --help 2>&1 | grep -q -- "--fieldmap"; then
    "$CLI" recon --traj "$T/fm/traj" --kspace "$T/fm/kspace" --matrix 16x16x1 --sens "$T/fm/sens" --iters 20 \
        --truth "$T/fm/truth.nii.gz" --out "$T/fm/u.nii.gz" --json >"$T/fm/u.json" 2>/dev/null
    "$CLI" recon --traj "$T/fm/traj" --kspace "$T/fm/kspace" --matrix 16x16x1 --sens "$T/fm/sens" --iters 20 \
        --fieldmap "$T/fm/fieldmap.nii.gz" --times "$T/fm/times.cfl" --segments 0 \
        --truth "$T/fm/truth.nii.gz" --out "$T/fm/c.nii.gz" --json >"$T/fm/c.json" 2>/dev/null
    check "recon reads phantom's fieldmap.nii.gz and times.cfl; corrected error below uncorrected" python3 -c "
import json
u = json.load(open('$T/fm/u.json'))['percent_error']; c = json.load(open('$T/fm/c.json'))['percent_error']
assert c < 0.8 * u, (c, u)"
fi
# bench on S128c8f: one row per mode with the contract's fields; a mode this
# build cannot do carries its reason instead of numbers (never the
# uncorrected image passed off as a correction).
"$CLI" bench --problem S128c8f --iters 1 --json >"$T/bf.json" 2>/dev/null
check "bench --problem S128c8f --json: uncorrected, segmented, exact rows" python3 -c "
import json, math
rows = json.load(open('$T/bf.json'))
assert [r['mode'] for r in rows] == ['uncorrected', 'segmented', 'exact'], rows
for r in rows:
    for k in ('variant', 'time_q_s', 'time_fhd_s', 'time_cg_s', 'time_total_s', 'gpairs_per_s', 'gflops', 'rel_error',
              'psnr_db', 'percent_error', 'segments', 'error'):
        assert k in r, k
    assert (r['psnr_db'] is not None and r['error'] == '') or (r['psnr_db'] is None and r['error']), r
assert rows[0]['psnr_db'] is not None and rows[0]['coils'] == 8
if rows[2]['psnr_db'] is not None:  # corrected: better than uncorrected
    assert rows[2]['percent_error'] < rows[0]['percent_error'], rows"
if "$CLI" phantom --problem B32 --coils 4 --format ismrmrd --out "$T/cm" 2>"$T/cm.err"; then
    check "phantom --coils 4 --format ismrmrd: 4 channels in data.h5, sens.cfl beside it" \
        bash -c "'$CLI' info '$T/cm/data.h5' | grep -q 'channels: 4' && [ \"\$(sed -n 2p '$T/cm/sens.hdr' | awk '{print \$4}')\" = 4 ]"
elif grep -q -i "ismrmrd" "$T/cm.err"; then
    echo "skip: built without ISMRMRD"
else
    check "phantom --coils 4 --format ismrmrd" false
fi
# SENSE end to end on the 2D 4-coil phantom above: maps given, estimated,
# rss, compressed; bad maps and noise refused with one line.
R2D="--traj $T/c2d/traj --kspace $T/c2d/kspace --matrix 32x32 --iters 30 --truth $T/c2d/truth.nii.gz --json"
"$CLI" recon $R2D --sens "$T/c2d/sens" --out "$T/s1.nii" >"$T/s1.json" 2>/dev/null
"$CLI" recon $R2D --coil-combine rss --out "$T/s2.nii" >"$T/s2.json" 2>/dev/null
"$CLI" recon $R2D --sens-out "$T/est.cfl" --out "$T/s3.nii" >"$T/s3.json" 2>/dev/null
"$CLI" recon $R2D --sens "$T/c2d/sens" --coils-compress 2 --out "$T/s4.nii" >"$T/s4.json" 2>/dev/null
check "recon --sens: SENSE with the maps from the file, below rss's error" python3 -c "
import json; a=json.load(open('$T/s1.json')); b=json.load(open('$T/s2.json'))
assert a['combine'] == 'sense' and a['sens_source'] == 'from file' and a['coils'] == 4, a
assert b['combine'] == 'root-sum-of-squares', b
assert a['percent_error'] < b['percent_error'], (a['percent_error'], b['percent_error'])"
check "recon without --sens estimates maps; --sens-out writes 32 x 32 x 1 x 4" bash -c "
python3 -c \"import json; a=json.load(open('$T/s3.json')); assert a['sens_source'] == 'estimated' and a['combine'] == 'sense', a\" &&
[ \"\$(sed -n 2p '$T/est.hdr' | awk '{print \$1, \$2, \$3, \$4}')\" = '32 32 1 4' ]"
check "recon --coils-compress 2: 2 of 4 coils, energy kept reported" python3 -c "
import json; a=json.load(open('$T/s4.json')); assert a['coils'] == 2 and a['coils_in'] == 4 and 0.5 < a['energy_kept'] <= 1, a"
"$CLI" phantom --matrix 32 --phantom shepp-logan-2d --coils 3 --out "$T/c2d3" 2>/dev/null
check "recon --sens with another coil count: one line" one_line_error "3 coil maps but the k-space has 4 channels" \
    "$CLI" recon $R2D --sens "$T/c2d3/sens" --out "$T/bad.nii"
check "recon --sens of another matrix: one line" one_line_error "coil maps are" \
    "$CLI" recon $R2D --sens "$T/c8/sens" --out "$T/bad.nii"
check "recon --noise with another channel count: one line" one_line_error "channels" \
    "$CLI" recon $R2D --noise "$T/c8/kspace" --out "$T/bad.nii"
check "recon --coils-compress 5 of 4: one line" one_line_error "compress" \
    "$CLI" recon $R2D --coils-compress 5 --out "$T/bad.nii"
check "no bad recon wrote its output" bash -c "[ ! -e '$T/bad.nii' ]"
# "auto", the default variant: the fastest accurate one here (gpu-nufft with
# a GPU, else cpu-nufft), named wherever it is used.
AUTO_WANT=$(python3 -c "
import json; v={r['variant']: r for r in json.load(open('$T/v.json'))}
print('gpu-nufft' if v.get('gpu-nufft', {}).get('available') else 'cpu-nufft')")
check "variants lists auto first with what it resolves to ($AUTO_WANT)" python3 -c "
import json; rows=json.load(open('$T/v.json')); a=rows[0]
assert a['variant']=='auto' and a['available'] and a['resolves_to']=='$AUTO_WANT', a"
check "variants (text) names auto's choice" bash -c "'$CLI' variants | head -1 | grep -q '^auto .*$AUTO_WANT'"
"$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --iters 10 \
    --truth "$T/p/truth.nii.gz" --out "$T/auto.nii.gz" --json >"$T/auto.json" 2>/dev/null
check "recon without --variant reports the variant auto picked ($AUTO_WANT)" python3 -c "
import json; j=json.load(open('$T/auto.json'))
assert j['variant']=='$AUTO_WANT' and j['variant_requested']=='auto' and j['variant_choice']=='auto -> $AUTO_WANT', j
assert j['percent_error'] < 60, j"
check "recon (text) prints auto -> $AUTO_WANT" bash -c "'$CLI' recon --traj '$T/p/traj' --kspace '$T/p/kspace' --matrix 32 --method cg --iters 2 --out '$T/auto2.nii.gz' 2>/dev/null | grep -q '(auto -> $AUTO_WANT, '"
"$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --method cg --variant cpu-simd --iters 2 \
    --out "$T/named.nii.gz" --json >"$T/named.json" 2>/dev/null
check "recon --variant cpu-simd reports cpu-simd, not auto" python3 -c "
import json; j=json.load(open('$T/named.json')); assert j['variant']=='cpu-simd' and j['variant_choice']=='cpu-simd', j"
"$CLI" bench --problem B32 --variants auto,cpu-simd --iters 5 --json >"$T/ba.json" 2>"$T/ba.err"
check "bench: the auto row says which variant ran ($AUTO_WANT)" python3 -c "
import json; rows=json.load(open('$T/ba.json')); assert len(rows)==2
assert rows[0]['variant']=='auto' and rows[0]['resolved']=='$AUTO_WANT', rows[0]
assert rows[1]['variant']=='cpu-simd' and rows[1]['resolved']=='cpu-simd', rows[1]
assert rows[0]['rel_error'] < 1e-4, rows[0]"
check "bench names auto's choice on stderr" grep -q "auto -> $AUTO_WANT" "$T/ba.err"
check "bench --help: auto is the first default row" bash -c "'$CLI' bench --help | grep -q 'default variants: auto'"
# ISMRMRD repetition/contrast choice (multi-slice: tests/cli/test_mrd_slices.c)
check "recon --repetition with cfl input: one line" one_line_error "apply to ISMRMRD (.h5) input only" \
    "$CLI" recon --traj "$T/p/traj" --kspace "$T/p/kspace" --matrix 32 --repetition 1 --out "$T/r.nii"
if [ -s "$T/cm/data.h5" ]; then
    check "recon --repetition 0 on a one-repetition file: JSON has slices 1" bash -c \
        "'$CLI' recon --traj '$T/cm/data.h5' --method grid-linear --repetition 0 --contrast 0 --out '$T/r0.nii' --json 2>/dev/null | grep -q '\"slices\": 1'"
    check "recon --contrast 2 absent: one line naming the file" one_line_error "contrast 2 is not in repetition 0" \
        "$CLI" recon --traj "$T/cm/data.h5" --contrast 2 --out "$T/r2.nii"
    check "info lists repetitions, contrasts, slices" bash -c \
        "'$CLI' info '$T/cm/data.h5' | grep -q 'repetitions: 1 (0..0), reading 0' && '$CLI' info '$T/cm/data.h5' | grep -q 'slices: 1'"
fi
# Anatomical prior (issue 12, docs/priors.md): lesion phantom, registration, prior influence
check "phantom --lesion --ref-shift-vox 1 writes the lesion mask and the reference" bash -c \
    "'$CLI' phantom --problem B32 --lesion --ref-shift-vox 1 --out '$T/les' 2>/dev/null && [ -s '$T/les/lesion-mask.nii.gz' ] && [ -s '$T/les/ref.nii.gz' ]"
"$CLI" recon --traj "$T/les/traj" --kspace "$T/les/kspace" --matrix 32 --reg anatomical --ref "$T/les/ref.nii.gz" \
    --lambda 30 --iters 10 --truth "$T/les/truth.nii.gz" --lesion-mask "$T/les/lesion-mask.nii.gz" \
    --prior-influence-out "$T/les/infl.nii.gz" --out "$T/les/a.nii.gz" --json >"$T/les/a.json" 2>/dev/null
check "recon --reg anatomical registers the reference and scores the lesion" python3 -c "
import json; j=json.load(open('$T/les/a.json'))
assert j['reg']=='anatomical' and j['ref_registered'] and isinstance(j['lesion_contrast'], float), j
t=[float(x) for x in j['ref_transform'].split(',')]; assert abs(t[3]-7.5) < 3, t"
check "recon --prior-influence-out writes the influence" test -s "$T/les/infl.nii.gz"
check "recon --ref-transform skips registration" bash -c "'$CLI' recon --traj '$T/les/traj' --kspace '$T/les/kspace' --matrix 32 --reg anatomical-edges --ref '$T/les/ref.nii.gz' --ref-transform 0,0,0,7.5,0,0 --iters 2 --out '$T/les/b.nii' --json 2>/dev/null | grep -q '\"ref_registered\": false'"
check "recon --lesion-mask without --truth: one line" one_line_error "--lesion-mask needs --truth" \
    "$CLI" recon --traj "$T/les/traj" --kspace "$T/les/kspace" --matrix 32 --lesion-mask "$T/les/lesion-mask.nii.gz" --out "$T/les/c.nii"
check "recon --ref-transform with 5 numbers: one line" one_line_error "6 comma-separated numbers" \
    "$CLI" recon --traj "$T/les/traj" --kspace "$T/les/kspace" --matrix 32 --reg anatomical --ref "$T/les/ref.nii.gz" --ref-transform 0,0,0,1,2 --out "$T/les/c.nii"
echo "test_contract: $fails failure(s)"
[ $fails -eq 0 ]
