#!/usr/bin/env bash
# SENSE side by side with BART 0.8 on BART's own 8-coil data (issue: multi-coil
# acquisitions): `bart traj -3 -r -x 64 -y 556`, `bart phantom -3 -k -s 8 -t`,
# maps from `bart phantom -3 -S 8`, truth `bart phantom -3 -x 64`; 30 CG
# iterations each; lambda swept for both; best of each compared. Then both
# with maps estimated from the data: BART grids the data (inverse NUFFT),
# transforms to k-space and runs ecalib on its centre; Larmor estimates its
# own (ESPIRiT on the gridded centre) when no --sens is given. Estimated maps
# are unit-norm, so those errors are scale-matched.
# BART's phantom k-space is the continuous transform of point-sampled
# ellipsoids, so Larmor runs with --dirac (BART's own voxel model).
# Usage: bench/bench-bart-sense.sh [VARIANT]   (writes ./bench-bart/sense8)
set -euo pipefail
cd "$(dirname "$0")/.."
VARIANT=${1:-cpu-nufft}
CLI=${LARMOR_CLI:-build/cli/larmor-cli}
D=bench-bart/sense8
mkdir -p $D
command -v bart >/dev/null || { echo "bart is not installed (apt-get install bart)"; exit 1; }
if [ ! -f $D/img.cfl ]; then
    bart traj -3 -r -x 64 -y 556 $D/traj
    bart phantom -3 -k -s 8 -t $D/traj $D/ksp
    bart phantom -3 -S 8 -x 64 $D/sens
    bart phantom -3 -x 64 $D/img
fi
now() { date +%s.%N; }
err() { $CLI metrics --truth $D/img.cfl --image "$1" --json | python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['percent_error'])"; }
errs() { $CLI metrics --truth $D/img.cfl --image "$1" --scale-match --json | python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['percent_error'])"; }
echo "tool lambda wall_s error_as_is error_scale_matched"
for r in 0.0001 0.001 0.01 0.1; do
    t0=$(now); bart pics -S -l2 -r $r -i 30 -t $D/traj $D/ksp $D/sens $D/bart_$r >/dev/null 2>&1; t1=$(now)
    echo "bart-pics $r $(echo "$t1 - $t0" | bc) $(err $D/bart_$r.cfl) $(errs $D/bart_$r.cfl)"
done
for l in 0 0.001 0.01 0.1; do
    t0=$(now)
    $CLI recon --traj $D/traj --kspace $D/ksp --sens $D/sens --matrix 64 --method cg --variant "$VARIANT" \
        --lambda $l --iters 30 --dirac --no-cache --complex --out $D/larmor_$l.nii >/dev/null
    t1=$(now)
    echo "larmor-$VARIANT $l $(echo "$t1 - $t0" | bc) $(err $D/larmor_$l.nii) $(errs $D/larmor_$l.nii)"
done
# estimated maps
t0=$(now)
bart nufft -i -d 64:64:64 -t $D/traj $D/ksp $D/grid >/dev/null 2>&1
bart fft -u 7 $D/grid $D/kgrid
bart ecalib -m1 -r 24 $D/kgrid $D/ecal >/dev/null 2>&1
t1=$(now)
echo "bart-ecalib (nufft -i, fft, ecalib -m1 -r 24): $(echo "$t1 - $t0" | bc) s"
for r in 0.0001 0.001 0.01; do
    t0=$(now); bart pics -S -l2 -r $r -i 30 -t $D/traj $D/ksp $D/ecal $D/bart_est_$r >/dev/null 2>&1; t1=$(now)
    echo "bart-pics-ecalib $r $(echo "$t1 - $t0" | bc) - $(errs $D/bart_est_$r.cfl)"
done
for l in 0 0.01; do
    t0=$(now)
    $CLI recon --traj $D/traj --kspace $D/ksp --matrix 64 --method cg --variant "$VARIANT" \
        --lambda $l --iters 30 --dirac --no-cache --complex --out $D/larmor_est_$l.nii --sens-out $D/larmor_maps.cfl >/dev/null
    t1=$(now)
    echo "larmor-$VARIANT-estimated $l $(echo "$t1 - $t0" | bc) - $(errs $D/larmor_est_$l.nii)"
done
