/* The library's tuning knobs, as one options struct (FINUFFT's opts are
 * the model): what benchmarks and tests vary, with the defaults every run
 * uses otherwise. The library never reads the environment; front ends
 * (larmor-cli, the workbench, the bench and test programs) fill the struct
 * from LARMOR_* variables with lm_tuning_from_env and hand it over with
 * lm_tuning_set before their first reconstruction (docs/tuning.md lists
 * the variables). */
#ifndef LM_TUNING_H
#define LM_TUNING_H

#include "lm_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lm_tuning {
    char gpu_devices[128];       /* LARMOR_GPU_DEVICES: "0,1" lists the GPUs (repeats give a GPU two
                                    workers); "": every visible GPU */
    int gpu_prewarm;             /* LARMOR_GPU_PREWARM: 1 (default) makes the CUDA context in the
                                    background at start-up; 0 does not */
    int gpu_cm_tile;             /* LARMOR_GPU_CM_TILE: constant-memory tile of the paper's
                                    variants, 16..2048 samples; 0: the variant's own */
    int gpu_cg_fft;              /* LARMOR_GPU_CG_FFT: the Toeplitz product's FFTs, 0 one 3D cuFFT,
                                    1 pruned, 2 pruned with z fused, 3 (default) own four-step */
    int gpu_nufft_cufft;         /* LARMOR_GPU_NUFFT_FFT=cufft: the GPU NUFFT's fine grid through
                                    cuFFT instead of the pruned transform (0 default) */
    int gpu_block_cufft;         /* LARMOR_GPU_BLOCK_CUFFT (any value): the block Toeplitz product
                                    through cuFFT instead of its own transforms */
    int gpu_block_xfuse;         /* LARMOR_GPU_BLOCK_XFUSE: 1 (default) fuses x with the block
                                    product; 0 the separate passes */
    int gpu_nufft_maxsub;        /* LARMOR_GPU_NUFFT_MAXSUB: samples per shared-memory subproblem of
                                    the GPU NUFFT's spreader, 32..2^20; 0: its default */
    int gpu_nufft_smmin;         /* LARMOR_GPU_NUFFT_SMMIN: the fewest samples of a bin spread in
                                    shared memory, 1..2^20; 0: its default */
    int gpu_nufft_merge;         /* LARMOR_GPU_NUFFT_MERGE: 1 (default) merges runs of samples at one
                                    position in a warp */
    int gpu_nufft_v4;            /* LARMOR_GPU_NUFFT_V4: 1 (default) 128-bit atomics for sparse bins */
    int gpu_nufft_overlap;       /* LARMOR_GPU_NUFFT_OVERLAP: 1 (default) sparse bins on a second stream */
    int gpu_nufft_repro;         /* LARMOR_GPU_NUFFT_REPRO: 1 (default) the spreader sums in 64-bit fixed
                                    point, so a result is the same run to run; 0 float atomics */
    int gpu_phasor_nosym;        /* LARMOR_GPU_PHASOR_NOSYM (non-zero): gpu-phasor without its
                                    conjugate symmetry for real weights */
    long long gpu_dyn_budget;    /* LARMOR_GPU_DYN_BUDGET: bytes of GPU memory a dynamic model's frames'
                                    FFT(Q) may take resident; beyond it they stream from pinned host
                                    memory through two device slots (docs/gpu-design.md). 0 (default):
                                    half the device's free memory when the model makes its Q */
    int nufft_blocks_per_thread; /* LARMOR_NUFFT_BLOCKS_PER_THREAD: the CPU spreader's blocks per
                                    thread and colour (default 4; 0: fixed slabs) */
    int trace;                   /* LARMOR_TRACE (any value): the GPU products time their phases
                                    for lm_trace */
    int mrd_traj_units;          /* LARMOR_MRD_TRAJ_UNITS: auto (default), normalized or cycles, as an
                                    lm_mrd_units (core/lm_io_ismrmrd.h): how MRD trajectories are
                                    scaled; lm_tuning_set hands it to lm_mrd_units_set_default */
} lm_tuning;

/* The defaults. */
void lm_tuning_default(lm_tuning *t);
/* The defaults overridden by the LARMOR_* variables that are set; a value
 * that does not parse is refused with the variable's name. For front ends. */
lm_code lm_tuning_from_env(lm_tuning *t, lm_error *err);
/* The process's tuning from now on (copied). Call before the first
 * reconstruction; later calls affect plans made afterwards. */
void lm_tuning_set(const lm_tuning *t);
/* The process's tuning (the defaults until lm_tuning_set). */
const lm_tuning *lm_tuning_get(void);
/* lm_tuning_from_env then lm_tuning_set: a front end's one call. */
lm_code lm_tuning_init_from_env(lm_error *err);

#ifdef __cplusplus
}
#endif

#endif
