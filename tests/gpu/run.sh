#!/bin/bash
# On a machine with a GPU: build Larmor with CUDA, run the GPU tests and the
# GPU benchmark, leave the logs in $OUT (default ./gpu-out).
#
#   tests/gpu/run.sh [quick|multi|cli|quality|coils] # quick: tests and B64 only; cli: tests then larmor-cli bench/recon;
#                                    # coils: gpu-sense test, SENSE bench on B64c8 and B128c32;
#                                    # quality: bench/quality-sweep.sh with gpu-nufft and the B128 bench;
#                                    # multi: gpu-multi test, B128 gpu-tuned vs gpu-multi;
#                                    # time: gpu-time test, F^H d with/without field map on B64 and B128
#                                    # fallback: issue 14's GPU-failure tests (+ compute-sanitizer)
#                                    # build: build only (the caller runs what it wants from build-dev)
#
# The device machines have no Debian packages: FFTW and libniftiio come from
# .devdeps/*.deb (made here by tests/gpu/fetch-devdeps.sh, unpacked into /tmp/sysroot); meson may be a pip module; a
# missing pkg-config is replaced by a small Python one; a missing cairo (the
# CLI's, not needed here) by an empty .pc, and only the GPU targets are built.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/run.log
MODE=${1:-full}
exec > >(tee -a "$LOG") 2>&1
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n) mode $MODE"
T0=$(date +%s)

