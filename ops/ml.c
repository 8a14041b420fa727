/* ops/ml.c — the numeric ai.onnx.ml operators that plain tensors can carry
 * (the rest of that domain takes maps, sequences of maps or strings, which
 * dtrexec does not have):
 *
 *  - Binarizer (ai.onnx.ml 1): Y = X > threshold ? 1 : 0 in X's type
 *    (float, double, int32, int64); NaN is not greater, so it gives 0, as
 *    the reference's numpy comparison does.
 *  - ArrayFeatureExtractor (ai.onnx.ml 1): the elements of X's last axis
 *    at the int64 indices Y, in Y's order (Y of any shape, flattened):
 *    shape X.shape[:-1] + [count], a 1-D X giving [1, count], as
 *    onnxruntime and onnx.reference do. An index outside [0, last dim) is
 *    an error; negative indices are refused, as onnxruntime refuses them.
 *  - TreeEnsemble (ai.onnx.ml 5): X [N, F] (float, double, float16) through
 *    every tree (modes LEQ, LT, GTE, GT, EQ, NEQ, MEMBER with NaN-delimited
 *    membership_values; NaN follows nodes_missing_value_tracks_true), the
 *    leaves' weights aggregated per target (AVERAGE, SUM, MIN, MAX) in X's
 *    type step by step as onnx.reference does, then post_transform (NONE,
 *    SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT as onnxruntime computes them;
 *    onnx.reference leaves it out). Y [N, n_targets]. A one-leaf tree is a
 *    root whose two branches are the same leaf (that leaf is used).
 *  - LabelEncoder (ai.onnx.ml 2, 4): each element of X looked up among the
 *    keys (keys_int64s / keys_floats, or version 4's keys_tensor of int16,
 *    int32, int64, float, double), its paired value or the default out
 *    (default_int64 -1, default_float -0.0, version 4's default_tensor); a
 *    repeated key: the last wins; a NaN key matches any NaN. String keys or
 *    values are refused (string tensors are out of scope).
 *
 * None is differentiable (a step function; integer selections; piecewise
 * constant trees; a lookup). On a device all run on host copies
 * (op_host_bridge). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

#define ML_LIST "float, double, int32, int64"

struct binarizer_params {
    float threshold;
};

static int ml_dtype_ok(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE || dtype == ONNX_DTYPE_INT32 ||
           dtype == ONNX_DTYPE_INT64;
}

/* ---- Binarizer ----------------------------------------------------------- */

static int binarizer_parse(const struct onnx_node *node, int version, void **params, char *err,
                           size_t err_size)
{
    (void)version;
    struct binarizer_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->threshold = onnx_node_attr_float(node, "threshold", 0.0f);
    if (!isfinite(p->threshold)) {
        free(*params);
        *params = NULL;
        return ew_parse_error(err, err_size, "threshold must be finite, got %g", (double)p->threshold);
    }
    return 0;
}

static int binarizer_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (!ml_dtype_ok(x->dtype))
        return ew_dtype_error(c, "X", x->dtype, ML_LIST);
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    return 0;
}

static int binarizer_cpu(struct op_call *c)
{
    const struct binarizer_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t n = tensor_numel(x);
    switch (x->dtype) {
    case ONNX_DTYPE_FLOAT: {
        const float *a = x->data;
        float *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] > p->threshold ? 1.0f : 0.0f;
        break;
    }
    case ONNX_DTYPE_DOUBLE: {
        const double *a = x->data;
        double *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] > (double)p->threshold ? 1.0 : 0.0;
        break;
    }
    case ONNX_DTYPE_INT32: {
        const int32_t *a = x->data;
        int32_t *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = (double)a[i] > (double)p->threshold;
        break;
    }
    default: {
        const int64_t *a = x->data;
        int64_t *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = (long double)a[i] > (long double)p->threshold;
        break;
    }
    }
    return 0;
}

const struct op_def op_binarizer = {
    .domain = "ai.onnx.ml", .name = "Binarizer", .since = { 1 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = binarizer_parse, .infer = binarizer_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = binarizer_cpu, [BACKEND_CUDA] = op_host_bridge },
};

/* ---- ArrayFeatureExtractor --------------------------------------------------- */

