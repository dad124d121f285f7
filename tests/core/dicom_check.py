#!/usr/bin/python3
"""Checks for Larmor's DICOM series with the tools outside Larmor
(tests/core/test_dicom_tools.sh, tests/cli/test_dicom.sh):

  dicom_check.py same OURS.nii OTHER.nii REL MM   the same image in world space:
      every voxel of OTHER maps (through both affines) onto a voxel of OURS
      within MM mm, values within REL of max |OURS|, same voxel count
  dicom_check.py same4d OURS.nii OTHER.nii REL MM the same for 4D NIfTI, frame by frame
  dicom_check.py frames DIR OURS.nii FRAME_S REL  a dynamic series holds the
      frames of the 4D NIfTI, numbered and timed (FRAME_S s apart)
  dicom_check.py pydicom FILE_OR_DIR...           pydicom reads every file and
      its pixels; Larmor's own tags are there
  dicom_check.py tag DIR KEYWORD VALUE            every file has KEYWORD == VALUE
  dicom_check.py make DIR CASE                    a series written by pydicom:
      oblique (shuffled, names without extension), two-series, missing-slice,
      mixed-orientation, truncated, non-image, undecodable
  dicom_check.py uid DIR                          prints the SeriesInstanceUID
"""
import os
import random
import struct
import sys

import numpy as np


def read_nifti(path, frames=False):
    with open(path, 'rb') as f:
        h = f.read(352)
        assert struct.unpack('<i', h[:4])[0] == 348, path + ': not a little-endian NIfTI-1'
        dim = struct.unpack('<8h', h[40:56])
        dtype = struct.unpack('<h', h[70:72])[0]
        vox_offset = struct.unpack('<f', h[108:112])[0]
        slope, inter = struct.unpack('<2f', h[112:120])
        srow = np.array(struct.unpack('<12f', h[280:328]), dtype=np.float64).reshape(3, 4)
        f.seek(int(vox_offset))
        types = {2: np.uint8, 4: np.int16, 8: np.int32, 16: np.float32, 64: np.float64, 256: np.int8, 512: np.uint16}
        n = [max(1, dim[i]) for i in range(1, 5)]
        nt = n[3] if frames else 1
        data = np.frombuffer(f.read(), dtype=types[dtype], count=n[0] * n[1] * n[2] * nt).astype(np.float64)
    if slope not in (0.0, 1.0) or inter != 0.0:
        data = data * (slope if slope != 0 else 1.0) + inter
    aff = np.vstack([srow, [0, 0, 0, 1]])
    if frames:
        return data.reshape(nt, n[2], n[1], n[0]), aff  # [t][k][j][i]
    return data.reshape(n[2], n[1], n[0]), aff  # [k][j][i]


def same(ours, other, rel, mm):
    a, aa = read_nifti(ours)
    b, ab = read_nifti(other)
    off, err = compare3d(a, aa, b, ab, rel, mm, ours, other, np.abs(a).max())
    print(f'same: {other} = {ours}: centres within {off:.2g} mm, values within {err:.2g} of max')


def compare3d(a, aa, b, ab, rel, mm, ours, other, amax):
    """b's voxels mapped onto a's through their affines: the largest centre
    offset (mm) and value difference (relative to amax); exits beyond rel, mm."""
    if a.size != b.size:
        sys.exit(f'{other}: {b.shape[::-1]} voxels, {ours}: {a.shape[::-1]}')
    nk, nj, ni = b.shape
    idx = np.stack(np.meshgrid(np.arange(ni), np.arange(nj), np.arange(nk), indexing='ij'), -1).reshape(-1, 3)
    world = ab[:3, :3] @ idx.T + ab[:3, 3:4]
    inv = np.linalg.inv(aa)
    ia = inv[:3, :3] @ world + inv[:3, 3:4]
    r = np.rint(ia)
    off = np.linalg.norm(aa[:3, :3] @ (ia - r), axis=0)
    if off.max() > mm:
        sys.exit(f'{other}: voxel centres {off.max():.4g} mm off those of {ours} (tolerance {mm} mm)')
    ri = r.astype(int)
    shape = (a.shape[2], a.shape[1], a.shape[0])
    if (ri < 0).any() or (ri[0] >= shape[0]).any() or (ri[1] >= shape[1]).any() or (ri[2] >= shape[2]).any():
        sys.exit(f'{other}: covers voxels outside {ours}')
    va = a[ri[2], ri[1], ri[0]]
    vb = b[idx[:, 2], idx[:, 1], idx[:, 0]]
    err = np.abs(va - vb).max() / max(amax, 1e-30)
    if err > rel:
        sys.exit(f'{other}: values differ from {ours} by {err:.3g} of max (tolerance {rel})')
    return off.max(), err


