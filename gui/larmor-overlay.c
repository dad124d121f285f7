#include "larmor-overlay.h"

#include <math.h>

void larmor_overlay_map(const float *values, size_t n, const LarmorOverlayStyle *st, uint32_t *out)
{
    const double span = st->hi > st->lo ? st->hi - st->lo : 1;
    larmor_colormap_map(values, n, span, (st->lo + st->hi) / 2, 1.0, st->colormap, out);
    const double op = st->opacity < 0 ? 0 : st->opacity > 1 ? 1 : st->opacity;
    for (size_t i = 0; i < n; i++) {
        double a = op;
        if (isnan(values[i]))
            a = 0;
        else if (st->ramp) {
            double f = (values[i] - st->lo) / span;
            a *= f < 0 ? 0 : f > 1 ? 1 : f;
        }
        /* Premultiplied: every channel scaled by alpha. */
        const uint32_t p = out[i];
        const uint32_t A = (uint32_t)lround(255 * a);
        const uint32_t r = ((p >> 16) & 0xff) * A / 255, g = ((p >> 8) & 0xff) * A / 255, b = (p & 0xff) * A / 255;
        out[i] = A << 24 | r << 16 | g << 8 | b;
    }
}
