#!/usr/bin/env bash
# The parallel .nii.gz (several gzip members) read by tools other than
# zlib's gzread: gunzip -t accepts it, and Python's gzip module (what
# nibabel reads through) inflates it to the bytes of the .nii written from
# the same volume.
#   test_nifti_gz_readers.sh TEST_GZIP_PARALLEL
set -u
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$1" "$T" 2>"$T/log" || { cat "$T/log"; echo "FAIL: the writer's own test"; exit 1; }
fails=0
if gunzip -t "$T/v.nii.gz"; then echo "ok: gunzip -t"; else echo "FAIL: gunzip -t"; fails=1; fi
if /usr/bin/python3 - "$T/v.nii" "$T/v.nii.gz" <<'PY'
import gzip, sys
plain = open(sys.argv[1], 'rb').read()
unz = gzip.open(sys.argv[2], 'rb').read()
print('python gzip: %d bytes, .nii %d bytes' % (len(unz), len(plain)))
sys.exit(0 if unz == plain and len(plain) > 348 else 1)
PY
then echo "ok: python gzip.open equals the .nii"; else echo "FAIL: python gzip.open"; fails=1; fi
exit $fails
