/* ops/ml_label_encoder.c — LabelEncoder, of the ai.onnx.ml domain:
 *
 * LabelEncoder (ai.onnx.ml 2, 4): each element of X looked up among the
 * keys (keys_int64s / keys_floats, or version 4's keys_tensor of int16,
 * int32, int64, float, double), its paired value or the default out
 * (default_int64 -1, default_float -0.0, version 4's default_tensor); a
 * repeated key: the last wins; a NaN key matches any NaN. String keys or
 * values are refused (string tensors are out of scope).
 *
 * Not differentiable; on a device it runs on host copies (op_host_bridge). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

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
