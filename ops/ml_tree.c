/* ops/ml_tree.c — TreeEnsemble, of the ai.onnx.ml domain:
 *
 * TreeEnsemble (ai.onnx.ml 5): X [N, F] (float, double, float16) through
 * every tree (modes LEQ, LT, GTE, GT, EQ, NEQ, MEMBER with NaN-delimited
 * membership_values; NaN follows nodes_missing_value_tracks_true), the
 * leaves' weights aggregated per target (AVERAGE, SUM, MIN, MAX) in X's
 * type step by step as onnx.reference does, then post_transform (NONE,
 * SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT as onnxruntime computes them;
 * onnx.reference leaves it out). Y [N, n_targets]. A one-leaf tree is a
 * root whose two branches are the same leaf (that leaf is used).
 *
 * Not differentiable; on a device it runs on host copies (op_host_bridge). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

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
