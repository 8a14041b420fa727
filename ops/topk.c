/* ops/topk.c — the selection family: ArgMax and ArgMin (opsets 1, 11, 12,
 * 13) and TopK (1, 10, 11, 24).
 *
 * ArgMax/ArgMin: the int64 index of the largest (smallest) element along
 * `axis` (default 0), keepdims (default 1); the first such index, or the
 * last with select_last_index=1 (opset 12+). NaN counts as larger (ArgMax)
 * and smaller (ArgMin) than everything, as numpy's argmax/argmin take the
 * first NaN. Their output is an integer: there is no gradient to ask for.
 *
 * TopK: the k largest (largest=1, default) or smallest elements along
 * `axis` (default -1) and their int64 indices; k is an attribute in opset 1
 * and a host input (1-element int64) from 10; largest and sorted come with
 * opset 11. Equal elements come out lower index first (the spec's rule);
 * NaN sorts above every number. Each line is sorted by a stable merge sort
 * of its positions, so the order, sorted=0 included (it is sorted here too),
 * is one fixed order. Gradient of the values: dy scattered back to the
 * selected positions of X, zeros elsewhere — GatherElementsGrad with the
 * indices (a line's indices are distinct, so nothing accumulates). */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define SELECT_TYPES "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

static int select_dtype_ok(int dt)
{
    switch (dt) {
    case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_DOUBLE: case ONNX_DTYPE_INT8: case ONNX_DTYPE_INT16:
    case ONNX_DTYPE_INT32: case ONNX_DTYPE_INT64: case ONNX_DTYPE_UINT8: case ONNX_DTYPE_UINT16:
    case ONNX_DTYPE_UINT32: case ONNX_DTYPE_UINT64:
        return 1;
    default:
        return 0;
    }
}

/* ---- ArgMax and ArgMin --------------------------------------------------------- */

static int arg_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size, int min)
{
    struct arg_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = onnx_node_attr_int(node, "axis", 0);
    p->keepdims = onnx_node_attr_int(node, "keepdims", 1) != 0;
    int64_t last = onnx_node_attr_int(node, "select_last_index", 0);
    if (last && version < 12) {
        free(p);
        return shape_parse_error(err, err_size, node, "select_last_index needs opset 12 or later");
    }
    p->last = last != 0;
    p->min = min;
    *params = p;
    return 0;
}

static int arg_max_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    return arg_parse(node, version, params, err, err_size, 0);
}

static int arg_min_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    return arg_parse(node, version, params, err, err_size, 1);
}

int arg_plan(const struct op_call *c)
{
    const struct arg_params *p = c->params;
    const struct tensor *x = c->in[0];
    int a = op_axis(p->axis, x->rank ? x->rank : 1);
    if (a < 0)
        return op_error(c, "axis %lld is out of range for input of rank %d", (long long)p->axis,
                        x->rank);
    return a;
}

static int arg_infer(struct op_call *c)
{
    const struct arg_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (!select_dtype_ok(x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, SELECT_TYPES);
    if (x->rank < 1)
        return op_error(c, "input 0 must have rank >= 1, got a scalar");
    int axis = arg_plan(c);
    if (axis < 0)
        return -1;
    if (x->dims[axis] == 0)
        return op_error(c, "axis %d has extent 0: there is no element to select", axis);
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_INT64;
    y->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != axis)
            y->dims[y->rank++] = x->dims[i];
        else if (p->keepdims)
            y->dims[y->rank++] = 1;
    return 0;
}

/* better(v, b): v replaces the current best b. Without select_last_index a
 * tie keeps the first; with it the last. NaN beats numbers; a later NaN
 * replaces an earlier one only under select_last_index. */
#define ARG_DEF(unused, D)                                                               \
    static void arg_##D(const void *xv, int64_t *y, int64_t outer, int64_t n,            \
                        int64_t inner, int min, int last)                                \
    {                                                                                    \
        typedef EW_T_##D T;                                                              \
        const T *x = xv;                                                                 \
        for (int64_t o = 0; o < outer; o++)                                              \
            for (int64_t k = 0; k < inner; k++) {                                        \
                const T *l = x + o * n * inner + k;                                      \
                T b = l[0];                                                              \
                int64_t bi = 0;                                                          \
                for (int64_t j = 1; j < n; j++) {                                        \
                    T v = l[j * inner];                                                  \
                    int vn = v != v, bn = b != b, take;                                  \
                    if (vn || bn)                                                        \
                        take = vn && (!bn || last);                                      \
                    else if (v == b)                                                     \
                        take = last;                                                     \
                    else                                                                 \
                        take = min ? v < b : v > b;                                      \
                    if (take) {                                                          \
                        b = v;                                                           \
                        bi = j;                                                          \
                    }                                                                    \
                }                                                                        \
                y[o * inner + k] = bi;                                                   \
            }                                                                            \
    }