def same4d(ours, other, rel, mm):
    """Two 4D NIfTI: the same frame count, and frame by frame the same
    voxel centres (mm) and values (rel of the largest |value| of all frames)."""
    a, aa = read_nifti(ours, frames=True)
    b, ab = read_nifti(other, frames=True)
    if a.shape[0] != b.shape[0]:
        sys.exit(f'{other}: {b.shape[0]} frames, {ours}: {a.shape[0]}')
    off = err = 0.0
    for t in range(a.shape[0]):
        o, e = compare3d(a[t], aa, b[t], ab, rel, mm, ours, f'{other} frame {t}', np.abs(a).max())
        off, err = max(off, o), max(err, e)
    print(f'same4d: {other} = {ours}: {a.shape[0]} frames, centres within {off:.2g} mm, values within {err:.2g} of max')


def seconds(dt):
    """DICOM DA+TM or DT text -> seconds since the day began (dates ignored
    but for whole days: the frames of a test span seconds)."""
    from datetime import datetime
    whole, _, frac = dt.partition('.')
    t = datetime.strptime(whole[:14], '%Y%m%d%H%M%S')
    return t.timestamp() + (float('0.' + frac) if frac else 0.0)


def frames(d, ours, frame_s, rel):
    """A dynamic series d (classic files or one enhanced file) against the
    4D NIfTI ours: every frame t and slice k holds ours[t][k] (values
    within rel of max), at the same position in every frame, numbered
    (TemporalPositionIdentifier / TemporalPositionIndex, and in the
    enhanced file DimensionIndexValues [t, k]) and timed t * frame_s after
    the first frame."""
    import pydicom
    a, _ = read_nifti(ours, frames=True)
    nt, nz = a.shape[0], a.shape[1]
    got = {}  # (t, k) -> (pixels, position, seconds)
    for f in files_of([d]):
        ds = pydicom.dcmread(f)
        pix = ds.pixel_array.astype(np.float64)
        if 'PerFrameFunctionalGroupsSequence' in ds:
            sh = ds.SharedFunctionalGroupsSequence[0].PixelValueTransformationSequence[0]
            names = [str(pydicom.datadict.keyword_for_tag(x.DimensionIndexPointer)) for x in ds.DimensionIndexSequence]
            if names != ['TemporalPositionIndex', 'InStackPositionNumber']:
                sys.exit(f'{f}: dimensions {names}')
            for i, pf in enumerate(ds.PerFrameFunctionalGroupsSequence):
                fc = pf.FrameContentSequence[0]
                t, k = int(fc.TemporalPositionIndex) - 1, int(fc.InStackPositionNumber) - 1
                if [int(x) for x in fc.DimensionIndexValues] != [t + 1, k + 1]:
                    sys.exit(f'{f} frame {i}: DimensionIndexValues {fc.DimensionIndexValues}')
                got[(t, k)] = (pix[i] * float(sh.RescaleSlope) + float(sh.RescaleIntercept),
                               [float(x) for x in pf.PlanePositionSequence[0].ImagePositionPatient],
                               seconds(fc.FrameAcquisitionDateTime))
        else:
            if int(ds.NumberOfTemporalPositions) != nt:
                sys.exit(f'{f}: NumberOfTemporalPositions {ds.NumberOfTemporalPositions}, {nt} frames')
            t, k = int(ds.TemporalPositionIdentifier) - 1, (int(ds.InstanceNumber) - 1) % nz
            got[(t, k)] = (pix * float(ds.RescaleSlope) + float(ds.RescaleIntercept),
                           [float(x) for x in ds.ImagePositionPatient],
                           seconds(ds.AcquisitionDate + ds.AcquisitionTime))
    if sorted(got) != [(t, k) for t in range(nt) for k in range(nz)]:
        sys.exit(f'{d}: frames and slices {sorted(got)}, want {nt} x {nz}')
    amax = np.abs(a).max()
    for (t, k), (pix, pos, sec) in got.items():
        err = np.abs(pix - a[t][k]).max() / amax
        if err > rel:
            sys.exit(f'{d}: frame {t} slice {k} differs from {ours} by {err:.3g} of max')
        if np.abs(np.array(pos) - np.array(got[(0, k)][1])).max() > 1e-6:
            sys.exit(f'{d}: frame {t} slice {k} at {pos}, frame 0 at {got[(0, k)][1]}')
        if abs(sec - got[(0, k)][2] - t * frame_s) > 1e-3:
            sys.exit(f'{d}: frame {t} at {sec - got[(0, k)][2]:.6f} s after frame 0, not {t * frame_s}')
    print(f'frames: {d} = {ours}: {nt} frames of {nz} slices, {frame_s} s apart')


def files_of(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if not f.startswith('.'))
        else:
            out.append(p)
    return out


