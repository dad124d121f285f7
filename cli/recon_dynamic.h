/* larmor-cli recon for dynamic data (docs/dynamic.md): frames from a cfl's
 * dimension 10 or binned (--spokes-per-frame, --frames), temporal priors
 * (--reg ttv|ttv+tv|ttik|llr), output with frames in dimension 10 (.cfl)
 * or as a 4D NIfTI with the frame duration in pixdim[4]. */
#ifndef RECON_DYNAMIC_H
#define RECON_DYNAMIC_H

#include "cli_dicom.h"
#include "larmor.h"

typedef struct cli_dyn_args {
    int reg_given;            /* --reg named a dynamic prior */
    lm_dyn_time time;
    int space_tv;             /* ttv+tv */
    double lambda_space;      /* --lambda-space (-1: not given) */
    long long spokes_per_frame, frames; /* binning (0: none) */
    long long llr_block;
    double frame_ms;          /* --frame-ms: the frame duration where the data carry none (0: unknown) */
} cli_dyn_args;

void cli_dyn_args_init(cli_dyn_args *a);
/* 1 when s names a dynamic prior (ttv, ttv+tv, ttik, llr), stored in a. */
int cli_dyn_reg_parse(const char *s, cli_dyn_args *a);
/* Whether the run is dynamic: the data have frames, or an option asks for them. */
int cli_dyn_wanted(const cli_dyn_args *a, const lm_acq *in);

typedef struct cli_dyn_run {
    const char *variant;
    double lambda;            /* temporal, relative (< 0: LM_DYN_LAMBDA_DEFAULT) */
    int lambda_auto;
    int iters;                /* 0: the default */
    int use_cache;
    const char *truth, *out;  /* out may be NULL when dicom->dir is given */
    const cli_dicom_args *dicom; /* --out-dicom and friends (NULL: none) */
    int as_complex, json;
    const char *refused;      /* a static-only option given, or NULL */
    int basis_given;          /* --basis or --dirac given (else LM_DYN_BASIS_DEFAULT) */
} cli_dyn_run;

/* The whole dynamic reconstruction of in on g; prints and returns the exit code. */
int cli_recon_dynamic(lm_acq *in, const lm_geom *g, const cli_dyn_args *a, const cli_dyn_run *r);

#endif
