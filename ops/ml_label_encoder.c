/* ops/ml_label_encoder.c — LabelEncoder, of the ai.onnx.ml domain:
 *
 * LabelEncoder (ai.onnx.ml 2, 4): each element of X looked up among the
 * keys (keys_int64s / keys_floats / keys_strings, or version 4's
 * keys_tensor of int16, int32, int64, float, double, string), its paired
 * value or the default out (default_int64 -1, default_float -0.0,
 * default_string "_Unused", version 4's default_tensor); a repeated key:
 * the last wins; a NaN key matches any NaN. Strings compare by their bytes
 * (ops/string-impl.h); string values out are interned copies.
 * LabelEncoder (ai.onnx.ml 1): classes_strings; a string X maps to its
 * class index (default_int64, -1), an int64 X to classes_strings[X]
 * (default_string "_Unused" when out of range).
 *
 * Not differentiable; on a device it runs on host copies (op_host_bridge). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/string-impl.h"

/* ---- LabelEncoder ------------------------------------------------------------ */

struct le_entry {
    int64_t i;  /* the key, integer key types */
    double d;   /* the key, float key types */
    struct onnx_string s; /* the key, string keys (bytes in the node's attributes) */
    int64_t pos;
};

struct le_params {
    int key_dtype, value_dtype;
    int64_t n;                    /* sorted by key, duplicates dropped (the last wins) */
    struct le_entry *keys;
    int64_t *vi;                  /* values by original position (integer value types) */
    double *vd;                   /* (float value types) */
    struct onnx_string *vs;       /* (string values; bytes in the node's attributes) */
    int64_t def_i;
    double def_d;
    struct onnx_string def_s;
    int v1;                       /* version 1: classes_strings, direction by X's type */
    int64_t n_classes;            /* version 1: the length of classes_strings */
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
    free(p->vs);
    free(p);
}

static int le_is_float(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE;
}

