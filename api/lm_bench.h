/* The single-coil benchmark of `larmor-cli bench` (the paper's Figure 9)
 * for one problem, one variant at a time: Q, F^H d and CG times, Gpairs/s,
 * GFLOPS, relative error of F^H d against cpu-dp, PSNR and percent error of
 * the image against the truth.
 *
 * cpu-dp is the reference but far too slow for the whole of B128, so the
 * reference is cpu-dp on a fixed subset of voxels (explicit points); a
 * variant whose full F^H d would exceed the budget is timed on that subset
 * (or on a slab of z planes) and its full time extrapolated.
 *
 * Q, CG and the total are those of the reconstruction `recon` runs
 * (lm_recon_run, Q not cached; a GPU variant's second run), so the two
 * commands report the same stages. Only the F^H d column (and Gpairs/s)
 * is the kernel alone. A variant whose Q would exceed the budget cannot
 * run that path: its CG is the stand-alone Toeplitz solver on cpu-nufft's
 * Q (cg_path "solver"). */
#ifndef LM_BENCH_H
#define LM_BENCH_H

#include <stdint.h>

#include "lm_error.h"
#include "lm_trajgen.h"

typedef struct lm_bench lm_bench;

typedef struct lm_bench_row {
    const char *variant;       /* as asked: a name or "auto" (the caller's string) */
    const char *resolved;      /* the variant that ran */
    char label[48];            /* "cpu-simd", or "auto -> cpu-nufft" */
    double time_q_s, time_fhd_s, time_cg_s, time_total_s;
    double gpairs, gflops, rel_error, psnr_db, percent_error;
    int q_estimated, fhd_estimated, iters;
    const char *cg_path;       /* "recon" (lm_recon_run's session), "solver" (Q from cpu-nufft), "" */
    double time_ehd_s;         /* the reconstruction's E^H d stage (recon path), else NaN */
    char note[160];
} lm_bench_row;

/* Makes the problem (trajectory, k-space, truth) and the F^H d weights. */
lm_code lm_bench_new(const lm_problem_def *def, lm_bench **out, lm_error *err);
void lm_bench_free(lm_bench *b);
/* The problem's voxels. */
int64_t lm_bench_voxels(const lm_bench *b);
/* cpu-dp's F^H d on min(ref_voxels, voxels) voxels spread over the volume:
 * the reference of every row's rel_error. Called once, before any row. */
lm_code lm_bench_reference(lm_bench *b, int64_t ref_voxels, lm_error *err);
/* One row: the variant `name` (available, "auto" resolved), CG with
 * `iters` iterations and identity regularisation at lambda; budget: the
 * seconds beyond which F^H d (or Q, 8x its pairs) is extrapolated. */
lm_code lm_bench_variant(lm_bench *b, const char *name, int iters, double lambda, double budget, lm_bench_row *row,
                         lm_error *err);

#endif
