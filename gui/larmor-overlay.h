/* An image laid over the slice viewer's (a field map in Hz, the prior
 * influence's magnitude): its colour map, value range and how it blends.
 * Plain C (no GTK) so the mapping can be tested on its own.
 *
 * Pixels are premultiplied 0xAARRGGBB (GDK_MEMORY_DEFAULT): the colour of
 * larmor_colormap_map over [lo, hi], with alpha = opacity everywhere
 * (signed maps: every value matters), or, with ramp, opacity x the value's
 * place in [lo, hi] (magnitudes: zero is transparent, so where the prior
 * changed nothing the image shows through). NaN is transparent. */
#ifndef LARMOR_OVERLAY_H
#define LARMOR_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "larmor-colormap.h"
#include "larmor-slice.h"

typedef struct {
    LarmorColormap colormap;
    double lo, hi;          /* value range of the colour map (hi > lo) */
    double opacity;         /* 0..1 */
    int ramp;               /* alpha grows with the value */
    LarmorMode mode;        /* what is taken of the complex overlay (real: Hz; magnitude) */
} LarmorOverlayStyle;

void larmor_overlay_map(const float *values, size_t n, const LarmorOverlayStyle *style, uint32_t *out);

#endif
