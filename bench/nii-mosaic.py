#!/usr/bin/env python3
"""Mosaic of every z slice of a float32 3D NIfTI (.nii/.nii.gz) as an 8-bit
grey PNG (stdlib only), scaled up by an integer factor, plus its statistics.
usage: nii-mosaic.py IMAGE.nii.gz OUT.png [columns [scale]]"""
import gzip, math, struct, sys, zlib

def write_png(path, w, h, pix):
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    rows = b''.join(b'\0' + bytes(pix[y * w:(y + 1) * w]) for y in range(h))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(rows, 9)) + chunk(b'IEND', b''))

def read_nifti(path):
    raw = (gzip.open if path.endswith('.gz') else open)(path, 'rb').read()
    dim = struct.unpack('<8h', raw[40:56])
    dtype = struct.unpack('<h', raw[70:72])[0]
    off = int(struct.unpack('<f', raw[108:112])[0])
    if dtype != 16:
        sys.exit('%s: only float32 images (datatype 16), not %d' % (path, dtype))
    nx, ny, nz = dim[1], dim[2], max(dim[3], 1)
    v = struct.unpack('<%df' % (nx * ny * nz), raw[off:off + 4 * nx * ny * nz])
    return nx, ny, nz, v

def main():
    img, out = sys.argv[1], sys.argv[2]
    nx, ny, nz, v = read_nifti(img)
    cols = int(sys.argv[3]) if len(sys.argv) > 3 else min(nz, 4)
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    rows = (nz + cols - 1) // cols
    vs = sorted(v)
    hi = vs[int(0.995 * (len(vs) - 1))] or 1.0  # window at the 99.5th percentile
    mean = sum(v) / len(v)
    print('%s: %dx%dx%d, min %.4g, max %.4g, mean %.4g, std %.4g, 99.5th pct %.4g' % (
        img, nx, ny, nz, vs[0], vs[-1], mean, math.sqrt(sum((x - mean) ** 2 for x in v) / len(v)), hi))
    W, H = cols * nx, rows * ny
    pix = bytearray(W * H)
    for z in range(nz):
        r, c = divmod(z, cols)
        for y in range(ny):
            for x in range(nx):
                g = int(255 * min(max(v[(z * ny + y) * nx + x] / hi, 0), 1))
                # y up (radiological display: anterior at the top)
                pix[(r * ny + (ny - 1 - y)) * W + c * nx + x] = g
    big = bytearray(W * k * H * k)
    for y in range(H * k):
        row = pix[(y // k) * W:(y // k + 1) * W]
        big[y * W * k:(y + 1) * W * k] = bytes(b for b in row for _ in range(k))
    write_png(out, W * k, H * k, big)

main()
