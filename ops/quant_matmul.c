/* ops/quant_matmul.c — the integer products: MatMulInteger (10),
 * QLinearMatMul (10, 21), ConvInteger (10), QLinearConv (10).
 *
 * Operands are int8 or uint8. Each element has its zero point subtracted in
 * int32, products are summed in int32 (wrapping as the reference's numpy
 * int32 does; summed as uint32, which is the same modulo 2^32 and has no
 * signed overflow). MatMulInteger and ConvInteger output that
 * int32 sum. The QLinear ops scale it as the reference does: the multiplier
 * a_scale * b_scale / y_scale in float32, the product with the sum and the
 * added y_zero_point in float64, rounded half to even and saturated to
 * y_zero_point's type.
 *
 * Zero points and scales: MatMulInteger's a_zero_point is a scalar, per row
 * of A ([M], or A's batch dims with [M, 1]) and b_zero_point a scalar or per
 * column of B ([N], or B's batch dims with [1, N]); QLinearMatMul's scales
 * and zero points of a and b the same, y's scalars. In the convolutions x's
 * zero point (and scale) is a scalar, w's a scalar or one per output
 * channel, QLinearConv's optional bias int32 [M] is added to the sum.
 * Batch dims broadcast as numpy.matmul's; a 1-D operand gets a unit row or
 * column that the output drops. The convolutions take Conv's window
 * attributes (auto_pad, pads, strides, dilations, kernel_shape, group) over
 * 1 to 3 spatial dims; padding contributes 0 after the zero point.
 *
 * CPU only: on --device cuda the runtime reports that the op has no CUDA
 * kernel. Integer outputs: no gradient (runtime/params.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/nn-impl.h"
#include "ops/nn-params.h"
#include "ops/quant-impl.h"

#define QMM_MAX_RANK TENSOR_MAX_RANK

static int is_q8(int dt) { return dt == ONNX_DTYPE_INT8 || dt == ONNX_DTYPE_UINT8; }

static inline int32_t ld8(const void *p, int dt, int64_t i)
{
    return dt == ONNX_DTYPE_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

static inline float ld_real(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_FLOAT16: return ew_f16_to_f32(((const uint16_t *)t->data)[i]);
    case ONNX_DTYPE_BFLOAT16: return ew_bf16_to_f32(((const uint16_t *)t->data)[i]);
    default: return ((const float *)t->data)[i];
    }
}

/* rint(acc * mult + zp) saturated to [lo, hi], in float64 as numpy does. */
static inline int32_t requant(int32_t acc, float mult, int32_t zp, int32_t lo, int32_t hi)
{
    double v = nearbyint((double)acc * (double)mult + (double)zp);
    if (v != v)
        return zp;
    return v <= lo ? lo : v >= hi ? hi : (int32_t)v;
}

static inline void store8(void *p, int dt, int64_t i, int32_t v)
{
    if (dt == ONNX_DTYPE_INT8)
        ((int8_t *)p)[i] = (int8_t)v;
    else
        ((uint8_t *)p)[i] = (uint8_t)v;
}

/* ---- matrix products ------------------------------------------------------- */

/* A zero point or scale of one operand: element (batch b, row-or-column j)
 * is at b * batch_stride + j * stride. */
struct qparam {
    const struct tensor *t;        /* NULL: 0 (zero point) */
    int64_t stride, batch_stride;
};

struct qmm_plan {
    int64_t m, k, n;
    int batch_rank;
    int64_t batch[QMM_MAX_RANK];   /* the output's batch dims */
    int64_t n_batch;
    int a_batch_rank, b_batch_rank;
    int a_vec, b_vec;              /* 1-D operand */
};