static int afe_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    char d[128];
    if (!ml_dtype_ok(x->dtype))
        return ew_dtype_error(c, "X", x->dtype, ML_LIST);
    if (idx->dtype != ONNX_DTYPE_INT64)
        return op_error(c, "Y (the indices) must be int64, got %s", onnx_dtype_name(idx->dtype));
    if (x->rank < 1)
        return op_error(c, "X %s must have rank >= 1", tensor_describe(x, d, sizeof d));
    int64_t count = tensor_numel(idx), last = x->dims[x->rank - 1];
    if (count < 1)
        return op_error(c, "Y (the indices) is empty");
    if (idx->data) {
        const int64_t *ix = idx->data;
        for (int64_t i = 0; i < count; i++)
            if (ix[i] < 0 || ix[i] >= last)
                return op_error(c, "index %lld (Y[%lld]) is outside [0, %lld), X's last dimension",
                                (long long)ix[i], (long long)i, (long long)last);
    }
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    if (x->rank == 1) {
        y->rank = 2;
        y->dims[0] = 1;
        y->dims[1] = count;
    } else {
        y->rank = x->rank;
        memcpy(y->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
        y->dims[x->rank - 1] = count;
    }
    return 0;
}

static int afe_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    const int64_t *ix = idx->data;
    int64_t count = tensor_numel(idx), last = x->dims[x->rank - 1];
    int64_t rows = last ? tensor_numel(x) / last : 0;
    size_t es = onnx_dtype_size(x->dtype);
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t i = 0; i < count; i++)
        if (ix[i] < 0 || ix[i] >= last)
            return op_error(c, "index %lld (Y[%lld]) is outside [0, %lld), X's last dimension",
                            (long long)ix[i], (long long)i, (long long)last);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < count; i++)
            memcpy(dst + (size_t)(r * count + i) * es, src + (size_t)(r * last + ix[i]) * es, es);
    return 0;
}

const struct op_def op_array_feature_extractor = {
    .domain = "ai.onnx.ml", .name = "ArrayFeatureExtractor", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = afe_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = afe_cpu, [BACKEND_CUDA] = op_host_bridge },
    .host_inputs = 1u << 1,
};

/* ---- TreeEnsemble ------------------------------------------------------------ */

enum { TE_LEQ, TE_LT, TE_GTE, TE_GT, TE_EQ, TE_NEQ, TE_MEMBER };
enum { TE_AVERAGE, TE_SUM, TE_MIN, TE_MAX };
enum { TE_NONE, TE_SOFTMAX, TE_LOGISTIC, TE_SOFTMAX_ZERO, TE_PROBIT };

struct te_params {
    int64_t n_nodes, n_leaves, n_trees, n_targets, n_members;
    int agg, post;
    int64_t *feature, *truenode, *falsenode, *member_start, *member_count, *roots, *target;
    uint8_t *mode, *trueleaf, *falseleaf, *missing_true;
    double *split, *weight, *members;
};

static void te_params_free(void *params)
{
    struct te_params *p = params;
    if (!p)
        return;
    free(p->feature);
    free(p->truenode);
    free(p->falsenode);
    free(p->member_start);
    free(p->member_count);
    free(p->roots);
    free(p->target);
    free(p->mode);
    free(p->trueleaf);
    free(p->falseleaf);
    free(p->missing_true);
    free(p->split);
    free(p->weight);
    free(p->members);
    free(p);
}

/* An INTS attribute into a fresh array; *n its length (0 when absent). */
static int64_t *te_ints(const struct onnx_node *node, const char *name, int64_t *n)
{
    const struct onnx_attr *a = onnx_node_attr(node, name);
    *n = (a && a->type == ONNX_ATTR_INTS) ? a->n : 0;
    int64_t *v = calloc((size_t)(*n ? *n : 1), sizeof *v);
    if (v && *n)
        memcpy(v, a->ints, sizeof *v * (size_t)*n);
    return v;
}

/* A float/double/float16 TENSOR attribute into doubles; -1 with err. */
static int te_reals(const struct onnx_node *node, const char *name, int required, double **out,
                    int64_t *n, char *err, size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, name);
    *n = 0;
    *out = NULL;
    if (!a) {
        if (required)
            return ew_parse_error(err, err_size, "attribute '%s' is required", name);
        return 0;
    }
    if (a->type != ONNX_ATTR_TENSOR || !a->t)
        return ew_parse_error(err, err_size, "attribute '%s' must be a tensor", name);
    const struct onnx_tensor *t = a->t;
    int dt = t->dtype;
    if (dt != ONNX_DTYPE_FLOAT && dt != ONNX_DTYPE_DOUBLE && dt != ONNX_DTYPE_FLOAT16)
        return ew_parse_error(err, err_size, "attribute '%s' must be a float, double or float16 tensor, got %s",
                              name, onnx_dtype_name(dt));
    *n = onnx_tensor_numel(t);
    *out = calloc((size_t)(*n ? *n : 1), sizeof **out);
    if (!*out)
        return ew_parse_error(err, err_size, "out of memory");
    for (int64_t i = 0; i < *n; i++)
        (*out)[i] = dt == ONNX_DTYPE_FLOAT    ? (double)((const float *)t->data)[i]
                    : dt == ONNX_DTYPE_DOUBLE ? ((const double *)t->data)[i]
                                              : (double)ew_f16_to_f32(((const uint16_t *)t->data)[i]);
    return 0;
}

