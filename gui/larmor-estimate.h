/* What a reconstruction will cost, from the sizes alone, shown before it
 * runs: memory of the arrays it allocates and a rough time from a simple
 * throughput model of the variant. Plain C. An estimate: the model ignores
 * caches, the Q cache, thread counts and the GPU's transfers. */
#ifndef LARMOR_ESTIMATE_H
#define LARMOR_ESTIMATE_H

#include <glib.h>

#include "larmor-run.h"

G_BEGIN_DECLS

typedef struct {
    /* bytes */
    double q;        /* CG: Q on the 2x grid (8N complex) and its FFT: 2 x 8N x 8 B */
    double work;     /* CG: Toeplitz padding buffers 2 x 8N x 8 B; gridding: the 2x grid 8N x 8 B */
    double vectors;  /* image vectors: CG x, r, p, Ap, b (5 N x 8 B); gridding: the image (N x 8 B) */
    double coils;    /* coil maps and per-coil images: 2 C N x 8 B (multi-coil only) */
    double kdata;    /* k-space M C x 8 B and trajectory M x 12 B */
    double total;
    /* seconds */
    double t_q, t_fhd, t_cg, total_s;
    double gpairs;   /* sample-voxel pairs per second used, 1e9 */
    gboolean measured; /* gpairs from a run of this variant here, not the nominal one */
} LarmorEstimate;

/* n: the matrix, m samples, coils the channels reconstructed (after
 * compression), p the settings; measured_gpairs: Gpairs/s of an earlier
 * run with this variant (NaN: use the nominal rate). */
void larmor_estimate_compute(const int64_t n[3], int64_t m, int coils, const LarmorReconParams *p,
                             double measured_gpairs, LarmorEstimate *e);
/* Nominal F^H d throughput of a variant in Gpairs/s (direct sums; for
 * NUFFT variants an equivalent rate). */
double larmor_estimate_nominal_gpairs(const char *variant);
/* "Estimate: ≈ 210 MB, ≈ 12 s (Q 9 s unless cached, Fᴴd 2 s, 60 CG iterations 1 s) at
 * 0.2 Gpairs/s (cpu-simd's last run)". */
char *larmor_estimate_text(const LarmorEstimate *e, const LarmorReconParams *p);
/* "1.2 GB", "350 MB", "12 kB". */
char *larmor_format_bytes(double bytes);

G_END_DECLS

#endif
