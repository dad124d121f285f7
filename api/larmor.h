/* larmor.h: the one header of Larmor's front ends (cli/, gui/) and of any
 * program built on the library. A front end includes this and nothing
 * else of the library (tests/api/test_include_rule.py checks cli/ and
 * gui/). It gathers:
 *   the data model and errors            lm_types.h, lm_error.h
 *   loading and writing                  lm_acq.h (an acquisition from any
 *                                        format, discovery), lm_io*.h,
 *                                        lm_atomic.h, lm_resample.h
 *   the variant catalogue                lm_kernels.h (lm_variant_*)
 *   recon options and lm_recon_run       lm_recon.h
 *   sessions                             lm_recon_session.h
 *   metrics                              lm_metrics.h
 *   phantoms and trajectories            phantoms/lm_*.h
 *   the benchmarks                       lm_bench.h (single-coil Figure 9),
 *                                        lm_q.h (Parboil's mri-q, mri-fhd)
 *   tracing                              lm_trace.h
 *   the GPUs a command lets CUDA see     lm_device_visibility.h
 *   the MRD streaming server's           lm_mrd_server.h, lm_mrd_config.h;
 *   connections, and its listener        lm_mrd_listener.h
 * and, below, the process-wide services a front end calls that live in
 * kernels/ (tuning, fault hooks, the GPU context, the autotuner). */
#ifndef LARMOR_H
#define LARMOR_H

#include <stddef.h>

#include "lm_config.h"

#include "lm_error.h"
#include "lm_types.h"

#include "lm_acq.h"
#include "lm_atomic.h"
#include "lm_dicom.h"
#include "lm_io.h"
#include "lm_io_fieldmap.h"
#include "lm_io_impatient.h"
#include "lm_io_ismrmrd.h"
#include "lm_metrics.h"
#include "lm_mrd_stream.h"
#include "lm_resample.h"
#include "lm_trace.h"

#include "lm_device_visibility.h"
#include "lm_kernels.h"

#include "lm_encoding_cache.h"
#include "lm_estimate.h"
#include "lm_recon.h"
#include "lm_dyn_recon.h"
#include "lm_sliding.h"
#include "lm_frames.h"
#include "lm_frame_stats.h"
#include "lm_recon_session.h"
#include "lm_reg_norm.h"

#include "lm_coils_synth.h"
#include "lm_dynamic_phantom.h"
#include "lm_fieldmap_synth.h"
#include "lm_lesion.h"
#include "lm_phantom.h"
#include "lm_spiral.h"
#include "lm_trajgen.h"

#include "lm_bench.h"
#include "lm_q.h"
#include "lm_mrd_config.h"
#include "lm_mrd_server.h"
#include "lm_mrd_listener.h"

/* ---- process-wide services (api/larmor_runtime.c) ---- */

/* The LARMOR_* tuning variables (docs/tuning.md) read and applied: a front
 * end's first call. A value that does not parse is refused naming it. */
lm_code larmor_tuning_init_from_env(lm_error *err);
/* Test-only fault injection: gpu_spec as lm_gpu_fault_set ("nomem:plan",
 * "lost:cg", ...), io_spec as lm_io_fault_set ("stop-before-rename");
 * NULL leaves that hook as it is. */
lm_code larmor_fault_set(const char *gpu_spec, const char *io_spec, lm_error *err);
/* Start making the GPU context in the background (a no-op without CUDA or
 * with LARMOR_GPU_PREWARM=0); join it before the process ends. */
void larmor_gpu_prewarm(void);
void larmor_gpu_prewarm_wait(void);
/* Non-zero once a driver error has made the GPU unusable in this process. */
int larmor_gpu_lost(void);
/* gpu-tuned's launch parameters on GPU 0: swept and stored (show 0), or
 * those in use shown (show 1). report: the device line and the
 * parameters with where they come from. ctl: progress, may cancel. */
lm_code larmor_gpu_tune(int show, char *report, size_t len, const lm_ctl *ctl, lm_error *err);
/* LM_OK when this build has the wavelet prior (GSL); else why not. */
lm_code larmor_wavelet_available(lm_error *why);

#endif
