/* ops/resize_general.c — the separable path of Resize: mode cubic
 * (cubic_coeff_a, exclude_outside), antialias for linear and cubic (the
 * kernel widened by 1/scale when shrinking), and tf_crop_and_resize (a roi
 * per axis, extrapolation_value outside it), for nearest, linear and cubic.
 *
 * As the ONNX reference, the tensor is resized one axis at a time: each
 * output index of an axis reads n taps (indices clamped to the edge, their
 * coefficients from the mode), chosen as the reference chooses them (the n
 * indices nearest the source coordinate, ties to the smaller). An axis whose
 * scale is 1 with its length and roi unchanged is skipped, as there.
 * Intermediate results are double; the last pass writes the output type.
 *
 * The gradient applies the transposed passes in the reverse axis order
 * (an extrapolated output has none); each pass walks the outer slabs in
 * parallel and everything inside a slab in order, so it is deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

enum { COORD_ALIGN_CORNERS = 3, COORD_ASYMMETRIC = 4, COORD_TF_CROP = 5 };
enum { COORD_HALF_PIXEL = 0, COORD_HALF_PIXEL_SYMMETRIC = 1, COORD_PYTORCH_HALF_PIXEL = 2 };

struct axis_taps {
    int n;                         /* taps per output index */
    int64_t *idx;                  /* [out * n], clamped into [0, in) */
    double *coef;                  /* [out * n] */
    unsigned char *extrap;         /* [out]: 1 where the output is extrapolation_value */
};

static double source_coord(const struct resize_params *p, int64_t o, double scale, int64_t in, int64_t out,
                           double r0, double r1, int *outside)
{
    double y = (double)o, out_f = scale * (double)in, x;
    *outside = 0;
    switch (p->coord) {
    case COORD_ALIGN_CORNERS: x = out_f == 1 ? 0 : y * (double)(in - 1) / (out_f - 1); break;
    case COORD_ASYMMETRIC: x = y / scale; break;
    case COORD_TF_CROP:
        x = out_f == 1 ? (r1 - r0) * (double)(in - 1) / 2 : y * (r1 - r0) * (double)(in - 1) / (out_f - 1);
        x += r0 * (double)(in - 1);
        *outside = x < 0 || x > (double)(in - 1);
        break;
    case COORD_PYTORCH_HALF_PIXEL: x = out_f == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
    case COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / out_f, center = (double)in / 2;
        x = center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
        break;
    }
    default: x = (y + 0.5) / scale - 0.5; break;
    }
    return x;
}

static double cubic_weight(double x, double a)
{
    x = fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1)
        return (a + 2) * x3 - (a + 3) * x2 + 1;
    if (x < 2)
        return a * x3 - 5 * a * x2 + 8 * a * x - 4 * a;
    return 0;
}

/* Taps per output index of the mode at this scale. */
static int taps_per_output(const struct resize_params *p, double scale)
{
    if (!p->linear && !p->cubic)
        return 2;
    if (!p->antialias)
        return p->linear ? 2 : 4;
    double s = scale < 1 ? scale : 1;
    if (p->linear) {
        int start = (int)floor(-1 / s) + 1;
        return 2 - 2 * start;
    }
    int start = (int)floor(-2 / s) + 1;
    return 2 - 2 * start;
}

/* The reference's coefficients for `ratio` in (0, 1]. */
static void coeffs(const struct resize_params *p, double ratio, double scale, int n, double *c)
{
    if (!p->linear && !p->cubic) {
        int up;
        if (ratio == 1)
            up = 1;
        else if (p->nearest == 1)          /* round_prefer_ceil */
            up = ratio >= 0.5;
        else if (p->nearest == 2)          /* floor */
            up = 0;
        else if (p->nearest == 3)          /* ceil */
            up = 1;
        else
            up = ratio > 0.5;
        c[0] = !up;
        c[1] = up;
        return;
    }
    if (!p->antialias) {
        if (p->linear) {
            c[0] = 1 - ratio;
            c[1] = ratio;
            return;
        }
        double a = p->cubic_a, r = ratio;
        c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
        c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
        c[2] = ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1;
        c[3] = ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a;
        return;
    }
    double s = scale < 1 ? scale : 1, sum = 0;
    int start = 1 - n / 2;
    for (int i = 0; i < n; i++) {
        double arg = ((double)(start + i) - ratio) * s;
        if (p->linear) {
            double v = 1 - fabs(arg);
            c[i] = v < 0 ? 0 : v > 1 ? 1 : v;
        } else {
            c[i] = cubic_weight(arg, p->cubic_a);
        }
        sum += c[i];
    }
    for (int i = 0; i < n; i++)
        c[i] /= sum;
}

static void taps_free(struct axis_taps *t)
{
    free(t->idx);
    free(t->coef);
    free(t->extrap);
}