static int qmm_plan_init(const struct op_call *c, const struct tensor *a, const struct tensor *b,
                         struct qmm_plan *p)
{
    char d1[128], d2[128];
    memset(p, 0, sizeof *p);
    if (a->rank < 1 || b->rank < 1)
        return op_error(c, "operands must have rank >= 1, got %s and %s", tensor_describe(a, d1, sizeof d1),
                        tensor_describe(b, d2, sizeof d2));
    p->a_vec = a->rank == 1, p->b_vec = b->rank == 1;
    p->m = p->a_vec ? 1 : a->dims[a->rank - 2];
    p->k = a->dims[a->rank - 1];
    int64_t kb = p->b_vec ? b->dims[0] : b->dims[b->rank - 2];
    p->n = p->b_vec ? 1 : b->dims[b->rank - 1];
    if (kb != p->k)
        return op_error(c, "inner dimensions differ: %s times %s", tensor_describe(a, d1, sizeof d1),
                        tensor_describe(b, d2, sizeof d2));
    int ra = p->a_vec ? 0 : a->rank - 2, rb = p->b_vec ? 0 : b->rank - 2;
    p->a_batch_rank = ra, p->b_batch_rank = rb;
    p->batch_rank = ra > rb ? ra : rb;
    p->n_batch = 1;
    for (int i = p->batch_rank - 1; i >= 0; i--) {
        int ia = i - (p->batch_rank - ra), ib = i - (p->batch_rank - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return op_error(c, "batch dimensions do not broadcast: %s times %s", tensor_describe(a, d1, sizeof d1),
                            tensor_describe(b, d2, sizeof d2));
        p->batch[i] = da > db ? da : db;
        if (da == 0 || db == 0)
            p->batch[i] = 0;
        p->n_batch *= p->batch[i];
    }
    if (p->batch_rank + 2 > TENSOR_MAX_RANK)
        return op_error(c, "output rank is above %d", TENSOR_MAX_RANK);
    return 0;
}

static void qmm_out_shape(const struct qmm_plan *p, struct tensor *y, int dtype)
{
    y->dtype = dtype;
    y->rank = 0;
    for (int i = 0; i < p->batch_rank; i++)
        y->dims[y->rank++] = p->batch[i];
    if (!p->a_vec)
        y->dims[y->rank++] = p->m;
    if (!p->b_vec)
        y->dims[y->rank++] = p->n;
}

/* Resolves a zero point or scale of A (rows: is_a) or B (columns) against
 * the operand's shape; -1 with a message. */
static int qparam_resolve(const struct op_call *c, const char *what, const struct tensor *t,
                          const struct tensor *op, const struct qmm_plan *p, int is_a, struct qparam *q)
{
    char d1[128], d2[128];
    q->t = t, q->stride = q->batch_stride = 0;
    if (!t || tensor_numel(t) == 1)
        return 0;
    int64_t len = is_a ? p->m : p->n;
    if (t->rank == 1 && t->dims[0] == len) {
        q->stride = 1;
        return 0;
    }
    int vec = is_a ? p->a_vec : p->b_vec;
    int ok = !vec && t->rank == op->rank;
    for (int i = 0; ok && i < op->rank - 2; i++)
        ok = t->dims[i] == op->dims[i];
    if (ok)
        ok = is_a ? t->dims[t->rank - 2] == len && t->dims[t->rank - 1] == 1
                  : t->dims[t->rank - 2] == 1 && t->dims[t->rank - 1] == len;
    if (!ok)
        return op_error(c, "%s %s must be a scalar, 1-D of %lld (one per %s) or %s's batch dims with [%s]; "
                        "the operand is %s", what, tensor_describe(t, d1, sizeof d1), (long long)len,
                        is_a ? "row" : "column", is_a ? "A" : "B", is_a ? "M, 1" : "1, N",
                        tensor_describe(op, d2, sizeof d2));
    q->stride = 1;
    q->batch_stride = len;
    return 0;
}

/* Index of the operand's own batch matrix (within its batch dims) for the
 * output batch b. */
static int64_t own_batch(const struct qmm_plan *p, int64_t b, int own_rank, const struct tensor *op)
{
    int64_t idx = 0, mul = 1;
    for (int i = p->batch_rank - 1, j = own_rank - 1; j >= 0; i--, j--) {
        int64_t coord = (b % p->batch[i]);
        b /= p->batch[i];
        if (op->dims[j] != 1)
            idx += coord * mul;
        mul *= op->dims[j];
    }
    return idx;
}

static inline int32_t zp_at(const struct qparam *q, int64_t batch, int64_t j)
{
    return q->t ? ld8(q->t->data, q->t->dtype, batch * q->batch_stride + j * q->stride) : 0;
}

static inline float scale_at(const struct qparam *q, int64_t batch, int64_t j)
{
    return ld_real(q->t, batch * q->batch_stride + j * q->stride);
}

/* acc[b, m, n] = sum_k (A - azp)(B - bzp) into int32, for all batches. */
static void qmm_run(const struct qmm_plan *p, const struct tensor *a, const struct tensor *b,
                    const struct qparam *az, const struct qparam *bz, int32_t *acc)
{
    int64_t m = p->m, k = p->k, n = p->n;
    int64_t rows = p->n_batch * m;
#pragma omp parallel for schedule(static) if (rows * k * n > 65536)
    for (int64_t r = 0; r < rows; r++) {
        int64_t bi = r / m, i = r % m;
        int64_t ab = own_batch(p, bi, p->a_batch_rank, a), bb = own_batch(p, bi, p->b_batch_rank, b);
        int64_t aoff = ab * m * k + i * k, boff = bb * k * n;
        int32_t za = zp_at(az, ab, i);
        /* unsigned sums wrap as int32 does, without signed overflow */
        uint32_t *row = (uint32_t *)acc + r * n;
        for (int64_t j = 0; j < n; j++)
            row[j] = 0;
        for (int64_t kk = 0; kk < k; kk++) {
            int32_t av = ld8(a->data, a->dtype, aoff + kk) - za;
            if (!av)
                continue;
            for (int64_t j = 0; j < n; j++)
                row[j] += (uint32_t)(av * (ld8(b->data, b->dtype, boff + kk * n + j) - zp_at(bz, bb, j)));
        }
    }
}

static int check_q8(const struct op_call *c, const char *what, const struct tensor *t, const struct tensor *like)
{
    if (!t)
        return 0;
    if (!is_q8(t->dtype))
        return ew_dtype_error(c, what, t->dtype, "int8, uint8");
    if (like && t->dtype != like->dtype)
        return op_error(c, "%s has type %s but its operand has %s; they must match", what,
                        onnx_dtype_name(t->dtype), onnx_dtype_name(like->dtype));
    return 0;
}

static int check_scale(const struct op_call *c, const char *what, const struct tensor *t)
{
    if (t->dtype != ONNX_DTYPE_FLOAT && t->dtype != ONNX_DTYPE_FLOAT16 && t->dtype != ONNX_DTYPE_BFLOAT16)
        return ew_dtype_error(c, what, t->dtype, c->version >= 21 ? "float, float16, bfloat16" : "float");
    return 0;
}

static int check_scalar(const struct op_call *c, const char *what, const struct tensor *t)
{
    char d[128];
    if (tensor_numel(t) != 1 || t->rank > 1)
        return op_error(c, "%s %s must be a scalar (per-tensor)", what, tensor_describe(t, d, sizeof d));
    return 0;
}

/* MatMulInteger(A, B, a_zero_point?, b_zero_point?) */
static int mmi_check(const struct op_call *c, struct qmm_plan *p, struct qparam *az, struct qparam *bz)
{
    const struct tensor *a = c->in[0], *b = c->in[1];
    const struct tensor *za = c->n_in > 2 ? c->in[2] : NULL, *zb = c->n_in > 3 ? c->in[3] : NULL;
    if (check_q8(c, "A", a, NULL) || check_q8(c, "B", b, NULL) || check_q8(c, "a_zero_point", za, a) ||
        check_q8(c, "b_zero_point", zb, b) || qmm_plan_init(c, a, b, p))
        return -1;
    return qparam_resolve(c, "a_zero_point", za, a, p, 1, az) || qparam_resolve(c, "b_zero_point", zb, b, p, 0, bz);
}

static int mmi_infer(struct op_call *c)
{
    struct qmm_plan p;
    struct qparam az, bz;
    if (mmi_check(c, &p, &az, &bz))
        return -1;
    qmm_out_shape(&p, c->out[0], ONNX_DTYPE_INT32);
    return 0;
}

static int mmi_cpu(struct op_call *c)
{
    struct qmm_plan p;
    struct qparam az, bz;
    if (mmi_check(c, &p, &az, &bz))
        return -1;
    qmm_run(&p, c->in[0], c->in[1], &az, &bz, c->out[0]->data);
    return 0;
}

static struct op_cost qmm_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *a = c->in[0], *y = c->out[0];
    if (y && a->rank >= 1)
        cost.flops = 2.0 * (double)tensor_numel(y) * (double)a->dims[a->rank - 1];
    return cost;
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) */
struct qlmm {
    struct qmm_plan p;
    struct qparam as, az, bs, bz;
};

