/* The whole reconstruction as one call, shared by the CLI and the GUI:
 * the encoding operator of the acquisition (lm_encoding.h: Q cached on disk,
 * coil maps), E^H d, CG on (E^H E + lambda W^H W) rho = E^H d (through a
 * reconstruction session, lm_recon_session.h, which can be kept for more
 * solves); or a gridding baseline. Reports stages and iterations through one progress callback
 * that can cancel. */
#ifndef LM_RECON_H
#define LM_RECON_H

#include "lm_lambda_criterion.h"
#include "lm_reg_kind.h"
#include "lm_resample.h"
#include "lm_segments.h"
#include "lm_types.h"

/* A row of the variant table (kernels/lm_kernels.h): front ends reach it
 * through larmor.h; this header names it without the kernels' interface. */
struct lm_variant;

typedef enum lm_method {
    LM_METHOD_CG = 0,
    LM_METHOD_GRID_LINEAR, /* trilinear gridding + inverse FFT (the paper's baseline) */
    LM_METHOD_GRID_KB,     /* Kaiser-Bessel gridding, Pipe-Menon density compensation */
    LM_METHOD_FFT          /* Cartesian samples: one inverse FFT (lm_cartesian.h) */
} lm_method;

const char *lm_method_name(lm_method m);
lm_code lm_method_parse(const char *s, lm_method *out, lm_error *err);
const char *lm_reg_name(lm_reg_kind r);
lm_code lm_reg_parse(const char *s, lm_reg_kind *out, lm_error *err);

/* How the channels of multi-coil data become one image. */
typedef enum lm_coil_combine {
    LM_COMBINE_AUTO = 0, /* SENSE with the given maps; without maps: root-sum-of-squares */
    LM_COMBINE_SENSE,    /* one image from all coils at once (Pruessmann 2001); needs maps */
    LM_COMBINE_RSS       /* each channel on its own, then root-sum-of-squares (magnitude) */
} lm_coil_combine;

const char *lm_coil_combine_name(lm_coil_combine c);
lm_code lm_coil_combine_parse(const char *s, lm_coil_combine *out, lm_error *err);

/* Where the coil maps of a SENSE reconstruction came from. */
typedef enum lm_sens_source {
    LM_SENS_NONE = 0,    /* one coil, or root-sum-of-squares */
    LM_SENS_GIVEN,       /* lm_recon_opts.sens */
    LM_SENS_ESTIMATED    /* from the data's k-space centre (lm_recon_opts.estimate) */
} lm_sens_source;

const char *lm_sens_source_name(lm_sens_source s);
/* How a result of this method, combination and map source is scored
 * against a truth: the scale_match argument of lm_metrics_compute, by the
 * one rule of lm_metrics_scale_match_for (gridding, rss, estimated maps). */
int lm_recon_scale_match(lm_method method, lm_coil_combine combine, lm_sens_source sens);

typedef enum lm_stage {
    LM_STAGE_LOAD, LM_STAGE_Q, LM_STAGE_FHD, LM_STAGE_CG /* or ADMM */, LM_STAGE_GRID, LM_STAGE_DONE,
    LM_STAGE_COILS /* prewhitening, coil compression, coil-map estimation */
} lm_stage;
/* Short lower-case labels for display: "loading", "computing Q", ... */
const char *lm_stage_name(lm_stage s);

typedef struct lm_progress {
    lm_stage stage;
    double fraction;   /* of the stage */
    int iter, iters;   /* CG */
    double rel_resid;  /* CG */
    double cost;       /* CG */
    double elapsed_s;  /* since the run started */
} lm_progress;

/* Return non-zero to cancel. May be called from a worker thread. */
typedef int (*lm_progress_fn)(void *user, const lm_progress *p);

/* What a CG reconstruction on a GPU variant does when the GPU fails
 * (lm_recon_opts.fallback). */
typedef enum lm_fallback {
    LM_FALLBACK_NONE = 0, /* fail with the GPU's error */
    LM_FALLBACK_CPU       /* run again on the variant's CPU twin (lm_recon_cpu_twin) */
} lm_fallback;

