/* Line profiles: a straight line on one slice (plane coordinates, voxel
 * centres at integers) and the magnitude sampled along it, bilinear in the
 * plane, at most one voxel apart. Plain C (no widgets): the compare view
 * plots one profile per panel and writes them as CSV. The same line means
 * the same plane coordinates on the same grid, whatever volume it samples. */
#ifndef LARMOR_PROFILE_H
#define LARMOR_PROFILE_H

#include <glib.h>
#include <stdint.h>

#include "larmor-slice.h"
#include "larmor.h"

G_BEGIN_DECLS

typedef struct {
    gboolean set;                  /* FALSE: no line */
    LarmorOrientation orientation; /* the plane it lies in */
    int64_t slice;                 /* index along the orientation's normal axis */
    double u0, v0, u1, v1;         /* its ends in the plane (voxel units, centres at integers) */
} LarmorLine;

void larmor_line_set(LarmorLine *line, LarmorOrientation o, int64_t slice, double u0, double v0, double u1,
                     double v1);
gboolean larmor_line_equal(const LarmorLine *a, const LarmorLine *b);
/* Samples along the line: ceil(length in voxels) + 1, at least 2. */
int larmor_line_samples(const LarmorLine *line);
/* Length in mm through the in-plane voxel size of vol. */
double larmor_line_length_mm(const LarmorLine *line, const lm_volume *vol);
/* Sample i of n: its voxel position (x, y, z; in-plane coordinates may
 * be fractional) and its distance from the first end in mm. */
void larmor_line_point(const LarmorLine *line, const lm_volume *vol, int i, int n, double xyz[3], double *dist_mm);
/* |vol| at the n samples (bilinear in the plane; points off the slice
 * clamp to its edge). FALSE when there is no line or its slice is not in
 * vol. dist_mm may be NULL. */
gboolean larmor_line_profile(const LarmorLine *line, const lm_volume *vol, int n, double *dist_mm, double *values);
/* "Line, axial z 16: (3.0, 4.0) – (20.5, 9.0), 35.2 mm". */
char *larmor_line_describe(const LarmorLine *line, const lm_volume *vol);
/* distance_mm, x, y, z, then one column per series (names quoted). */
char *larmor_profile_to_csv(const LarmorLine *line, const lm_volume *grid, const char *const *names,
                            const double *const *values, int nseries, int n);

G_END_DECLS

#endif