static int le_dtype_ok(int dtype)
{
    return le_is_float(dtype) || dtype == ONNX_DTYPE_INT64 || dtype == ONNX_DTYPE_INT32 ||
           dtype == ONNX_DTYPE_INT16 || dtype == ONNX_DTYPE_STRING;
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

/* Element k as (i, d, s): data is a tensor's elements, or for a strings
 * attribute (LE_CSTRINGS) its char * array. */
#define LE_CSTRINGS (-8)
static void le_get3(int dtype, const void *data, int64_t k, int64_t *i, double *d, struct onnx_string *s)
{
    switch (dtype) {
    case ONNX_DTYPE_STRING: *s = ((const struct onnx_string *)data)[k]; break;
    case LE_CSTRINGS: {
        const char *c = ((char *const *)data)[k];
        *s = (struct onnx_string){ c, strlen(c) };
        break;
    }
    default: le_get(dtype, data, k, i, d); break;
    }
}


/* keys_* or values_* ("keys" / "values"): exactly one; its dtype, count,
 * data (float lists as float, ints as int64, strings as char *) and the
 * data's layout for le_get3 (the dtype, or LE_CSTRINGS). -1 with err. */
static int le_pick(const struct onnx_node *node, int version, const char *what, int *dtype, int64_t *n,
                   const void **data, int *layout, char *err, size_t err_size)
{
    char name[32];
    int found = 0;
    const struct onnx_attr *a;
    snprintf(name, sizeof name, "%s_strings", what);
    if ((a = onnx_node_attr(node, name))) {
        if (a->type != ONNX_ATTR_STRINGS)
            return ew_parse_error(err, err_size, "attribute '%s' must be a list of strings", name);
        found++;
        *dtype = ONNX_DTYPE_STRING;
        *n = a->n;
        *data = a->strings;
        *layout = LE_CSTRINGS;
    }
    snprintf(name, sizeof name, "%s_int64s", what);
    if ((a = onnx_node_attr(node, name))) {
        if (a->type != ONNX_ATTR_INTS)
            return ew_parse_error(err, err_size, "attribute '%s' must be a list of ints", name);
        found++;
        *dtype = *layout = ONNX_DTYPE_INT64;
        *n = a->n;
        *data = a->ints;
    }
    snprintf(name, sizeof name, "%s_floats", what);
    if ((a = onnx_node_attr(node, name))) {
        if (a->type != ONNX_ATTR_FLOATS)
            return ew_parse_error(err, err_size, "attribute '%s' must be a list of floats", name);
        found++;
        *dtype = *layout = ONNX_DTYPE_FLOAT;
        *n = a->n;
        *data = a->floats;
    }
    snprintf(name, sizeof name, "%s_tensor", what);
    if ((a = onnx_node_attr(node, name)) && version >= 4) {
        if (a->type != ONNX_ATTR_TENSOR || !a->t)
            return ew_parse_error(err, err_size, "attribute '%s' must be a tensor", name);
        if (!le_dtype_ok(a->t->dtype))
            return ew_parse_error(err, err_size,
                                  "attribute '%s' is %s; supported: int16, int32, int64, float, double, string", name,
                                  onnx_dtype_name(a->t->dtype));
        found++;
        *dtype = *layout = a->t->dtype;
        *n = onnx_tensor_numel(a->t);
        *data = a->t->data;
    }
    if (found != 1)
        return ew_parse_error(err, err_size, found ? "more than one %s_* attribute is set; exactly one is allowed"
                                                   : "no %s_* attribute (%s_int64s, %s_floats%s)",
                              what, what, what, version >= 4 ? ", _strings, or a tensor" : ", _strings");
    return 0;
}

/* Keys in order: integer keys in i, float keys in d, string keys in s (the
 * other fields 0); NaN keys are kept apart. */
static int le_key_cmp(const struct le_entry *a, const struct le_entry *b)
{
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    size_t m = a->s.len < b->s.len ? a->s.len : b->s.len;
    int k = m ? memcmp(a->s.data, b->s.data, m) : 0;
    if (k)
        return k;
    return a->s.len < b->s.len ? -1 : a->s.len > b->s.len;
}

static int le_cmp(const void *pa, const void *pb)
{
    const struct le_entry *a = pa, *b = pb;
    int k = le_key_cmp(a, b);
    return k ? k : a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Sorts the m keys, drops all but the last of equal keys. */
static void le_sort(struct le_params *p, int64_t m)
{
    qsort(p->keys, (size_t)m, sizeof *p->keys, le_cmp);
    /* Of equal keys the last given wins: keep each run's final entry. */
    int64_t w = 0;
    for (int64_t k = 0; k < m; k++) {
        if (k + 1 < m && !le_key_cmp(&p->keys[k + 1], &p->keys[k]))
            continue;
        p->keys[w++] = p->keys[k];
    }
    p->n = w;
}

static int le_alloc(struct le_params *p, int64_t nk, char *err, size_t err_size)
{
    p->keys = calloc((size_t)(nk ? nk : 1), sizeof *p->keys);
    p->vi = calloc((size_t)(nk ? nk : 1), sizeof *p->vi);
    p->vd = calloc((size_t)(nk ? nk : 1), sizeof *p->vd);
    p->vs = calloc((size_t)(nk ? nk : 1), sizeof *p->vs);
    if (!p->keys || !p->vi || !p->vd || !p->vs)
        return ew_parse_error(err, err_size, "out of memory");
    p->nan_pos = -1;
    return 0;
}

/* Version 1: classes_strings; both directions are looked up at run time. */
static int le_build_v1(struct le_params *p, const struct onnx_node *node, char *err, size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, "classes_strings");
    if (!a || a->type != ONNX_ATTR_STRINGS)
        return ew_parse_error(err, err_size, "attribute 'classes_strings' (a list of strings) is required");
    if (le_alloc(p, a->n, err, err_size))
        return -1;
    p->v1 = 1;
    p->n_classes = a->n;
    p->key_dtype = ONNX_DTYPE_STRING;
    p->value_dtype = ONNX_DTYPE_INT64;
    for (int64_t k = 0; k < a->n; k++) {
        p->keys[k] = (struct le_entry){ .s = { a->strings[k], strlen(a->strings[k]) }, .pos = k };
        p->vi[k] = k;
        p->vs[k] = p->keys[k].s;
    }
    /* classes_strings[X] reads vs by position: sort a copy of the keys only */
    le_sort(p, a->n);
    p->def_i = onnx_node_attr_int(node, "default_int64", -1);
    const char *ds = onnx_node_attr_string(node, "default_string", "_Unused");
    p->def_s = (struct onnx_string){ ds, strlen(ds) };
    return 0;
}

static int le_build(struct le_params *p, const struct onnx_node *node, int version, char *err, size_t err_size)
{
    if (version < 2)
        return le_build_v1(p, node, err, err_size);
    int vdt, klay, vlay;
    int64_t nk, nv;
    const void *kd, *vd;
    if (le_pick(node, version, "keys", &p->key_dtype, &nk, &kd, &klay, err, err_size) ||
        le_pick(node, version, "values", &vdt, &nv, &vd, &vlay, err, err_size))
        return -1;
    p->value_dtype = vdt;
    if (nk != nv)
        return ew_parse_error(err, err_size, "%lld keys but %lld values; they must pair up", (long long)nk,
                              (long long)nv);
    if (le_alloc(p, nk, err, err_size))
        return -1;
    int64_t m = 0;
    for (int64_t k = 0; k < nk; k++) {
        struct le_entry e = { .pos = k };
        le_get3(klay, kd, k, &e.i, &e.d, &e.s);
        le_get3(vlay, vd, k, &p->vi[k], &p->vd[k], &p->vs[k]);
        if (isnan(e.d))
            p->nan_pos = k;
        else
            p->keys[m++] = e;
    }
    le_sort(p, m);

    /* The default: default_tensor (version 4, values as a tensor), else
     * default_int64 (-1), default_float (-0.0) or default_string ("_Unused"). */
    const struct onnx_attr *a = version >= 4 ? onnx_node_attr(node, "default_tensor") : NULL;
    p->def_i = -1;
    p->def_d = -0.0;
    if (a) {
        if (a->type != ONNX_ATTR_TENSOR || !a->t)
            return ew_parse_error(err, err_size, "attribute 'default_tensor' must be a tensor");
        if (a->t->dtype != vdt || onnx_tensor_numel(a->t) != 1)
            return ew_parse_error(err, err_size,
                                  "attribute 'default_tensor' must hold one %s (the values' type), got %s of %lld "
                                  "elements", onnx_dtype_name(vdt), onnx_dtype_name(a->t->dtype),
                                  (long long)onnx_tensor_numel(a->t));
        le_get3(vdt, a->t->data, 0, &p->def_i, &p->def_d, &p->def_s);
    } else if (vdt == ONNX_DTYPE_STRING) {
        const char *ds = onnx_node_attr_string(node, "default_string", "_Unused");
        p->def_s = (struct onnx_string){ ds, strlen(ds) };
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
    int out_dtype = p->value_dtype;
    if (p->v1) {
        if (x->dtype != ONNX_DTYPE_STRING && x->dtype != ONNX_DTYPE_INT64)
            return op_error(c, "X is %s; version 1 maps string to int64 or int64 to string", onnx_dtype_name(x->dtype));
        out_dtype = x->dtype == ONNX_DTYPE_STRING ? ONNX_DTYPE_INT64 : ONNX_DTYPE_STRING;
    } else if (x->dtype != p->key_dtype) {
        return op_error(c, "X is %s but the keys are %s; they must agree", onnx_dtype_name(x->dtype),
                        onnx_dtype_name(p->key_dtype));
    }
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    c->out[0]->dtype = out_dtype;
    return 0;
}

/* Position of the value of key e (-1: the default). */
static int64_t le_find(const struct le_params *p, const struct le_entry *e)
{
    if (isnan(e->d))
        return p->nan_pos;
    int64_t lo = 0, hi = p->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int k = le_key_cmp(&p->keys[mid], e);
        if (!k)
            return p->keys[mid].pos;
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int le_cpu(struct op_call *c)
{
    const struct le_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *out = c->out[0];
    void *y = out->data;
    int64_t n = tensor_numel(x);
    for (int64_t k = 0; k < n; k++) {
        int64_t pos;
        if (p->v1 && x->dtype == ONNX_DTYPE_INT64) {
            int64_t idx = ((const int64_t *)x->data)[k];
            pos = idx >= 0 && idx < p->n_classes ? idx : -1;   /* vs keeps the classes' order */
        } else {
            struct le_entry e = { .pos = 0 };
            le_get3(p->key_dtype, x->data, k, &e.i, &e.d, &e.s);
            pos = le_find(p, &e);
        }
        if (out->dtype == ONNX_DTYPE_STRING) {
            const struct onnx_string *v = pos < 0 ? &p->def_s : &p->vs[pos];
            if (op_string_set(c, out, k, v->data, v->len))
                return -1;
            continue;
        }
        int64_t vi = pos < 0 ? p->def_i : p->vi[pos];
        double vd = pos < 0 ? p->def_d : p->vd[pos];
        switch (out->dtype) {
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
    .domain = "ai.onnx.ml", .name = "LabelEncoder", .since = { 1, 2, 4 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = le_parse, .params_free = le_params_free, .infer = le_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = le_cpu, [BACKEND_CUDA] = op_host_bridge },
};
