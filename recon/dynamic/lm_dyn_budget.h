/* Where a dynamic model keeps its frames' FFT(Q) on a GPU
 * (docs/gpu-design.md, "Streamed FFT(Q)"): resident, one per frame, when
 * all of them fit under the budget; streamed otherwise, every frame's in
 * pinned host memory and two device slots that the block-diagonal normal
 * operator fills one frame ahead. Everything else a frame's normal
 * operator needs is shared by the frames, so FFT(Q) is the only part that
 * grows with the frame count. Plain arithmetic (no device): CPU-tested. */
#ifndef LM_DYN_BUDGET_H
#define LM_DYN_BUDGET_H

#include <stdint.h>

typedef struct lm_dyn_qplan {
    int64_t q_bytes; /* one frame's FFT(Q): 4 bytes a point of the padded grid */
    int64_t need;    /* all frames' */
    int64_t budget;  /* what they may take resident */
    int stream;      /* 1: streamed */
} lm_dyn_qplan;

/* Bytes of one FFT(Q) for matrix n (every axis longer than 1 padded 2x). */
int64_t lm_dyn_q_bytes(const int64_t n[3]);

/* The plan for `frames` frames of matrix n: budget the tuned bytes when
 * tuned > 0 (LARMOR_GPU_DYN_BUDGET), else half of dev_free (the device's
 * free memory before the first Q; 0 when unknown: no limit). Streams when
 * the frames need more than the budget and there are more than two of
 * them (two slots would hold them all). */
void lm_dyn_qplan_make(int64_t frames, const int64_t n[3], long long tuned, int64_t dev_free, lm_dyn_qplan *out);

#endif
