#!/usr/bin/env bash
# Copies what the device runs of IMPATIENT MRI need into DEST (default
# .impatient-src/ of this checkout, which git ignores through
# .git/info/exclude; it is never committed): its source without the sample
# data, prebuilt binary and MATLAB files (DEST/src, ~3 MB), and the
# 64x64x16-4coils data set (DEST/data, ~7 MB). The device has no internet;
# name the folder in the device run's carry.
#   bench/impatient-prepare.sh [REPO] [DATA_DIR] [DEST]
#     REPO: a clone (work tree or bare git dir) of github.com/JiadingGai/Impatient-MRI
#           (default /work/.mirror/JiadingGai+Impatient-MRI/repo)
#     DATA_DIR: the IMPATIENT 64x64x16-4coils directory (bench/fetch-impatient-data.sh;
#           default /work/wt-c-data/64x64x16-4coils)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=${1:-/work/.mirror/JiadingGai+Impatient-MRI/repo}
DATA=${2:-/work/wt-c-data/64x64x16-4coils}
DEST=${3:-.impatient-src}
if [ -d "$REPO/.git" ]; then G=$REPO/.git; else G=$REPO; fi
git --git-dir="$G" rev-parse HEAD >/dev/null
if [ "$DEST" = .impatient-src ]; then
    ex=$(git rev-parse --git-common-dir)/info/exclude
    mkdir -p "$(dirname "$ex")"
    grep -qx '/.impatient-src/' "$ex" 2>/dev/null || echo '/.impatient-src/' >>"$ex"
fi
rm -rf "$DEST/src.part"
mkdir -p "$DEST/src.part" "$DEST/data"
# file by file: a mirror may lack the largest blobs (none of them needed)
git --git-dir="$G" ls-tree -r HEAD | while read -r _mode _type sha path; do
    case $path in mriData/* | mriSolver | *.mat | *.m) continue ;; esac
    mkdir -p "$DEST/src.part/$(dirname "$path")"
    git --git-dir="$G" cat-file blob "$sha" >"$DEST/src.part/$path"
done
echo "$(git --git-dir="$G" rev-parse HEAD)" >"$DEST/src.part/COMMIT"
rm -rf "$DEST/src" && mv "$DEST/src.part" "$DEST/src"
rm -rf "$DEST/data/64x64x16-4coils"
mkdir -p "$DEST/data/64x64x16-4coils"
for f in kx ky kz kdata_r kdata_i ix iy iz sensi_r sensi_i fm t mask idata_r idata_i; do
    [ -f "$DATA/$f.dat" ] && cp "$DATA/$f.dat" "$DEST/data/64x64x16-4coils/"
done
du -sh "$DEST/src" "$DEST/data"
