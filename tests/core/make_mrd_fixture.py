#!/usr/bin/env python3
"""Writes MRD (ISMRMRD) test files with h5py alone, straight from the MRD
spec (compound AcquisitionHeader, vlen trajectory and data), so Larmor's
reader is checked against a writer other than libismrmrd.

usage: make_mrd_fixture.py OUTDIR

Files (each with NAME.expect: matrix, FOV, channels, samples, readout, ndim;
NAME.traj.f32: expected trajectory, samples x (kx, ky, kz) cycles/FOV;
NAME.data.f32: expected data, channels x samples x (re, im)):
  spec.h5       2D radial, 3 channels, k normalised to [-0.5, 0.5], discard
                pre/post, a noise scan first and a navigator in the middle
                (both must be skipped)
  spec_cplx.h5  the same with data as vlen {real, imag} (MRD 1.0 layout)
  spec3d.h5     3D radial in cycles/FOV (max |k| > 0.5), 2 channels, the XML
                header as a fixed-length string
  stars.h5      stack of stars: 2D trajectory per kz partition
                (kspace_encode_step_2), matrix 32 x 32 x 4
"""
import math
import os
import sys

import h5py
import numpy as np

ENC = np.dtype([('kspace_encode_step_1', '<u2'), ('kspace_encode_step_2', '<u2'),
                ('average', '<u2'), ('slice', '<u2'), ('contrast', '<u2'), ('phase', '<u2'),
                ('repetition', '<u2'), ('set', '<u2'), ('segment', '<u2'), ('user', '<u2', (8,))])
HEAD = np.dtype([('version', '<u2'), ('flags', '<u8'), ('measurement_uid', '<u4'),
                 ('scan_counter', '<u4'), ('acquisition_time_stamp', '<u4'),
                 ('physiology_time_stamp', '<u4', (3,)), ('number_of_samples', '<u2'),
                 ('available_channels', '<u2'), ('active_channels', '<u2'),
                 ('channel_mask', '<u8', (16,)), ('discard_pre', '<u2'), ('discard_post', '<u2'),
                 ('center_sample', '<u2'), ('encoding_space_ref', '<u2'),
                 ('trajectory_dimensions', '<u2'), ('sample_time_us', '<f4'),
                 ('position', '<f4', (3,)), ('read_dir', '<f4', (3,)), ('phase_dir', '<f4', (3,)),
                 ('slice_dir', '<f4', (3,)), ('patient_table_position', '<f4', (3,)),
                 ('idx', ENC), ('user_int', '<i4', (8,)), ('user_float', '<f4', (8,))])
CPLX = np.dtype([('real', '<f4'), ('imag', '<f4')])

NOISE = 1 << (19 - 1)        # ISMRMRD_ACQ_IS_NOISE_MEASUREMENT
NAVIGATOR = 1 << (23 - 1)    # ISMRMRD_ACQ_IS_NAVIGATION_DATA


def header_xml(matrix, fov, channels, traj, center2=None):
    limits = ''
    if center2 is not None:
        limits = ('<kspace_encoding_step_2><minimum>0</minimum><maximum>%d</maximum>'
                  '<center>%d</center></kspace_encoding_step_2>' % (matrix[2] - 1, center2))
    space = ('<matrixSize><x>%d</x><y>%d</y><z>%d</z></matrixSize>'
             '<fieldOfView_mm><x>%g</x><y>%g</y><z>%g</z></fieldOfView_mm>' % (tuple(matrix) + tuple(fov)))
    return ('<?xml version="1.0"?>\n<ismrmrdHeader xmlns="http://www.ismrm.org/ISMRMRD">'
            '<version>1</version>'
            '<acquisitionSystemInformation><receiverChannels>%d</receiverChannels></acquisitionSystemInformation>'
            '<experimentalConditions><H1resonanceFrequency_Hz>127000000</H1resonanceFrequency_Hz></experimentalConditions>'
            '<encoding><encodedSpace>%s</encodedSpace><reconSpace>%s</reconSpace>'
            '<encodingLimits>%s</encodingLimits><trajectory>%s</trajectory></encoding>'
            '</ismrmrdHeader>\n' % (channels, space, space, limits, traj))


