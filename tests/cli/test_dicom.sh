#!/usr/bin/env bash
# larmor-cli and DICOM (docs/dicom.md): recon --out-dicom writes a series that
# dcm2niix converts back to recon's own NIfTI; --out-dicom alone, the parts,
# --dicom-enhanced, --dicom-like (study joined, series number after the
# template's); an ISMRMRD header's patient and study reach the series;
# info --json gives the same affine for the NIfTI and the series; --ref,
# --truth and --fieldmap given as DICOM folders give the same results as the
# same volumes as NIfTI; a non-empty --out-dicom folder and the bad inputs
# fail with one stderr line naming the file and write nothing.
# Skips (77) only when dcm2niix or pydicom is missing.
#   test_dicom.sh LARMOR_CLI DICOM_FIXTURE
set -u
CLI=$1
FIX=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
CHECK="$PY $HERE/../core/dicom_check.py"
command -v dcm2niix >/dev/null || { echo "SKIP: dcm2niix not installed"; exit 77; }
$PY -c 'import pydicom, numpy, h5py' 2>/dev/null || { echo "SKIP: pydicom not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@" >"$T/log" 2>&1; then echo "ok: $what"; else echo "FAIL: $what"; cat "$T/log"; fails=$((fails + 1)); fi
}
# expected-substring, command...: fails with one stderr line holding it, and writes no $T/o2.nii nor $T/d2
one_line_error() {
    local want=$1; shift
    rm -rf "$T/o2.nii" "$T/d2"
    "$@" >"$T/out" 2>"$T/err" && { echo "accepted"; return 1; }
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err" && [ ! -e "$T/o2.nii" ] && [ ! -e "$T/d2" ] ||
        { cat "$T/err"; return 1; }
}
R=(recon --traj "$T/p" --matrix 32x32 --method cg --variant cpu-nufft --lambda 0.003 --iters 4 --quiet)

"$CLI" phantom --matrix 32 --phantom shepp-logan-2d --traj spiral2d --out "$T/p" >/dev/null 2>&1
check "recon --out and --out-dicom" "$CLI" "${R[@]}" --out "$T/o.nii" --out-dicom "$T/d"
check "one file per slice" [ "$(ls "$T/d" | wc -l)" -eq 1 ]
"$CLI" "${R[@]}" --out-dicom "$T/d_note" 2>"$T/err" >/dev/null
check "anonymous patient, new study: one note" grep -q "recon: DICOM: no patient or study information: anonymous patient, new study" "$T/err"
mkdir -p "$T/x"
check "dcm2niix converts the series" dcm2niix -z n -f conv -o "$T/x" "$T/d"
check "dcm2niix's = recon's NIfTI (1e-4 of max, 0.01 mm)" $CHECK same "$T/o.nii" "$T/x/conv.nii" 1e-4 0.01
check "pydicom reads it" $CHECK pydicom "$T/d"
check "SeriesDescription says what was done" $CHECK tag "$T/d" SeriesDescription "Larmor CG IDENTITY lambda=0.003 cpu-nufft"
"$CLI" info --json "$T/o.nii" "$T/d" >"$T/info" 2>&1
check "info --json: NIfTI and series, one geometry" $PY -c "
import json, sys
a, b = [json.loads(l) for l in open('$T/info')]
assert a['dims'] == b['dims'] == [32, 32, 1], (a, b)
assert max(abs(x - y) for ra, rb in zip(a['affine'], b['affine']) for x, y in zip(ra, rb)) < 1e-4, (a, b)
assert a['voxel_mm'] == b['voxel_mm']"
check "info: a DICOM summary" sh -c "'$CLI' info '$T/d' | grep -q 'DICOM series'"

check "--out-dicom alone, phase, enhanced" "$CLI" "${R[@]}" --out-dicom "$T/dp" --dicom-part phase --dicom-enhanced
check "enhanced: one file" [ "$(ls "$T/dp" | wc -l)" -eq 1 ]
check "enhanced: RESEARCH" $CHECK tag "$T/dp" ContentQualification RESEARCH
check "phase: complex image component" $CHECK tag "$T/dp" ComplexImageComponent PHASE

