#!/usr/bin/env bash
# Larmor's DICOM series judged by the tools outside it, both ways:
#  * written by Larmor (tests/core/dicom_fixture.c: axial, oblique, oblique
#    with k against the normal, phase, real, imaginary, one slice, enhanced
#    multi-frame): dcm2niix converts each back to Larmor's own NIfTI (voxels
#    within the rescale quantisation 1e-4 of max, centres within 0.01 mm);
#    dciodvfy reports no error on any file; pydicom reads every file;
#    Larmor's reader gives the NIfTI back too;
#  * written by pydicom (oblique, files shuffled, names without extension):
#    Larmor reads it as dcm2niix converts it (0.01 mm, values exact); bad
#    series (two series, a missing slice, mixed orientations, a truncated
#    file, a non-image DICOM, JPEG 2000) fail with one line naming the file.
# Skips (77) only when dcm2niix, dciodvfy or pydicom is missing
# (scripts/install-deps.sh installs them).
#   test_dicom_tools.sh DICOM_FIXTURE
set -u
FIX=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
CHECK="$PY $HERE/dicom_check.py"
for t in dcm2niix dciodvfy; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed (apt-get install dcm2niix dicom3tools)"; exit 77; }
done
$PY -c 'import pydicom, numpy' 2>/dev/null || { echo "SKIP: pydicom not installed (apt-get install python3-pydicom)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@" >"$T/log" 2>&1; then echo "ok: $what"; else echo "FAIL: $what"; cat "$T/log"; fails=$((fails + 1)); fi
}

dciodvfy_clean() { # CASE: dciodvfy reports no Error line on any file of $T/CASE
    local f bad=0
    for f in "$T/$1"/*; do
        dciodvfy "$f" >"$T/dciodvfy" 2>&1
        if grep -q '^Error' "$T/dciodvfy"; then
            echo "FAIL: dciodvfy $1/$(basename "$f")"; grep '^Error' "$T/dciodvfy" | sort | uniq -c; bad=1
        fi
    done
    [ $bad -eq 0 ] && echo "ok: dciodvfy: no errors in $1 ($(ls "$T/$1" | wc -l) files)" || fails=$((fails + 1))
}
check "fixture series written" "$FIX" write "$T"
for c in axial oblique oblique_flipped oblique_phase oblique_real single_slice enhanced; do
    mkdir -p "$T/x_$c"
    check "dcm2niix converts $c" dcm2niix -z n -f conv -o "$T/x_$c" "$T/$c"
    check "dcm2niix's $c = Larmor's NIfTI" $CHECK same "$T/$c.nii" "$T/x_$c/conv.nii" 1e-4 0.01
    check "Larmor reads $c back" "$FIX" read "$T/$c" "$T/r_$c.nii"
    check "Larmor's reading of $c = its NIfTI" $CHECK same "$T/$c.nii" "$T/r_$c.nii" 1e-4 0.01
    check "pydicom reads every file of $c" $CHECK pydicom "$T/$c"
    dciodvfy_clean "$c"
done
check "provenance: PatientID" $CHECK tag "$T/oblique" PatientID FIXTURE-oblique
check "provenance: StudyInstanceUID" $CHECK tag "$T/oblique" StudyInstanceUID 1.2.826.0.1.3680043.10.543.7
check "enhanced: resonant nucleus" $CHECK tag "$T/enhanced" ResonantNucleus 23NA
check "enhanced: content qualification" $CHECK tag "$T/enhanced" ContentQualification RESEARCH

# Dynamic (4D) series: one file per slice per frame, or one enhanced file
# with a temporal dimension. dcm2niix converts the classic ones to the 4D
# NIfTI; Debian 12's dcm2niix (1.0.20220720) reads DimensionIndexValues
# only for Philips, Canon and Bruker files, so the enhanced ones are
# checked frame by frame with pydicom.
for c in dynamic dynamic_2d dynamic_enhanced dynamic_2d_enhanced; do
    check "$c: frames, numbers and times" $CHECK frames "$T/$c" "$T/$c.nii" 0.25 1e-4
    check "pydicom reads every file of $c" $CHECK pydicom "$T/$c"
    dciodvfy_clean "$c"
done
for c in dynamic dynamic_2d; do
    mkdir -p "$T/x_$c"
    check "dcm2niix converts $c" dcm2niix -z n -f conv -o "$T/x_$c" "$T/$c"
    check "dcm2niix's $c = Larmor's 4D NIfTI" $CHECK same4d "$T/$c.nii" "$T/x_$c/conv.nii" 1e-4 0.01
done
check "classic dynamic: temporal positions" $CHECK tag "$T/dynamic" NumberOfTemporalPositions 5

# A series written by another tool.
check "pydicom writes an oblique shuffled series" $CHECK make "$T/p_oblique" oblique
mkdir -p "$T/xp"
check "dcm2niix converts it" dcm2niix -z n -f conv -o "$T/xp" "$T/p_oblique"
check "Larmor reads it" "$FIX" read "$T/p_oblique" "$T/rp.nii"
check "Larmor's reading = dcm2niix's (0.01 mm, values exact)" $CHECK same "$T/rp.nii" "$T/xp/conv.nii" 1e-6 0.01

# Bad series: one line naming the file (or folder) and the problem; no output.
bad() { # case, expected substring
    $CHECK make "$T/b_$1" "$1" >/dev/null 2>&1
    rm -f "$T/b.nii"
    if "$FIX" read "$T/b_$1" "$T/b.nii" 2>"$T/err" >/dev/null; then
        echo "FAIL: $1 accepted"; fails=$((fails + 1)); return
    fi
    if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$2" "$T/err" && [ ! -e "$T/b.nii" ]; then
        echo "ok: $1 refused: $(cat "$T/err")"
    else
        echo "FAIL: $1: $(cat "$T/err")"; fails=$((fails + 1))
    fi
}
bad two-series "b_two-series: 2 series in one folder (1\.2\..*, 1\.2\..*); choose one with --series UID"
bad missing-slice "b_missing-slice: uneven slice spacing: 6 mm between .*b_missing-slice/[0-9a-f]\{8\} and"
bad mixed-orientation "b_mixed-orientation: mixed orientations: .*b_mixed-orientation/[0-9a-f]\{8\} has"
bad truncated "b_truncated/[0-9a-f]\{8\}: unreadable DICOM (truncated or damaged)"
bad non-image "b_non-image/report: a DICOM file without an image (SOP class 1.2.840.10008.5.1.4.1.1.88.11)"
bad undecodable "b_undecodable/[0-9a-f]\{8\}: transfer syntax JPEG 2000 .*cannot be decoded"
# --series chooses one of the two.
uid=$($CHECK uid "$T/b_two-series")
check "--series picks one of two" "$FIX" read "$T/b_two-series" "$T/two.nii" "$uid"
check "it is the pydicom oblique series" $CHECK same "$T/two.nii" "$T/xp/conv.nii" 1e-6 0.01

echo "$fails failures"
[ "$fails" -eq 0 ]