SYS=/tmp/sysroot
if ls .devdeps/*.deb >/dev/null 2>&1; then
    mkdir -p $SYS
    for f in .devdeps/*.deb; do dpkg -x "$f" $SYS; done
fi
# headers the .deb set lacks (nifti1.h is in libnifti2-dev): copied from a
# development machine into build-devhdr/ (carried, ignored by git)
if [ -d build-devhdr/nifti ]; then
    mkdir -p $SYS/usr/include/nifti
    for h in build-devhdr/nifti/*.h; do
        [ -e $SYS/usr/include/nifti/$(basename $h) ] || cp $h $SYS/usr/include/nifti/
    done
fi
LIB=$SYS/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$LIB/pkgconfig:/tmp/fakepc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_SYSROOT_DIR=$SYS
export LIBRARY_PATH=$LIB${LIBRARY_PATH:+:$LIBRARY_PATH}
# BLAS and LAPACK sit in alternatives folders (no update-alternatives here)
for d in blas lapack; do
    [ -e $LIB/$d/lib$d.so.3 ] && ln -sf $LIB/$d/lib$d.so.3 $LIB/lib$d.so.3 && ln -sf $LIB/$d/lib$d.so.3 $LIB/lib$d.so
done
export LD_LIBRARY_PATH=$LIB:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CPATH=$SYS/usr/include${CPATH:+:$CPATH}
mkdir -p /tmp/fakepc /tmp/bin
export PATH=/tmp/bin:/usr/local/cuda/bin:$PATH

if ! command -v pkg-config >/dev/null 2>&1; then
    echo "no pkg-config: using a minimal Python stand-in"
    cat > /tmp/bin/pkg-config <<'PYEOF'
#!/usr/bin/env python3
import os, re, sys
path = [p for p in os.environ.get("PKG_CONFIG_PATH", "").split(":") if p] + [
    "/usr/lib/x86_64-linux-gnu/pkgconfig", "/usr/share/pkgconfig", "/usr/lib/pkgconfig"]
sysroot = os.environ.get("PKG_CONFIG_SYSROOT_DIR", "")
def load(name):
    for d in path:
        f = os.path.join(d, name + ".pc")
        if os.path.exists(f):
            v, k = {"pcfiledir": d}, {}
            for line in open(f):
                line = line.strip()
                m = re.match(r"^([A-Za-z0-9_.]+)=(.*)$", line)
                if m:
                    v[m.group(1)] = m.group(2)
                    continue
                m = re.match(r"^([A-Za-z0-9_.]+):\s*(.*)$", line)
                if m:
                    k[m.group(1)] = m.group(2)
            def sub(s):
                for _ in range(10):
                    s = re.sub(r"\$\{(\w+)\}", lambda mm: v.get(mm.group(1), ""), s)
                return s
            for key in list(v):
                v[key] = sub(v[key])
            for key in list(k):
                k[key] = sub(k[key])
            return v, k
    return None
def root(flags):
    out = []
    for t in flags.split():
        if sysroot and (t.startswith("-I/") or t.startswith("-L/")):
            t = t[:2] + sysroot + t[2:]
        out.append(t)
    return out
args = sys.argv[1:]
if "--version" in args:
    print("0.29.2"); sys.exit(0)
opts = [a for a in args if a.startswith("--")]
pkgs = [a for a in args if not a.startswith("--") and not re.match(r"^[<>=]", a) and not re.match(r"^[0-9]", a)]
res = []
for p in pkgs:
    r = load(p)
    if r is None:
        if "--print-errors" in opts or not opts or "--exists" in opts:
            sys.stderr.write("Package %s was not found\n" % p)
        sys.exit(1)
    v, k = r
    for o in opts:
        if o == "--modversion":
            print(k.get("Version", "0"))
        elif o == "--cflags" or o == "--cflags-only-I":
            res += root(k.get("Cflags", ""))
        elif o == "--libs" or o == "--libs-only-l" or o == "--libs-only-L":
            res += root(k.get("Libs", ""))
            if "--static" in opts:
                res += root(k.get("Libs.private", ""))
        elif o.startswith("--variable="):
            print(v.get(o.split("=", 1)[1], ""))
if res:
    print(" ".join(res))
sys.exit(0)
PYEOF
    chmod +x /tmp/bin/pkg-config
fi

if command -v meson >/dev/null 2>&1; then MESON=meson; else MESON="python3 -m mesonbuild.mesonmain"; fi
echo "meson: $($MESON --version), ninja: $(ninja --version 2>/dev/null), nvcc: $(nvcc --version | tail -2 | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1

B=build-dev
$MESON setup $B --wipe -Dgui=disabled -Dismrmrd=disabled -Dcuda=enabled \
    -Dnifti_include=$SYS/usr/include/nifti >"$OUT/setup.log" 2>&1 ||
    $MESON setup $B -Dgui=disabled -Dismrmrd=disabled -Dcuda=enabled \
        -Dnifti_include=$SYS/usr/include/nifti >"$OUT/setup.log" 2>&1 || {
        tail -40 "$OUT/setup.log"
        echo "meson setup failed"
        exit 1
    }
TARGETS="tests/gpu/test_timeseg3d tests/gpu/test_sense_split tests/gpu/test_forward tests/gpu/test_session tests/recon/bench_session tests/gpu/test_avail tests/gpu/test_ksum tests/gpu/test_cg tests/gpu/test_oom tests/gpu/test_multi tests/gpu/test_sense tests/gpu/gpu_bench cli/larmor-cli cli/larmor-cli-full tests/recon/test_fieldmap_op tests/gpu/test_time tests/gpu/test_admm tests/recon/test_prox tests/gpu/test_fallback tests/recon/test_fallback tests/gpu/test_nufft_plan tests/gpu/bench_nufft"
ninja -C $B $TARGETS >"$OUT/build.log" 2>&1 || {
    grep -E "error|undefined" "$OUT/build.log" | head -40
    echo "build failed"
    exit 1
}
grep -E "spill|stack frame" "$OUT/build.log" | grep -v " 0 bytes" | sort | uniq -c | head
echo "built in $(( $(date +%s) - T0 )) s"
if command -v cuobjdump >/dev/null 2>&1; then
    # instruction mix of gpu-phasor's grid kernel (complex weights), sm_90
    cuobjdump -sass -arch sm_90 $B/kernels/liblarmor-kernels.a.p/lm_gpu_phasor.o 2>/dev/null |
        awk '/Function : _Z9k_ph_gridILb1/{f=1} f&&/Function : /&&!/k_ph_gridILb1/{f=0} f' |
        grep -oE "^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9_.@!P]+( [A-Z0-9_.]+)?" | awk '{print $2}' | sed 's/^@!\?P[0-9]//' |
        cut -d. -f1 | sort | uniq -c | sort -rn | head -14 | tr '\n' ' '
    echo "(k_ph_grid<true> SASS opcode counts, whole function)"
fi

[ "$MODE" = build ] && exit 0
export XDG_CACHE_HOME=$ROOT/$B/tests/cache
mkdir -p "$XDG_CACHE_HOME"
if [ "$MODE" = quality ]; then
    # Quality sweep (bench/quality-sweep.sh) with gpu-nufft, and the
    # Figure 9 bench of B128 for every GPU variant through larmor-cli.
    CLI=./$B/cli/larmor-cli
    LARMOR_CLI=$CLI SWEEP_DIR=/tmp/sweep bash bench/quality-sweep.sh gpu-nufft B64 B64n B128 B128n | tee "$OUT/quality.txt"
    cp /tmp/sweep/runs.jsonl "$OUT/quality-runs.jsonl"
    [ -n "${QUALITY_ONLY:-}" ] || $CLI bench --problem B128 --variants gpu-base,gpu-regalloc,gpu-coalesce,gpu-constmem,gpu-fasttrig,gpu-tuned,gpu-multi,gpu-phasor,gpu-nufft --budget 40 | tee "$OUT/bench-B128.txt"
    echo "quality mode done after $(( $(date +%s) - T0 )) s"
    exit 0
elif [ "$MODE" = fallback ]; then
    # Issue 14: injected out-of-memory and a lost device fall back to the
    # CPU (tests/gpu/test_fallback.c, tests/recon/test_fallback.c,
    # tests/cli/test_fallback.sh with LARMOR_GPU_FAULT), then the GPU
    # test under compute-sanitizer when there is one.
    $MESON test -C $B --no-rebuild --print-errorlogs --num-processes 1 -v gpu-fallback recon-fallback cli-fallback \
        >"$OUT/tests.log" 2>&1
    grep -E "^ *[0-9]+/|->|note:|FAIL|CHECK" "$OUT/tests.log" | head -60
    if command -v compute-sanitizer >/dev/null 2>&1; then
        for tool in memcheck racecheck; do
            compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/gpu/test_fallback >"$OUT/sanitizer-$tool.log" 2>&1
            echo "compute-sanitizer $tool: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitizer-$tool.log") clean summary)"
        done
    fi
    echo "fallback mode done after $(( $(date +%s) - T0 )) s"
    exit 0
elif [ "$MODE" = coils ]; then
    # SENSE on the device: the encoding test, then whole reconstructions with
    # the true maps (Q cached after a warm-up run), E^H d over every coil.
    $MESON test -C $B --no-rebuild --suite gpu --print-errorlogs --num-processes 1 -v gpu-sense gpu-cg >"$OUT/tests.log" 2>&1
    grep -E "gpu-sense|gpu-cg|E\^H|SENSE|FFT strategy|rho vs|CHECK" "$OUT/tests.log" | head -80
    CLI=./$B/cli/larmor-cli
    $CLI bench --problem B64c8 --variants gpu-nufft,gpu-phasor,gpu-tuned,cpu-nufft | tee "$OUT/bench-B64c8.txt"
    $CLI bench --problem B128c32 --variants ${COIL_VARIANTS:-gpu-nufft,gpu-phasor} | tee "$OUT/bench-B128c32.txt"
    echo "coils mode done after $(( $(date +%s) - T0 )) s"
    exit 0
elif [ "$MODE" = time ]; then
    # The off-resonance term: every direct variant against cpu-dp, E^H d with
    # a field map, then one coil's F^H d with and without it (target: B128
    # under 0.6 s on an H100).
    $MESON test -C $B --no-rebuild --suite gpu --print-errorlogs --num-processes 1 -v gpu-time >"$OUT/tests.log" 2>&1
    TRC=$?
    grep -E "rel error|CHECK|Ok:|Fail:|Skipped:" "$OUT/tests.log" | head -120
    ./$B/tests/gpu/gpu_bench --problems B64,B128 --variants gpu-tuned,gpu-phasor,gpu-fasttrig,gpu-multi --fieldmap \
        --no-tune --out "$OUT" | tee "$OUT/bench-fieldmap.txt"
    echo "time mode done after $(( $(date +%s) - T0 )) s, tests rc $TRC"
    exit $TRC
elif [ "$MODE" = multi ]; then
    $MESON test -C $B --no-rebuild --suite gpu --print-errorlogs --num-processes 1 -v gpu-avail gpu-ksum gpu-multi >"$OUT/tests.log" 2>&1
else
    $MESON test -C $B --no-rebuild --suite gpu --print-errorlogs --num-processes 1 -v >"$OUT/tests.log" 2>&1
fi
TRC=$?
grep -E "^ *[0-9]+/[0-9]+ |rel error|worst|tuned|GPU 0|iters|rho vs|Ok:|Fail:|Skipped:|Timeout:" "$OUT/tests.log" | grep -vE "^  (explicit|image|Q grid|odd|2D|tiny)" | head -80
grep -E "CHECK failed|FAIL" "$OUT/tests.log" | head -20
echo "tests rc $TRC after $(( $(date +%s) - T0 )) s"

if [ "$MODE" = cli ]; then
    # The command-line contract on the GPU: variants, tune, bench (Figure 9),
    # whole reconstructions timed by larmor-cli itself.
    CLI=./$B/cli/larmor-cli
    $CLI variants | tee "$OUT/variants.txt"
    timeout 150 $CLI tune | tee "$OUT/tune.txt"
    $CLI bench --problem B64 --variants cpu-separable,gpu-base,gpu-regalloc,gpu-coalesce,gpu-constmem,gpu-fasttrig,gpu-tuned,gpu-multi,gpu-phasor,gpu-nufft --budget 60 | tee "$OUT/bench-B64.txt"
    $CLI bench --problem B128 --variants gpu-base,gpu-regalloc,gpu-coalesce,gpu-constmem,gpu-fasttrig,gpu-tuned,gpu-multi,gpu-phasor,gpu-nufft --budget 45 --json > "$OUT/bench-B128.json"
    $CLI bench --problem B128 --variants gpu-phasor,gpu-nufft --budget 45 | tee "$OUT/bench-B128-fast.txt"
    $CLI phantom --problem B128 --out /tmp/b128 && $CLI phantom --problem B128n --out /tmp/b128n
    for v in gpu-phasor gpu-nufft gpu-fasttrig; do for rep in 1 2; do
        $CLI recon --traj /tmp/b128/traj --kspace /tmp/b128/kspace --matrix 128 --method cg --variant $v --no-cache \
            --truth /tmp/b128/truth.nii.gz --out /tmp/r.nii --json | tee -a "$OUT/recon.jsonl"; done; done
    for lam in 0.03 0.1 0.3 1; do for P in b128 b128n; do
        $CLI recon --traj /tmp/$P/traj --kspace /tmp/$P/kspace --matrix 128 --method cg --variant gpu-nufft --no-cache \
            --reg anatomical --ref /tmp/$P/ref.nii.gz --lambda $lam --truth /tmp/$P/truth.nii.gz --out /tmp/r.nii --json | tee -a "$OUT/anat.jsonl"; done; done
    echo "cli mode done after $(( $(date +%s) - T0 )) s"
    exit $TRC
fi
BARGS="--problems B64,B128"
[ "$MODE" = quick ] && BARGS="--problems B64"
[ "$MODE" = multi ] && BARGS="--problems B64,B128 --variants gpu-tuned,gpu-multi,gpu-phasor --skip-recon --no-tune"
./$B/tests/gpu/gpu_bench $BARGS --out "$OUT" >"$OUT/bench.txt" 2>"$OUT/bench.err"
BRC=$?
cat "$OUT/bench.txt"
tail -5 "$OUT/bench.err"
cp "$XDG_CACHE_HOME"/larmor/tune-*.txt "$OUT"/ 2>/dev/null
echo "bench rc $BRC; total $(( $(date +%s) - T0 )) s"
exit $TRC