const char *lm_fallback_name(lm_fallback f);
lm_code lm_fallback_parse(const char *s, lm_fallback *out, lm_error *err);

typedef struct lm_recon_opts {
    lm_method method;
    const char *variant;       /* kernel variant name (default "auto": lm_variant_resolve) */
    double lambda;
    lm_reg_kind reg;
    const lm_volume *ref;      /* anatomical reference (LM_REG_ANATOMICAL, LM_REG_ANATOMICAL_EDGES):
                                  any grid; resampled onto the reconstruction's through both
                                  NIfTI affines (lm_resample) and ref_transform */
    int iters;                 /* default 60 */
    double tol;
    int use_cache;             /* Q cache under $XDG_CACHE_HOME/larmor */
    int lcurve_norms;          /* fill lm_recon_result.resid_norm and prior_norm (CG): costs one
                                  E rho, a forward transform per coil (+15 % on B128c32), so only
                                  callers that plot the L-curve ask (the workbench); default 0 */
    int threads;
    lm_progress_fn progress;
    void *progress_user;
    double edge_frac;          /* anatomical edge threshold, fraction of max|ref|
                                  (lm_reg_anatomical_weights); 0 means LM_EDGE_FRAC_DEFAULT */
    const lm_sens *sens;       /* coil maps on the matrix, one per channel (NULL: none) */
    lm_coil_combine combine;
    int keep_coil_images;      /* fill lm_recon_result.coil_images */
    int estimate_sens;         /* multi-coil data without maps: estimate them (SENSE)
                                  instead of root-sum-of-squares (lm_coil_combine AUTO) */
    const lm_kdata *noise;     /* noise samples (m x coils) to prewhiten with, or NULL */
    int compress_coils;        /* 0: keep every coil; K > 0: K virtual coils; -1: auto
                                  (the fewest that keep 99 % of the energy) */
    const float *fieldmap;     /* off-resonance in Hz on the matrix (N values), or NULL;
                                  needs the trajectory's sample times (lm_traj.t). Used by
                                  cg only (SENSE and rss): gridding and fft ignore it and
                                  stay the uncorrected baseline */
    int segments;              /* with a field map: LM_SEGMENTS_AUTO (default), 0 exact, L */
    int admm_cg_iters;         /* tv, wavelet: CG steps per ADMM x-update (0: LM_ADMM_CG_ITERS_DEFAULT) */
    double admm_rho;           /* tv, wavelet: initial ADMM penalty relative to the diagonal of
                                  E^H E (0: LM_ADMM_RHO_DEFAULT; adapted as it runs) */
    int lambda_auto;           /* CG: choose lambda from the data (lm_lambda.h, docs/lambda.md);
                                  lambda is then ignored and the choice is in the result */
    lm_lambda_criterion lambda_criterion; /* with lambda_auto; LM_LAMBDA_DEFAULT: the
                                  regulariser's own (lm_lambda_default_criterion) */
    /* The anatomical reference's alignment (docs/priors.md): by default it is
     * registered (rigid, mutual information, lm_register.h) to a pilot
     * reconstruction of the data (LM_PILOT_ITERS CG iterations with the
     * gradient prior at LM_PILOT_LAMBDA; the same pilot gives
     * LM_REG_ANATOMICAL its data edges); ref_transform_given uses
     * ref_transform instead, ref_register 0 takes the affines as they are. */
    int ref_register;          /* default 1 */
    int ref_transform_given;
    lm_rigid ref_transform;    /* reconstruction world -> reference world, about the grid's
                                  centre (lm_register_centre; centre_mm is ignored) */
    /* LM_REG_ANATOMICAL: the reference's edge weights times the data's
     * (docs/priors.md): 1 / (1 + |D (G * pilot)|^2 / kappa^2), G a Gaussian of
     * data_edge_sigma voxels (0: LM_DATA_EDGE_SIGMA), kappa = data_edge
     * (0: LM_DATA_EDGE) x the pilot's 99th percentile of |rho|. */
    double data_edge;
    double data_edge_sigma;
    int prior_influence;       /* fill lm_recon_result.prior_influence (one more solve) */
    /* CG on a GPU variant (named, or "auto" resolved to one) with
     * LM_FALLBACK_CPU: when the variant is not available here, or the run
     * fails with LM_ERR_NOMEM or LM_ERR_GPU (set-up or mid-solve), the GPU's
     * caches are released (lm_gpu_release) and the whole reconstruction runs
     * again, every other option kept, on the CPU twin; the result says so
     * (fell_back, fallback_note). Cancellation and bad input never fall back. */
    lm_fallback fallback;
    /* CG without coil maps: take the encoding (Q, plans, the trajectory on
     * the device) from this cache and leave it there (lm_encoding_cache.h;
     * larmor-cli serve keeps one). NULL: made and freed per run. */
    struct lm_encoding_cache *encodings;
} lm_recon_opts;