EW_NUMERIC_TYPES(ARG_DEF, _)

typedef void (*arg_fn)(const void *, int64_t *, int64_t, int64_t, int64_t, int, int);
static const arg_fn arg_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, arg) };

static int arg_cpu(struct op_call *c)
{
    const struct arg_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = arg_plan(c);
    if (axis < 0)
        return -1;
    arg_fn fn = EW_LOOKUP(arg_fns, x->dtype);
    if (!fn)
        return ew_dtype_error(c, "input 0", x->dtype, SELECT_TYPES);
    int64_t outer = shape_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    if (outer * inner == 0)
        return 0;
    size_t es = onnx_dtype_size(x->dtype);
    int par = tensor_numel(x) >= EW_PARALLEL_MIN && outer > 1;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t o = 0; o < outer; o++)
        fn((const char *)x->data + (size_t)(o * n * inner) * es,
           (int64_t *)c->out[0]->data + o * inner, 1, n, inner, p->min, p->last);
    return 0;
}

static struct op_cost select_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[0]);
    return cost;
}

const struct op_def op_arg_max = {
    .domain = "", .name = "ArgMax",
    .since = { 1, 11, 12, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = arg_max_parse,
    .infer = arg_infer,
    .cost = select_cost,
    .kernel = { [BACKEND_CPU] = arg_cpu },
};

const struct op_def op_arg_min = {
    .domain = "", .name = "ArgMin",
    .since = { 1, 11, 12, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = arg_min_parse,
    .infer = arg_infer,
    .cost = select_cost,
    .kernel = { [BACKEND_CPU] = arg_cpu },
};

/* ---- TopK ------------------------------------------------------------------------ */

static int topk_parse(const struct onnx_node *node, int version, void **params, char *err,
                      size_t err_size)
{
    struct topk_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = onnx_node_attr_int(node, "axis", -1);
    p->k = onnx_node_attr_int(node, "k", -1);
    p->largest = onnx_node_attr_int(node, "largest", 1) != 0;
    p->sorted = onnx_node_attr_int(node, "sorted", 1) != 0;
    if (version < 10 && p->k < 0) {
        free(p);
        return shape_parse_error(err, err_size, node, "attribute k (>= 0) is required before opset 10");
    }
    if (version < 11 && (!p->largest || !p->sorted)) {
        free(p);
        return shape_parse_error(err, err_size, node, "largest and sorted need opset 11 or later");
    }
    *params = p;
    return 0;
}

/* The axis and k of a call, checked against the input; -1 after a message. */
int topk_plan(const struct op_call *c, int *axis, int64_t *k)
{
    const struct topk_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (x->rank < 1)
        return op_error(c, "input 0 must have rank >= 1, got a scalar");
    *axis = op_axis(p->axis, x->rank);
    if (*axis < 0)
        return op_error(c, "axis %lld is out of range for input of rank %d", (long long)p->axis,
                        x->rank);
    if (c->version >= 10) {
        const struct tensor *kt = c->n_in > 1 ? c->in[1] : NULL;
        if (!kt)
            return op_error(c, "input 1 (K) is required from opset 10");
        if (kt->dtype != ONNX_DTYPE_INT64 || tensor_numel(kt) != 1 || kt->rank > 1)
            return op_error(c, "input 1 (K) must be one int64 value, got %s of %lld elements",
                            onnx_dtype_name(kt->dtype), (long long)tensor_numel(kt));
        if (!kt->data)
            return op_error(c, "input 1 (K) has no host data");
        *k = tensor_get_int(kt, 0);
    } else {
        *k = p->k;
    }
    if (*k < 0 || *k > x->dims[*axis])
        return op_error(c, "k = %lld is outside 0..%lld (the extent of axis %d)", (long long)*k,
                        (long long)x->dims[*axis], *axis);
    return 0;
}

static int topk_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int axis = 0;
    int64_t k = 0;
    if (!select_dtype_ok(x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, SELECT_TYPES);
    if (topk_plan(c, &axis, &k))
        return -1;
    struct tensor *v = c->out[0], *i = c->n_out > 1 ? c->out[1] : NULL;
    if (v) {
        *v = *x;
        v->data = NULL;
        v->dims[axis] = k;
    }
    if (i) {
        *i = *x;
        i->data = NULL;
        i->dtype = ONNX_DTYPE_INT64;
        i->dims[axis] = k;
    }
    return 0;
}

/* before(a, b): element a comes out before b. Positions are sorted stably,
 * so equal elements keep index order. NaN is above every number. */
#define TOPK_DEF(unused, D)                                                              \
    static int topk_before_##D(const void *line, int64_t inner, int largest, int64_t a,   \
                               int64_t b)                                                 \
    {                                                                                     \
        const EW_T_##D *l = line;                                                         \
        EW_T_##D va = l[a * inner], vb = l[b * inner];                                    \
        int an = va != va, bn = vb != vb;                                                 \
        if (an || bn)                                                                     \
            return largest ? an && !bn : bn && !an;                                       \
        return largest ? va > vb : va < vb;                                               \
    }
EW_NUMERIC_TYPES(TOPK_DEF, _)

typedef int (*topk_before_fn)(const void *, int64_t, int, int64_t, int64_t);
static const topk_before_fn topk_befores[EW_DTYPE_COUNT] = {
    EW_NUMERIC_TYPES(EW_ENTRY, topk_before)
};

/* Stable bottom-up merge sort of pos[0..n) by `before`, tmp as workspace. */
static void topk_sort(int64_t *pos, int64_t *tmp, int64_t n, topk_before_fn before,
                      const void *line, int64_t inner, int largest)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = before(line, inner, largest, pos[j], pos[i]) ? pos[j++] : pos[i++];
            while (i < mid)
                tmp[o++] = pos[i++];
            while (j < hi)
                tmp[o++] = pos[j++];
        }
        memcpy(pos, tmp, sizeof *pos * (size_t)n);
    }
}

