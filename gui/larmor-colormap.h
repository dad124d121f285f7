/* Colour maps and the value -> colour mapping of the slice viewer. Plain C
 * (no GTK) so that the mapping can be tested and timed on its own.
 *
 * Window/level: with lo = level - window/2, a value v (times gain) maps to
 * LUT index round(255 (v - lo) / window), clamped to [0, 255]; values at or
 * below lo get the first colour, at or above lo + window the last, NaN the
 * first. Pixels are 0xAARRGGBB in native endianness, i.e. GDK_MEMORY_DEFAULT
 * (cairo's ARGB32), always opaque. */
#ifndef LARMOR_COLORMAP_H
#define LARMOR_COLORMAP_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    LARMOR_COLORMAP_GREY = 0,
    LARMOR_COLORMAP_HOT,
    LARMOR_COLORMAP_VIRIDIS,
    /* Blue - white - red (ColorBrewer RdBu, blue for low): signed values
     * such as a field map in Hz or a difference, with the window centred
     * on 0 so that 0 is white. Luminance rises from each end to the middle. */
    LARMOR_COLORMAP_DIVERGING,
    /* Twilight-like and periodic: the first and last entries are equal and
     * neighbours differ little everywhere, so a phase windowed to [-pi, pi]
     * has no seam where it wraps. Light at +-pi, dark at 0, blue for
     * negative and orange for positive phase with equal lightness at +-x. */
    LARMOR_COLORMAP_CYCLIC,
    LARMOR_N_COLORMAPS
} LarmorColormap;

/* 256 entries. */
const uint32_t *larmor_colormap_lut(LarmorColormap cm);
const char *larmor_colormap_name(LarmorColormap cm);

/* LUT index of one value, as stated above. */
int larmor_colormap_index(float v, double window, double level, double gain);

/* out[i] = lut[index(values[i])] for n values. */
void larmor_colormap_map(const float *values, size_t n, double window, double level, double gain,
                         LarmorColormap cm, uint32_t *out);

static inline uint8_t larmor_pixel_r(uint32_t p) { return (uint8_t)(p >> 16); }
static inline uint8_t larmor_pixel_g(uint32_t p) { return (uint8_t)(p >> 8); }
static inline uint8_t larmor_pixel_b(uint32_t p) { return (uint8_t)p; }

#endif
