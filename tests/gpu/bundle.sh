#!/usr/bin/env bash
# Builds the CUDA binaries here (this machine has nvcc and the CUDA
# libraries, not a GPU) and packs them for the device, so that a device call
# spends no time building: a few minutes of device time saved per session.
#
#   tests/gpu/bundle.sh [TARGET ...]     (default: larmor-cli and every GPU test and bench)
#
# Writes build-bundle/bins.tar.xz (stripped binaries, flat) and
# build-bundle/run-env.sh. On the device, with carry [".devdeps",
# "build-bundle"] (.devdeps from tests/gpu/fetch-devdeps.sh):
#   source build-bundle/run-env.sh      # unpacks .devdeps and the binaries into /tmp, sets LD_LIBRARY_PATH, B=/tmp/b
#   $B/larmor-cli bench --problem B128 --variants gpu-nufft
# -march is x86-64-v3 (the device's CPU is not this one); the carry limit is
# 64 MiB in all (.devdeps is about 21 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
# the device has no Debian packages beyond .devdeps (libismrmrd among them): DICOM (dcmtk) stays off there
[ -f $B/build.ninja ] || meson setup $B -Dcuda=enabled -Dgui=disabled -Dismrmrd=enabled -Ddicom=disabled -Dmarch=x86-64-v3 >/dev/null
meson configure $B -Ddicom=disabled -Dismrmrd=enabled >/dev/null
if [ $# -gt 0 ]; then
    TARGETS="$*"
else
    TARGETS="cli/larmor-cli cli/larmor-cli-full tests/gpu/gpu_bench tests/gpu/bench_nufft tests/recon/bench_session tests/recon/test_fieldmap_op $(sed -n "s/^ *'\([a-z0-9_]*\)' *: *[0-9]*,.*/tests\/gpu\/test_\1/p" tests/gpu/meson.build | tr '\n' ' ')"
fi
ninja -C $B $TARGETS
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
for t in $TARGETS; do strip -o "$S/$(basename "$t")" "$B/$t"; done
mkdir -p build-bundle
# one thread and a dictionary larger than a binary: the binaries share
# most of their bytes (the library's GPU code), stored once
(cd "$S" && tar cf - .) | xz -T1 --lzma2=preset=6,dict=192MiB >build-bundle/bins.tar.xz
cat >build-bundle/run-env.sh <<'ENV'
# sourced on the device (see tests/gpu/bundle.sh)
SYS=/tmp/sysroot
mkdir -p $SYS /tmp/b /tmp/cache
for f in .devdeps/*.deb; do dpkg -x "$f" $SYS; done
LIB=$SYS/usr/lib/x86_64-linux-gnu
for d in blas lapack; do ln -sf $LIB/$d/lib$d.so.3 $LIB/lib$d.so.3; done
export LD_LIBRARY_PATH=$LIB:/usr/local/cuda/lib64 XDG_CACHE_HOME=/tmp/cache
tar xJf build-bundle/bins.tar.xz -C /tmp/b
B=/tmp/b
ENV
ls -la build-bundle
