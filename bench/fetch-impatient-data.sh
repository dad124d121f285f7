#!/bin/sh
# Copies IMPATIENT MRI's sample data sets (github.com/JiadingGai/Impatient-MRI,
# mriData/) into a data folder outside git, for larmor-cli recon --traj DIR:
#   64x64x16-4coils  stack of spirals, 4 coils with maps (text headers, version 1.0)
#   64x64x1          2D spiral, one coil (binary headers, version 0.2)
# usage: bench/fetch-impatient-data.sh [DEST] [REPO]
#   DEST  default ${XDG_DATA_HOME:-~/.local/share}/larmor/impatient
#   REPO  an existing clone (work tree or bare git dir) of Impatient-MRI;
#         default: a shallow clone from GitHub into a temporary folder
# Then: larmor-cli recon --traj DEST/64x64x16-4coils --out brain.nii.gz
set -eu
dest=${1:-${XDG_DATA_HOME:-$HOME/.local/share}/larmor/impatient}
repo=${2:-}
sets="64x64x16-4coils 64x64x1"
tmp=
cleanup() { [ -n "$tmp" ] && rm -rf "$tmp"; }
trap cleanup EXIT
if [ -z "$repo" ]; then
    tmp=$(mktemp -d)
    git clone -q --depth 1 https://github.com/JiadingGai/Impatient-MRI "$tmp/repo"
    repo=$tmp/repo
fi
if [ -d "$repo/.git" ]; then gitdir=$repo/.git; else gitdir=$repo; fi
mkdir -p "$dest"
for s in $sets; do
    mkdir -p "$dest/$s.part"
    # file by file: a mirror may lack the largest blobs (c.rmtx is not needed)
    git --git-dir="$gitdir" ls-tree HEAD "mriData/$s/" | while read -r _mode _type sha path; do
        f=$(basename "$path")
        if ! git --git-dir="$gitdir" cat-file blob "$sha" > "$dest/$s.part/$f" 2>/dev/null; then
            rm -f "$dest/$s.part/$f"
            echo "fetch-impatient-data: $path: not in $repo, skipped" >&2
        fi
    done
    rm -rf "$dest/$s"
    mv "$dest/$s.part" "$dest/$s"
    echo "$dest/$s"
done
