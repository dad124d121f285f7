/* Synthetic field maps and the phantom's signal under them
 * (lm_fieldmap_synth.h). */
#include "lm_fieldmap_synth.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_kernels.h"
#include "lm_trajgen.h"

double lm_fieldmap_synth_shape(double x, double y, double z)
{
    const double u = x / 0.5, v = y / 0.5, w = z / 0.5;
    const double bump_y = 0.40, sigma = 0.05;
    double d2 = x * x + (y - bump_y) * (y - bump_y) + z * z;
    return 0.25 * u + 0.15 * v - 0.1 * w + 0.2 * (u * u + v * v + w * w) + exp(-d2 / (2 * sigma * sigma));
}

static lm_code check_matrix(const int64_t n[3], const char *what, lm_error *err)
{
    for (int a = 0; a < 3; a++)
        if (!n || n[a] < 1 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "%s: matrix is out of range (1..4096 per axis)", what);
    return LM_OK;
}

lm_code lm_fieldmap_synth(const int64_t n[3], double max_hz, float **out, lm_error *err)
{
    lm_code c = check_matrix(n, "field map", err);
    if (c != LM_OK)
        return c;
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "field map: output missing");
    *out = NULL;
    if (!(max_hz >= 0) || max_hz > LM_FIELDMAP_SYNTH_MAX_HZ)
        return lm_fail(err, LM_ERR_INVALID, "field map: maximum %g Hz is out of range (0..%g Hz)", max_hz,
                       LM_FIELDMAP_SYNTH_MAX_HZ);
    const int64_t count = n[0] * n[1] * n[2];
    double *v = lm_alloc((size_t)count, sizeof(double), err, "field map");
    float *f = lm_alloc((size_t)count, sizeof(float), err, "field map");
    if (!v || !f) {
        free(v);
        free(f);
        return err ? err->code : LM_ERR_NOMEM;
    }
    double peak = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t ix = i % n[0], iy = (i / n[0]) % n[1], iz = i / (n[0] * n[1]);
        v[i] = lm_fieldmap_synth_shape(lm_voxel_pos(ix, n[0]), lm_voxel_pos(iy, n[1]), lm_voxel_pos(iz, n[2]));
        peak = fmax(peak, fabs(v[i]));
    }
    const double s = peak > 0 ? max_hz / peak : 0;
    for (int64_t i = 0; i < count; i++)
        f[i] = (float)(s * v[i]);
    free(v);
    *out = f;
    return LM_OK;
}

/* src[i] past the edges: the straight line through the two edge values. */
static inline double ghost(const double *src, int64_t n, int64_t i)
{
    if (i < 0)
        return src[0] + (double)i * (src[1] - src[0]);
    if (i >= n)
        return src[n - 1] + (double)(i - n + 1) * (src[n - 1] - src[n - 2]);
    return src[i];
}

/* One axis of the 2x upsampling: n values into 2n. Coarse voxel i sits at
 * (i - n/2)/n, fine voxel j at (j - n)/(2n): j = 2i + (n odd), and the
 * other fine voxels are cubic midpoints. */
static void upsample_line(const double *src, int64_t n, double *dst)
{
    if (n == 1) {
        dst[0] = dst[1] = src[0];
        return;
    }
    const int64_t odd = n % 2;
    for (int64_t j = 0; j < 2 * n; j++) {
        int64_t u = j - odd; /* twice the coarse index */
        if (u % 2 == 0) {
            dst[j] = src[u / 2]; /* u >= 0 here */
            continue;
        }
        int64_t i = (u - 1) / 2; /* floor(u / 2): u - 1 is even */
        dst[j] = (-ghost(src, n, i - 1) + 9 * ghost(src, n, i) + 9 * ghost(src, n, i + 1) - ghost(src, n, i + 2)) / 16;
    }
}