/* The non-quadratic priors (reg tv, wavelet) are solved by ADMM
 * (lm_admm.h) instead of CG: iters counts outer ADMM iterations, each of
 * admm_cg_iters CG steps on (E^H E + rho G^H G) x = E^H d + rho G^H (z - u),
 * so about iters x admm_cg_iters applications of E^H E in all. Their
 * lambda is relative like the quadratic ones' but, f(G rho) being of
 * degree 1, it is scaled by an intensity too: the objective is
 *   ||E rho - d||^2 + lambda d s f(G rho),
 * d = lm_encoding_diag (the mean diagonal of E^H E) and s = RMS(E^H d) / d
 * (the RMS of the zero-filled image, in the image's units), so one lambda
 * means the same whatever the data's scale, matrix or sampling density.
 * f is isotropic TV (sum over voxels of the gradient's 2-norm over the axes)
 * or the l1 norm of Daubechies-4 coefficients (lm_prior.h). lambda 0 is
 * plain CG. tol stops ADMM when its relative primal and dual residuals
 * both fall below it. Progress reports stage CG with iter/iters the outer
 * iterations, rel_resid ADMM's primal residual and cost the objective
 * above. Measured on B64n: BENCHMARKS.md. */
#define LM_ADMM_CG_ITERS_DEFAULT 8
#define LM_ADMM_RHO_DEFAULT 1.0


/* The pilot reconstruction (registration, the data's edges) and the data
 * edges' defaults (BENCHMARKS.md, "Anatomical prior"). */
#define LM_PILOT_ITERS 15
#define LM_PILOT_LAMBDA 3.0
#define LM_DATA_EDGE 0.03
#define LM_DATA_EDGE_SIGMA 1.0

void lm_recon_opts_init(lm_recon_opts *o);

