/* larmor-cli phantom --problem D128c8|D64c8: dynamic data written as BART
 * cfl with frames in dimension 10 (lm_dynamic_phantom.h). */
#ifndef PHANTOM_DYNAMIC_H
#define PHANTOM_DYNAMIC_H

#include "larmor.h"

/* Writes DIR/traj.cfl [3, readout, spokes, 1, ..., frames], DIR/kspace.cfl
 * [1, readout, spokes, coils, 1, ..., frames], DIR/sens.cfl and
 * DIR/truth.nii.gz (4D, pixdim[4] the frame duration); noise < 0 keeps the
 * problem's. Returns the exit code. */
int cli_phantom_dynamic(const lm_dyn_problem_def *def, const char *dir, double noise, long long seed);

#endif
