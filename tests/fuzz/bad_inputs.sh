#!/bin/sh
# Makes one bad input of every kind and shows what a user sees: the command,
# its exit status and its stderr. The output is the table behind
# docs/bad-inputs.md (paths shortened to the file name).
#   tests/fuzz/bad_inputs.sh [BUILDDIR]     (default: build; needs cli/larmor-cli)
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-$SRC/build}" && pwd)
CLI="$B/cli/larmor-cli"
[ -x "$CLI" ] || { echo "no $CLI: build it first" >&2; exit 2; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
cd "$T"

row() { # row "case" command...
    label=$1
    shift
    out=$("$@" 2>&1 >/dev/null | head -n 3 | sed "s|$T/||g; s|$T||g")
    st=$("$@" >/dev/null 2>&1; echo $?)
    cmd=$(echo "$*" | sed "s|$CLI|larmor-cli|; s|$T/||g")
    printf '| %s | `%s` | %s | `%s` |\n' "$label" "$cmd" "$st" "$(echo "$out" | tr '\n' ' ' | sed 's/ *$//; s/|/\\|/g')"
}

hdr() { printf '# Dimensions\n%s\n' "$1" > "$2.hdr"; }
floats() { $PY -c "import sys,struct; sys.stdout.buffer.write(struct.pack('<%df' % $1, *([0.5] * $1)))"; }

# A good problem to start from.
"$CLI" phantom --matrix 16 --traj radial3d --samples 300 --readout 8 --out good >/dev/null 2>&1
"$CLI" phantom --problem B32 --format ismrmrd --out mrd >/dev/null 2>&1

echo '| case | command | exit | message (stderr) |'
echo '|---|---|---|---|'
# ---- any format ----
row "missing file" "$CLI" info nothere.cfl
row "missing file (.h5)" "$CLI" info nothere.h5
row "missing file (.nii.gz)" "$CLI" info nothere.nii.gz
row "unknown extension" "$CLI" info notes.txt
echo hello > noext
row "no extension" "$CLI" info noext
mkdir folder.cfl
row "a folder" "$CLI" info folder.cfl
touch empty.nii empty.bin empty.h5
row "empty .nii" "$CLI" info empty.nii
row "empty .bin" "$CLI" info empty.bin
row "empty .h5" "$CLI" info empty.h5
# ---- BART cfl/hdr ----
hdr "4 3" onlyhdr
row "cfl: .cfl missing" "$CLI" info onlyhdr.cfl
floats 24 > onlycfl.cfl
row "cfl: .hdr missing" "$CLI" info onlycfl.cfl
hdr "4 3" short; floats 20 > short.cfl
row "cfl: data shorter than header (truncated)" "$CLI" info short.cfl
hdr "4 3" long; floats 30 > long.cfl
row "cfl: data longer than header" "$CLI" info long.cfl
printf '# Command\nfoo\n' > nodims.hdr; floats 24 > nodims.cfl
row "cfl: no # Dimensions line" "$CLI" info nodims.cfl
hdr "4 x3" garbage; floats 24 > garbage.cfl
row "cfl: size not a number" "$CLI" info garbage.cfl
hdr "4 0 3" zero; : > zero.cfl
row "cfl: a zero size" "$CLI" info zero.cfl
hdr "-4 3" neg; floats 24 > neg.cfl
row "cfl: negative size" "$CLI" info neg.cfl
hdr "4294967296 4294967296 4294967296 4294967296" ovf; floats 8 > ovf.cfl
row "cfl: sizes overflow 64 bits" "$CLI" info ovf.cfl
hdr "99999999999 99999999999" absurd; floats 8 > absurd.cfl
row "cfl: absurd sizes" "$CLI" info absurd.cfl
hdr "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2" d17; floats 4 > d17.cfl
row "cfl: 17 dimensions" "$CLI" info d17.cfl
printf '# Dimensions\n' > nosizes.hdr; : > nosizes.cfl
row "cfl: no sizes" "$CLI" info nosizes.cfl
hdr "2 10" traj2; floats 40 > traj2.cfl
row "cfl: trajectory 2 x N (not 3 x N)" "$CLI" recon --traj traj2.cfl --kspace good/kspace.cfl --matrix 16 --method grid-linear --out o.nii
hdr "1 299" k299; floats 598 > k299.cfl
row "traj/k-space length mismatch" "$CLI" recon --traj good/traj.cfl --kspace k299.cfl --matrix 16 --method grid-linear --out o.nii
cp good/traj.hdr nant.hdr; cp good/traj.cfl nant.cfl
printf '\000\000\300\177' | dd of=nant.cfl bs=1 seek=16 conv=notrunc 2>/dev/null
row "cfl: NaN in trajectory" "$CLI" recon --traj nant.cfl --kspace good/kspace.cfl --matrix 16 --method grid-linear --out o.nii
cp good/kspace.hdr infk.hdr; cp good/kspace.cfl infk.cfl
printf '\000\000\200\177' | dd of=infk.cfl bs=1 seek=40 conv=notrunc 2>/dev/null
row "cfl: Inf in k-space" "$CLI" recon --traj good/traj.cfl --kspace infk.cfl --matrix 16 --method grid-linear --out o.nii
row "recon: matrix 0" "$CLI" recon --traj good/traj.cfl --kspace good/kspace.cfl --matrix 0 --method cg --out o.nii
row "recon: output folder missing" "$CLI" recon --traj good/traj.cfl --kspace good/kspace.cfl --matrix 16 --method grid-linear --out no/such/dir/o.nii
# ---- Parboil ----
$PY -c "
import struct
def w(n, k, x, extra=0, cut=None):
    b = struct.pack('<ii', k, x) + struct.pack('<%df' % (5*max(k,0)+3*max(x,0)+extra), *([0.25]*(5*max(k,0)+3*max(x,0)+extra)))
    open(n, 'wb').write(b if cut is None else b[:cut])
w('pb_trunc.bin', 10, 8, cut=100)
w('pb_neg.bin', -3, 8)
w('pb_extra.bin', 3, 2, extra=1)
open('pb_huge.bin','wb').write(struct.pack('<ii', 2**31-1, 2**31-1) + b'\0'*64)
open('pb_short.bin','wb').write(b'\1\0\0')
"
row "parboil: truncated" "$CLI" info pb_trunc.bin
row "parboil: negative numK" "$CLI" info pb_neg.bin
row "parboil: size fits neither mri-q nor mri-fhd" "$CLI" info pb_extra.bin
row "parboil: absurd numK/numX" "$CLI" info pb_huge.bin
row "parboil: shorter than its header" "$CLI" info pb_short.bin
# ---- NIfTI ----
cp good/truth.nii.gz t.nii.gz
gzip -dc t.nii.gz > t.nii
head -c 200 t.nii > nii_hdr.nii
row "nifti: truncated header" "$CLI" info nii_hdr.nii
head -c 2000 t.nii > nii_data.nii
row "nifti: truncated data" "$CLI" info nii_data.nii
head -c $(( $(stat -c %s t.nii.gz) / 2 )) t.nii.gz > nii_gz.nii.gz
row "nifti: truncated .nii.gz" "$CLI" info nii_gz.nii.gz
echo "hello" > notnii.nii
row "nifti: not NIfTI" "$CLI" info notnii.nii
$PY -c "
import struct
b = bytearray(open('t.nii','rb').read())
def save(n, off, fmt, *v):
    c = bytearray(b); struct.pack_into(fmt, c, off, *v); open(n,'wb').write(c)
save('nii_4d.nii', 40, '<8h', 4, 16, 16, 16, 3, 1, 1, 1)
save('nii_huge.nii', 40, '<8h', 3, 32767, 32767, 32767, 1, 1, 1, 1)
save('nii_negdim.nii', 40, '<8h', 3, 16, -16, 16, 1, 1, 1, 1)
save('nii_dtype.nii', 70, '<h', 1)
save('nii_baddtype.nii', 70, '<h', 999)
save('nii_voxoff.nii', 108, '<f', 1e9)
save('nii_nan.nii', 352 + 4 * 100, '<f', float('nan'))
save('nii_sizeof.nii', 0, '<i', 999)
"
row "nifti: 4D image" "$CLI" info nii_4d.nii
row "nifti: absurd dims" "$CLI" info nii_huge.nii
row "nifti: negative dim" "$CLI" info nii_negdim.nii
row "nifti: unsupported datatype (binary)" "$CLI" info nii_dtype.nii
row "nifti: invalid datatype code" "$CLI" info nii_baddtype.nii
row "nifti: vox_offset past the end" "$CLI" info nii_voxoff.nii
row "nifti: NaN voxel" "$CLI" metrics --truth t.nii --image nii_nan.nii
row "nifti: bad sizeof_hdr" "$CLI" info nii_sizeof.nii
cp "$SRC/tests/fuzz/findings/nifti_gz_8GB_alloc.nii.gz" gzbomb.nii.gz
row "nifti: 60-byte .nii.gz whose header asks 8 GB (ulimit -v 4 GB)" sh -c "ulimit -v 4000000; '$CLI' info gzbomb.nii.gz"
# ---- ISMRMRD ----
head -c 5000 mrd/data.h5 > trunc.h5
row "ismrmrd: truncated" "$CLI" info trunc.h5
echo "not hdf5" > text.h5
row "ismrmrd: not HDF5" "$CLI" info text.h5
$PY - <<'PY' 2>/dev/null
import h5py, numpy as np
with h5py.File('plain.h5', 'w') as f:
    f['x'] = np.arange(3)
with h5py.File('nodata.h5', 'w') as f:
    f.create_dataset('dataset/xml', data=np.array([b'<ismrmrdHeader><encoding><encodedSpace><matrixSize><x>8</x><y>8</y><z>1</z></matrixSize><fieldOfView_mm><x>1</x><y>1</y><z>1</z></fieldOfView_mm></encodedSpace></encoding></ismrmrdHeader>']))
with h5py.File('badxml.h5', 'w') as f:
    f.create_dataset('dataset/xml', data=np.array([b'<ismrmrdHeader><encoding><encodedSpace><matrixSize><x>8</x>']))
PY
row "ismrmrd: HDF5 but not MRD" "$CLI" info plain.h5
row "ismrmrd: no /dataset/data" "$CLI" info nodata.h5
row "ismrmrd: XML header truncated" "$CLI" info badxml.h5
row "ismrmrd: bad LARMOR_MRD_TRAJ_UNITS" env LARMOR_MRD_TRAJ_UNITS=inches "$CLI" info mrd/data.h5
touch afile
row "phantom: --out names a file, not a folder" "$CLI" phantom --problem B32 --format ismrmrd --out afile
for f in "$SRC"/tests/fuzz/findings/mrd_hdf5_*.h5; do
    cp "$f" .
    row "ismrmrd: fuzz finding $(basename "$f") (10 s limit)" timeout 10 "$CLI" info "$(basename "$f")"
done
