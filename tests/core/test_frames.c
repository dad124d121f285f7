/* Frames of dynamic acquisitions (lm_frames.h): binning by count and by
 * time, the frame checks, per-frame extraction, cfl with frames in
 * dimension 10 through lm_acq_load (and its refusals), and the 4D NIfTI
 * round trip with the frame duration. */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm_acq.h"
#include "lm_frames.h"
#include "lm_io.h"
#include "lm_test.h"

static char dir[] = "/tmp/lm_test_frames_XXXXXX";

static void by_count(void)
{
    lm_error err = {0};
    lm_frames *f = NULL;
    /* 10 spokes of 4 samples, 3 per frame: 3 frames, the 10th spoke dropped */
    CHECK_OK(lm_frames_by_spokes(40, 4, 3, &f, &err), &err);
    CHECK(f && f->count == 3);
    if (f)
        for (int64_t t = 0; t <= 3; t++)
            CHECK(f->start[t] == 12 * t);
    lm_frames_free(f);
    /* 4 frames from 10 spokes: 2 spokes each */
    CHECK_OK(lm_frames_by_count(40, 4, 4, &f, &err), &err);
    CHECK(f && f->count == 4 && f->start[4] == 32 && lm_frames_samples(f, 2) == 8);
    lm_frames_free(f);
    CHECK(lm_frames_by_spokes(40, 4, 11, &f, &err) == LM_ERR_INVALID && !f);
    CHECK(lm_frames_by_count(40, 4, 11, &f, &err) == LM_ERR_INVALID && !f);
    CHECK(lm_frames_by_spokes(41, 4, 2, &f, &err) == LM_ERR_INVALID && !f);
    CHECK_OK(lm_frames_equal(24, 3, &f, &err), &err);
    CHECK(f && f->start[1] == 8 && f->start[3] == 24);
    lm_frames_free(f);
    CHECK(lm_frames_equal(25, 3, &f, &err) == LM_ERR_INVALID);
}

static void by_time(void)
{
    lm_error err = {0};
    lm_frames *f = NULL;
    /* uneven spacing: 2 frames over [0, 1.0 + mean spacing 0.2) = [0, 1.2):
     * windows [0, 0.6) and [0.6, 1.2) */
    const double ts[6] = {0.0, 0.1, 0.5, 0.59, 0.6, 1.0};
    CHECK_OK(lm_frames_by_time(ts, 6, 3, 2, &f, &err), &err);
    CHECK(f && f->count == 2 && f->start[1] == 4 * 3 && f->start[2] == 6 * 3);
    if (f)
        CHECK_NEAR(f->duration_s, 0.6, 1e-12);
    lm_frames_free(f);
    /* a gap with no spoke: frame 1 of 3 over [0, 1.2) is empty */
    const double gap[4] = {0.0, 0.1, 0.95, 1.0};
    CHECK(lm_frames_by_time(gap, 4, 3, 4, &f, &err) == LM_ERR_INVALID && !f);
    CHECK(strstr(err.msg, "has no samples") != NULL);
    const double back[3] = {0.0, 0.2, 0.1};
    CHECK(lm_frames_by_time(back, 3, 2, 2, &f, &err) == LM_ERR_INVALID && !f);
}

static void extract_and_zero_frame(void)
{
    lm_error err = {0};
    lm_traj *t = lm_traj_new(12, 2, &err);
    lm_kdata *k = lm_kdata_new(12, 2, &err);
    for (int64_t i = 0; i < 12; i++) {
        t->k[3 * i] = (float)i;
        k->d[i] = (float)i + 1;
        k->d[12 + i] = -(float)i - 1;
    }
    t->readout = 2;
    lm_frames *f = NULL;
    CHECK_OK(lm_frames_equal(12, 3, &f, &err), &err);
    lm_traj *ft = NULL;
    lm_kdata *fk = NULL;
    CHECK_OK(lm_frames_extract(f, 1, t, k, &ft, &fk, &err), &err);
    CHECK(ft && ft->m == 4 && ft->k[0] == 4.0f && ft->readout == 2);
    CHECK(fk && fk->m == 4 && fk->ncoils == 2 && fk->d[0] == 5.0f && fk->d[4] == -5.0f);
    lm_traj_free(ft);
    lm_kdata_free(fk);
    CHECK_OK(lm_frames_check_kdata(f, k, "k", &err), &err);
    for (int64_t i = 8; i < 12; i++)
        k->d[i] = k->d[12 + i] = 0;
    CHECK(lm_frames_check_kdata(f, k, "k", &err) == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "frame 2 has no samples") != NULL);
    lm_frames_free(f);
    lm_traj_free(t);
    lm_kdata_free(k);
}

