/* ops/grid_sample-impl.h — the arithmetic of GridSample and GridSampleGrad
 * (ops/grid_sample.c), written once for the host and the device: the CPU
 * kernels and ops/cuda/misc_kernels.cu both include it, so that the two
 * backends make the same operations in the same order.
 *
 * Semantics are the ONNX reference's (onnx/reference/ops/op_grid_sample.py):
 * the grid's last axis holds the coordinates innermost-first (x for the
 * last spatial axis); a coordinate is denormalised in the input's own
 * precision (align_corners: (g + 1) / 2 * (len - 1), else ((g + 1) len - 1)
 * / 2), rounded half to even for nearest, and where it lies outside
 * [lo, hi] (0 and len - 1 with align_corners, else -0.5 and len - 0.5) it is
 * clamped to [0, len - 1] (border) or reflected into [lo, hi] (reflection,
 * in double). Taps (2 per axis for linear, 4 for cubic with Keys' a = -0.75,
 * 1 for nearest) outside the input read 0 (zeros), the clamped index
 * (border) or the reflected one (reflection). Values are summed in double
 * over the taps in row-major tap order.
 *
 * Not part of the ops/ interface. */
#ifndef DTRX_OPS_GRID_SAMPLE_IMPL_H
#define DTRX_OPS_GRID_SAMPLE_IMPL_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GS_FN __host__ __device__ static inline
#else
#define GS_FN static inline
#endif

#define GS_MAX_R 3