typedef struct lm_recon_result {
    lm_volume *image;          /* N complex, truth's units */
    double time_q_s, time_fhd_s, time_cg_s, time_total_s;
    int q_from_cache;
    int encoding_cached;       /* the encoding came from lm_recon_opts.encodings, made before */
    int iters_done;
    double *resid_history;     /* iters_done + 1 entries */
    double fhd_pairs;          /* M x N x channels, for Gpairs/s */
    int coils;                 /* channels reconstructed */
    lm_coil_combine combine;   /* SENSE: one complex image from all coils; RSS (coils
                                  > 1): the channels' root-sum-of-squares (real, >= 0),
                                  and iters_done and resid_history are the last
                                  channel's */
    double time_grid_s;        /* gridding methods: time in lm_grid_* */
    double time_prep_s;        /* the encoding's set-up (maps checked and moved to the
                                  device) and the coils' preparation */
    lm_sens_source sens_source;
    lm_sens *sens;             /* the maps the reconstruction used when they are not
                                  lm_recon_opts.sens itself (estimated, or compressed
                                  with the data), else NULL */
    lm_cfloat *noise_cov;      /* ncov x ncov noise covariance (row-major) measured
                                  from lm_recon_opts.noise before whitening, or NULL */
    int ncov;
    int coils_in;              /* channels in the data before compression */
    char note[256];            /* how the coils were prepared (estimation method, ...), or "" */
    double energy_kept;        /* with compression: fraction of the data's energy kept */
    lm_sens *coil_images;      /* with keep_coil_images and coils > 1: one image per
                                  channel ([n, coils]): each channel's own reconstruction
                                  (rss, gridding), or s_c rho under SENSE */
    int segments;              /* with a field map: time segments used (0: exact) */
    double segment_error;      /* their interpolation error (lm_encoding_segments) */
    double lambda_used;        /* CG: the lambda solved with (given, or chosen by lambda_auto) */
    char lambda_criterion[16]; /* "given", or the criterion that chose it ("discrepancy", "gcv") */
    char lambda_note[160];     /* with lambda_auto: "discrepancy, sigma 0.051 from outer k-space" */
    double lambda_sigma;       /* noise sigma the discrepancy used (0: none) */
    double time_lambda_s;      /* the choice's time (its trial solves, E^H d, probes) */
    int lambda_solves, lambda_iters; /* its trial reconstructions and their CG iterations */
    /* Anatomical priors: how the reference was placed. */
    int ref_used;              /* a reference went into the prior */
    int ref_registered;        /* ref_transform was estimated here (else given or identity) */
    lm_rigid ref_transform;    /* the transform applied (centre_mm filled) */
    double ref_mi_start, ref_mi_end; /* registration: MI (nats) at identity and at the answer */
    int ref_evals;             /* registration: metric evaluations */
    double time_register_s;    /* pilot reconstruction (its CG, not in time_cg_s) and
                                  registration; E^H d is computed once per run (in
                                  time_fhd_s) and shared by the pilot, the solve and the
                                  prior influence's extra solve (in time_cg_s) */
    /* With lm_recon_opts.prior_influence (CG): this image minus the same
     * reconstruction (iterations, lambda, coils) with the identity prior,
     * or with lambda 0 when the prior is the identity, tv or wavelet: what
     * the prior put in or took out (complex; show its magnitude). NULL
     * otherwise. */
    lm_volume *prior_influence;
    /* lm_recon_opts.fallback: the GPU variant failed (or was not available)
     * and the image comes from fallback_variant (a static name) instead;
     * fallback_note says why in one line: "gpu-nufft: out of GPU memory
     * (...); falling back to cpu-nufft". */
    int fell_back;
    const char *fallback_variant;
    char fallback_note[400];
    /* CG: the L-curve's point, with the model solved (every coil and its
     * map, the field map as solved, the data as whitened and compressed):
     * resid_norm = ||E rho - d||, prior_norm = ||W rho|| = sqrt(rho^H W^H W
     * rho) for identity, gradient and the anatomical priors, f(G rho) for tv
     * (total variation) and wavelet (l1 of the coefficients). NaN where
     * there is no such number or it was not asked for
     * (lm_recon_opts.lcurve_norms 0): gridding, channels combined by
     * root-sum-of-squares (no single image solves E), an anatomical prior
     * without its reference. */
    double resid_norm, prior_norm;
} lm_recon_result;

/* Frees the image and history and zeroes r (r must be zeroed or filled
 * by lm_recon_run before). */
void lm_recon_result_clear(lm_recon_result *r);

/* Multi-coil k-space: SENSE with o->sens (one image from all coils), or
 * per channel and root-sum-of-squares (o->combine, lm_coil_combine). Gridding
 * combines channels with the maps when given (sum conj(s_c) img_c /
 * sum |s_c|^2), else by root-sum-of-squares. res is overwritten (not freed first); on failure or
 * cancel (LM_ERR_CANCELLED) it is left zeroed with nothing to free.
 * Progress: stage Q (fraction of the kernel or 1 on a cache hit), FHD and
 * CG (fractions over all channels; CG reports iter, iters, rel_resid and
 * cost = ||F rho - d||^2 + lambda s ||W rho||^2 of the current channel),
 * GRID for the gridding methods, then DONE. */
lm_code lm_recon_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     const lm_recon_opts *o, lm_recon_result *res, lm_error *err);

/* The CPU variant a GPU one falls back to: gpu-nufft -> cpu-nufft, the
 * direct sums -> cpu-simd (cpu-sp without a SIMD ISA); v itself when it is
 * a CPU variant. NULL and the error when none is available. */
const struct lm_variant *lm_recon_cpu_twin(const struct lm_variant *v, lm_error *err);

#endif
