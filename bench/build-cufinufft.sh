#!/bin/bash
# Build cuFINUFFT (a benchmark dependency only, never Larmor's) from the
# source tarballs in .benchdeps/ (FINUFFT and its header-only POET, made by
# `git archive --prefix=finufft/` of github.com/flatironinstitute/finufft
# and `--prefix=poet/` of .../poet, their commits in finufft.commit and
# poet.commit; the
# device machines have no network, so no CMake/CPM downloads): nvcc on its
# CUDA sources, in parallel, into DIR/libcufinufft.a.
#   bench/build-cufinufft.sh [DIR]   (default /tmp/cufinufft)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-/tmp/cufinufft}
ARCH=${ARCH:-sm_90}
mkdir -p "$D" && cd "$D"
[ -d finufft ] || tar xzf "$ROOT/.benchdeps/finufft.tar.gz"
[ -d poet ] || tar xzf "$ROOT/.benchdeps/poet.tar.gz"
# POET's version header is made by its CMake: the fields FINUFFT reads
sed -e 's/@POET_VERSION_MAJOR@/0/; s/@POET_VERSION_MINOR@/0/; s/@POET_VERSION_PATCH@/1/' \
    -e 's/@POET_VERSION_STRING@/0.0.1/; s/@POET_VERSION_FULL@/0.0.1/' \
    poet/include/poet/version.hpp.in > poet/include/poet/version.hpp
F=finufft
INC="-I$F/include -I$F/contrib -Ipoet/include"
FLAGS="-std=c++17 -O3 -arch=$ARCH --extended-lambda --extra-device-vectorization -Xcompiler -fPIC -DNDEBUG"
mkdir -p obj
jobs=()
for m in spread_nupts_driven spread_subprob spread_output_driven interp_nupts_driven interp_subprob; do
    for dim in 1 2 3; do
        jobs+=("nvcc $FLAGS $INC -DCUFINUFFT_DIM=$dim -x cu -c $F/src/cuda/${m}_inst.cu -o obj/${m}_${dim}d.o")
    done
done
for s in fft heuristics makeplan setpts execute spread_blockgather_inst; do
    jobs+=("nvcc $FLAGS $INC -c $F/src/cuda/$s.cu -o obj/$s.o")
done
for s in c_interface spreadinterp; do
    jobs+=("nvcc $FLAGS $INC -x cu -c $F/src/cuda/$s.cpp -o obj/$s.o")
done
for s in kernel utils pswf; do
    jobs+=("g++ -std=c++17 -O3 -fPIC -DNDEBUG $INC -I/usr/local/cuda/include -c $F/src/common/$s.cpp -o obj/common_$s.o")
done
printf '%s\n' "${jobs[@]}" | xargs -P "$(nproc)" -I{} bash -c '{} || { echo "FAILED: {}"; exit 255; }'
rm -f libcufinufft.a
ar rcs libcufinufft.a obj/*.o
echo "built $D/libcufinufft.a ($(git -C "$F" log -1 --format=%h 2>/dev/null || echo "$(ls obj | wc -l) objects"))"
