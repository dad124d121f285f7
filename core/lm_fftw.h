/* FFTW set-up shared by every module that plans (solver, NUFFT, gridding,
 * Cartesian FFT): threads initialised once and the planner made
 * thread-safe, since reconstructions run in worker threads. */
#ifndef LM_FFTW_H
#define LM_FFTW_H

/* Idempotent and thread-safe. Returns 1 when FFTW's threads work. The
 * first call also reads the wisdom of earlier processes (FFTW_MEASURE
 * plans, lm_fftw_wisdom_save) from the cache folder (lm_qcache_dir). */
int lm_fftw_setup(void);

/* Writes FFTW's wisdom to the cache folder (atomically; best effort: no
 * folder, no file). Call after planning with FFTW_MEASURE. */
void lm_fftw_wisdom_save(void);

#endif
