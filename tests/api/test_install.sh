#!/bin/sh
# The installed public face: `meson install` into a temporary destdir, then
# a small C program built only from what was installed, through
#   pkg-config --cflags --libs larmor
# (PKG_CONFIG_SYSROOT_DIR pointing into the destdir), reconstructs the
# B32 phantom (CG, cpu-nufft, the default options) and must find the same
# error against the truth as the build's `larmor-cli bench` reports for that
# reconstruction (1e-6 relative). A second program that includes an
# internal header (lm_encoding.h) must not compile there.
#   test_install.sh BUILDDIR LARMOR-CLI [SANITIZE]   (the build's b_sanitize)
set -eu
B=$1
CLI=$2
SAN=${3:-none}
command -v pkg-config >/dev/null || { echo "SKIP: no pkg-config"; exit 77; }
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "SKIP: no C compiler"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
D=$T/dest

meson install -C "$B" --destdir "$D" --no-rebuild >"$T/install.log" 2>&1 || {
    cat "$T/install.log"; echo "FAIL: meson install --destdir"; exit 1; }
pc=$(find "$D" -name larmor.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no larmor.pc installed"; exit 1; }
so=$(find "$D" -name 'liblarmor.so*' | head -n 1)
[ -n "$so" ] || { echo "FAIL: no liblarmor.so installed"; exit 1; }
inc=$(find "$D" -type d -path '*/include/larmor' | head -n 1)
[ -f "$inc/larmor.h" ] || { echo "FAIL: larmor.h not installed under include/larmor"; exit 1; }
for h in lm_encoding.h lm_solver.h lm_sums.h lm_kernels_impl.h; do
    [ ! -e "$inc/$h" ] || { echo "FAIL: the internal header $h is installed"; exit 1; }
done

export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$D"
flags=$(pkg-config --cflags --libs larmor)
san=""
[ "$SAN" = none ] || san="-fsanitize=$SAN"

cat >"$T/recon.c" <<'C'
#include <larmor.h>
#include <stdio.h>

int main(void)
{
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find("B32", &err);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    if (!def || lm_problem_make(def, &g, &t, &k, &truth, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "cpu-nufft";
    o.use_cache = 0;
    lm_recon_result res = {0};
    lm_metrics m;
    if (lm_recon_run(&g, t, k, &o, &res, &err) != LM_OK ||
        lm_metrics_compute(res.image->data, truth->data, lm_geom_voxels(&g), NULL, 0, &m, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%.9g\n", m.percent_error);
    fprintf(stderr, "B32 through the installed library: %d CG iterations, error %.3f %%, PSNR %.2f dB\n",
            res.iters_done, m.percent_error, m.psnr_db);
    int ok = res.iters_done > 0 && m.percent_error > 0;
    lm_recon_result_clear(&res);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    return ok ? 0 : 1;
}
C
# shellcheck disable=SC2086
"$CC" -std=gnu11 $san -o "$T/recon" "$T/recon.c" $flags || { echo "FAIL: a program on <larmor.h> does not build"; exit 1; }
libdir=$(dirname "$so")
got=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$T/recon") || {
    echo "FAIL: the program on the installed library"; exit 1; }
want=$("$CLI" bench --problem B32 --variants cpu-nufft --json 2>/dev/null |
       sed -n 's/.*"percent_error": \([^,]*\),.*/\1/p')
[ -n "$want" ] || { echo "FAIL: no percent_error from larmor-cli bench"; exit 1; }
awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * b) }' || {
    echo "FAIL: error $got % through the installed library, $want % from larmor-cli bench"; exit 1; }

printf '#include <larmor.h>\n#include <lm_encoding.h>\nint main(void) { return 0; }\n' >"$T/internal.c"
# shellcheck disable=SC2086
if "$CC" -std=gnu11 -o "$T/internal" "$T/internal.c" $flags 2>/dev/null; then
    echo "FAIL: the internal lm_encoding.h is reachable from the installed headers"; exit 1
fi
echo "installed: $(ls "$inc" | wc -l) headers, $(basename "$so"), larmor.pc; the program ran"