static int taps_make(const struct op_call *c, const struct resize_params *p, double scale, double r0, double r1,
                     int64_t in, int64_t out, struct axis_taps *t)
{
    int n = taps_per_output(p, scale);
    t->n = n;
    t->idx = malloc(sizeof *t->idx * (size_t)(out * n + 1));
    t->coef = malloc(sizeof *t->coef * (size_t)(out * n + 1));
    t->extrap = calloc((size_t)out + 1, 1);
    if (!t->idx || !t->coef || !t->extrap) {
        taps_free(t);
        return op_error(c, "out of memory for %lld resize taps", (long long)(out * n));
    }
    int pad = (n + 1) / 2;
    for (int64_t o = 0; o < out; o++) {
        int outside;
        double x = source_coord(p, o, scale, in, out, r0, r1, &outside);
        t->extrap[o] = (unsigned char)outside;
        double fl = floor(x);
        double ratio = x == fl ? 1 : x - fl;
        double *cf = t->coef + o * n;
        coeffs(p, ratio, scale, n, cf);
        /* The n indices nearest x, ties to the smaller (in the edge-padded
         * coordinates of the reference, then shifted back). */
        double xp = x + pad, pp = floor(xp), frac = xp - pp;
        int64_t off = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1)
                                 : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
        int64_t start = (int64_t)pp + off - pad;
        double kept = 0;
        for (int k = 0; k < n; k++) {
            int64_t i = start + k;
            if (p->exclude_outside && (i < 0 || i >= in))
                cf[k] = 0;
            kept += cf[k];
            t->idx[o * n + k] = i < 0 ? 0 : i >= in ? in - 1 : i;
        }
        if (p->exclude_outside)
            for (int k = 0; k < n; k++)
                cf[k] /= kept == 0 ? 1 : kept;
    }
    return 0;
}

static int axis_is_identity(double scale, int64_t in, int64_t out, double r0, double r1)
{
    return fabs(scale - 1) <= 1e-9 && in == out && fabs(r0) <= 1e-9 && fabs(r1 - 1) <= 1e-9;
}

static double load(const void *p, int dtype, int64_t i)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: return ((const float *)p)[i];
    case ONNX_DTYPE_DOUBLE: return ((const double *)p)[i];
    default: return tensor_get_double(&(struct tensor){ .dtype = dtype, .data = (void *)p }, i);
    }
}

static void store(void *p, int dtype, int64_t i, double v)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case ONNX_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case ONNX_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)llround(v); break;
    case ONNX_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)lround(v); break;
    case ONNX_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v)); break;
    case ONNX_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : lround(v)); break;
    default: break;
    }
}

/* One forward pass along an axis: src [outer, in, inner] -> dst [outer, out, inner]. */
static void pass_forward(const struct axis_taps *t, const struct resize_params *p, const void *src, int sdt,
                         void *dst, int ddt, int64_t outer, int64_t in, int64_t out, int64_t inner)
{
    int par = outer * out * inner > 16384;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t b = 0; b < outer; b++)
        for (int64_t o = 0; o < out; o++) {
            const int64_t *ix = t->idx + o * t->n;
            const double *cf = t->coef + o * t->n;
            for (int64_t j = 0; j < inner; j++) {
                double sum = 0;
                if (t->extrap[o]) {
                    sum = p->extrapolation;
                } else {
                    for (int k = 0; k < t->n; k++)
                        if (cf[k] != 0)
                            sum += cf[k] * load(src, sdt, (b * in + ix[k]) * inner + j);
                }
                store(dst, ddt, (b * out + o) * inner + j, sum);
            }
        }
}

/* The transposed pass: dsrc [outer, in, inner] (zeroed) += taps of ddst [outer, out, inner]. */
static void pass_backward(const struct axis_taps *t, const double *ddst, double *dsrc, int64_t outer, int64_t in,
                          int64_t out, int64_t inner)
{
    memset(dsrc, 0, sizeof *dsrc * (size_t)(outer * in * inner));
    int par = outer > 1 && outer * out * inner > 16384;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t b = 0; b < outer; b++)
        for (int64_t o = 0; o < out; o++) {
            if (t->extrap[o])
                continue;
            const int64_t *ix = t->idx + o * t->n;
            const double *cf = t->coef + o * t->n;
            for (int k = 0; k < t->n; k++)
                if (cf[k] != 0)
                    for (int64_t j = 0; j < inner; j++)
                        dsrc[(b * in + ix[k]) * inner + j] += cf[k] * ddst[(b * out + o) * inner + j];
        }
}

/* The resized axes in order, and the shape after each pass. */
static int resized_axes(const double *scale, const double *roi, const int64_t *in, const int64_t *out, int rank,
                        int *axes)
{
    int n = 0;
    for (int a = 0; a < rank; a++)
        if (!axis_is_identity(scale[a], in[a], out[a], roi[a], roi[rank + a]))
            axes[n++] = a;
    return n;
}