static uint8_t *te_flags(const int64_t *v, int64_t n)
{
    uint8_t *f = calloc((size_t)(n ? n : 1), 1);
    if (f)
        for (int64_t i = 0; i < n; i++)
            f[i] = v[i] != 0;
    return f;
}

static int te_check(struct te_params *p, const struct onnx_node *node, char *err, size_t err_size)
{
    int64_t n, nn;
    int64_t *tl = NULL, *fl = NULL, *mv = NULL;
    int rc = -1;
    const struct onnx_attr *a;

    p->feature = te_ints(node, "nodes_featureids", &nn);
    p->n_nodes = nn;
    if (!p->feature)
        return ew_parse_error(err, err_size, "out of memory");
    if (!onnx_node_attr(node, "nodes_featureids") || nn < 1)
        return ew_parse_error(err, err_size, "attribute 'nodes_featureids' is required and must not be empty");
    static const char *const node_ints[] = { "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs",
                                             "nodes_falseleafs" };
    int64_t **dst[] = { &p->truenode, &p->falsenode, &tl, &fl };
    for (int i = 0; i < 4; i++) {
        if (!onnx_node_attr(node, node_ints[i])) {
            ew_parse_error(err, err_size, "attribute '%s' is required", node_ints[i]);
            goto out;
        }
        *dst[i] = te_ints(node, node_ints[i], &n);
        if (!*dst[i]) {
            ew_parse_error(err, err_size, "out of memory");
            goto out;
        }
        if (n != nn) {
            ew_parse_error(err, err_size, "attribute '%s' has %lld entries, nodes_featureids %lld", node_ints[i],
                           (long long)n, (long long)nn);
            goto out;
        }
    }
    mv = te_ints(node, "nodes_missing_value_tracks_true", &n);
    if (!mv) {
        ew_parse_error(err, err_size, "out of memory");
        goto out;
    }
    if (onnx_node_attr(node, "nodes_missing_value_tracks_true") && n != nn) {
        ew_parse_error(err, err_size, "attribute 'nodes_missing_value_tracks_true' has %lld entries, %lld nodes",
                       (long long)n, (long long)nn);
        goto out;
    }
    p->trueleaf = te_flags(tl, nn);
    p->falseleaf = te_flags(fl, nn);
    p->missing_true = calloc((size_t)nn, 1);
    p->mode = calloc((size_t)nn, 1);
    p->member_start = calloc((size_t)nn, sizeof(int64_t));
    p->member_count = calloc((size_t)nn, sizeof(int64_t));
    if (!p->trueleaf || !p->falseleaf || !p->missing_true || !p->mode || !p->member_start || !p->member_count) {
        ew_parse_error(err, err_size, "out of memory");
        goto out;
    }
    if (n == nn)
        for (int64_t i = 0; i < nn; i++)
            p->missing_true[i] = mv[i] != 0;

    a = onnx_node_attr(node, "nodes_modes");
    if (!a || a->type != ONNX_ATTR_TENSOR || !a->t) {
        ew_parse_error(err, err_size, "attribute 'nodes_modes' (a uint8 tensor) is required");
        goto out;
    }
    if (a->t->dtype != ONNX_DTYPE_UINT8) {
        ew_parse_error(err, err_size, "attribute 'nodes_modes' must be a uint8 tensor, got %s",
                       onnx_dtype_name(a->t->dtype));
        goto out;
    }
    if (onnx_tensor_numel(a->t) != nn) {
        ew_parse_error(err, err_size, "attribute 'nodes_modes' has %lld entries, %lld nodes",
                       (long long)onnx_tensor_numel(a->t), (long long)nn);
        goto out;
    }
    int64_t n_member_nodes = 0;
    for (int64_t i = 0; i < nn; i++) {
        p->mode[i] = ((const uint8_t *)a->t->data)[i];
        if (p->mode[i] > TE_MEMBER) {
            ew_parse_error(err, err_size, "nodes_modes[%lld] = %d is not a mode (0 BRANCH_LEQ .. 6 BRANCH_MEMBER)",
                           (long long)i, p->mode[i]);
            goto out;
        }
        n_member_nodes += p->mode[i] == TE_MEMBER;
    }
    if (te_reals(node, "nodes_splits", 1, &p->split, &n, err, err_size))
        goto out;
    if (n != nn) {
        ew_parse_error(err, err_size, "attribute 'nodes_splits' has %lld entries, %lld nodes", (long long)n,
                       (long long)nn);
        goto out;
    }
    if (te_reals(node, "membership_values", 0, &p->members, &p->n_members, err, err_size))
        goto out;
    /* The sets, NaN-delimited, in the order of the BRANCH_MEMBER nodes. */
    int64_t pos = 0, sets = 0;
    for (int64_t i = 0; i < nn; i++) {
        if (p->mode[i] != TE_MEMBER)
            continue;
        p->member_start[i] = pos;
        while (pos < p->n_members && !isnan(p->members[pos]))
            pos++;
        p->member_count[i] = pos - p->member_start[i];
        if (pos < p->n_members) {
            pos++;
            sets++;
        } else if (p->member_count[i]) {
            sets++; /* a last set without its closing NaN */
        }
    }
    int64_t nan_count = 0;
    for (int64_t i = 0; i < p->n_members; i++)
        nan_count += isnan(p->members[i]) != 0;
    if (n_member_nodes && !p->members) {
        ew_parse_error(err, err_size, "%lld BRANCH_MEMBER nodes but no attribute 'membership_values'",
                       (long long)n_member_nodes);
        goto out;
    }
    if (p->members && (nan_count != n_member_nodes || sets != n_member_nodes)) {
        ew_parse_error(err, err_size,
                       "membership_values holds %lld NaN-delimited sets, %lld BRANCH_MEMBER nodes need one each",
                       (long long)nan_count, (long long)n_member_nodes);
        goto out;
    }

    if (te_reals(node, "leaf_weights", 1, &p->weight, &p->n_leaves, err, err_size))
        goto out;
    if (!onnx_node_attr(node, "leaf_targetids")) {
        ew_parse_error(err, err_size, "attribute 'leaf_targetids' is required");
        goto out;
    }
    p->target = te_ints(node, "leaf_targetids", &n);
    if (!p->target) {
        ew_parse_error(err, err_size, "out of memory");
        goto out;
    }
    if (n != p->n_leaves || n < 1) {
        ew_parse_error(err, err_size, "attribute 'leaf_targetids' has %lld entries, leaf_weights %lld (both non-empty)",
                       (long long)n, (long long)p->n_leaves);
        goto out;
    }
    p->n_targets = onnx_node_attr_int(node, "n_targets", -1);
    if (p->n_targets < 1 || p->n_targets > ((int64_t)1 << 30)) {
        ew_parse_error(err, err_size, "attribute 'n_targets' must be given and in [1, 2^30], got %lld",
                       (long long)p->n_targets);
        goto out;
    }
    for (int64_t i = 0; i < p->n_leaves; i++)
        if (p->target[i] < 0 || p->target[i] >= p->n_targets) {
            ew_parse_error(err, err_size, "leaf_targetids[%lld] = %lld is outside [0, n_targets = %lld)",
                           (long long)i, (long long)p->target[i], (long long)p->n_targets);
            goto out;
        }
    for (int64_t i = 0; i < nn; i++) {
        if (p->feature[i] < 0) {
            ew_parse_error(err, err_size, "nodes_featureids[%lld] = %lld is negative", (long long)i,
                           (long long)p->feature[i]);
            goto out;
        }
        int64_t t = p->truenode[i], f = p->falsenode[i];
        int64_t tmax = p->trueleaf[i] ? p->n_leaves : nn, fmax = p->falseleaf[i] ? p->n_leaves : nn;
        if (t < 0 || t >= tmax || f < 0 || f >= fmax) {
            ew_parse_error(err, err_size,
                           "node %lld's branches (true %s %lld, false %s %lld) are outside the %lld nodes / "
                           "%lld leaves",
                           (long long)i, p->trueleaf[i] ? "leaf" : "node", (long long)t,
                           p->falseleaf[i] ? "leaf" : "node", (long long)f, (long long)nn, (long long)p->n_leaves);
            goto out;
        }
    }
    if (!onnx_node_attr(node, "tree_roots")) {
        ew_parse_error(err, err_size, "attribute 'tree_roots' is required");
        goto out;
    }
    p->roots = te_ints(node, "tree_roots", &p->n_trees);
    if (!p->roots) {
        ew_parse_error(err, err_size, "out of memory");
        goto out;
    }
    if (p->n_trees < 1) {
        ew_parse_error(err, err_size, "attribute 'tree_roots' is empty");
        goto out;
    }
    for (int64_t i = 0; i < p->n_trees; i++)
        if (p->roots[i] < 0 || p->roots[i] >= nn) {
            ew_parse_error(err, err_size, "tree_roots[%lld] = %lld is outside [0, %lld nodes)", (long long)i,
                           (long long)p->roots[i], (long long)nn);
            goto out;
        }
    int64_t agg = onnx_node_attr_int(node, "aggregate_function", TE_SUM);
    if (agg < TE_AVERAGE || agg > TE_MAX) {
        ew_parse_error(err, err_size, "aggregate_function %lld is not one of 0 AVERAGE, 1 SUM, 2 MIN, 3 MAX",
                       (long long)agg);
        goto out;
    }
    p->agg = (int)agg;
    int64_t post = onnx_node_attr_int(node, "post_transform", TE_NONE);
    if (post < TE_NONE || post > TE_PROBIT) {
        ew_parse_error(err, err_size,
                       "post_transform %lld is not one of 0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT",
                       (long long)post);
        goto out;
    }
    p->post = (int)post;
    rc = 0;
out:
    free(tl);
    free(fl);
    free(mv);
    return rc;
}

