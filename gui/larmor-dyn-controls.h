/* The reconstruction panel's controls for dynamic data (docs/dynamic.md),
 * shown only while data with frames are loaded: the temporal prior (ttv,
 * ttv+tv, llr, or frame by frame: lambda_t = 0, each frame its own static
 * reconstruction), the temporal weight lambda_t, the spatial weight
 * lambda_s (ttv+tv) and the ADMM iterations. */
#ifndef LARMOR_DYN_CONTROLS_H
#define LARMOR_DYN_CONTROLS_H

#include <gtk/gtk.h>

#include "larmor-run.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_DYN_CONTROLS (larmor_dyn_controls_get_type())
G_DECLARE_FINAL_TYPE(LarmorDynControls, larmor_dyn_controls, LARMOR, DYN_CONTROLS, GtkWidget)

/* The prior menu's entries, in order. */
typedef enum {
    LARMOR_DYN_TTV = 0,
    LARMOR_DYN_TTV_TV,
    LARMOR_DYN_LLR,
    LARMOR_DYN_FRAME_BY_FRAME,
    LARMOR_N_DYN_PRIORS
} LarmorDynPrior;

GtkWidget *larmor_dyn_controls_new(void);
/* Fills p's dynamic fields, lambda (lambda_t) and iters (ADMM). */
void larmor_dyn_controls_apply(LarmorDynControls *self, LarmorReconParams *p);
/* Shows the dynamic settings of p (a run's). */
void larmor_dyn_controls_set_params(LarmorDynControls *self, const LarmorReconParams *p);
void larmor_dyn_controls_set_prior(LarmorDynControls *self, LarmorDynPrior prior);
LarmorDynPrior larmor_dyn_controls_get_prior(LarmorDynControls *self);
void larmor_dyn_controls_set_lambda(LarmorDynControls *self, double lambda_t, double lambda_s);
double larmor_dyn_controls_get_lambda_t(LarmorDynControls *self);
void larmor_dyn_controls_set_iters(LarmorDynControls *self, int iters);
/* The "Live" toggle beside lambda_t (re-solve the newest dynamic run as it
 * moves); "lambda-changed" (double lambda_t) is emitted on every change,
 * "changed" when the prior is chosen. */
GtkToggleButton *larmor_dyn_controls_get_live_toggle(LarmorDynControls *self);

G_END_DECLS

#endif
