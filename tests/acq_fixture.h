/* A small data set written by the names larmor-cli phantom uses (traj,
 * kspace with 3 coils, sens.cfl, times.cfl, fieldmap.nii.gz, truth.nii.gz,
 * ref.nii.gz; matrix 8^3 from the trajectory's extent), for the
 * acquisition tests of the library and of the workbench. */
#ifndef LM_ACQ_FIXTURE_H
#define LM_ACQ_FIXTURE_H

#include <complex.h>
#include <stdio.h>

#include "lm_io.h"
#include "lm_io_fieldmap.h"
#include "lm_types.h"

#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

enum { N = 8, M = 64, RO = 8, NC = 3 };

/* Writes the set into dir; LM_OK or the first error. */
static inline lm_code acq_fixture_write(const char *dir, lm_error *e)
{
    lm_error err = {0};
    lm_code rc = LM_OK;
    char p[512];
    lm_traj *t = lm_traj_new(M, 3, &err);
    for (int64_t i = 0; i < 3 * M; i++)
        t->k[i] = (float)((i * 7) % 9) * 0.4f - 1.6f;
    t->readout = RO;
    lm_kdata *k = lm_kdata_new(M, NC, &err);
    for (int64_t i = 0; i < M * NC; i++)
        k->d[i] = CMPLXF(1.0f + (float)(i % 5), -0.5f);
    snprintf(p, sizeof p, "%s/traj", dir);
    if (rc == LM_OK)
        rc = lm_cfl_write_traj(p, t, &err);
    snprintf(p, sizeof p, "%s/kspace", dir);
    if (rc == LM_OK)
        rc = lm_cfl_write_kdata(p, k, RO, &err);
    lm_sens *s = lm_sens_new((int64_t[3]){N, N, N}, NC, &err);
    for (int64_t i = 0; i < N * N * N * NC; i++)
        s->s[i] = CMPLXF(0.5f, 0.1f);
    snprintf(p, sizeof p, "%s/sens.cfl", dir);
    if (rc == LM_OK)
        rc = lm_save_sens(p, s, NULL, &err);
    lm_cfloat tc[M];
    for (int i = 0; i < M; i++)
        tc[i] = (float)(i % RO) * 1e-4f;
    snprintf(p, sizeof p, "%s/times", dir);
    if (rc == LM_OK)
        rc = lm_cfl_write(p, 3, (int64_t[3]){1, RO, M / RO}, tc, &err);
    lm_geom g;
    lm_geom_init(&g, N, N, N, 240);
    lm_volume *v = lm_volume_new(g.n, (double[3]){30, 30, 30}, &err);
    lm_geom_affine(&g, v->affine);
    for (int64_t i = 0; i < N * N * N; i++)
        v->data[i] = (float)(i % 11);
    snprintf(p, sizeof p, "%s/fieldmap.nii.gz", dir);
    if (rc == LM_OK)
        rc = lm_nifti_write(p, v, LM_NIFTI_REAL, &err);
    snprintf(p, sizeof p, "%s/truth.nii.gz", dir);
    if (rc == LM_OK)
        rc = lm_nifti_write(p, v, 0, &err);
    snprintf(p, sizeof p, "%s/ref.nii.gz", dir);
    if (rc == LM_OK)
        rc = lm_nifti_write(p, v, 0, &err);
    lm_volume_free(v);
    lm_sens_free(s);
    lm_traj_free(t);
    lm_kdata_free(k);
    if (rc != LM_OK && e)
        *e = err;
    return rc;
}

#endif