static int te_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    (void)version;
    struct te_params *p = calloc(1, sizeof *p);
    if (!p)
        return ew_parse_error(err, err_size, "out of memory");
    if (te_check(p, node, err, err_size)) {
        te_params_free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int te_infer(struct op_call *c)
{
    const struct te_params *p = c->params;
    const struct tensor *x = c->in[0];
    char d[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE && x->dtype != ONNX_DTYPE_FLOAT16)
        return ew_dtype_error(c, "X", x->dtype, "float, double, float16");
    if (x->rank != 2)
        return op_error(c, "X %s must be [N, F] (rank 2)", tensor_describe(x, d, sizeof d));
    for (int64_t i = 0; i < p->n_nodes; i++)
        if (p->feature[i] >= x->dims[1])
            return op_error(c, "nodes_featureids[%lld] = %lld is outside X's %lld features", (long long)i,
                            (long long)p->feature[i], (long long)x->dims[1]);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = 2;
    y->dims[0] = x->dims[0];
    y->dims[1] = p->n_targets;
    return 0;
}

static struct op_cost te_cost(const struct op_call *c)
{
    const struct te_params *p = c->params;
    /* A path per tree and sample, at most every node; one compare each. */
    double flops = (double)c->in[0]->dims[0] * (double)p->n_trees * (double)(p->n_nodes / p->n_trees + 1);
    struct op_cost k = cost_memory(c);
    k.flops += flops;
    return k;
}

/* The value rounded to X's type: the reference accumulates in it. */
static double te_round(int dtype, double v)
{
    if (dtype == ONNX_DTYPE_FLOAT)
        return (double)(float)v;
    if (dtype == ONNX_DTYPE_FLOAT16)
        return (double)ew_f16_to_f32(ew_f64_to_f16(v));
    return v;
}

static double te_load(const struct tensor *x, int64_t i)
{
    if (x->dtype == ONNX_DTYPE_FLOAT)
        return ((const float *)x->data)[i];
    if (x->dtype == ONNX_DTYPE_DOUBLE)
        return ((const double *)x->data)[i];
    return ew_f16_to_f32(((const uint16_t *)x->data)[i]);
}

static int te_goes_true(const struct te_params *p, int64_t n, double v)
{
    if (isnan(v) && p->missing_true[n])
        return 1;
    double s = p->split[n];
    switch (p->mode[n]) {
    case TE_LEQ: return v <= s;
    case TE_LT: return v < s;
    case TE_GTE: return v >= s;
    case TE_GT: return v > s;
    case TE_EQ: return v == s;
    case TE_NEQ: return v != s;
    default:
        for (int64_t k = 0; k < p->member_count[n]; k++)
            if (p->members[p->member_start[n] + k] == v)
                return 1;
        return 0;
    }
}

/* Logistic, softmax, softmax_zero and probit as onnx.reference's
 * aionnxml/_common_classifier.py (and onnxruntime) compute them. */
static double te_erf_inv(double x)
{
    double sgn = x < 0 ? -1.0 : 1.0;
    x = (1.0 - x) * (1.0 + x);
    if (x == 0)
        return 0;
    double lg = log(x), v = 2.0 / (M_PI * 0.147) + 0.5 * lg, v2 = 1.0 / 0.147 * lg;
    return sgn * sqrt(-v + sqrt(v * v - v2));
}

static void te_post(int post, double *r, int64_t n)
{
    if (post == TE_LOGISTIC || post == TE_PROBIT) {
        for (int64_t i = 0; i < n; i++) {
            if (post == TE_PROBIT) {
                r[i] = 1.41421356 * te_erf_inv(r[i] * 2 - 1);
            } else {
                double v = 1.0 / (1.0 + exp(-fabs(r[i])));
                r[i] = r[i] < 0 ? 1.0 - v : v;
            }
        }
        return;
    }
    if (post != TE_SOFTMAX && post != TE_SOFTMAX_ZERO)
        return;
    double mx = r[0], s = 0;
    for (int64_t i = 1; i < n; i++)
        mx = r[i] > mx ? r[i] : mx;
    for (int64_t i = 0; i < n; i++) {
        if (post == TE_SOFTMAX_ZERO && !(r[i] > 1e-7 || r[i] < -1e-7))
            r[i] *= exp(-mx);
        else
            r[i] = exp(r[i] - mx);
        s += r[i];
    }
    for (int64_t i = 0; i < n; i++)
        r[i] = post == TE_SOFTMAX_ZERO && s == 0 ? 0.5 : r[i] / s;
}

static int te_cpu(struct op_call *c)
{
    const struct te_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t rows = x->dims[0], feats = x->dims[1], nt = p->n_targets;
    int dt = x->dtype;
    double init = 0;
    if (p->agg == TE_MIN || p->agg == TE_MAX) {
        init = dt == ONNX_DTYPE_FLOAT ? (double)FLT_MAX : dt == ONNX_DTYPE_DOUBLE ? DBL_MAX : 65504.0;
        init = p->agg == TE_MIN ? init : -init;
    }
    double *acc = malloc(sizeof *acc * (size_t)nt);
    if (!acc)
        return op_error(c, "out of memory (%lld targets)", (long long)nt);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t t = 0; t < nt; t++)
            acc[t] = init;
        for (int64_t k = 0; k < p->n_trees; k++) {
            int64_t n = p->roots[k], leaf;
            if (p->trueleaf[n] && p->falseleaf[n] && p->truenode[n] == p->falsenode[n]) {
                leaf = p->truenode[n]; /* a tree that is one leaf (both branches to it) */
            } else {
                for (int64_t steps = 0;; steps++) {
                    if (steps > p->n_nodes) {
                        free(acc);
                        return op_error(c, "tree %lld (root %lld) has a cycle", (long long)k, (long long)p->roots[k]);
                    }
                    int go = te_goes_true(p, n, te_load(x, r * feats + p->feature[n]));
                    int64_t next = go ? p->truenode[n] : p->falsenode[n];
                    if (go ? p->trueleaf[n] : p->falseleaf[n]) {
                        leaf = next;
                        break;
                    }
                    n = next;
                }
            }
            double w = p->weight[leaf], *a = &acc[p->target[leaf]];
            if (p->agg == TE_SUM)
                *a = te_round(dt, *a + w);
            else if (p->agg == TE_AVERAGE)
                *a = te_round(dt, *a + w / (double)p->n_trees);
            else if (p->agg == TE_MIN)
                *a = te_round(dt, w < *a ? w : *a);
            else
                *a = te_round(dt, w > *a ? w : *a);
        }
        te_post(p->post, acc, nt);
        for (int64_t t = 0; t < nt; t++) {
            if (dt == ONNX_DTYPE_FLOAT)
                ((float *)y->data)[r * nt + t] = (float)acc[t];
            else if (dt == ONNX_DTYPE_DOUBLE)
                ((double *)y->data)[r * nt + t] = acc[t];
            else
                ((uint16_t *)y->data)[r * nt + t] = ew_f64_to_f16(acc[t]);
        }
    }
    free(acc);
    return 0;
}