static int topk_cpu(struct op_call *c)
{
    const struct topk_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *v = c->out[0], *ix = c->n_out > 1 ? c->out[1] : NULL;
    int axis = 0;
    int64_t k = 0;
    if (topk_plan(c, &axis, &k))
        return -1;
    topk_before_fn before = EW_LOOKUP(topk_befores, x->dtype);
    if (!before)
        return ew_dtype_error(c, "input 0", x->dtype, SELECT_TYPES);
    int64_t outer = shape_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank), lines = outer * inner;
    if (k == 0 || lines == 0)
        return 0;
    size_t es = onnx_dtype_size(x->dtype);
    int par = tensor_numel(x) >= EW_PARALLEL_MIN && lines > 1;
    int threads = par && c->env && c->env->threads > 0 ? c->env->threads : 1;
    size_t bytes = sizeof(int64_t) * 2 * (size_t)n * (size_t)threads;
    int64_t *work = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes) : NULL;
    if (!work)
        return op_error(c, "no scratch memory for %zu bytes of sort positions", bytes);
    int failed = 0;
#pragma omp parallel num_threads(threads) if (par)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
        if (t >= threads)
            failed = 1;
#endif
        int64_t *pos = work + (size_t)(t < threads ? t : 0) * 2 * (size_t)n, *tmp = pos + n;
#pragma omp for schedule(static)
        for (int64_t line = 0; line < lines; line++) {
            if (failed)
                continue;
            int64_t o = line / inner, in = line % inner;
            const char *l = (const char *)x->data + (size_t)(o * n * inner + in) * es;
            for (int64_t j = 0; j < n; j++)
                pos[j] = j;
            topk_sort(pos, tmp, n, before, l, inner, p->largest);
            for (int64_t j = 0; j < k; j++) {
                int64_t dst = o * k * inner + j * inner + in;
                if (v)
                    memcpy((char *)v->data + (size_t)dst * es, l + (size_t)(pos[j] * inner) * es, es);
                if (ix)
                    ((int64_t *)ix->data)[dst] = pos[j];
            }
        }
    }
    c->env->scratch_free(c->env->ctx, work);
    if (failed)
        return op_error(c, "internal error: more OpenMP threads than requested");
    return 0;
}

static struct op_cost topk_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *x = c->in[0];
    int64_t n = x->rank ? x->dims[x->rank - 1] : 1;
    double lg = 1;
    while (n > 1) {
        n /= 2;
        lg += 1;
    }
    cost.flops = (double)tensor_numel(x) * lg;
    return cost;
}

static int topk_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    const struct tensor *x = g->fwd->in[0];
    const struct topk_params *p = g->fwd->params;
    int axis = op_axis(p->axis, x->rank);
    if (axis < 0)
        return grad_error(g, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    if (g->out[1] < 0)
        return grad_error(g, "the gradient of TopK's values needs its indices output");
    int64_t dims[TENSOR_MAX_RANK];
    for (int a = 0; a < x->rank; a++)
        dims[a] = x->dims[a];
    struct onnx_attr attrs[2] = { shape_attr_int("axis", axis), shape_attr_ints("shape", x->rank, dims) };
    int in[2] = { g->dy[0], g->out[1] }, dx;
    if (g->emit(g, "GatherElementsGrad", attrs, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_topk = {
    .domain = "", .name = "TopK",
    .since = { 1, 10, 11, 24 },
    .min_in = 1, .max_in = 2, .min_out = 2, .max_out = 2,
    .parse = topk_parse,
    .infer = topk_infer,
    .cost = topk_cost,
    .kernel = { [BACKEND_CPU] = topk_cpu },
    .host_inputs = 1u << 1,
    .grad = topk_grad,
    .grad_saves_out = 1u << 1,
};
