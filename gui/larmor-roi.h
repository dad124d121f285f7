/* Regions of interest on one slice: a rectangle or an ellipse given by
 * the voxel bounding box it was dragged over, in the plane of an
 * orientation at one slice index. Plain C (no widgets): membership,
 * statistics of the magnitude, and the compare view's CSV. The same ROI
 * means the same voxel indices on the same grid, whatever volume it is
 * applied to. */
#ifndef LARMOR_ROI_H
#define LARMOR_ROI_H

#include <glib.h>
#include <stdint.h>

#include "larmor-slice.h"
#include "larmor.h"

G_BEGIN_DECLS

/* LARMOR_ROI_LINE is a drawing tool only (larmor-profile.h), never a ROI's shape. */
typedef enum { LARMOR_ROI_NONE = 0, LARMOR_ROI_RECT, LARMOR_ROI_ELLIPSE, LARMOR_ROI_LINE } LarmorRoiShape;

typedef struct {
    LarmorRoiShape shape;          /* NONE: no ROI */
    LarmorOrientation orientation; /* the plane it lies in */
    int64_t slice;                 /* index along the orientation's normal axis */
    int64_t u0, v0, u1, v1;        /* inclusive voxel bounds in the plane (u0 <= u1, v0 <= v1) */
} LarmorRoi;

typedef struct {
    int64_t count;     /* voxels inside */
    double mean, sd;   /* of the magnitude; sd with n - 1 (0 for one voxel) */
    double min, max;
    double area_mm2;   /* count x the in-plane voxel area */
} LarmorRoiStats;

/* A ROI from two corner voxels (any order) on a slice. */
void larmor_roi_set(LarmorRoi *roi, LarmorRoiShape shape, LarmorOrientation o, int64_t slice, int64_t ua,
                    int64_t va, int64_t ub, int64_t vb);
gboolean larmor_roi_equal(const LarmorRoi *a, const LarmorRoi *b);
/* Whether plane voxel (u, v) is inside: the whole box for a rectangle;
 * for an ellipse, the voxel centre inside the ellipse inscribed in the box
 * ((u + 1/2 - c_u) / r_u)^2 + ((v + 1/2 - c_v) / r_v)^2 <= 1 with the box
 * spanning [u0, u1 + 1] x [v0, v1 + 1]. */
gboolean larmor_roi_contains(const LarmorRoi *roi, int64_t u, int64_t v);
/* Statistics of |vol| inside the ROI (the part within the volume). FALSE
 * with count 0 when there is no ROI or nothing of it lies in the volume. */
gboolean larmor_roi_stats(const LarmorRoi *roi, const lm_volume *vol, LarmorRoiStats *st);
/* The voxel indices (i + nx (j + ny k)) inside the ROI within a volume of
 * dims, in plane order; NULL with count 0 when none (g_free). What a
 * ROI's time-intensity curve measures in every frame (lm_frame_stats). */
int64_t *larmor_roi_indices(const LarmorRoi *roi, const int64_t dims[3], int64_t *count);
/* SD of the magnitude of pure complex Gaussian noise (Rayleigh) relative
 * to the noise SD of each of its real and imaginary parts: sqrt(2 - pi/2). */
#define LARMOR_RAYLEIGH_SD 0.655

/* SNR = mean(signal) / sigma, sigma = SD(noise) / 0.655: the noise ROI lies
 * in the background of a magnitude image, where noise is Rayleigh
 * distributed and its SD underestimates the Gaussian noise's (Kaufman et
 * al., Radiology 1989; NEMA MS 1). NaN without both regions or with SD 0. */
double larmor_roi_snr(const LarmorRoiStats *signal, const LarmorRoiStats *noise);

/* "Rectangle, axial z 16: x 3–9, y 4–12". */
char *larmor_roi_describe(const LarmorRoi *roi);
/* One line per image: name, shape, orientation, slice, bounds, count,
 * area_mm2, mean, sd, min, max, noise_sd, snr; with a header. noise may be
 * NULL (the last two columns empty). */
char *larmor_roi_to_csv(const LarmorRoi *roi, const char *const *names, const LarmorRoiStats *stats,
                        const LarmorRoiStats *noise, int n);

G_END_DECLS

#endif