static int qlmm_check(const struct op_call *c, struct qlmm *q)
{
    const struct tensor *a = c->in[0], *b = c->in[3], *ys = c->in[6], *yz = c->in[7];
    if (check_q8(c, "a", a, NULL) || check_q8(c, "b", b, NULL) || check_q8(c, "a_zero_point", c->in[2], a) ||
        check_q8(c, "b_zero_point", c->in[5], b) || check_q8(c, "y_zero_point", yz, NULL) ||
        check_scale(c, "a_scale", c->in[1]) || check_scale(c, "b_scale", c->in[4]) || check_scale(c, "y_scale", ys) ||
        check_scalar(c, "y_scale", ys) || check_scalar(c, "y_zero_point", yz) || qmm_plan_init(c, a, b, &q->p))
        return -1;
    return qparam_resolve(c, "a_scale", c->in[1], a, &q->p, 1, &q->as) ||
           qparam_resolve(c, "a_zero_point", c->in[2], a, &q->p, 1, &q->az) ||
           qparam_resolve(c, "b_scale", c->in[4], b, &q->p, 0, &q->bs) ||
           qparam_resolve(c, "b_zero_point", c->in[5], b, &q->p, 0, &q->bz);
}

static int qlmm_infer(struct op_call *c)
{
    struct qlmm q;
    if (qlmm_check(c, &q))
        return -1;
    qmm_out_shape(&q.p, c->out[0], c->in[7]->dtype);
    return 0;
}

