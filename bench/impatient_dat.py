"""IMPATIENT MRI's .dat files, for the scripts that compare with it: the
text-header form (version 1.0: 'key = value' lines, 'Binary_Size = n',
'Binary:', n little-endian float32, ..., 'EOF') and the older binary form
(version 0.2: a float 0.2, three ints, the count, then the floats). Pure
Python (no numpy); numpy users wrap the result with np.frombuffer."""
import array
import struct
import sys


def read_dat(path):
    """(floats as array('f'), header dict) of an IMPATIENT .dat file; the
    binary form has no header (an empty dict)."""
    raw = open(path, 'rb').read()
    vals = array.array('f')
    if raw[:4] == struct.pack('<f', 0.2):
        total = struct.unpack('<i', raw[16:20])[0]
        vals.frombytes(raw[20:20 + 4 * total])
        if sys.byteorder != 'little':
            vals.byteswap()
        return vals, {}
    hdr, pos = {}, 0
    while pos < len(raw):
        end = raw.find(b'\n', pos)
        end = len(raw) if end < 0 else end
        line = raw[pos:end].decode('latin-1').strip()
        pos = end + 1
        if line.startswith('EOF'):
            break
        if '=' not in line:
            continue
        k, v = [s.strip() for s in line.split('=', 1)]
        hdr[k] = v
        if k == 'Binary_Size':
            n = int(v)
            while True:  # comments may precede 'Binary:'
                end = raw.find(b'\n', pos)
                line = raw[pos:end].decode('latin-1').strip()
                pos = end + 1
                if line == 'Binary:':
                    break
            part = array.array('f')
            part.frombytes(raw[pos:pos + 4 * n])
            if sys.byteorder != 'little':
                part.byteswap()
            vals.extend(part)
            pos += 4 * n
    return vals, hdr

