/* What a reconstruction will cost, shown before it runs: memory of the
 * arrays it allocates (from the sizes alone) and the time recon/'s
 * lm_estimate predicts from the sizes, corrected by the speeds this machine
 * measured in its earlier runs. Plain C. The memory ignores caches and the
 * GPU's copies. */
#ifndef LARMOR_ESTIMATE_H
#define LARMOR_ESTIMATE_H

#include <glib.h>

#include "larmor-run.h"
#include "larmor.h"

G_BEGIN_DECLS

typedef struct {
    /* bytes */
    double q;        /* CG: Q on the 2x grid (8N complex) and its FFT: 2 x 8N x 8 B */
    double work;     /* CG: Toeplitz padding buffers 2 x 8N x 8 B; gridding: the 2x grid 8N x 8 B */
    double vectors;  /* image vectors: CG x, r, p, Ap, b (5 N x 8 B); gridding: the image (N x 8 B) */
    double coils;    /* coil maps and per-coil images: 2 C N x 8 B (multi-coil only) */
    double kdata;    /* k-space M C x 8 B and trajectory M x 12 B */
    double total;
    /* seconds (lm_estimate.h): time.total_s, time.part_s[LM_EST_Q] ... */
    lm_estimate time;
    gboolean time_ok;  /* FALSE: the variant is unknown here */
} LarmorEstimate;

/* n: the matrix, m samples, coils the channels reconstructed (after
 * compression), p the settings, fieldmap whether the data have one the
 * settings use; rates: this machine's measured speeds (NULL: nominal). */
void larmor_estimate_compute(const int64_t n[3], int64_t m, int coils, const LarmorReconParams *p,
                             gboolean fieldmap, const lm_estimate_rates *rates, LarmorEstimate *e);
/* "Estimate: memory ≈ 210 MB (Q 34 MB), time ≈ 1.2 s (Q 0.3 s unless
 * cached, Fᴴd 0.2 s, 60 iterations 0.6 s; speeds measured here)". */
char *larmor_estimate_text(const LarmorEstimate *e, const LarmorReconParams *p);
/* "1.2 GB", "350 MB", "12 kB". */
char *larmor_format_bytes(double bytes);

G_END_DECLS

#endif