static int qlmm_cpu(struct op_call *c)
{
    struct qlmm q;
    if (qlmm_check(c, &q))
        return -1;
    const struct tensor *a = c->in[0], *b = c->in[3], *ys = c->in[6], *yz = c->in[7];
    struct tensor *y = c->out[0];
    int64_t total = q.p.n_batch * q.p.m * q.p.n;
    int32_t *acc = nn_scratch_alloc(c, (size_t)(total ? total : 1) * sizeof *acc);
    if (!acc)
        return op_error(c, "no scratch memory for %lld int32 sums", (long long)total);
    qmm_run(&q.p, a, b, &q.az, &q.bz, acc);
    float ysv = ld_real(ys, 0);
    int32_t yzv = ld8(yz->data, yz->dtype, 0), lo, hi;
    quant_range(yz->dtype, &lo, &hi);
    int64_t m = q.p.m, n = q.p.n;
#pragma omp parallel for schedule(static) if (total > 65536)
    for (int64_t r = 0; r < total; r++) {
        int64_t bi = r / (m * n), i = r / n % m, j = r % n;
        int64_t ab = own_batch(&q.p, bi, q.p.a_batch_rank, a), bb = own_batch(&q.p, bi, q.p.b_batch_rank, b);
        float mult = scale_at(&q.as, ab, i) * scale_at(&q.bs, bb, j) / ysv;
        store8(y->data, yz->dtype, r, requant(acc[r], mult, yzv, lo, hi));
    }
    nn_scratch_free(c, acc);
    return 0;
}

/* ---- convolutions ------------------------------------------------------------ */

