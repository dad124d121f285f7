/* A colour bar: a vertical strip of a colour map from lo (bottom) to hi
 * (top) with 3-5 tick labels at nice numbers (1, 2 or 5 x 10^k; multiples
 * of pi/2 shown as -π, -π/2, 0, … when the unit is "rad") and the unit on
 * top, on a translucent dark backdrop so it reads over any image. Plain
 * cairo + pango (no widget), so any view or overlay can draw one in its
 * snapshot and the tick rule can be tested without a display. */
#ifndef LARMOR_COLORBAR_H
#define LARMOR_COLORBAR_H

#include <cairo.h>
#include <stddef.h>

#include "larmor-colormap.h"

#define LARMOR_COLORBAR_MAX_TICKS 8

/* Tick values in [lo, hi], ascending, at most LARMOR_COLORBAR_MAX_TICKS
 * (3-5 whenever the rule can give them); *step gets their spacing. unit
 * "rad" with hi - lo >= pi/2 takes multiples of pi/2 (or pi). Returns the
 * count; 0 when lo or hi is not finite, 1 when lo == hi. */
int larmor_colorbar_ticks(double lo, double hi, const char *unit, double ticks[LARMOR_COLORBAR_MAX_TICKS],
                          double *step);

/* One tick label: as few decimals as the step needs ("0.25", "-40",
 * "1.5e+04" for large or tiny magnitudes); for "rad" ticks at multiples of
 * pi/2 "π", "-π/2", "0". */
void larmor_colorbar_label(double v, double step, const char *unit, char *buf, size_t n);

/* Width (pixels) the bar needs so that its labels and unit fit when drawn
 * with larmor_colorbar_draw on cr: pass it as w. */
double larmor_colorbar_width(cairo_t *cr, double lo, double hi, const char *unit);

/* Draws the bar in the box (x, y, w, h): backdrop over the whole box, the
 * strip at its left, labels right of the strip, unit (may be NULL or "")
 * above it. Draws nothing if lo or hi is not finite or the box is too
 * small; hi <= lo gives the strip with one label (lo). Leaves cr's state
 * as it found it. */
void larmor_colorbar_draw(cairo_t *cr, double x, double y, double w, double h, LarmorColormap cm, double lo,
                          double hi, const char *unit);

#endif
