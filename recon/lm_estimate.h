/* How long a reconstruction will take, before it runs: work counted from
 * the problem's size (samples, voxels, coils, iterations, segments,
 * method) at a nominal speed per variant, corrected by the speeds this
 * machine measured in its earlier runs (lm_estimate_rates, kept in a small
 * text file beside the Q cache). Plain C, no I/O but the rates file. */
#ifndef LM_ESTIMATE_H
#define LM_ESTIMATE_H

#include <stdint.h>

#include "lm_recon.h"

/* What the time depends on. */
typedef struct lm_estimate_size {
    lm_method method;
    const char *variant;   /* as asked: "auto" is resolved */
    int64_t samples;       /* M */
    int64_t n[3];          /* the matrix */
    int coils;             /* channels reconstructed (after compression) */
    int iters;             /* CG iterations; tv and wavelet: ADMM iterations */
    int inner;             /* CG steps per iteration: 1, or ADMM's per x-update */
    int segments;          /* field map: time segments (1: none; 0: exact sums every step) */
    int q_cached;          /* Q is expected from the cache (not counted) */
} lm_estimate_size;

/* The size of the run o would make on geometry g with m samples and
 * `coils` channels (the field map's segment count is taken as 8 when
 * o->segments asks for the automatic choice). */
void lm_estimate_size_init(lm_estimate_size *sz, const lm_geom *g, int64_t m, int coils, const lm_recon_opts *o);

/* Parts of the time a run is measured and predicted in. */
typedef enum lm_estimate_part {
    LM_EST_Q = 0,   /* Q on the 2x grid (CG, unless cached) */
    LM_EST_FHD,     /* E^H d */
    LM_EST_ITER,    /* the CG steps */
    LM_EST_GRID,    /* gridding methods: the whole gridding */
    LM_EST_OTHER,   /* the rest (set-up, coils, transfers), per voxel and sample */
    LM_EST_PARTS
} lm_estimate_part;

/* Measured over nominal time of each part, per variant: what this machine
 * showed in its runs (an exponential average, the newest run weighing
 * LM_ESTIMATE_NEWEST); 0 where nothing was measured. */
#define LM_ESTIMATE_VARIANTS 32
#define LM_ESTIMATE_NEWEST 0.7
typedef struct lm_estimate_rates {
    int n;
    struct {
        char variant[32];
        double ratio[LM_EST_PARTS];
        int runs[LM_EST_PARTS];
    } v[LM_ESTIMATE_VARIANTS];
} lm_estimate_rates;

typedef struct lm_estimate {
    const char *variant;            /* resolved name */
    double nominal_gpairs;          /* the variant's nominal sum speed, 1e9 pairs/s (direct sums) */
    double nominal_gflops;          /* its nominal FFT / NUFFT speed, 1e9 flop/s */
    double part_s[LM_EST_PARTS];    /* predicted seconds of each part */
    double total_s;
    double nominal_s;               /* the same at nominal speeds only */
    int measured;                   /* parts corrected by this machine's runs */
} lm_estimate;

/* The nominal speeds of a variant (the table in lm_estimate.c); the
 * resolved variant, or NULL and why it is not known. */
const char *lm_estimate_nominal(const char *variant, double *gpairs, double *gflops, lm_error *err);

/* The prediction for sz; rates may be NULL (nominal only). */
lm_code lm_estimate_time(const lm_estimate_size *sz, const lm_estimate_rates *rates, lm_estimate *out, lm_error *err);

/* A finished run of size sz (res from lm_recon_run) updates the rates of
 * its variant: each part that ran gets measured / nominal. */
lm_code lm_estimate_record(lm_estimate_rates *rates, const lm_estimate_size *sz, const lm_recon_result *res,
                           lm_error *err);

/* The rates file: path NULL is <Q cache folder>/rates.txt (lm_qcache_dir).
 * Load: a missing file gives empty rates and LM_OK; a damaged one empty
 * rates and LM_ERR_FORMAT naming the file and line. Save: atomic. */
lm_code lm_estimate_rates_load(const char *path, lm_estimate_rates *rates, lm_error *err);
lm_code lm_estimate_rates_save(const char *path, const lm_estimate_rates *rates, lm_error *err);

#endif
