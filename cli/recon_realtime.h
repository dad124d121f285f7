/* larmor-cli recon --realtime WINDOW:STEP: the frames a real-time MRD
 * stream would give (recon/dynamic/lm_sliding.h), from a recorded file:
 * frame f from acquisitions [f STEP, f STEP + WINDOW), written as a 4D
 * NIfTI or a cfl with frames in dimension 10. */
#ifndef RECON_REALTIME_H
#define RECON_REALTIME_H

#include "larmor.h"

typedef struct cli_rt_run {
    int window, step;
    const char *variant;      /* through lm_sliding_variant */
    double lambda;
    int iters;                /* 0: LM_SLIDING_ITERS_DEFAULT */
    int threads;
    int compress;             /* --coils-compress: virtual coils (-1 auto, 0 none) */
    const char *name;         /* the data, for messages */
    const char *out;
    int as_complex, json;
} cli_rt_run;

/* Prints and returns the exit code. */
int cli_recon_realtime(const lm_acq *in, const lm_geom *g, const cli_rt_run *r);

#endif