const struct op_def op_tree_ensemble = {
    .domain = "ai.onnx.ml", .name = "TreeEnsemble", .since = { 5 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = te_parse, .params_free = te_params_free, .infer = te_infer, .cost = te_cost,
    .kernel = { [BACKEND_CPU] = te_cpu, [BACKEND_CUDA] = op_host_bridge },
};

/* ---- LabelEncoder ------------------------------------------------------------ */

struct le_entry {
    int64_t i;  /* the key, integer key types */
    double d;   /* the key, float key types */
    int64_t pos;
};

struct le_params {
    int key_dtype, value_dtype;
    int64_t n;                    /* sorted by key, duplicates dropped (the last wins) */
    struct le_entry *keys;
    int64_t *vi;                  /* values by original position (integer value types) */
    double *vd;                   /* (float value types) */
    int64_t def_i;
    double def_d;
    int64_t nan_pos;              /* the last NaN key's position, -1 when none */
};

static void le_params_free(void *params)
{
    struct le_params *p = params;
    if (!p)
        return;
    free(p->keys);
    free(p->vi);
    free(p->vd);
    free(p);
}

static int le_is_float(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE;
}

static int le_dtype_ok(int dtype)
{
    return le_is_float(dtype) || dtype == ONNX_DTYPE_INT64 || dtype == ONNX_DTYPE_INT32 ||
           dtype == ONNX_DTYPE_INT16;
}

static void le_get(int dtype, const void *data, int64_t k, int64_t *i, double *d)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: *d = ((const float *)data)[k]; break;
    case ONNX_DTYPE_DOUBLE: *d = ((const double *)data)[k]; break;
    case ONNX_DTYPE_INT64: *i = ((const int64_t *)data)[k]; break;
    case ONNX_DTYPE_INT32: *i = ((const int32_t *)data)[k]; break;
    default: *i = ((const int16_t *)data)[k]; break;
    }
}

