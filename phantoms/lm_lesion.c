/* The lesion test (lm_lesion.h). */
#include "lm_lesion.h"

#include <math.h>
#include <string.h>

#include "lm_coils_synth.h"

void lm_lesion_default(lm_lesion *l)
{
    /* Inside the brain ellipsoid (quadric 0.55 at the centre, < 1 out to
     * the shell), 0.17 above the top of the nearest ventricle and 0.25 from
     * the small ellipsoids at z = 0.25. */
    *l = (lm_lesion){.centre = {-0.25, -0.30, 0.45}, .radius = 0.08, .rho = 0.4};
}

lm_code lm_lesion_phantom(const lm_phantom *p, const lm_lesion *l, lm_phantom *out, lm_error *err)
{
    if (!p || !l || !out)
        return lm_fail(err, LM_ERR_INVALID, "lesion: missing phantom");
    if (p->dim != 3)
        return lm_fail(err, LM_ERR_INVALID, "lesion: phantom %s is not 3D", p->name);
    if ((size_t)p->count >= sizeof p->e / sizeof p->e[0])
        return lm_fail(err, LM_ERR_INVALID, "lesion: phantom %s has no room for another ellipsoid", p->name);
    if (!(l->radius > 0) || !isfinite(l->radius) || !isfinite(l->rho))
        return lm_fail(err, LM_ERR_INVALID, "lesion: radius %g or intensity %g is invalid", l->radius, l->rho);
    *out = *p;
    out->e[out->count++] = (lm_ellipsoid){.rho = l->rho, .a = l->radius, .b = l->radius, .c = l->radius,
                                          .x0 = l->centre[0], .y0 = l->centre[1], .z0 = l->centre[2]};
    return LM_OK;
}

void lm_phantom_shift(const lm_phantom *p, const double shift[3], lm_phantom *out)
{
    *out = *p;
    for (int i = 0; i < out->count; i++) {
        out->e[i].x0 += shift[0];
        out->e[i].y0 += shift[1];
        out->e[i].z0 += shift[2];
    }
}

lm_code lm_lesion_mask(const lm_phantom *base, const lm_lesion *l, const lm_geom *g, lm_volume **out,
                       lm_error *err)
{
    *out = NULL;
    lm_volume *truth = NULL;
    lm_code rc = lm_phantom_truth(base, g, LM_PROBLEM_TRUTH_SUB, &truth, err);
    if (rc != LM_OK)
        return rc;
    /* Phantom units: x = 2 u, u the position in FOV fractions. */
    double h = 0;
    for (int a = 0; a < 3; a++)
        h = fmax(h, 2.0 / (double)g->n[a]);
    const double tissue = lm_phantom_value(base, l->centre[0] / 2, l->centre[1] / 2, l->centre[2] / 2);
    const double core = l->radius - 0.5 * h;
    const double s_in = l->radius + 1.5 * h, s_out = l->radius + 3.5 * h;
    int64_t n_core = 0, n_shell = 0;
    for (int64_t k = 0; k < g->n[2]; k++)
        for (int64_t j = 0; j < g->n[1]; j++)
            for (int64_t i = 0; i < g->n[0]; i++) {
                const double x = 2 * lm_voxel_pos(i, g->n[0]) - l->centre[0];
                const double y = 2 * lm_voxel_pos(j, g->n[1]) - l->centre[1];
                const double z = 2 * lm_voxel_pos(k, g->n[2]) - l->centre[2];
                const double d = sqrt(x * x + y * y + z * z);
                const int64_t v = i + g->n[0] * (j + g->n[1] * k);
                float label = 0;
                if (d <= core || d < 0.5 * h)
                    label = 1;
                else if (d > s_in && d <= s_out && fabs(crealf(truth->data[v]) - tissue) < 1e-6)
                    label = 2;
                n_core += label == 1;
                n_shell += label == 2;
                truth->data[v] = label;
            }
    if (n_core == 0 || n_shell == 0) {
        lm_volume_free(truth);
        return lm_fail(err, LM_ERR_INVALID, "lesion: %lld core and %lld shell voxels on a %lldx%lldx%lld grid",
                       (long long)n_core, (long long)n_shell, (long long)g->n[0], (long long)g->n[1],
                       (long long)g->n[2]);
    }
    *out = truth;
    return LM_OK;
}