class Acq:
    def __init__(self, ns, channels, tdim, traj=None, flags=0, pre=0, post=0, e1=0, e2=0, seed=0):
        self.head = np.zeros((), dtype=HEAD)
        h = self.head
        h['version'] = 1
        h['flags'] = flags
        h['number_of_samples'] = ns
        h['available_channels'] = channels
        h['active_channels'] = channels
        h['discard_pre'] = pre
        h['discard_post'] = post
        h['center_sample'] = ns // 2
        h['trajectory_dimensions'] = tdim
        h['sample_time_us'] = 2.0
        h['read_dir'] = (1, 0, 0)
        h['phase_dir'] = (0, 1, 0)
        h['slice_dir'] = (0, 0, 1)
        h['idx']['kspace_encode_step_1'] = e1
        h['idx']['kspace_encode_step_2'] = e2
        self.traj = (np.zeros(0, np.float32) if traj is None
                     else np.ascontiguousarray(traj, np.float32).reshape(-1))   # samples x tdim, dims fastest
        assert self.traj.size == ns * tdim
        # channels x samples complex, samples fastest; distinct values everywhere
        c = np.arange(channels)[:, None]
        s = np.arange(ns)[None, :]
        self.data = ((np.sin(0.37 * s + 1.3 * c + seed) + 0.01 * seed) +
                     1j * (np.cos(0.11 * s - 0.7 * c + 2 * seed))).astype(np.complex64)


def write(path, xml, acqs, complex_compound=False, fixed_xml=False):
    data_t = h5py.vlen_dtype(CPLX if complex_compound else np.dtype('<f4'))
    acq_t = np.dtype([('head', HEAD), ('traj', h5py.vlen_dtype(np.dtype('<f4'))), ('data', data_t)])
    arr = np.zeros(len(acqs), dtype=acq_t)
    for i, a in enumerate(acqs):
        arr[i]['head'] = a.head
        arr[i]['traj'] = a.traj
        if complex_compound:
            d = np.zeros(a.data.size, CPLX)
            d['real'] = a.data.real.reshape(-1)
            d['imag'] = a.data.imag.reshape(-1)
            arr[i]['data'] = d
        else:
            arr[i]['data'] = a.data.view(np.float32).reshape(-1)   # (re, im) pairs
    with h5py.File(path, 'w') as f:
        g = f.create_group('dataset')
        if fixed_xml:
            g.create_dataset('xml', data=np.array([xml.encode()]))            # fixed-length bytes
        else:
            g.create_dataset('xml', (1,), dtype=h5py.string_dtype('utf-8'))   # variable-length
            g['xml'][0] = xml
        g.create_dataset('data', data=arr, maxshape=(None,), chunks=True)


def expect(base, matrix, fov, channels, kept, traj, data, readout, ndim):
    """kept: list of (acq, slice of samples kept)"""
    with open(base + '.expect', 'w') as f:
        f.write('%d %d %d %.9g %.9g %.9g %d %d %d %d\n' % (tuple(matrix) + tuple(fov) + (channels, len(traj), readout, ndim)))
    np.asarray(traj, np.float32).tofile(base + '.traj.f32')
    np.asarray(data, np.complex64).view(np.float32).tofile(base + '.data.f32')