/* keys_* or values_* ("keys" / "values"): exactly one, numeric; its dtype,
 * count and data (float lists as float, ints as int64). -1 with err. */
static int le_pick(const struct onnx_node *node, int version, const char *what, int *dtype, int64_t *n,
                   const void **data, char *err, size_t err_size)
{
    char name[32];
    snprintf(name, sizeof name, "%s_strings", what);
    if (onnx_node_attr(node, name))
        return ew_parse_error(err, err_size, "attribute '%s': string tensors are out of scope", name);
    int found = 0;
    const struct onnx_attr *a;
    snprintf(name, sizeof name, "%s_int64s", what);
    if ((a = onnx_node_attr(node, name))) {
        if (a->type != ONNX_ATTR_INTS)
            return ew_parse_error(err, err_size, "attribute '%s' must be a list of ints", name);
        found++;
        *dtype = ONNX_DTYPE_INT64;
        *n = a->n;
        *data = a->ints;
    }
    snprintf(name, sizeof name, "%s_floats", what);
    if ((a = onnx_node_attr(node, name))) {
        if (a->type != ONNX_ATTR_FLOATS)
            return ew_parse_error(err, err_size, "attribute '%s' must be a list of floats", name);
        found++;
        *dtype = ONNX_DTYPE_FLOAT;
        *n = a->n;
        *data = a->floats;
    }
    snprintf(name, sizeof name, "%s_tensor", what);
    if ((a = onnx_node_attr(node, name)) && version >= 4) {
        if (a->type != ONNX_ATTR_TENSOR || !a->t)
            return ew_parse_error(err, err_size, "attribute '%s' must be a tensor", name);
        if (a->t->dtype == ONNX_DTYPE_STRING)
            return ew_parse_error(err, err_size, "attribute '%s': string tensors are out of scope", name);
        if (!le_dtype_ok(a->t->dtype))
            return ew_parse_error(err, err_size, "attribute '%s' is %s; supported: int16, int32, int64, float, double",
                                  name, onnx_dtype_name(a->t->dtype));
        found++;
        *dtype = a->t->dtype;
        *n = onnx_tensor_numel(a->t);
        *data = a->t->data;
    }
    if (found != 1)
        return ew_parse_error(err, err_size, found ? "more than one %s_* attribute is set; exactly one is allowed"
                                                   : "no %s_* attribute (%s_int64s, %s_floats%s)",
                              what, what, what, version >= 4 ? ", or a tensor" : "");
    return 0;
}

