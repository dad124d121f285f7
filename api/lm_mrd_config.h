/* What an MRD connection's configuration asks for: Larmor CLI options as
 * text (CONFIG_TEXT), Gadgetron configuration XML with <parameter name
 * value> entries, or the name of a preset (CONFIG_FILE) in the server's
 * preset folder. docs/mrd-server.md lists the options and the mapping. */
#ifndef LM_MRD_CONFIG_H
#define LM_MRD_CONFIG_H

#include <stdint.h>

#include "lm_error.h"
#include "lm_recon.h"

typedef struct lm_mrd_job_opts {
    lm_recon_opts recon;  /* variant points into variant[] */
    char variant[64];
    int method_given;     /* else Cartesian data fully sampled get the FFT, as larmor-cli recon does */
    int iters_given;      /* else real-time frames take LM_SLIDING_ITERS_DEFAULT */
    int64_t matrix[3];    /* --matrix (0: the header's) */
    int as_complex;       /* complex float images instead of magnitude */
    int dirac;
    int rt_window, rt_step; /* --realtime WINDOW:STEP (0: off): a frame every STEP acquisitions
                               from the last WINDOW (recon/dynamic/lm_sliding.h) */
} lm_mrd_job_opts;

void lm_mrd_job_opts_init(lm_mrd_job_opts *o);

/* Applies a configuration text: XML (it starts with '<') or whitespace-
 * separated CLI options. Failure: one line in err (LM_ERR_INVALID). */
lm_code lm_mrd_config_apply(lm_mrd_job_opts *o, const char *text, lm_error *err);

/* Applies preset name from dir: name must be a plain file name (letters,
 * digits, '.', '_', '-'; no '/', no "..", not starting with '.'), read as
 * dir/name.conf, or dir/name when it already ends in .conf. */
lm_code lm_mrd_config_preset(lm_mrd_job_opts *o, const char *dir, const char *name, lm_error *err);

#endif
