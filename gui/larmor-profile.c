#include "larmor-profile.h"

#include <math.h>

void larmor_line_set(LarmorLine *line, LarmorOrientation o, int64_t slice, double u0, double v0, double u1,
                     double v1)
{
    *line = (LarmorLine){ .set = TRUE, .orientation = o, .slice = slice, .u0 = u0, .v0 = v0, .u1 = u1, .v1 = v1 };
}

gboolean larmor_line_equal(const LarmorLine *a, const LarmorLine *b)
{
    if (!a->set || !b->set)
        return a->set == b->set;
    return a->orientation == b->orientation && a->slice == b->slice && a->u0 == b->u0 && a->v0 == b->v0 &&
           a->u1 == b->u1 && a->v1 == b->v1;
}

int larmor_line_samples(const LarmorLine *line)
{
    double len = hypot(line->u1 - line->u0, line->v1 - line->v0);
    /* Long lines on huge grids stay bounded (4096 points is plenty to plot). */
    return (int)CLAMP(ceil(len) + 1, 2, 4096);
}

static void voxel_mm(const lm_volume *vol, int axis, double *mm)
{
    *mm = vol && vol->voxel_mm[axis] > 0 ? vol->voxel_mm[axis] : 1;
}

double larmor_line_length_mm(const LarmorLine *line, const lm_volume *vol)
{
    int u, v, n;
    larmor_orientation_axes(line->orientation, &u, &v, &n);
    double mu, mv;
    voxel_mm(vol, u, &mu);
    voxel_mm(vol, v, &mv);
    return hypot((line->u1 - line->u0) * mu, (line->v1 - line->v0) * mv);
}

void larmor_line_point(const LarmorLine *line, const lm_volume *vol, int i, int n, double xyz[3], double *dist_mm)
{
    int u, v, nn;
    larmor_orientation_axes(line->orientation, &u, &v, &nn);
    double t = n > 1 ? (double)i / (n - 1) : 0;
    xyz[u] = line->u0 + t * (line->u1 - line->u0);
    xyz[v] = line->v0 + t * (line->v1 - line->v0);
    xyz[nn] = (double)line->slice;
    if (dist_mm)
        *dist_mm = t * larmor_line_length_mm(line, vol);
}

static double mag_at(const lm_volume *vol, int64_t x, int64_t y, int64_t z)
{
    x = CLAMP(x, 0, vol->dims[0] - 1);
    y = CLAMP(y, 0, vol->dims[1] - 1);
    z = CLAMP(z, 0, vol->dims[2] - 1);
    return cabsf(vol->data[x + vol->dims[0] * (y + vol->dims[1] * z)]);
}

gboolean larmor_line_profile(const LarmorLine *line, const lm_volume *vol, int n, double *dist_mm, double *values)
{
    int u, v, nn;
    if (!line->set || !vol || n < 1)
        return FALSE;
    larmor_orientation_axes(line->orientation, &u, &v, &nn);
    if (line->slice < 0 || line->slice >= vol->dims[nn])
        return FALSE;
    for (int i = 0; i < n; i++) {
        double p[3];
        larmor_line_point(line, vol, i, n, p, dist_mm ? &dist_mm[i] : NULL);
        /* Bilinear between the four voxel centres around (pu, pv). */
        double pu = CLAMP(p[u], 0, (double)(vol->dims[u] - 1)), pv = CLAMP(p[v], 0, (double)(vol->dims[v] - 1));
        int64_t iu = (int64_t)floor(pu), iv = (int64_t)floor(pv);
        double fu = pu - (double)iu, fv = pv - (double)iv;
        double acc = 0;
        for (int du = 0; du < 2; du++)
            for (int dv = 0; dv < 2; dv++) {
                double w = (du ? fu : 1 - fu) * (dv ? fv : 1 - fv);
                if (w == 0)
                    continue;
                int64_t q[3];
                q[u] = iu + du;
                q[v] = iv + dv;
                q[nn] = line->slice;
                acc += w * mag_at(vol, q[0], q[1], q[2]);
            }
        values[i] = acc;
    }
    return TRUE;
}

static const char *axis_name(int a)
{
    return a == 0 ? "x" : a == 1 ? "y" : "z";
}

char *larmor_line_describe(const LarmorLine *line, const lm_volume *vol)
{
    int u, v, n;
    larmor_orientation_axes(line->orientation, &u, &v, &n);
    return g_strdup_printf("Line, %s %s %lld: (%s %.1f, %s %.1f) – (%s %.1f, %s %.1f), %.1f mm",
                           larmor_orientation_name(line->orientation), axis_name(n), (long long)line->slice,
                           axis_name(u), line->u0, axis_name(v), line->v0, axis_name(u), line->u1, axis_name(v),
                           line->v1, larmor_line_length_mm(line, vol));
}

static void csv_num(GString *s, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (isfinite(v))
        g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.9g", v));
}

char *larmor_profile_to_csv(const LarmorLine *line, const lm_volume *grid, const char *const *names,
                            const double *const *values, int nseries, int n)
{
    GString *s = g_string_new("distance_mm,x,y,z");
    for (int k = 0; k < nseries; k++) {
        g_string_append(s, ",\"");
        for (const char *c = names[k] ? names[k] : ""; *c; c++) {
            if (*c == '"')
                g_string_append_c(s, '"');
            g_string_append_c(s, *c);
        }
        g_string_append_c(s, '"');
    }
    g_string_append_c(s, '\n');
    for (int i = 0; i < n; i++) {
        double p[3], d;
        larmor_line_point(line, grid, i, n, p, &d);
        csv_num(s, d);
        for (int a = 0; a < 3; a++) {
            g_string_append_c(s, ',');
            csv_num(s, p[a]);
        }
        for (int k = 0; k < nseries; k++) {
            g_string_append_c(s, ',');
            csv_num(s, values[k][i]);
        }
        g_string_append_c(s, '\n');
    }
    return g_string_free(s, FALSE);
}