static int qconv_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    (void)version;
    struct conv_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    if (nn_window_attrs_parse(node, &p->w, err, err_size)) {
        free(p);
        return -1;
    }
    p->group = onnx_node_attr_int(node, "group", 1);
    if (p->group < 1) {
        snprintf(err, err_size, "group = %lld must be >= 1", (long long)p->group);
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

/* Inputs of both convolutions by role. */
struct qconv_io {
    const struct tensor *x, *w, *xz, *wz, *xs, *ws, *ys, *yz, *bias;
};

static struct qconv_io qconv_io(const struct op_call *c)
{
    struct qconv_io io = { 0 };
    const struct tensor *const *in = c->in;
    if (!strcmp(c->def->name, "ConvInteger")) {
        io.x = in[0], io.w = in[1];
        io.xz = c->n_in > 2 ? in[2] : NULL, io.wz = c->n_in > 3 ? in[3] : NULL;
    } else {
        io.x = in[0], io.xs = in[1], io.xz = in[2], io.w = in[3], io.ws = in[4], io.wz = in[5];
        io.ys = in[6], io.yz = in[7], io.bias = c->n_in > 8 ? in[8] : NULL;
    }
    return io;
}

static int per_channel_ok(const struct op_call *c, const char *what, const struct tensor *t, int64_t m)
{
    char d[128];
    if (!t || (tensor_numel(t) == 1 && t->rank <= 1) || (t->rank == 1 && t->dims[0] == m))
        return 0;
    return op_error(c, "%s %s must be a scalar or 1-D of the %lld output channels", what,
                    tensor_describe(t, d, sizeof d), (long long)m);
}

static int qconv_geom(const struct op_call *c, struct qconv_io *io, struct nn_geom *g)
{
    const struct conv_params *p = c->params;
    char d1[128], d2[128];
    *io = qconv_io(c);
    const struct tensor *x = io->x, *w = io->w;
    if (check_q8(c, "x", x, NULL) || check_q8(c, "w", w, NULL) || check_q8(c, "x_zero_point", io->xz, x) ||
        check_q8(c, "w_zero_point", io->wz, w))
        return -1;
    if (io->xz && check_scalar(c, "x_zero_point", io->xz))
        return -1;
    if (io->ys && (check_scale(c, "x_scale", io->xs) || check_scale(c, "w_scale", io->ws) ||
                   check_scale(c, "y_scale", io->ys) || check_q8(c, "y_zero_point", io->yz, NULL) ||
                   check_scalar(c, "x_scale", io->xs) || check_scalar(c, "y_scale", io->ys) ||
                   check_scalar(c, "y_zero_point", io->yz)))
        return -1;
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return op_error(c, "x %s and w %s must have the same rank, 3 to 5", tensor_describe(x, d1, sizeof d1),
                        tensor_describe(w, d2, sizeof d2));
    if (nn_geom_resolve(c, &p->w, x, w->dims + 2, 0, g))
        return -1;
    for (int i = 0; i < p->w.n_kernel; i++)
        if (p->w.kernel[i] != w->dims[2 + i])
            return op_error(c, "kernel_shape[%d] = %lld differs from w %s", i, (long long)p->w.kernel[i],
                            tensor_describe(w, d1, sizeof d1));
    g->n = x->dims[0], g->c = x->dims[1], g->m = w->dims[0], g->group = p->group;
    if (g->c % g->group || g->m % g->group || w->dims[1] != g->c / g->group)
        return op_error(c, "channels do not match group %lld: x %s, w %s", (long long)g->group,
                        tensor_describe(x, d1, sizeof d1), tensor_describe(w, d2, sizeof d2));
    if (per_channel_ok(c, "w_zero_point", io->wz, g->m) || (io->ws && per_channel_ok(c, "w_scale", io->ws, g->m)))
        return -1;
    if (io->bias && (io->bias->dtype != ONNX_DTYPE_INT32 || io->bias->rank != 1 || io->bias->dims[0] != g->m))
        return op_error(c, "B %s must be int32 [%lld]", tensor_describe(io->bias, d1, sizeof d1), (long long)g->m);
    return 0;
}

static int qconv_infer(struct op_call *c)
{
    struct qconv_io io;
    struct nn_geom g;
    if (qconv_geom(c, &io, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = io.yz ? io.yz->dtype : ONNX_DTYPE_INT32;
    y->rank = (int)g.nsp + 2;
    y->dims[0] = g.n;
    y->dims[1] = g.m;
    for (int i = 0; i < g.nsp; i++)
        y->dims[2 + i] = g.out[3 - g.nsp + i];
    return 0;
}

/* acc[n, m, out...] = bias[m] + sum (x - xz)(w - wz[m]) over the window. */
static void qconv_run(const struct qconv_io *io, const struct nn_geom *g, int32_t *acc)
{
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t osz = nn_geom_out_size(g), isz = nn_geom_in_size(g), ksz = nn_geom_k_size(g);
    int32_t xz = io->xz ? ld8(io->xz->data, io->xz->dtype, 0) : 0;
    int wz_per = io->wz && tensor_numel(io->wz) > 1;
#pragma omp parallel for schedule(static) if (g->n * g->m * osz * cg * ksz > 65536)
    for (int64_t nm = 0; nm < g->n * g->m; nm++) {
        int64_t n = nm / g->m, m = nm % g->m, grp = m / mg;
        int32_t wz = io->wz ? ld8(io->wz->data, io->wz->dtype, wz_per ? m : 0) : 0;
        int64_t bias = io->bias ? ((const int32_t *)io->bias->data)[m] : 0;
        for (int64_t o = 0; o < osz; o++) {
            int64_t od = o / (g->out[1] * g->out[2]), oh = o / g->out[2] % g->out[1], ow = o % g->out[2];
            int64_t s = bias;
            for (int64_t ci = 0; ci < cg; ci++) {
                int64_t xbase = (n * g->c + grp * cg + ci) * isz, wbase = (m * cg + ci) * ksz;
                for (int64_t kd = 0; kd < g->k[0]; kd++) {
                    int64_t id = od * g->stride[0] - g->pad_lo[0] + kd * g->dil[0];
                    if (id < 0 || id >= g->in[0])
                        continue;
                    for (int64_t kh = 0; kh < g->k[1]; kh++) {
                        int64_t ih = oh * g->stride[1] - g->pad_lo[1] + kh * g->dil[1];
                        if (ih < 0 || ih >= g->in[1])
                            continue;
                        for (int64_t kw = 0; kw < g->k[2]; kw++) {
                            int64_t iw = ow * g->stride[2] - g->pad_lo[2] + kw * g->dil[2];
                            if (iw < 0 || iw >= g->in[2])
                                continue;
                            int32_t xv = ld8(io->x->data, io->x->dtype, xbase + (id * g->in[1] + ih) * g->in[2] + iw);
                            int32_t wv = ld8(io->w->data, io->w->dtype, wbase + (kd * g->k[1] + kh) * g->k[2] + kw);
                            s += (int64_t)(xv - xz) * (wv - wz);
                        }
                    }
                }
            }
            acc[nm * osz + o] = (int32_t)(uint32_t)(uint64_t)s;
        }
    }
}

static int conv_integer_cpu(struct op_call *c)
{
    struct qconv_io io;
    struct nn_geom g;
    if (qconv_geom(c, &io, &g))
        return -1;
    qconv_run(&io, &g, c->out[0]->data);
    return 0;
}

static int qlinear_conv_cpu(struct op_call *c)
{
    struct qconv_io io;
    struct nn_geom g;
    if (qconv_geom(c, &io, &g))
        return -1;
    struct tensor *y = c->out[0];
    int64_t total = tensor_numel(y), osz = nn_geom_out_size(&g);
    int32_t *acc = nn_scratch_alloc(c, (size_t)(total ? total : 1) * sizeof *acc);
    if (!acc)
        return op_error(c, "no scratch memory for %lld int32 sums", (long long)total);
    qconv_run(&io, &g, acc);
    float xs = ld_real(io.xs, 0), ys = ld_real(io.ys, 0);
    int ws_per = tensor_numel(io.ws) > 1;
    int32_t yz = ld8(io.yz->data, io.yz->dtype, 0), lo, hi;
    quant_range(io.yz->dtype, &lo, &hi);
#pragma omp parallel for schedule(static) if (total > 65536)
    for (int64_t r = 0; r < total; r++) {
        int64_t m = r / osz % g.m;
        float mult = xs * ld_real(io.ws, ws_per ? m : 0) / ys;
        store8(y->data, io.yz->dtype, r, requant(acc[r], mult, yz, lo, hi));
    }
    nn_scratch_free(c, acc);
    return 0;
}

static struct op_cost qconv_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *w = !strcmp(c->def->name, "ConvInteger") ? c->in[1] : c->in[3], *y = c->out[0];
    if (y && w->rank >= 2)
        cost.flops = 2.0 * (double)tensor_numel(y) * nn_weight_taps(w);
    return cost;
}

const struct op_def op_matmul_integer = {
    .domain = "", .name = "MatMulInteger",
    .since = { 10 },
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .infer = mmi_infer,
    .cost = qmm_cost,
    .kernel = { [BACKEND_CPU] = mmi_cpu },
};

const struct op_def op_qlinear_matmul = {
    .domain = "", .name = "QLinearMatMul",
    .since = { 10, 21 },
    .min_in = 8, .max_in = 8, .min_out = 1, .max_out = 1,
    .infer = qlmm_infer,
    .cost = qmm_cost,
    .kernel = { [BACKEND_CPU] = qlmm_cpu },
};

const struct op_def op_conv_integer = {
    .domain = "", .name = "ConvInteger",
    .since = { 10 },
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .parse = qconv_parse,
    .infer = qconv_infer,
    .cost = qconv_cost,
    .kernel = { [BACKEND_CPU] = conv_integer_cpu },
};

const struct op_def op_qlinear_conv = {
    .domain = "", .name = "QLinearConv",
    .since = { 10 },
    .min_in = 8, .max_in = 9, .min_out = 1, .max_out = 1,
    .parse = qconv_parse,
    .infer = qconv_infer,
    .cost = qconv_cost,
    .kernel = { [BACKEND_CPU] = qlinear_conv_cpu },
};