static int le_cmp(const void *pa, const void *pb)
{
    const struct le_entry *a = pa, *b = pb;
    /* integer keys in i, float keys in d (the other field 0); NaN keys are kept apart */
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int le_build(struct le_params *p, const struct onnx_node *node, int version, char *err, size_t err_size)
{
    int vdt;
    int64_t nk, nv;
    const void *kd, *vd;
    if (le_pick(node, version, "keys", &p->key_dtype, &nk, &kd, err, err_size) ||
        le_pick(node, version, "values", &vdt, &nv, &vd, err, err_size))
        return -1;
    p->value_dtype = vdt;
    if (nk != nv)
        return ew_parse_error(err, err_size, "%lld keys but %lld values; they must pair up", (long long)nk,
                              (long long)nv);
    p->keys = calloc((size_t)(nk ? nk : 1), sizeof *p->keys);
    p->vi = calloc((size_t)(nk ? nk : 1), sizeof *p->vi);
    p->vd = calloc((size_t)(nk ? nk : 1), sizeof *p->vd);
    if (!p->keys || !p->vi || !p->vd)
        return ew_parse_error(err, err_size, "out of memory");
    p->nan_pos = -1;
    int64_t m = 0;
    for (int64_t k = 0; k < nk; k++) {
        struct le_entry e = { 0, 0, k };
        le_get(p->key_dtype, kd, k, &e.i, &e.d);
        le_get(vdt, vd, k, &p->vi[k], &p->vd[k]);
        if (isnan(e.d))
            p->nan_pos = k;
        else
            p->keys[m++] = e;
    }
    qsort(p->keys, (size_t)m, sizeof *p->keys, le_cmp);
    /* Of equal keys the last given wins: keep each run's final entry. */
    int64_t w = 0;
    for (int64_t k = 0; k < m; k++) {
        if (k + 1 < m && p->keys[k + 1].i == p->keys[k].i && p->keys[k + 1].d == p->keys[k].d)
            continue;
        p->keys[w++] = p->keys[k];
    }
    p->n = w;

    /* The default: default_tensor (version 4, values as a tensor), else
     * default_int64 (-1) or default_float (-0.0). */
    const struct onnx_attr *a = version >= 4 ? onnx_node_attr(node, "default_tensor") : NULL;
    p->def_i = -1;
    p->def_d = -0.0;
    if (a) {
        if (a->type != ONNX_ATTR_TENSOR || !a->t)
            return ew_parse_error(err, err_size, "attribute 'default_tensor' must be a tensor");
        if (a->t->dtype == ONNX_DTYPE_STRING)
            return ew_parse_error(err, err_size, "attribute 'default_tensor': string tensors are out of scope");
        if (a->t->dtype != vdt || onnx_tensor_numel(a->t) != 1)
            return ew_parse_error(err, err_size,
                                  "attribute 'default_tensor' must hold one %s (the values' type), got %s of %lld "
                                  "elements", onnx_dtype_name(vdt), onnx_dtype_name(a->t->dtype),
                                  (long long)onnx_tensor_numel(a->t));
        le_get(vdt, a->t->data, 0, &p->def_i, &p->def_d);
    } else if (le_is_float(vdt)) {
        p->def_d = onnx_node_attr_float(node, "default_float", -0.0f);
    } else {
        p->def_i = onnx_node_attr_int(node, "default_int64", -1);
    }
    return 0;
}

static int le_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    struct le_params *p = calloc(1, sizeof *p);
    if (!p)
        return ew_parse_error(err, err_size, "out of memory");
    if (le_build(p, node, version, err, err_size)) {
        le_params_free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int le_infer(struct op_call *c)
{
    const struct le_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (x->dtype == ONNX_DTYPE_STRING)
        return op_error(c, "X is a string tensor: string tensors are out of scope");
    if (x->dtype != p->key_dtype)
        return op_error(c, "X is %s but the keys are %s; they must agree", onnx_dtype_name(x->dtype),
                        onnx_dtype_name(p->key_dtype));
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    c->out[0]->dtype = p->value_dtype;
    return 0;
}

static int le_cpu(struct op_call *c)
{
    const struct le_params *p = c->params;
    const struct tensor *x = c->in[0];
    void *y = c->out[0]->data;
    int64_t n = tensor_numel(x);
    for (int64_t k = 0; k < n; k++) {
        struct le_entry e = { 0, 0, 0 };
        le_get(p->key_dtype, x->data, k, &e.i, &e.d);
        int64_t pos = -1;
        if (isnan(e.d)) {
            pos = p->nan_pos;
        } else {
            int64_t lo = 0, hi = p->n;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                const struct le_entry *m = &p->keys[mid];
                if (m->i == e.i && m->d == e.d) {
                    pos = m->pos;
                    break;
                }
                if (m->i < e.i || (m->i == e.i && m->d < e.d))
                    lo = mid + 1;
                else
                    hi = mid;
            }
        }
        int64_t vi = pos < 0 ? p->def_i : p->vi[pos];
        double vd = pos < 0 ? p->def_d : p->vd[pos];
        switch (p->value_dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)y)[k] = (float)vd; break;
        case ONNX_DTYPE_DOUBLE: ((double *)y)[k] = vd; break;
        case ONNX_DTYPE_INT64: ((int64_t *)y)[k] = vi; break;
        case ONNX_DTYPE_INT32: ((int32_t *)y)[k] = (int32_t)vi; break;
        default: ((int16_t *)y)[k] = (int16_t)vi; break;
        }
    }
    return 0;
}

const struct op_def op_label_encoder = {
    .domain = "ai.onnx.ml", .name = "LabelEncoder", .since = { 2, 4 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = le_parse, .params_free = le_params_free, .infer = le_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = le_cpu, [BACKEND_CUDA] = op_host_bridge },
};
