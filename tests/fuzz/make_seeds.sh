#!/bin/sh
# Regenerates tests/fuzz/corpus/ from make_seeds.c, built against the library
# of a configured build folder (default build): tests/fuzz/make_seeds.sh [BUILD]
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$SRC/build}
ninja -C "$B" liblarmor.a >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=gnu11 -D_GNU_SOURCE -I"$B" -I"$SRC/core" -I/usr/include/nifti $(pkg-config --cflags hdf5 2>/dev/null) \
   "$SRC/tests/fuzz/make_seeds.c" -o "$tmp/make_seeds" "$B/liblarmor.a" \
   -lismrmrd $(pkg-config --libs hdf5 2>/dev/null) -lniftiio -lznz -lz -lm -lpthread -fopenmp \
   -ldcmjpls -ldcmjpeg -ldcmimgle -ldcmdata -loflog -lofstd -lstdc++
# Named seeds are rewritten; inputs kept from fuzzing runs (found-*, regress_*) stay.
"$tmp/make_seeds" "$SRC/tests/fuzz/corpus" "$tmp"
find "$SRC/tests/fuzz/corpus" -type f | sort