lm_code lm_lesion_problem(const lm_problem_def *def, const lm_lesion_opts *lo, const lm_lesion *l, lm_geom *g,
                          lm_traj **traj, lm_kdata **kdata, lm_volume **truth, lm_sens **sens, lm_volume **ref,
                          lm_volume **mask, lm_error *err)
{
    lm_volume **outs[] = {truth, ref, mask};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i])
            *outs[i] = NULL;
    if (traj)
        *traj = NULL;
    if (kdata)
        *kdata = NULL;
    if (sens)
        *sens = NULL;
    if (!def || !lo || !l || !g)
        return lm_fail(err, LM_ERR_INVALID, "lesion problem: missing definition");
    if (def->dim == 2 || def->fieldmap_hz > 0)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "lesion problem %s: only the 3D radial problems without a field map "
                       "have a lesion test", def->name);
    for (int a = 0; a < 3; a++)
        if (!isfinite(lo->ref_shift_vox[a]) || fabs(lo->ref_shift_vox[a]) > (double)def->n / 2)
            return lm_fail(err, LM_ERR_INVALID, "lesion problem %s: reference shift %g voxels is out of range",
                           def->name, lo->ref_shift_vox[a]);
    if (lo->ref_half_res && def->n % 2)
        return lm_fail(err, LM_ERR_INVALID, "lesion problem %s: matrix %lld is odd: no half-resolution reference",
                       def->name, (long long)def->n);

    const lm_phantom *base = lm_phantom_shepp_logan_3d();
    lm_phantom with;
    lm_code rc = LM_OK;
    if (lo->lesion)
        rc = lm_lesion_phantom(base, l, &with, err);
    else
        with = *base;
    if (rc != LM_OK)
        return rc;

    const int64_t ncoils = def->coils > 1 ? def->coils : 1;
    lm_geom geom;
    lm_geom_init(&geom, def->n, def->n, def->n, LM_PROBLEM_FOV_MM);
    geom.basis = LM_BASIS_BOX;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *tv = NULL, *rv = NULL, *mv = NULL;
    lm_sens *s = NULL;
    lm_coils_synth *cs = NULL;
    if (ncoils > 1 && (kdata || sens))
        rc = lm_coils_synth_make(3, ncoils, &cs, err);
    if (rc == LM_OK && (traj || kdata))
        rc = lm_traj_generate(LM_TRAJ_RADIAL3D, geom.n, def->m, def->readout, &t, err);
    if (rc == LM_OK && kdata) {
        if (!(k = lm_kdata_new(t->m, ncoils, err)))
            rc = err ? err->code : LM_ERR_NOMEM;
        else
            rc = cs ? lm_coils_synth_data(cs, &with, t, k, err) : lm_phantom_kspace(&with, t, k->d, err);
        if (rc == LM_OK && def->noise > 0)
            rc = lm_noise_add(k, def->noise, LM_PROBLEM_NOISE_SEED, err);
    }
    if (rc == LM_OK && sens && cs)
        rc = lm_coils_synth_maps(cs, geom.n, &s, err);
    if (rc == LM_OK && truth)
        rc = lm_phantom_truth(&with, &geom, LM_PROBLEM_TRUTH_SUB, &tv, err);
    if (rc == LM_OK && ref) {
        /* One voxel of the reconstruction grid is 2/n phantom units. */
        double shift[3];
        for (int a = 0; a < 3; a++)
            shift[a] = lo->ref_shift_vox[a] * 2.0 / (double)def->n;
        lm_phantom moved;
        lm_phantom_shift(lm_phantom_shepp_logan_3d_ref(), shift, &moved);
        lm_geom rg = geom;
        if (lo->ref_half_res)
            for (int a = 0; a < 3; a++)
                rg.n[a] = geom.n[a] / 2;
        /* lm_volume_new centres voxel n/2 at 0 mm, where lm_phantom_truth
         * puts the FOV centre: the affine is right at either size. */
        rc = lm_phantom_truth(&moved, &rg, LM_PROBLEM_TRUTH_SUB, &rv, err);
    }
    if (rc == LM_OK && mask && lo->lesion)
        rc = lm_lesion_mask(base, l, &geom, &mv, err);
    lm_coils_synth_free(cs);
    if (rc != LM_OK) {
        lm_traj_free(t);
        lm_kdata_free(k);
        lm_volume_free(tv), lm_volume_free(rv), lm_volume_free(mv);
        lm_sens_free(s);
        return rc;
    }
    *g = geom;
    if (traj)
        *traj = t;
    else
        lm_traj_free(t);
    if (kdata)
        *kdata = k;
    if (truth)
        *truth = tv;
    if (sens)
        *sens = s;
    if (ref)
        *ref = rv;
    if (mask)
        *mask = mv;
    return LM_OK;
}