int resize_general_forward(const struct op_call *c, const struct resize_params *p, const double *scale,
                           const double *roi, const struct tensor *x, struct tensor *y)
{
    int rank = x->rank, axes[TENSOR_MAX_RANK];
    int n = resized_axes(scale, roi, x->dims, y->dims, rank, axes);
    if (tensor_numel(y) == 0)
        return 0;
    if (n == 0) {
        memcpy(y->data, x->data, tensor_size_bytes(x));
        return 0;
    }
    int64_t cur[TENSOR_MAX_RANK];
    memcpy(cur, x->dims, sizeof cur);
    const void *src = x->data;
    int sdt = x->dtype;
    double *bufs[2] = { NULL, NULL };
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        int a = axes[k];
        struct axis_taps t;
        if (taps_make(c, p, scale[a], roi[a], roi[rank + a], x->dims[a], y->dims[a], &t))
            return -1;
        int64_t outer = shape_prod(cur, 0, a), inner = shape_prod(cur, a + 1, rank);
        int64_t in_len = cur[a];
        cur[a] = y->dims[a];
        void *dst;
        int ddt;
        if (k == n - 1) {
            dst = y->data;
            ddt = y->dtype;
        } else {
            size_t bytes = sizeof(double) * (size_t)shape_prod(cur, 0, rank);
            bufs[k % 2] = nn_scratch_alloc(c, bytes);
            if (!bufs[k % 2]) {
                taps_free(&t);
                rc = op_error(c, "no scratch memory for a %zu-byte resize pass", bytes);
                break;
            }
            dst = bufs[k % 2];
            ddt = ONNX_DTYPE_DOUBLE;
        }
        pass_forward(&t, p, src, sdt, dst, ddt, outer, in_len, cur[a], inner);
        taps_free(&t);
        if (k > 0) {
            nn_scratch_free(c, bufs[(k + 1) % 2]);
            bufs[(k + 1) % 2] = NULL;
        }
        src = dst;
        sdt = ddt;
    }
    nn_scratch_free(c, bufs[0]);
    nn_scratch_free(c, bufs[1]);
    return rc;
}

int resize_general_backward(const struct op_call *c, const struct resize_params *p, const double *scale,
                            const double *roi, const struct tensor *dy, struct tensor *dx)
{
    int rank = dy->rank, axes[TENSOR_MAX_RANK];
    int n = resized_axes(scale, roi, dx->dims, dy->dims, rank, axes);
    int64_t total_x = tensor_numel(dx), total_y = tensor_numel(dy);
    if (total_x == 0)
        return 0;
    if (n == 0 || total_y == 0) {
        if (n == 0)
            memcpy(dx->data, dy->data, tensor_size_bytes(dx));
        else
            memset(dx->data, 0, tensor_size_bytes(dx));
        return 0;
    }
    /* Shapes before each forward pass: shape k has axes[0..k-1] resized. */
    int64_t shapes[TENSOR_MAX_RANK + 1][TENSOR_MAX_RANK];
    memcpy(shapes[0], dx->dims, sizeof shapes[0]);
    for (int k = 0; k < n; k++) {
        memcpy(shapes[k + 1], shapes[k], sizeof shapes[0]);
        shapes[k + 1][axes[k]] = dy->dims[axes[k]];
    }
    size_t bytes = sizeof(double) * (size_t)total_y;
    double *g = nn_scratch_alloc(c, bytes);
    if (!g)
        return op_error(c, "no scratch memory for a %zu-byte resize gradient", bytes);
    for (int64_t i = 0; i < total_y; i++)
        g[i] = load(dy->data, dy->dtype, i);
    int rc = 0;
    for (int k = n - 1; k >= 0 && !rc; k--) {
        int a = axes[k];
        struct axis_taps t;
        if (taps_make(c, p, scale[a], roi[a], roi[rank + a], dx->dims[a], dy->dims[a], &t)) {
            rc = -1;
            break;
        }
        const int64_t *before = shapes[k];
        size_t nb = sizeof(double) * (size_t)shape_prod(before, 0, rank);
        double *prev = nn_scratch_alloc(c, nb ? nb : sizeof(double));
        if (!prev) {
            taps_free(&t);
            rc = op_error(c, "no scratch memory for a %zu-byte resize gradient", nb);
            break;
        }
        pass_backward(&t, g, prev, shape_prod(before, 0, a), before[a], dy->dims[a], shape_prod(before, a + 1, rank));
        taps_free(&t);
        nn_scratch_free(c, g);
        g = prev;
    }
    if (!rc)
        for (int64_t i = 0; i < total_x; i++)
            store(dx->data, dx->dtype, i, g[i]);
    nn_scratch_free(c, g);
    return rc;
}
