#!/usr/bin/env bash
# Run here (a Debian 12 development machine) before tests/gpu/run.sh goes to
# a GPU machine that has no Debian packages: downloads the .debs the build
# needs into .devdeps/ (git-ignored) for run.sh to unpack into a sysroot.
# Pass `carry: [".devdeps"]` to the device call.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devdeps
cd .devdeps
apt-get download libfftw3-dev libfftw3-single3 libfftw3-double3 libfftw3-long3 libfftw3-bin \
    libniftiio-dev libniftiio2 libnifti2-dev libznz-dev libznz3 zlib1g-dev \
    liblapacke liblapacke-dev liblapack3 liblapack-dev libblas3 libblas-dev libtmglib3 libtmglib-dev \
    libgfortran5 libquadmath0 libgsl-dev libgsl27 libgslcblas0 libnlopt-dev libnlopt0 libgomp1 \
    libdeflate-dev libdeflate0
# larmor-cli built here links cairo (the demo's PNG): its run-time libraries,
# for binaries carried to the device (tests/gpu/bundle.sh)
apt-get download libcairo2 libpixman-1-0 libfontconfig1 fontconfig-config libfreetype6 libpng16-16 \
    libxcb-shm0 libxcb1 libxcb-render0 libxrender1 libx11-6 libxext6 libexpat1 libbrotli1 libxau6 libxdmcp6 \
    libbsd0 libmd0
# the MRD server and reader (libismrmrd: HDF5, pugixml; HDF5 links curl and
# its TLS and Kerberos libraries, not in the device's image)
apt-get download libismrmrd1.8 libhdf5-103-1 libpugixml1v5 libsz2 libaec0 libcurl4 libnghttp2-14 libpsl5 \
    librtmp1 libssh2-1 libldap-2.5-0 libsasl2-2 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 \
    libkeyutils1 libzstd1 libssl3 libgnutls30 libhogweed6 libnettle8 libgmp10 libidn2-0 libunistring2 \
    libtasn1-6 libp11-kit0 libffi8 libcom-err2
ls -1 *.deb
