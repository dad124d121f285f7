/* Multi-slice 2D radial files for the slice tests: NSL slices of a
 * 16 x 16 matrix (FOV 240 mm), NSP spokes of NS samples each in cycles/FOV,
 * each slice's data a different sum of point sources (computed from the
 * stored trajectory, so a test can recompute any sample), slice centres
 * along z, acquisitions written in a shuffled order. Needs mrd_craft.h. */
#ifndef LM_MRD_SLICES_CRAFT_H
#define LM_MRD_SLICES_CRAFT_H

#include <math.h>

#include "mrd_craft.h"

#define SL_PI 3.14159265358979323846

#define SL_N 16
#define SL_NS 16
#define SL_NSP 12
#define SL_NSL 3
#define SL_NACQ (SL_NSL * SL_NSP)

typedef struct sl_file {
    craft_acq acq[SL_NACQ * 2];
    float traj[SL_NSP][SL_NS * 2];
    float data[SL_NACQ * 2][SL_NS * 2];
    int nacq;
} sl_file;

/* The k-space of "slice" s (any integer: slices, repetitions and contrasts
 * get different objects) at (kx, ky) cycles/FOV. */
static inline void sl_signal(int s, float kx, float ky, float out[2])
{
    double re = 0, im = 0;
    for (int p = 0; p < 3; p++) {
        double x = 0.1 * (p - 1) + 0.03 * s, y = 0.05 * p - 0.02 * s, a = 1.0 + 0.5 * p + 0.25 * s;
        double ph = -2 * SL_PI * (kx * x + ky * y);
        re += a * cos(ph);
        im += a * sin(ph);
    }
    out[0] = (float)re;
    out[1] = (float)im;
}

static inline void sl_traj(sl_file *f)
{
    for (int p = 0; p < SL_NSP; p++) {
        double ang = SL_PI * p / SL_NSP;
        for (int j = 0; j < SL_NS; j++) {
            double r = (j - SL_NS / 2) * (SL_N / 2.0) / (SL_NS / 2);
            f->traj[p][2 * j] = (float)(r * cos(ang));
            f->traj[p][2 * j + 1] = (float)(r * sin(ang));
        }
    }
}

/* Acquisition i of the file: spoke p of slice index sl, signal object obj,
 * centred at z mm; x, y mm offsets of the centre. */
static inline void sl_acq(sl_file *f, int i, int sl, int p, int obj, double x, double y, double z)
{
    craft_acq *a = &f->acq[i];
    memset(a, 0, sizeof *a);
    ismrmrd_init_acquisition_header(&a->head);
    a->head.number_of_samples = SL_NS;
    a->head.active_channels = a->head.available_channels = 1;
    a->head.trajectory_dimensions = 2;
    a->head.center_sample = SL_NS / 2;
    a->head.idx.kspace_encode_step_1 = (uint16_t)p;
    a->head.idx.slice = (uint16_t)sl;
    a->head.position[0] = (float)x;
    a->head.position[1] = (float)y;
    a->head.position[2] = (float)z;
    a->head.read_dir[0] = 1;
    a->head.phase_dir[1] = 1;
    a->head.slice_dir[2] = 1;
    for (int j = 0; j < SL_NS; j++)
        sl_signal(obj, f->traj[p][2 * j], f->traj[p][2 * j + 1], &f->data[i][2 * j]);
    a->traj = f->traj[p];
    a->traj_len = SL_NS * 2;
    a->data = f->data[i];
    a->data_len = SL_NS * 2;
}

/* Slice index -> z mm: idx 0 at 15, idx 1 at 5, idx 2 at 10 (so the order
 * by position, 1 2 0, is neither the index order nor the file order).
 * Acquisition i holds spoke (i % SL_NSP) of slice order[i / ...] shuffled. */
static const double sl_z[SL_NSL] = {15, 5, 10};

static inline void sl_make(sl_file *f, const double z[SL_NSL])
{
    sl_traj(f);
    for (int i = 0; i < SL_NACQ; i++) {
        int k = (i * 7) % SL_NACQ; /* 7 is prime to 36: a permutation */
        int sl = k % SL_NSL, p = k / SL_NSL;
        sl_acq(f, i, sl, p, sl, 2.0, -3.0, z[sl]);
    }
    f->nacq = SL_NACQ;
}

#endif