def radial2d(out):
    matrix, fov, nc, spokes, ns, pre, post = (48, 48, 1), (256.0, 256.0, 8.0), 3, 12, 40, 2, 1
    acqs = [Acq(128, nc, 0, flags=NOISE, seed=99)]             # noise calibration first
    ktraj, kdata = [], [[] for _ in range(nc)]
    for s in range(spokes):
        phi = math.pi * s / spokes
        r = (np.arange(ns) - ns / 2) / ns                       # [-0.5, 0.5): normalised
        t = np.stack([r * math.cos(phi), r * math.sin(phi)], axis=1).astype(np.float32)
        a = Acq(ns, nc, 2, traj=t, pre=pre, post=post, e1=s, seed=s)
        acqs.append(a)
        if s == 5:
            acqs.append(Acq(ns, nc, 2, traj=t * 0, flags=NAVIGATOR, seed=50))   # navigator: skipped
        keep = slice(pre, ns - post)
        tk = t[keep] * np.float32(matrix[0])                    # what Larmor must give: cycles/FOV
        ktraj += [(x, y, 0.0) for x, y in tk]
        for c in range(nc):
            kdata[c] += list(a.data[c, keep])
    xml = header_xml(matrix, fov, nc, 'radial')
    data = np.concatenate([np.asarray(k, np.complex64) for k in kdata])
    write(os.path.join(out, 'spec.h5'), xml, acqs)
    expect(os.path.join(out, 'spec'), matrix, fov, nc, None, ktraj, data, ns - pre - post, 2)
    write(os.path.join(out, 'spec_cplx.h5'), xml, acqs, complex_compound=True)
    expect(os.path.join(out, 'spec_cplx'), matrix, fov, nc, None, ktraj, data, ns - pre - post, 2)


def radial3d(out):
    matrix, fov, nc, spokes, ns = (24, 24, 24), (220.0, 220.0, 220.0), 2, 30, 12
    acqs, ktraj, kdata = [], [], [[] for _ in range(nc)]
    for s in range(spokes):
        z = 1 - 2 * (s + 0.5) / spokes
        phi = 2.399963 * s
        rho = math.sqrt(1 - z * z)
        r = np.arange(ns) * 1.0                                  # centre-out, cycles/FOV
        t = np.stack([r * rho * math.cos(phi), r * rho * math.sin(phi), r * z], axis=1).astype(np.float32)
        n_here = ns if s < spokes - 1 else ns - 5                # last spoke cut short
        t = t[:n_here]
        a = Acq(n_here, nc, 3, traj=t, e1=s, seed=s)
        acqs.append(a)
        ktraj += [tuple(v) for v in t]
        for c in range(nc):
            kdata[c] += list(a.data[c])
    xml = header_xml(matrix, fov, nc, 'radial')
    data = np.concatenate([np.asarray(k, np.complex64) for k in kdata])
    write(os.path.join(out, 'spec3d.h5'), xml, acqs, fixed_xml=True)
    expect(os.path.join(out, 'spec3d'), matrix, fov, nc, None, ktraj, data, ns, 3)


def stack_of_stars(out):
    matrix, fov, nc, spokes, ns, parts, c2 = (32, 32, 4), (200.0, 200.0, 40.0), 1, 6, 32, 4, 2
    acqs, ktraj, kdata = [], [], []
    for p in range(parts):
        for s in range(spokes):
            phi = math.pi * s / spokes
            r = (np.arange(ns) - ns / 2) * 1.0                  # cycles/FOV
            t = np.stack([r * math.cos(phi), r * math.sin(phi)], axis=1).astype(np.float32)
            a = Acq(ns, nc, 2, traj=t, e1=s, e2=p, seed=10 * p + s)
            acqs.append(a)
            ktraj += [(x, y, float(p - c2)) for x, y in t]
            kdata += list(a.data[0])
    xml = header_xml(matrix, fov, nc, 'radial', center2=c2)
    write(os.path.join(out, 'stars.h5'), xml, acqs)
    expect(os.path.join(out, 'stars'), matrix, fov, nc, None, ktraj, np.asarray(kdata, np.complex64), ns, 3)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    radial2d(out)
    radial3d(out)
    stack_of_stars(out)


if __name__ == '__main__':
    main()