# An ISMRMRD header's subject and study reach the series.
"$CLI" phantom --matrix 32 --phantom shepp-logan-2d --traj spiral2d --format ismrmrd --out "$T/pm" >/dev/null 2>&1
$PY - "$T/pm/data.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], 'r+') as f:
    x = f['dataset/xml'][0]
    x = x.decode() if isinstance(x, bytes) else x
    info = ('<subjectInformation><patientName>Doe^Jane</patientName><patientID>MRD-77</patientID>'
            '<patientGender>F</patientGender></subjectInformation>'
            '<studyInformation><studyInstanceUID>1.2.826.0.1.3680043.10.543.2024</studyInstanceUID>'
            '<studyDate>2024-03-05</studyDate></studyInformation>')
    x = x.replace('</version>', '</version>' + info, 1)
    dt = f['dataset/xml'].dtype
    del f['dataset/xml']
    f.create_dataset('dataset/xml', (1,), dtype=dt)
    f['dataset/xml'][0] = x
PY
check "recon of MRD with subject and study" "$CLI" recon --traj "$T/pm/data.h5" --method cg --iters 3 --quiet --out-dicom "$T/dm"
check "PatientID from the MRD header" $CHECK tag "$T/dm" PatientID MRD-77
check "StudyInstanceUID from the MRD header" $CHECK tag "$T/dm" StudyInstanceUID 1.2.826.0.1.3680043.10.543.2024
check "StudyDate from the MRD header" $CHECK tag "$T/dm" StudyDate 20240305
# The nucleus the MRD header names reaches the series (ResonantNucleus in
# the enhanced image, ImagedNucleus in the classic one); a header naming
# none (the proton frequency alone) gets neither tag: nothing is guessed.
mrd_with() { # SRC DST: DST is SRC with the XML header edited by the Python expression on x in $EDIT
    $PY - "$1" "$2" <<PY
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], 'r+') as f:
    x = f['dataset/xml'][0]
    x = x.decode() if isinstance(x, bytes) else x
    x = $EDIT
    dt = f['dataset/xml'].dtype
    del f['dataset/xml']
    f.create_dataset('dataset/xml', (1,), dtype=dt)
    f['dataset/xml'][0] = x
PY
}
EDIT="x.replace('<receiverChannels>', '<systemFieldStrength_T>2.89</systemFieldStrength_T><receiverChannels>', 1).replace('63870000', '32547000')" \
    mrd_with "$T/pm/data.h5" "$T/na_freq.h5"
EDIT="x.replace('</ismrmrdHeader>', '<userParameters><userParameterString><name>ImagedNucleus</name><value>23Na</value></userParameterString></userParameters></ismrmrdHeader>')" \
    mrd_with "$T/pm/data.h5" "$T/na_named.h5"
absent() { # DIR TAG: no file of DIR carries TAG
    $PY -c "
import sys, glob, pydicom
for f in glob.glob(sys.argv[1] + '/*'):
    assert sys.argv[2] not in pydicom.dcmread(f, stop_before_pixels=True), f + ' has ' + sys.argv[2]" "$1" "$2"
}
NA=(recon --method cg --iters 2 --quiet)
check "sodium by frequency / field: enhanced" "$CLI" "${NA[@]}" --traj "$T/na_freq.h5" --dicom-enhanced --out-dicom "$T/na_fe"
check "ResonantNucleus 23NA (frequency)" $CHECK tag "$T/na_fe" ResonantNucleus 23NA
check "sodium by frequency / field: classic" "$CLI" "${NA[@]}" --traj "$T/na_freq.h5" --out-dicom "$T/na_fc"
check "ImagedNucleus 23NA (frequency)" $CHECK tag "$T/na_fc" ImagedNucleus 23NA
check "sodium named in userParameters" "$CLI" "${NA[@]}" --traj "$T/na_named.h5" --dicom-enhanced --out-dicom "$T/na_ne"
check "ResonantNucleus 23NA (named)" $CHECK tag "$T/na_ne" ResonantNucleus 23NA
check "sodium series pass dciodvfy" sh -c "! command -v dciodvfy >/dev/null || ! dciodvfy '$T/na_fe/MR_ENHANCED.dcm' 2>&1 | grep -q '^Error'"
check "no nucleus named: enhanced" "$CLI" "${NA[@]}" --traj "$T/pm/data.h5" --dicom-enhanced --out-dicom "$T/h_e"
check "no ResonantNucleus when none is named" absent "$T/h_e" ResonantNucleus
check "no ImagedNucleus when none is named" absent "$T/dm" ImagedNucleus
# --dicom-like joins the template's study.
check "--dicom-like" "$CLI" "${R[@]}" --out-dicom "$T/dl" --dicom-like "$T/dm"
check "template's PatientID" $CHECK tag "$T/dl" PatientID MRD-77
check "template's study" $CHECK tag "$T/dl" StudyInstanceUID 1.2.826.0.1.3680043.10.543.2024
check "series number after the template's" $CHECK tag "$T/dl" SeriesNumber 1002