def check_pydicom(paths):
    import pydicom
    n = 0
    for f in files_of(paths):
        ds = pydicom.dcmread(f)
        px = ds.pixel_array
        assert px.dtype == np.int16, f'{f}: pixels {px.dtype}'
        assert ds.Manufacturer == 'Larmor', f
        assert ds.ImageType[0] == 'DERIVED', f
        if 'PerFrameFunctionalGroupsSequence' in ds:
            assert ds.ContentQualification == 'RESEARCH', f
            assert px.shape[0] == int(ds.NumberOfFrames), f
        else:
            assert 'RescaleSlope' in ds and 'WindowCenter' in ds, f
        n += 1
    print(f'pydicom: read {n} files and their pixels')


def check_tag(d, key, value):
    import pydicom
    for f in files_of([d]):
        v = str(pydicom.dcmread(f, stop_before_pixels=True).get(key, ''))
        if v != value:
            sys.exit(f'{f}: {key} is {v!r}, not {value!r}')
    print(f'tag: every file of {d} has {key} = {value}')


def print_uid(d):
    import pydicom
    print(pydicom.dcmread(files_of([d])[0], stop_before_pixels=True).SeriesInstanceUID)


def new_dataset(sop_class, modality):
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.Modality = modality
    ds.is_little_endian, ds.is_implicit_VR = True, False
    return ds


def new_slice(series_uid, study_uid, frame_uid, iop, ipp, pix, k, slope=0.5, icpt=-10.0):
    ds = new_dataset('1.2.840.10008.5.1.4.1.1.4', 'MR')
    ds.PatientName = 'Other^Tool'
    ds.PatientID = 'PYDICOM-1'
    ds.StudyInstanceUID = study_uid
    ds.SeriesInstanceUID = series_uid
    ds.FrameOfReferenceUID = frame_uid
    ds.SeriesNumber = 7
    ds.InstanceNumber = k + 1
    ds.ImageOrientationPatient = [f'{x:.8f}' for x in iop]
    ds.ImagePositionPatient = [f'{x:.6f}' for x in ipp]
    ds.PixelSpacing = ['0.9', '1.2']
    ds.SliceThickness = '3'
    ds.Rows, ds.Columns = pix.shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = 'MONOCHROME2'
    ds.BitsAllocated = 16
    ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 1
    ds.RescaleSlope = str(slope)
    ds.RescaleIntercept = str(icpt)
    ds.PixelData = pix.astype('<i2').tobytes()
    return ds


def make(d, case):
    from pydicom.uid import generate_uid
    os.makedirs(d, exist_ok=True)
    rng = random.Random(7)
    a, b = np.radians(25), np.radians(-40)
    row = np.array([np.cos(b), np.sin(b), 0.0])
    col = np.array([-np.sin(b) * np.cos(a), np.cos(b) * np.cos(a), np.sin(a)])
    nrm = np.cross(row, col)
    origin = np.array([-31.5, 12.25, 44.0])
    nz, rows, cols = 9, 20, 24
    study, frame = generate_uid(), generate_uid()
    series = [generate_uid()]
    if case == 'two-series':
        series.append(generate_uid())
    slices = []
    for s_uid in series:
        for k in range(nz):
            if case == 'missing-slice' and k == 4:
                continue
            iop = list(row) + list(col)
            if case == 'mixed-orientation' and k == 6:
                iop = list(col) + list(row)
            pix = (np.add.outer(np.arange(rows) * 7, np.arange(cols) * 3) + 40 * k - 300).astype(np.int16)
            slices.append(new_slice(s_uid, study, frame, iop, origin + 3.0 * k * nrm, pix, k))
    rng.shuffle(slices)
    names = []
    for ds in slices:
        name = os.path.join(d, '%08x' % rng.getrandbits(32))
        ds.save_as(name, write_like_original=False)
        names.append(name)
    if case == 'truncated':
        with open(names[3], 'r+b') as f:
            f.truncate(os.path.getsize(names[3]) - 200)
    if case == 'non-image':
        ds = new_dataset('1.2.840.10008.5.1.4.1.1.88.11', 'SR')  # Basic Text SR
        ds.SeriesInstanceUID = series[0]
        ds.save_as(os.path.join(d, 'report'), write_like_original=False)
    if case == 'undecodable':
        from pydicom.encaps import encapsulate
        ds = slices[2]
        ds.file_meta.TransferSyntaxUID = '1.2.840.10008.1.2.4.90'  # JPEG 2000 lossless
        ds.PixelData = encapsulate([b'\xff\x4f\xff\x51' + bytes(60)])
        ds['PixelData'].is_undefined_length = True
        ds['PixelData'].VR = 'OB'
        ds.save_as(names[slices.index(ds)], write_like_original=False)
    print(f'make: {len(names)} files in {d} ({case})')


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'same':
        same(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    elif cmd == 'same4d':
        same4d(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    elif cmd == 'frames':
        frames(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    elif cmd == 'pydicom':
        check_pydicom(sys.argv[2:])
    elif cmd == 'tag':
        check_tag(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == 'make':
        make(sys.argv[2], sys.argv[3])
    elif cmd == 'uid':
        print_uid(sys.argv[2])
    else:
        sys.exit(__doc__)