lm_code lm_fieldmap_upsample2(const int64_t n[3], const float *f, float **out, lm_error *err)
{
    lm_code c = check_matrix(n, "field map upsampling", err);
    if (c != LM_OK)
        return c;
    if (!f || !out)
        return lm_fail(err, LM_ERR_INVALID, "field map upsampling: map or output missing");
    *out = NULL;
    int64_t m[3];
    for (int a = 0; a < 3; a++)
        m[a] = n[a] > 1 ? 2 * n[a] : 1;
    const int64_t big = m[0] * m[1] * m[2], lmax = 2 * (m[0] > m[1] ? (m[0] > m[2] ? m[0] : m[2]) : (m[1] > m[2] ? m[1] : m[2]));
    /* work in double, axis by axis: cur holds dims d[] */
    double *a = lm_alloc((size_t)big, sizeof(double), err, "field map upsampling");
    double *b = lm_alloc((size_t)big, sizeof(double), err, "field map upsampling");
    double *line = lm_alloc((size_t)lmax, 2 * sizeof(double), err, "field map upsampling");
    float *res = lm_alloc((size_t)big, sizeof(float), err, "field map upsampling");
    if (!a || !b || !line || !res) {
        free(a), free(b), free(line), free(res);
        return err ? err->code : LM_ERR_NOMEM;
    }
    int64_t d[3] = {n[0], n[1], n[2]};
    for (int64_t i = 0; i < d[0] * d[1] * d[2]; i++)
        a[i] = f[i];
    for (int ax = 0; ax < 3; ax++) {
        if (n[ax] == 1)
            continue;
        int64_t e[3] = {d[0], d[1], d[2]};
        e[ax] = 2 * d[ax];
        const int64_t sd = ax == 0 ? 1 : ax == 1 ? d[0] : d[0] * d[1];
        const int64_t se = ax == 0 ? 1 : ax == 1 ? e[0] : e[0] * e[1];
        const int64_t lines = d[0] * d[1] * d[2] / d[ax];
        for (int64_t l = 0; l < lines; l++) {
            /* line l: the other two indices, x fastest */
            int64_t o[3], r = l;
            for (int q = 0; q < 3; q++) {
                if (q == ax) {
                    o[q] = 0;
                    continue;
                }
                o[q] = r % d[q];
                r /= d[q];
            }
            const int64_t base_d = o[0] + d[0] * (o[1] + d[1] * o[2]);
            const int64_t base_e = o[0] + e[0] * (o[1] + e[1] * o[2]);
            double *src = line, *dst = line + d[ax];
            for (int64_t i = 0; i < d[ax]; i++)
                src[i] = a[base_d + i * sd];
            upsample_line(src, d[ax], dst);
            for (int64_t i = 0; i < e[ax]; i++)
                b[base_e + i * se] = dst[i];
        }
        d[ax] = e[ax];
        double *tmp = a;
        a = b;
        b = tmp;
    }
    for (int64_t i = 0; i < big; i++)
        res[i] = (float)a[i];
    free(a), free(b), free(line);
    *out = res;
    return LM_OK;
}

void lm_fieldmap_fine_free(lm_fieldmap_fine *fine)
{
    if (fine) {
        free(fine->rho);
        free(fine->sens);
        free(fine->f);
        free(fine);
    }
}

lm_code lm_fieldmap_fine_make(const lm_phantom *p, const lm_geom *g, const lm_coils_synth *cs, const float *fieldmap,
                              lm_fieldmap_fine **out, lm_error *err)
{
    if (!p || !g || !out)
        return lm_fail(err, LM_ERR_INVALID, "field-map synthesis: phantom, geometry or output missing");
    *out = NULL;
    lm_code c = check_matrix(g->n, "field-map synthesis", err);
    if (c != LM_OK)
        return c;
    if (cs && g->n[2] == 1 && cs->dim != 2)
        return lm_fail(err, LM_ERR_INVALID, "field-map synthesis: a 2D matrix needs 2D coil maps");
    lm_geom g2 = *g;
    for (int a = 0; a < 3; a++)
        g2.n[a] = g->n[a] > 1 ? 2 * g->n[a] : 1;
    g2.basis = LM_BASIS_BOX;
    const int64_t N2 = lm_geom_voxels(&g2);
    lm_fieldmap_fine *fine = calloc(1, sizeof *fine);
    lm_volume *truth = NULL;
    lm_sens *s2 = NULL;
    if (!fine)
        return lm_fail(err, LM_ERR_NOMEM, "field-map synthesis: out of memory");
    memcpy(fine->n, g2.n, sizeof fine->n);
    fine->ncoils = cs ? cs->ncoils : 1;
    if ((c = lm_phantom_truth(p, &g2, LM_PROBLEM_TRUTH_SUB, &truth, err)) != LM_OK)
        goto fail;
    if (!(fine->rho = lm_alloc((size_t)N2, sizeof(float), err, "fine truth"))) {
        c = err ? err->code : LM_ERR_NOMEM;
        goto fail;
    }
    for (int64_t i = 0; i < N2; i++)
        fine->rho[i] = crealf(truth->data[i]);
    if (cs) {
        if ((c = lm_coils_synth_maps(cs, g2.n, &s2, err)) != LM_OK)
            goto fail;
        fine->sens = s2->s; /* take the array over */
        s2->s = NULL;
    }
    if (fieldmap && (c = lm_fieldmap_upsample2(g->n, fieldmap, &fine->f, err)) != LM_OK)
        goto fail;
    lm_volume_free(truth);
    lm_sens_free(s2);
    *out = fine;
    return LM_OK;
fail:
    lm_volume_free(truth);
    lm_sens_free(s2);
    lm_fieldmap_fine_free(fine);
    return c;
}

static const lm_variant *pick_variant(const char *name, lm_error *err)
{
    if (name)
        return lm_variant_get_available(name, err);
    /* a GPU sums a 3D problem's ~1e12 pairs in seconds, a CPU in an hour */
    const char *order[] = {"gpu-tuned", "cpu-simd"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const lm_variant *v = lm_variant_find(order[i], NULL);
        if (v && v->time_term && v->available(NULL) == LM_OK)
            return v;
    }
    return lm_variant_get_available("cpu-dp", err);
}