# Volumes read from DICOM folders: the same as from NIfTI.
check "the truth as a series" "$FIX" convert "$T/p/truth.nii.gz" "$T/truth_dcm"
check "and as NIfTI read from it" "$FIX" read "$T/truth_dcm" "$T/truth_q.nii"
check "recon --ref NIfTI --truth NIfTI" "$CLI" "${R[@]}" --reg anatomical --no-register --ref "$T/truth_q.nii" \
    --truth "$T/truth_q.nii" --out "$T/r_nii.nii" --json
mv "$T/log" "$T/r_nii.json"
check "recon --ref DIR --truth DIR" "$CLI" "${R[@]}" --reg anatomical --no-register --ref "$T/truth_dcm" \
    --truth "$T/truth_dcm" --out "$T/r_dcm.nii" --json
mv "$T/log" "$T/r_dcm.json"
check "--ref DIR gives --ref NIfTI's image" $CHECK same "$T/r_nii.nii" "$T/r_dcm.nii" 1e-5 0.001
check "--truth DIR gives --truth NIfTI's PSNR" $PY -c "
import json
a, b = [json.loads(open('$T/' + n).read().strip().splitlines()[-1]) for n in ('r_nii.json', 'r_dcm.json')]
assert abs(a['psnr_db'] - b['psnr_db']) < 1e-3, (a['psnr_db'], b['psnr_db'])"
# A field map in Hz as a series (signed: the real part).
$PY - "$T" <<'PY'
import struct, sys
T = sys.argv[1]
lines = open(f'{T}/p/traj.hdr').read().split('\n')
d = [int(x) for x in lines[lines.index('# Dimensions') + 1].split()]
ro, sp = d[1], d[2] if len(d) > 2 else 1
open(f'{T}/times.hdr', 'w').write(f'# Dimensions\n1 {ro} {sp}\n')
with open(f'{T}/times.cfl', 'wb') as f:
    for i in range(ro * sp):
        f.write(struct.pack('<ff', (i % ro) * 4e-6, 0.0))
