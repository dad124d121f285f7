#!/usr/bin/env bash
# Installs Larmor's build and test dependencies from Debian 12 packages.
# Does nothing (and needs no network) when everything is already there.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config python3
      libgtk-4-dev libcairo2-dev adwaita-icon-theme hicolor-icon-theme fonts-dejavu-core fonts-cantarell
      libxtst-dev libfftw3-dev libgsl-dev libnifti-dev nifti-bin zlib1g-dev libdeflate-dev liblapacke-dev libnlopt-dev libxml2-dev
      libismrmrd-dev ismrmrd-tools libhdf5-dev python3-h5py python3-numpy python3-pytest
      libdcmtk-dev dcmtk dcm2niix dicom3tools python3-pydicom
      bart xvfb xauth clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# CUDA is optional: found at /usr/local/cuda when installed (meson -Dcuda=auto).
