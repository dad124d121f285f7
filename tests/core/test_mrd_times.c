/* Sample times of MRD acquisitions (docs/fieldmap.md): lm_mrd_write stores
 * times of the form (j - centre) * dwell as sample_time_us and
 * center_sample; lm_mrd_read gives them back as lm_traj.t (t = 0 at the
 * centre sample); files without dwell times give no times. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"

enum { RO = 8, SPOKES = 3, M = RO * SPOKES };

static lm_traj *make_traj(void)
{
    lm_traj *t = lm_traj_new(M, 2, NULL);
    for (int i = 0; i < M; i++) {
        t->k[3 * i] = (float)(i % RO) - 2;
        t->k[3 * i + 1] = (float)(i / RO);
    }
    t->readout = RO;
    return t;
}

int main(void)
{
#if !LM_HAVE_ISMRMRD
    LM_TEST_SKIP("built without libismrmrd");
#else
    char dir[] = "/tmp/larmor-mrdt-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char p1[256], p2[256], p3[256];
    snprintf(p1, sizeof p1, "%s/times.h5", dir);
    snprintf(p2, sizeof p2, "%s/none.h5", dir);
    snprintf(p3, sizeof p3, "%s/uneven.h5", dir);
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 8, 8, 1, 200);
    lm_kdata *k = lm_kdata_new(M, 1, NULL);
    for (int i = 0; i < M; i++)
        k->d[i] = (float)i;

    /* Dwell 4 us, the echo at sample 2 of each readout. */
    lm_traj *t = make_traj();
    CHECK_OK(lm_traj_alloc_times(t, &err), &err);
    for (int i = 0; i < M; i++)
        t->t[i] = (float)((i % RO) - 2) * 4e-6f;
    CHECK_OK(lm_mrd_write(p1, &g, t, k, &err), &err);
    lm_mrd m;
    CHECK_OK(lm_mrd_read(p1, &m, &err), &err);
    CHECK(m.traj && m.traj->t);
    for (int i = 0; m.traj && m.traj->t && i < M; i++)
        CHECK_NEAR(m.traj->t[i], t->t[i], 1e-11);
    lm_mrd_clear(&m);
    char *text = NULL;
    CHECK_OK(lm_mrd_info(p1, &text, &err), &err);
    CHECK(text && strstr(text, "sample times: [-8e-06, 2e-05] s"));
    free(text);

    /* No times: none stored, none read. */
    free(t->t);
    t->t = NULL;
    CHECK_OK(lm_mrd_write(p2, &g, t, k, &err), &err);
    CHECK_OK(lm_mrd_read(p2, &m, &err), &err);
    CHECK(m.traj && m.traj->t == NULL);
    lm_mrd_clear(&m);
    CHECK_OK(lm_mrd_info(p2, &text, &err), &err);
    CHECK(text && strstr(text, "sample times: none"));
    free(text);

    /* Times a dwell cannot express (uneven in the second readout): the
     * file gets no dwell there, so the reader gives no times at all. */
    CHECK_OK(lm_traj_alloc_times(t, &err), &err);
    for (int i = 0; i < M; i++)
        t->t[i] = (float)(i % RO) * 4e-6f;
    t->t[RO + 3] += 1e-6f;
    CHECK_OK(lm_mrd_write(p3, &g, t, k, &err), &err);
    CHECK_OK(lm_mrd_read(p3, &m, &err), &err);
    CHECK(m.traj && m.traj->t == NULL);
    lm_mrd_clear(&m);

    lm_traj_free(t);
    lm_kdata_free(k);
    unlink(p1);
    unlink(p2);
    unlink(p3);
    rmdir(dir);
    return lm_test_finish("mrd-times");
#endif
}