PY
check "a field map (0..200 Hz) as a series" "$FIX" convert "$T/truth_q.nii" "$T/fm_dcm" real 200
check "and as NIfTI" "$FIX" read "$T/fm_dcm" "$T/fm.nii"
check "recon --fieldmap NIfTI" "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fm.nii" --segments 0 --out "$T/f_nii.nii"
check "recon --fieldmap DIR" "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fm_dcm" --segments 0 --out "$T/f_dcm.nii"
check "--fieldmap DIR gives --fieldmap NIfTI's image" $CHECK same "$T/f_nii.nii" "$T/f_dcm.nii" 1e-6 0.001
check "the field map changes the image" sh -c "! $CHECK same '$T/o.nii' '$T/f_nii.nii' 1e-3 0.001"
# A field-map folder holding two series (the map and the truth): refused
# with the UIDs listed; --series chooses the map.
mkdir -p "$T/fm_two" && cp "$T/fm_dcm"/* "$T/fm_two/" && for f in "$T/truth_dcm"/*; do cp "$f" "$T/fm_two/t_$(basename "$f")"; done
fm_uid=$($CHECK uid "$T/fm_dcm")
check "--fieldmap with two series lists them" one_line_error "fm_two: 2 series in one folder (.*$fm_uid" \
    "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fm_two" --segments 0 --out "$T/o2.nii"
check "--fieldmap DIR --series UID" "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/fm_two" --series "$fm_uid" \
    --segments 0 --out "$T/f_two.nii"
check "--series picks the field map's series" $CHECK same "$T/f_nii.nii" "$T/f_two.nii" 1e-6 0.001

# A dynamic reconstruction (D128c8, docs/dynamic.md) as a dynamic series:
# one file per frame per slice that dcm2niix turns into recon's own 4D
# NIfTI, or one enhanced file with a temporal dimension; dciodvfy clean.
"$CLI" phantom --problem D128c8 --out "$T/dyn" >/dev/null 2>&1
DY=(recon --traj "$T/dyn/traj.cfl" --kspace "$T/dyn/kspace.cfl" --sens "$T/dyn/sens.cfl" --matrix 128x128 --reg ttv
    --lambda 0.03 --iters 2 --frame-ms 84 --variant cpu-nufft --quiet)
check "recon --reg ttv --out-dicom" "$CLI" "${DY[@]}" --out "$T/cine.nii" --out-dicom "$T/cine"
check "one file per frame per slice" [ "$(ls "$T/cine" | wc -l)" -eq 24 ]
mkdir -p "$T/xc"
check "dcm2niix converts the dynamic series" dcm2niix -z n -f conv -o "$T/xc" "$T/cine"
check "dcm2niix's 4D = recon's 4D NIfTI" $CHECK same4d "$T/cine.nii" "$T/xc/conv.nii" 1e-4 0.01
check "frames numbered and 84 ms apart" $CHECK frames "$T/cine" "$T/cine.nii" 0.084 1e-4
check "SeriesDescription says what was done" $CHECK tag "$T/cine" SeriesDescription "Larmor dynamic TTV lambda=0.03 cpu-nufft"
check "--out-dicom alone, enhanced" "$CLI" "${DY[@]}" --out-dicom "$T/cine_e" --dicom-enhanced
check "enhanced: the frames, temporal dimension" $CHECK frames "$T/cine_e" "$T/cine.nii" 0.084 1e-4
dciodvfy_clean() { # DIR: no Error line for any file
    for f in "$1"/*; do dciodvfy "$f" 2>&1 | grep '^Error' && return 1; done; return 0
}
if command -v dciodvfy >/dev/null; then
    check "dciodvfy: the dynamic series" dciodvfy_clean "$T/cine"
    check "dciodvfy: the enhanced dynamic file" dciodvfy_clean "$T/cine_e"
fi

# Refusals: one line naming the file; nothing written.
mkdir -p "$T/full" && touch "$T/full/x"
check "a non-empty --out-dicom folder" one_line_error "full: the folder exists and is not empty" \
    "$CLI" "${R[@]}" --out "$T/o2.nii" --out-dicom "$T/full"
check "--dicom-part without --out-dicom" one_line_error "need --out-dicom" "$CLI" "${R[@]}" --out "$T/o2.nii" --dicom-part phase
check "--dicom-part nonsense" one_line_error "'abs' is not magnitude, phase, real or imag" \
    "$CLI" "${R[@]}" --out-dicom "$T/d2" --dicom-part abs
for c in two-series missing-slice mixed-orientation truncated non-image undecodable; do
    $CHECK make "$T/b_$c" $c >/dev/null
done
check "--ref with two series" one_line_error "b_two-series: 2 series in one folder" \
    "$CLI" "${R[@]}" --reg anatomical --ref "$T/b_two-series" --out "$T/o2.nii" --out-dicom "$T/d2"
check "--truth with a missing slice" one_line_error "b_missing-slice: uneven slice spacing" \
    "$CLI" "${R[@]}" --truth "$T/b_missing-slice" --out "$T/o2.nii"
check "--ref with mixed orientations" one_line_error "b_mixed-orientation: mixed orientations" \
    "$CLI" "${R[@]}" --reg anatomical --ref "$T/b_mixed-orientation" --out "$T/o2.nii"
check "--fieldmap with a truncated file" one_line_error "b_truncated/[0-9a-f]*: unreadable DICOM" \
    "$CLI" "${R[@]}" --times "$T/times.cfl" --fieldmap "$T/b_truncated" --out "$T/o2.nii"
check "--truth with a non-image DICOM" one_line_error "b_non-image/report: a DICOM file without an image" \
    "$CLI" "${R[@]}" --truth "$T/b_non-image" --out "$T/o2.nii"
check "--ref with JPEG 2000" one_line_error "transfer syntax JPEG 2000 .*cannot be decoded" \
    "$CLI" "${R[@]}" --reg anatomical --ref "$T/b_undecodable" --out "$T/o2.nii"
check "--dicom-like with two series" one_line_error "b_two-series: 2 series in one folder" \
    "$CLI" "${R[@]}" --out-dicom "$T/d2" --dicom-like "$T/b_two-series"
uid=$($CHECK uid "$T/b_two-series")
check "--series chooses (info --json)" "$CLI" info --json --series "$uid" "$T/b_two-series"
check "info --json names a bad series" one_line_error "b_missing-slice: uneven" "$CLI" info --json "$T/b_missing-slice"

echo "$fails failures"
[ "$fails" -eq 0 ]
