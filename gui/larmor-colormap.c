#include "larmor-colormap.h"

#include <math.h>
#include <pthread.h>

static uint32_t luts[LARMOR_N_COLORMAPS][256];
static pthread_once_t luts_once = PTHREAD_ONCE_INIT;

static uint8_t to_byte(double c)
{
    c = c < 0 ? 0 : c > 1 ? 1 : c;
    return (uint8_t)lrint(c * 255.0);
}

static uint32_t pack(double r, double g, double b)
{
    return 0xff000000u | (uint32_t)to_byte(r) << 16 | (uint32_t)to_byte(g) << 8 | to_byte(b);
}

/* Viridis as a degree-6 polynomial fit (Matt Zucker's, max error < 1/255
 * against matplotlib's table): saves carrying the 256-entry table. */
static void viridis(double t, double rgb[3])
{
    static const double c[7][3] = {
        { 0.2777273272234177, 0.005407344544966578, 0.3340998053353061 },
        { 0.1050930431085774, 1.404613529898575, 1.384590162594685 },
        { -0.3308618287255563, 0.214847559468213, 0.09509516302823659 },
        { -4.634230498983486, -5.799100973351585, -19.33244095627987 },
        { 6.228269936347081, 14.17993336680509, 56.69055260068105 },
        { 4.776384997670288, -13.74514537774601, -65.35303263337234 },
        { -5.435455855934631, 4.645852612178535, 26.3124352495832 },
    };
    for (int k = 0; k < 3; k++) {
        double v = c[6][k];
        for (int d = 5; d >= 0; d--)
            v = c[d][k] + t * v;
        rgb[k] = v;
    }
}

/* ColorBrewer RdBu (11 classes), reversed so that low values are blue,
 * interpolated linearly in sRGB. The middle class #f7f7f7 is the centre. */
static void diverging(double t, double rgb[3])
{
    static const uint32_t anchors[11] = {
        0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
        0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f,
    };
    double s = t * 10;
    int k = s >= 10 ? 9 : (int)s;
    double f = s - k;
    for (int c = 0; c < 3; c++) {
        int sh = 16 - 8 * c;
        double a = ((anchors[k] >> sh) & 0xff) / 255.0, b = ((anchors[k + 1] >> sh) & 0xff) / 255.0;
        rgb[c] = a + f * (b - a);
    }
}

/* A closed smooth curve in RGB (period 1 in t): grey lightness
 * 0.5 + 0.38 cos(2 pi t) plus a hue offset along sin(2 pi t) that is blue
 * on one half and orange on the other; at t = 0, 1/2, 1 it is grey. */
static void cyclic(double t, double rgb[3])
{
    double l = 0.5 + 0.38 * cos(2 * M_PI * t), s = sin(2 * M_PI * t);
    rgb[0] = l - 0.13 * s;
    rgb[1] = l + 0.0274 * s; /* so the offset has no luma: +x, -x equally light */
    rgb[2] = l + 0.2 * s;
}

static void build_luts(void)
{
    for (int i = 0; i < 256; i++) {
        double t = i / 255.0, rgb[3];
        luts[LARMOR_COLORMAP_GREY][i] = pack(t, t, t);
        luts[LARMOR_COLORMAP_HOT][i] = pack(3 * t, 3 * t - 1, 3 * t - 2);
        viridis(t, rgb);
        luts[LARMOR_COLORMAP_VIRIDIS][i] = pack(rgb[0], rgb[1], rgb[2]);
        diverging(t, rgb);
        luts[LARMOR_COLORMAP_DIVERGING][i] = pack(rgb[0], rgb[1], rgb[2]);
        cyclic(t, rgb);
        luts[LARMOR_COLORMAP_CYCLIC][i] = pack(rgb[0], rgb[1], rgb[2]);
    }
}

const uint32_t *larmor_colormap_lut(LarmorColormap cm)
{
    pthread_once(&luts_once, build_luts);
    if ((unsigned)cm >= LARMOR_N_COLORMAPS)
        cm = LARMOR_COLORMAP_GREY;
    return luts[cm];
}

const char *larmor_colormap_name(LarmorColormap cm)
{
    switch (cm) {
    case LARMOR_COLORMAP_HOT: return "hot";
    case LARMOR_COLORMAP_VIRIDIS: return "viridis";
    case LARMOR_COLORMAP_DIVERGING: return "diverging";
    case LARMOR_COLORMAP_CYCLIC: return "cyclic";
    default: return "grey";
    }
}

/* One place for the window arithmetic so the test and the map agree. */
static inline void window_coeffs(double window, double level, double gain, float *a, float *b)
{
    if (!(window > 0))
        window = 1e-30;
    double lo = level - window / 2;
    *a = (float)(255.0 * gain / window);
    *b = (float)(-255.0 * lo / window + 0.5); /* +0.5: round to nearest */
}

int larmor_colormap_index(float v, double window, double level, double gain)
{
    float a, b;
    window_coeffs(window, level, gain, &a, &b);
    float t = v * a + b;
    /* Written so that NaN fails the first test and lands on 0. */
    if (!(t >= 0.0f))
        return 0;
    if (t >= 255.0f)
        return 255;
    return (int)t;
}

void larmor_colormap_map(const float *values, size_t n, double window, double level, double gain,
                         LarmorColormap cm, uint32_t *out)
{
    const uint32_t *lut = larmor_colormap_lut(cm);
    float a, b;
    window_coeffs(window, level, gain, &a, &b);
    /* Branch-light loop the compiler vectorises: clamp in float, then look up. */
    for (size_t i = 0; i < n; i++) {
        float t = values[i] * a + b;
        t = t >= 0.0f ? t : 0.0f; /* NaN -> 0 too */
        t = t <= 255.0f ? t : 255.0f;
        out[i] = lut[(int)t];
    }
}