/* traj and kspace written with frames in dimension 10 load with frames. */
static void cfl_frames(void)
{
    lm_error err = {0};
    const int64_t r = 4, spokes = 3, T = 5, m = r * spokes * T, C = 2;
    lm_traj *t = lm_traj_new(m, 2, &err);
    lm_kdata *k = lm_kdata_new(m, C, &err);
    t->readout = r;
    for (int64_t i = 0; i < m; i++) {
        t->k[3 * i] = (float)(i % r) - 2;
        t->k[3 * i + 1] = (float)(i / r % 7) - 3;
        for (int64_t c = 0; c < C; c++)
            k->d[c * m + i] = (float)(i + 1) + I * (float)c;
    }
    char tp[256], kp[256], kp2[256];
    snprintf(tp, sizeof tp, "%s/traj", dir);
    snprintf(kp, sizeof kp, "%s/kspace", dir);
    snprintf(kp2, sizeof kp2, "%s/kspace4", dir);
    CHECK_OK(lm_cfl_write_traj_frames(tp, t, T, &err), &err);
    CHECK_OK(lm_cfl_write_kdata_frames(kp, k, r, T, &err), &err);
    int nd;
    int64_t d[LM_CFL_MAX_DIMS];
    CHECK_OK(lm_cfl_read_dims(kp, &nd, d, &err), &err);
    CHECK(nd == 11 && d[1] == r && d[2] == spokes && d[3] == C && d[10] == T);
    lm_acq_paths p = {0};
    lm_acq_paths_set(&p.traj, tp, &err);
    lm_acq_paths_set(&p.kspace, kp, &err);
    lm_acq *a = NULL;
    CHECK_OK(lm_acq_load(&p, NULL, &a, &err), &err);
    CHECK(a && a->frames && a->frames->count == T && lm_frames_samples(a->frames, 0) == r * spokes);
    /* the k-space round trip: per coil, frame after frame */
    if (a)
        CHECK(a->kdata->m == m && a->kdata->d[m + 13] == k->d[m + 13] && a->kdata->d[m - 1] == k->d[m - 1]);
    /* binning data that have frames is refused */
    if (a)
        CHECK(lm_acq_bin(a, 2, 0, &err) == LM_ERR_INVALID);
    lm_acq_free(a);
    /* the k-space with another frame count: refused naming both files */
    CHECK_OK(lm_cfl_write_kdata_frames(kp2, k, r * spokes, T - 2 > 0 ? 3 : 1, &err), &err);
    lm_acq_paths_set(&p.kspace, kp2, &err);
    a = NULL;
    CHECK(lm_acq_load(&p, NULL, &a, &err) == LM_ERR_FORMAT && !a);
    CHECK(strstr(err.msg, "3 frames in dimension 10") && strstr(err.msg, "traj"));
    lm_acq_paths_clear(&p);
    lm_traj_free(t);
    lm_kdata_free(k);
}

static void nifti_4d(void)
{
    lm_error err = {0};
    const int64_t n[3] = {5, 4, 3}, T = 6, N = 60;
    const double vox[3] = {1.5, 2, 2.5};
    lm_volume *v = lm_volume_new(n, vox, &err);
    lm_cfloat *data = calloc((size_t)(N * T), sizeof *data);
    for (int64_t i = 0; i < N * T; i++)
        data[i] = (float)i * 0.25f - 3 + I * (float)(i % 7);
    char path[256];
    snprintf(path, sizeof path, "%s/series.nii.gz", dir);
    CHECK_OK(lm_nifti_write_series(path, v, T, data, 1, 0.084, &err), &err);
    lm_volume *back = NULL;
    int64_t frames = 0;
    CHECK_OK(lm_nifti_read_frames(path, &back, &frames, &err), &err);
    CHECK(back && frames == T && back->dims[0] == 5 && back->dims[1] == 4 && back->dims[2] == 3);
    if (back) {
        int same = 1;
        for (int64_t i = 0; i < N * T; i++)
            same &= back->data[i] == data[i];
        CHECK(same);
        CHECK_NEAR(back->voxel_mm[2], 2.5, 1e-6);
    }
    double dt = 0;
    CHECK_OK(lm_nifti_frame_seconds(path, &dt, &err), &err);
    CHECK_NEAR(dt, 0.084, 1e-7);
    lm_volume_free(back);
    lm_volume_free(v);
    free(data);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    by_count();
    by_time();
    extract_and_zero_frame();
    cfl_frames();
    nifti_4d();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return lm_test_finish("test_frames");
}