enum gs_mode { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum gs_padding { GS_ZEROS, GS_BORDER, GS_REFLECTION };

/* The geometry: X is [n, c, dims...], grid [n, points..., r] with
 * `points` output positions per batch entry, Y [n, c, points...]. */
struct gs_geom {
    int r, mode, padding, align;
    int64_t n, c, points, in_points;
    int64_t dims[GS_MAX_R];
};

/* Reflects x into [lo, hi]; *slope receives d result / d x (+1 or -1). */
GS_FN double gs_reflect(double x, double lo, double hi, double *slope)
{
    double rng = hi - lo;
    *slope = 1;
    if (x < lo) {
        double dx = lo - x;
        int64_t k = (int64_t)(dx / rng);
        double r = dx - (double)k * rng;
        *slope = k % 2 == 0 ? -1 : 1;
        return k % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int64_t k = (int64_t)(dx / rng);
        double r = dx - (double)k * rng;
        *slope = k % 2 == 0 ? -1 : 1;
        return k % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

/* The input index a tap at integer position i reads along an axis of
 * extent len, or -1 for a zero (zeros padding outside the input). */
GS_FN int64_t gs_tap_index(const struct gs_geom *g, int64_t i, int64_t len)
{
    if (g->padding == GS_ZEROS)
        return i >= 0 && i < len ? i : -1;
    if (g->padding == GS_BORDER)
        return i < 0 ? 0 : i >= len ? len - 1 : i;
    double lo = g->align ? 0.0 : -0.5, hi = g->align ? (double)len - 1 : (double)len - 0.5, s;
    return (int64_t)gs_reflect((double)i, lo, hi, &s);
}

/* Keys' cubic weights of the taps x0 - 1 .. x0 + 2 at fraction t, and
 * their derivatives in t. */
GS_FN void gs_cubic(double t, double *w, double *dw)
{
    const double A = -0.75;
    double t1 = t + 1, u = 1 - t, u2 = 2 - t;
    w[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
    w[3] = ((A * u2 - 5 * A) * u2 + 8 * A) * u2 - 4 * A;
    dw[0] = 3 * A * t1 * t1 - 10 * A * t1 + 8 * A;
    dw[1] = 3 * (A + 2) * t * t - 2 * (A + 3) * t;
    dw[2] = -(3 * (A + 2) * u * u - 2 * (A + 3) * u);
    dw[3] = -(3 * A * u2 * u2 - 10 * A * u2 + 8 * A);
}

/* Per axis d of one output point: the first tap position, the taps'
 * weights and their derivatives with respect to the grid value (chain
 * rule through denormalisation and padding included). */
struct gs_point {
    int taps;                                  /* per axis: 1, 2 or 4 */
    int64_t first[GS_MAX_R];
    double w[GS_MAX_R][4], dw[GS_MAX_R][4];
};

#define GS_POINT_DEF(T)                                                                 \
    GS_FN void gs_point_##T(const struct gs_geom *g, const T *gv, struct gs_point *pt)  \
    {                                                                                   \
        pt->taps = g->mode == GS_LINEAR ? 2 : g->mode == GS_CUBIC ? 4 : 1;              \
        for (int d = 0; d < g->r; d++) {                                                \
            const int64_t len = g->dims[d];                                             \
            const T n = gv[g->r - 1 - d];                                               \
            T x = g->align ? (n + (T)1) / (T)2 * (T)(len - 1)                           \
                           : ((n + (T)1) * (T)len - (T)1) / (T)2;                       \
            double slope = g->align ? (double)(len - 1) / 2 : (double)len / 2;          \
            if (g->mode == GS_NEAREST)                                                  \
                x = (T)rint((double)x);                                                 \
            const double lo = g->align ? 0.0 : -0.5;                                    \
            const double hi = g->align ? (double)len - 1 : (double)len - 0.5;           \
            if ((double)x < lo || (double)x > hi) {                                     \
                if (g->padding == GS_BORDER) {                                          \
                    x = x < (T)0 ? (T)0 : x > (T)(len - 1) ? (T)(len - 1) : x;          \
                    slope = 0;                                                          \
                } else if (g->padding == GS_REFLECTION) {                               \
                    double s;                                                           \
                    x = (T)gs_reflect((double)x, lo, hi, &s);                           \
                    slope *= s;                                                         \
                }                                                                       \
            }                                                                           \
            if (g->mode == GS_NEAREST) {                                                \
                pt->first[d] = (int64_t)x;                                              \
                pt->w[d][0] = 1;                                                        \
                pt->dw[d][0] = 0;                                                       \
                continue;                                                               \
            }                                                                           \
            const double x0 = floor((double)x), t = (double)x - x0;                     \
            if (g->mode == GS_LINEAR) {                                                 \
                pt->first[d] = (int64_t)x0;                                             \
                pt->w[d][0] = 1 - t;                                                    \
                pt->w[d][1] = t;                                                        \
                pt->dw[d][0] = -slope;                                                  \
                pt->dw[d][1] = slope;                                                   \
            } else {                                                                    \
                double dw[4];                                                           \
                pt->first[d] = (int64_t)x0 - 1;                                         \
                gs_cubic(t, pt->w[d], dw);                                              \
                for (int k = 0; k < 4; k++)                                             \
                    pt->dw[d][k] = dw[k] * slope;                                       \
            }                                                                           \
        }                                                                               \
    }
GS_POINT_DEF(float)
GS_POINT_DEF(double)

/* Tap number `tap` (row-major over taps^r) of a point: its input offset
 * (-1: a zero) and the taps along each axis. */
GS_FN int64_t gs_tap(const struct gs_geom *g, const struct gs_point *pt, int tap, int *k)
{
    int64_t off = 0;
    int zero = 0;
    for (int d = g->r - 1; d >= 0; d--) {
        k[d] = tap % pt->taps;
        tap /= pt->taps;
    }
    for (int d = 0; d < g->r; d++) {
        int64_t i = gs_tap_index(g, pt->first[d] + k[d], g->dims[d]);
        if (i < 0)
            zero = 1;
        off = off * g->dims[d] + (i < 0 ? 0 : i);
    }
    return zero ? -1 : off;
}

GS_FN int gs_tap_count(const struct gs_geom *g, const struct gs_point *pt)
{
    int n = 1;
    for (int d = 0; d < g->r; d++)
        n *= pt->taps;
    return n;
}

/* Y at one point of one channel plane x (in_points elements). */
#define GS_SAMPLE_DEF(T)                                                                \
    GS_FN T gs_sample_##T(const struct gs_geom *g, const struct gs_point *pt, const T *x) \
    {                                                                                   \
        double s = 0;                                                                   \
        int k[GS_MAX_R];                                                                \
        for (int tap = 0, nt = gs_tap_count(g, pt); tap < nt; tap++) {                  \
            int64_t off = gs_tap(g, pt, tap, k);                                        \
            double w = 1;                                                               \
            for (int d = 0; d < g->r; d++)                                              \
                w *= pt->w[d][k[d]];                                                    \
            if (off >= 0)                                                               \
                s += w * (double)x[off];                                                \
        }                                                                               \
        return (T)s;                                                                    \
    }                                                                                   \
    /* d Y / d (grid value of axis d), written into dg[d] */                            \
    GS_FN void gs_dgrid_##T(const struct gs_geom *g, const struct gs_point *pt,         \
                            const T *x, double *dg)                                     \
    {                                                                                   \
        int k[GS_MAX_R];                                                                \
        for (int d = 0; d < g->r; d++)                                                  \
            dg[d] = 0;                                                                  \
        for (int tap = 0, nt = gs_tap_count(g, pt); tap < nt; tap++) {                  \
            int64_t off = gs_tap(g, pt, tap, k);                                        \
            if (off < 0)                                                                \
                continue;                                                               \
            for (int d = 0; d < g->r; d++) {                                            \
                double w = pt->dw[d][k[d]];                                             \
                for (int e = 0; e < g->r; e++)                                          \
                    if (e != d)                                                         \
                        w *= pt->w[e][k[e]];                                            \
                dg[d] += w * (double)x[off];                                            \
            }                                                                           \
        }                                                                               \
    }
GS_SAMPLE_DEF(float)
GS_SAMPLE_DEF(double)

#endif
