/* Multi-slice 2D geometry: the order the reader returns slices in, and the
 * affine that stacks them (docs/ismrmrd.md). */
#include "lm_mrd_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Unit vector of v into u; 0 if v is (nearly) zero or not finite. */
static int unit3(const double v[3], double u[3])
{
    double n = sqrt(dot3(v, v));
    if (!(n > 0.5) || !isfinite(n))
        return 0;
    for (int a = 0; a < 3; a++)
        u[a] = v[a] / n;
    return 1;
}

lm_code lm_mrd_slices_affine(const lm_mrd *m, double affine[4][4], double voxel_mm[3], lm_error *err)
{
    if (!m || !affine || !voxel_mm)
        return lm_fail(err, LM_ERR_INVALID, "ISMRMRD slices: nothing to place");
    const int ns = m->nslices;
    if (ns < 2 || !m->slices)
        return lm_fail(err, LM_ERR_INVALID, "ISMRMRD slices: %d slice%s: no slice spacing to measure", ns,
                       ns == 1 ? "" : "s");
    const lm_mrd_slice *s0 = &m->slices[0];
    double rd[3], pd[3], sd[3];
    if (!unit3(s0->read_dir, rd) || !unit3(s0->phase_dir, pd) || !unit3(s0->slice_dir, sd))
        return lm_fail(err, LM_ERR_FORMAT,
                       "ISMRMRD slices: slice %d has no read, phase or slice direction (zero in its acquisition "
                       "headers): cannot place the slices", s0->index);
    for (int i = 1; i < ns; i++) {
        const lm_mrd_slice *si = &m->slices[i];
        double r[3], p[3], q[3];
        if (!unit3(si->read_dir, r) || !unit3(si->phase_dir, p) || !unit3(si->slice_dir, q) ||
            dot3(r, rd) < 0.9999 || dot3(p, pd) < 0.9999 || dot3(q, sd) < 0.9999)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slice %d is not oriented as slice %d (read, phase and slice "
                           "directions must agree to stack them)", si->index, s0->index);
    }
    /* Offsets along slice_dir from the first slice: ascending, distinct,
     * on one line, evenly spaced (each step within 1 % of the mean). */
    double d_prev = 0;
    for (int i = 1; i < ns; i++) {
        const lm_mrd_slice *a = &m->slices[i - 1], *b = &m->slices[i];
        double diff[3];
        for (int k = 0; k < 3; k++)
            diff[k] = b->position[k] - s0->position[k];
        double d = dot3(diff, sd), step = d - d_prev;
        if (fabs(step) < 1e-4)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slices %d and %d are both at %.4g mm along the slice direction "
                           "(duplicated position)", a->index, b->index, d);
        if (step < 0)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slice %d lies before slice %d along the slice direction (slices out "
                           "of order: stack them as lm_mrd_read_opts returns them)", b->index, a->index);
        double off = 0;
        for (int k = 0; k < 3; k++) {
            double e = diff[k] - d * sd[k];
            off += e * e;
        }
        if (sqrt(off) > 0.01 * step + 1e-3)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slice %d is shifted %.4g mm in-plane from slice %d (centres must lie "
                           "on one line along the slice direction)", b->index, sqrt(off), s0->index);
        d_prev = d;
    }
    const double spacing = d_prev / (ns - 1); /* the mean */
    for (int i = 1; i < ns; i++) {
        const lm_mrd_slice *a = &m->slices[i - 1], *b = &m->slices[i];
        double diff[3];
        for (int k = 0; k < 3; k++)
            diff[k] = b->position[k] - a->position[k];
        double step = dot3(diff, sd);
        if (fabs(step - spacing) > 0.01 * spacing)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: uneven slice spacing: %.4g mm between slices %d and %d, %.4g mm on "
                           "average (more than 1 %% apart)", step, a->index, b->index, spacing);
    }
    const double vx = m->geom.fov_mm[0] / (double)m->geom.n[0], vy = m->geom.fov_mm[1] / (double)m->geom.n[1];
    if (!(vx > 0) || !(vy > 0) || !isfinite(vx) || !isfinite(vy))
        return lm_fail(err, LM_ERR_INVALID, "ISMRMRD slices: field of view %g x %g mm / matrix %lld x %lld is "
                       "not a voxel size", m->geom.fov_mm[0], m->geom.fov_mm[1], (long long)m->geom.n[0],
                       (long long)m->geom.n[1]);
    voxel_mm[0] = vx;
    voxel_mm[1] = vy;
    voxel_mm[2] = spacing;
    /* LPS (MRD) -> RAS (NIfTI): x and y negated. */
    static const double ras[3] = {-1, -1, 1};
    const double cx = (double)(m->geom.n[0] / 2), cy = (double)(m->geom.n[1] / 2);
    memset(affine, 0, 16 * sizeof affine[0][0]);
    for (int r = 0; r < 3; r++) {
        affine[r][0] = ras[r] * rd[r] * vx;
        affine[r][1] = ras[r] * pd[r] * vy;
        affine[r][2] = ras[r] * sd[r] * spacing;
        affine[r][3] = ras[r] * (s0->position[r] - cx * vx * rd[r] - cy * vy * pd[r]);
    }
    affine[3][3] = 1.0;
    return LM_OK;
}

/* The direction the slices are sorted along: qsort_r's context. */
static int slice_cmp(const void *a, const void *b, void *dir)
{
    const lm_mrd_slice *x = a, *y = b;
    double dx = dot3(x->position, dir), dy = dot3(y->position, dir);
    if (dx < dy)
        return -1;
    if (dx > dy)
        return 1;
    return (x->index > y->index) - (x->index < y->index);
}

void lm_mrd_sort_slices(lm_mrd *m)
{
    double sd[3];
    if (m->nslices > 1 && m->slices && unit3(m->slices[0].slice_dir, sd))
        qsort_r(m->slices, (size_t)m->nslices, sizeof *m->slices, slice_cmp, sd);
}
