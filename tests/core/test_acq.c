/* The acquisition object (lm_acq): discovery finds the same files from a
 * data directory and from each of its members (names as larmor-cli phantom
 * writes them); loading reads times and maps; bad companions and bad data
 * give one line naming the file; lenient loading drops them with a note;
 * regridding moves a field map onto another matrix. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "acq_fixture.h"
#include "io_util.h"
#include "lm_acq.h"
#include "lm_io.h"
#include "lm_io_fieldmap.h"
#include "lm_test.h"

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static int same_paths(const lm_acq_paths *a, const lm_acq_paths *b)
{
    return same(a->traj, b->traj) && same(a->kspace, b->kspace) && same(a->sens, b->sens) &&
           same(a->fieldmap, b->fieldmap) && same(a->times, b->times) && same(a->truth, b->truth) &&
           same(a->ref, b->ref);
}

int main(void)
{
    io_make_dir();
    lm_error err = {0};
    CHECK_OK(acq_fixture_write(io_dir, &err), &err);
    lm_acq_paths d;
    CHECK_OK(lm_acq_discover(io_dir, &d, &err), &err);
    CHECK(d.traj && strstr(d.traj, "/traj.cfl") && d.kspace && strstr(d.kspace, "/kspace.cfl") && d.sens &&
          strstr(d.sens, "/sens.cfl") && d.times && strstr(d.times, "/times.cfl") && d.fieldmap &&
          strstr(d.fieldmap, "/fieldmap.nii.gz") && d.truth && strstr(d.truth, "/truth.nii.gz") && d.ref &&
          strstr(d.ref, "/ref.nii.gz"));
    /* Every member, and a .cfl named by its .hdr or its base, finds the same set. */
    const char *members[] = {"traj.cfl", "traj.hdr", "traj", "kspace.cfl", "kspace.hdr", "sens.cfl", "times.cfl",
                             "fieldmap.nii.gz", "truth.nii.gz", "ref.nii.gz"};
    for (size_t i = 0; i < sizeof members / sizeof *members; i++) {
        lm_acq_paths m;
        CHECK_OK(lm_acq_discover(P(members[i]), &m, &err), &err);
        CHECK_MSG(same_paths(&m, &d), "discovery from %s", members[i]);
        lm_acq_paths_clear(&m);
    }
    lm_acq_paths m;
    CHECK(lm_acq_discover(P("nothing.cfl"), &m, &err) == LM_ERR_IO && strstr(err.msg, "nothing.cfl") &&
          !strchr(err.msg, '\n'));
    CHECK(lm_acq_discover("/", &m, &err) == LM_ERR_INVALID && strstr(err.msg, "no data set there"));

    /* Loading: times into the trajectory, maps, field map onto the grid. */
    lm_acq *a = NULL;
    CHECK_OK(lm_acq_load(&d, NULL, &a, &err), &err);
    CHECK(a && a->traj->m == M && a->kdata->ncoils == NC && a->traj->t && fabsf(a->traj->t[RO - 1] - 7e-4f) < 1e-9f &&
          a->sens && a->sens->ncoils == NC && !a->fieldmap && lm_acq_channels(a) == NC);
    lm_geom g;
    lm_geom_init(&g, N, N, N, 240);
    CHECK_OK(lm_acq_regrid(a, &g, &err), &err);
    CHECK(a->fieldmap && a->fieldmap[5] == 5.0f && !a->fieldmap_resampled);
    lm_acq_free(a);
    /* Another matrix: the field map is resampled, the maps from a file refused (one line naming it). */
    lm_geom g2;
    lm_geom_init(&g2, 2 * N, 2 * N, 2 * N, 240);
    CHECK_OK(lm_acq_load(&d, NULL, &a, &err), &err);
    CHECK(lm_acq_regrid(a, &g2, &err) == LM_ERR_INVALID && strstr(err.msg, "sens.cfl: coil maps are 8x8x8"));
    lm_acq_free(a);
    lm_acq_opts o;
    lm_acq_opts_init(&o);
    o.lenient = 1;
    CHECK_OK(lm_acq_load(&d, &o, &a, &err), &err);
    CHECK_OK(lm_acq_regrid(a, &g2, &err), &err);
    CHECK(!a->sens && !a->paths.sens && strstr(a->note, "sens.cfl: coil maps are") && a->fieldmap &&
          a->fieldmap_resampled && a->geom.n[0] == 2 * N);
    lm_acq_free(a);

    /* Consistency: wrong coil count, wrong sample count, NaN: one line naming the file. */
    lm_sens *s4 = lm_sens_new((int64_t[3]){N, N, N}, NC + 1, &err);
    for (int64_t i = 0; i < N * N * N * (NC + 1); i++)
        s4->s[i] = 1.0f;
    CHECK_OK(lm_save_sens(P("s4.cfl"), s4, NULL, &err), &err);
    lm_sens_free(s4);
    lm_acq_paths bad;
    CHECK_OK(lm_acq_paths_copy(&bad, &d, &err), &err);
    lm_acq_paths_set(&bad.sens, P("s4.cfl"), &err);
    CHECK_OK(lm_acq_load(&bad, NULL, &a, &err), &err);
    CHECK(lm_acq_regrid(a, &g, &err) == LM_ERR_INVALID && strstr(err.msg, "s4.cfl: 4 coil maps but the k-space has 3") &&
          !strchr(err.msg, '\n'));
    lm_acq_free(a);
    lm_cfloat tshort[M / 2] = {0};
    CHECK_OK(lm_cfl_write(P("tshort"), 3, (int64_t[3]){1, RO, M / RO / 2}, tshort, &err), &err);
    lm_acq_paths_set(&bad.sens, NULL, &err);
    lm_acq_paths_set(&bad.times, P("tshort.cfl"), &err);
    CHECK(lm_acq_load(&bad, NULL, &a, &err) != LM_OK && !a && strstr(err.msg, "tshort") && !strchr(err.msg, '\n'));
    lm_cfloat knan[M * NC];
    for (int i = 0; i < M * NC; i++)
        knan[i] = i == 17 ? NAN : 1.0f;
    CHECK_OK(lm_cfl_write(P("knan"), 4, (int64_t[4]){1, RO, M / RO, NC}, knan, &err), &err);
    lm_acq_paths_set(&bad.times, NULL, &err);
    lm_acq_paths_set(&bad.kspace, P("knan.cfl"), &err);
    CHECK(lm_acq_load(&bad, NULL, &a, &err) != LM_OK && !a && strstr(err.msg, "knan") && strstr(err.msg, "NaN"));
    lm_cfloat kshort[(M - RO) * NC];
    for (int i = 0; i < (M - RO) * NC; i++)
        kshort[i] = 1.0f;
    CHECK_OK(lm_cfl_write(P("kshort"), 4, (int64_t[4]){1, RO, M / RO - 1, NC}, kshort, &err), &err);
    lm_acq_paths_set(&bad.kspace, P("kshort.cfl"), &err);
    CHECK(lm_acq_load(&bad, NULL, &a, &err) != LM_OK && !a && strstr(err.msg, "kshort") && !strchr(err.msg, '\n'));
    lm_acq_paths_clear(&bad);
    lm_acq_paths_clear(&d);
    io_remove_dir();
    return lm_test_finish("acq");
}
