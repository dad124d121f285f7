#!/bin/sh
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# straight from the library sources, outside meson's main build.
#   tests/fuzz/build.sh [OUTDIR]      (default: build-fuzz at the repository root)
# Exits 77 when clang cannot link libFuzzer (apt-get install clang libclang-rt-14-dev).
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$SRC/build-fuzz}
CC=${LM_FUZZ_CC:-clang}
mkdir -p "$OUT/obj"
OUT=$(cd "$OUT" && pwd)

if ! command -v "$CC" >/dev/null 2>&1; then
    echo "fuzz: $CC not found" >&2
    exit 77
fi
probe="$OUT/probe.c"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$probe"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$probe" -o "$OUT/probe" >/dev/null 2>&1; then
    echo "fuzz: $CC cannot link libFuzzer (-fsanitize=fuzzer)" >&2
    exit 77
fi
rm -f "$probe" "$OUT/probe"

have_mrd=0
if pkg-config --exists hdf5 2>/dev/null && [ -f /usr/include/ismrmrd/ismrmrd.h ]; then
    have_mrd=1
fi
cat > "$OUT/lm_config.h.new" <<CONF
#define LM_HAVE_CUDA 0
#define LM_HAVE_ISMRMRD $have_mrd
#define LM_VERSION "fuzz"
#define LM_SOURCE_DIR "$SRC"
CONF
if ! cmp -s "$OUT/lm_config.h.new" "$OUT/lm_config.h" 2>/dev/null; then
    mv "$OUT/lm_config.h.new" "$OUT/lm_config.h"
else
    rm -f "$OUT/lm_config.h.new"
fi

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-g -O1 -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter"
INC="-I$OUT -I$SRC/core -I$SRC/phantoms -I$SRC/kernels -I$SRC/tests/core -I/usr/include/nifti $(pkg-config --cflags libxml-2.0)"
LIBS="-lfftw3f_threads -lfftw3f -lniftiio -lznz -ldeflate $(pkg-config --libs libxml-2.0) -lz -lm -lpthread"
if [ "$have_mrd" = 1 ]; then
    INC="$INC $(pkg-config --cflags hdf5)"
    LIBS="-lismrmrd $(pkg-config --libs hdf5) $LIBS"
fi

# The library: only the I/O part (and what it needs), instrumented for
# coverage (fuzzer-no-link) and the sanitizers. DICOM files are dcmtk's to
# parse: the targets link the build without it (lm_dicom_none.c) and fuzz
# Larmor's series logic on tag records (fuzz_dicom_series).
LIBSRC="lm_error.c lm_trace.c lm_types.c lm_atomic.c lm_io_cfl.c lm_io_nifti.c lm_gzip_parallel.c lm_io_parboil.c lm_io_load.c lm_fftw.c lm_mrd_units.c lm_mrd_slices.c lm_mrd_header.c lm_mrd_nucleus.c lm_mrd_h5.c lm_mrd_read.c lm_mrd_info.c lm_mrd_write.c lm_mrd_oversampling.c lm_mrd_stream.c lm_dicom_series.c lm_dicom_common.c lm_dicom_none.c"
objs=""
for s in $LIBSRC; do
    o="$OUT/obj/${s%.c}.o"
    if [ ! -f "$o" ] || [ "$SRC/core/$s" -nt "$o" ] || [ "$OUT/lm_config.h" -nt "$o" ] \
       || [ -n "$(find "$SRC/core" -name '*.h' -newer "$o" 2>/dev/null)" ]; then
        "$CC" $CFLAGS $SAN -fsanitize=fuzzer-no-link $INC -c "$SRC/core/$s" -o "$o"
    fi
    objs="$objs $o"
done

TARGETS="fuzz_cfl fuzz_parboil fuzz_nifti fuzz_mrd_xml fuzz_dicom_series"
if [ "$have_mrd" = 1 ]; then
    TARGETS="$TARGETS fuzz_mrd fuzz_mrd_struct fuzz_mrd_stream"
fi
for t in $TARGETS; do
    "$CC" $CFLAGS $SAN -fsanitize=fuzzer $INC "$SRC/tests/fuzz/$t.c" $objs $LIBS -o "$OUT/$t"
done
echo "$TARGETS" > "$OUT/targets"
echo "fuzz targets in $OUT: $TARGETS"