lm_code lm_fieldmap_synth_data(const lm_fieldmap_fine *fine, const lm_traj *t, const char *variant, lm_kdata *out,
                               lm_error *err)
{
    if (!fine || !fine->rho || !t || !t->k || !out || !out->d)
        return lm_fail(err, LM_ERR_INVALID, "field-map synthesis: fine grid, trajectory or output missing");
    const int64_t C = fine->ncoils, M = t->m;
    if (out->m != M || out->ncoils != C)
        return lm_fail(err, LM_ERR_INVALID, "field-map synthesis: output is %lld x %lld, needs %lld samples x %lld coils",
                       (long long)out->m, (long long)out->ncoils, (long long)M, (long long)C);
    if (fine->f && !t->t)
        return lm_fail(err, LM_ERR_INVALID, "field-map synthesis: the trajectory has no sample times");
    const lm_variant *v = pick_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    const int64_t N2 = fine->n[0] * fine->n[1] * fine->n[2];
    /* Voxels outside the phantom add nothing: only the support is summed. */
    int64_t S = 0;
    for (int64_t i = 0; i < N2; i++)
        S += fine->rho[i] != 0;
    if ((double)S * (double)M > LM_FIELDMAP_SYNTH_MAX_PAIRS)
        return lm_fail(err, LM_ERR_INVALID,
                       "field-map synthesis: %lld voxels x %lld samples is %.2g pairs, beyond %.0g (hours on a CPU)",
                       (long long)S, (long long)M, (double)S * (double)M, LM_FIELDMAP_SYNTH_MAX_PAIRS);
    if (S == 0) {
        memset(out->d, 0, (size_t)(M * C) * sizeof(lm_cfloat));
        return LM_OK;
    }
    /* samples: the voxels (k = -x, t = -f); weights rho s_c, one set per coil */
    float *vx = lm_alloc((size_t)S, 4 * sizeof(float), err, "field-map synthesis");
    float *w = lm_alloc((size_t)(S * C), 2 * sizeof(float), err, "field-map synthesis");
    float *px = lm_alloc((size_t)M, 3 * sizeof(float), err, "field-map synthesis");
    float *res = lm_alloc((size_t)(M * C), 2 * sizeof(float), err, "field-map synthesis");
    lm_code c = LM_OK;
    if (!vx || !w || !px || !res) {
        c = err ? err->code : LM_ERR_NOMEM;
        goto done;
    }
    float *vy = vx + S, *vz = vy + S, *vt = vz + S, *wr = w, *wi = w + S * C;
    for (int64_t i = 0, j = 0; i < N2; i++) {
        if (fine->rho[i] == 0)
            continue;
        int64_t ix = i % fine->n[0], iy = (i / fine->n[0]) % fine->n[1], iz = i / (fine->n[0] * fine->n[1]);
        vx[j] = (float)-lm_voxel_pos(ix, fine->n[0]);
        vy[j] = (float)-lm_voxel_pos(iy, fine->n[1]);
        vz[j] = (float)-lm_voxel_pos(iz, fine->n[2]);
        vt[j] = fine->f ? -fine->f[i] : 0.0f;
        for (int64_t cc = 0; cc < C; cc++) {
            lm_cfloat s = fine->sens ? fine->sens[cc * N2 + i] : 1.0f;
            wr[cc * S + j] = fine->rho[i] * crealf(s);
            wi[cc * S + j] = fine->rho[i] * cimagf(s);
        }
        j++;
    }
    for (int64_t m = 0; m < M; m++)
        for (int a = 0; a < 3; a++)
            px[a * M + m] = t->k[3 * m + a];
    lm_ksum_in in = {.m = S, .kx = vx, .ky = vy, .kz = vz, .wr = wr, .wi = wi, .nsets = C,
                     .t = fine->f ? vt : NULL};
    lm_points pts = {.n = M, .x = px, .y = px + M, .z = px + 2 * M, .f = fine->f ? t->t : NULL};
    if ((c = lm_ksum_run(v, &in, &pts, res, res + M * C, NULL, err)) != LM_OK)
        goto done;
    lm_geom g2;
    lm_geom_init(&g2, fine->n[0], fine->n[1], fine->n[2], 1.0);
    g2.basis = LM_BASIS_BOX;
    const double scale = 1.0 / (double)N2;
    for (int64_t m = 0; m < M; m++) {
        double ph = scale * lm_geom_phi(&g2, t->k[3 * m], t->k[3 * m + 1], t->k[3 * m + 2]);
        for (int64_t cc = 0; cc < C; cc++) {
            int64_t o = cc * M + m;
            out->d[o] = (float)(ph * res[o]) + I * (float)(ph * res[M * C + o]);
        }
    }
done:
    free(vx), free(w), free(px), free(res);
    return c;
}

lm_code lm_fieldmap_synth_kspace(const lm_phantom *p, const lm_geom *g, const lm_coils_synth *cs,
                                 const float *fieldmap, const lm_traj *t, const char *variant, lm_kdata *out,
                                 lm_error *err)
{
    lm_fieldmap_fine *fine = NULL;
    lm_code c = lm_fieldmap_fine_make(p, g, cs, fieldmap, &fine, err);
    if (c == LM_OK)
        c = lm_fieldmap_synth_data(fine, t, variant, out, err);
    lm_fieldmap_fine_free(fine);
    return c;
}
