/* onnx/half.c — float16 and bfloat16 models computed in float32.
 *
 * onnx_model_widen_half rewrites a loaded model so that every float16 and
 * bfloat16 value becomes float32: initializer data and tensor attributes
 * (Constant's value, ConstantOfShape's) are converted, and the element
 * types of graph inputs, outputs and value_info, Cast's `to`,
 * DequantizeLinear's `output_dtype` and the `dtype` of the generator ops are
 * set to FLOAT, in every subgraph too. The
 * kernels then see one float type, and training keeps float32 master
 * weights. Each change is recorded, so that onnx_model_save_narrowed can
 * write the model in its own types again (trained weights rounded to
 * nearest even) without disturbing the widened model in memory.
 *
 * A Cast to float16 in the middle of a graph becomes a Cast to float: the
 * value is no longer rounded there, so results differ from a half-precision
 * run by about the rounding of float16 (onnxruntime's CPU provider also
 * computes many float16 ops in float32). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx-impl.h"

struct widen_field {
    int *field;                    /* an element type (int) or attribute value (int64) */
    int64_t *field64;
    int orig;
};

struct widen_tensor {
    struct onnx_tensor *t;
    int orig;                      /* FLOAT16 or BFLOAT16 */
};

struct onnx_widening {
    int n_fields, cap_fields;
    struct widen_field *fields;
    int n_tensors, cap_tensors;
    struct widen_tensor *tensors;
    int failed;
};

static int is_half(int64_t dtype)
{
    return dtype == ONNX_DTYPE_FLOAT16 || dtype == ONNX_DTYPE_BFLOAT16;
}

float onnx_half_to_float(uint16_t h, int dtype)
{
    if (dtype == ONNX_DTYPE_BFLOAT16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float f;
    if (exp == 0) {
        f = ldexpf((float)man, -24);
    } else if (exp == 31) {
        f = man ? NAN : INFINITY;
    } else {
        f = ldexpf((float)(man | 0x400), (int)exp - 25);
    }
    return sign ? -f : f;
}

uint16_t onnx_float_to_half(float f, int dtype)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (dtype == ONNX_DTYPE_BFLOAT16) {
        if (isnan(f))
            return (uint16_t)((u >> 16) | 0x40);
        return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);   /* nearest even */
    }
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f))
        return sign | 0x7e00;
    if (a >= 65520.0f)             /* rounds to infinity */
        return sign | 0x7c00;
    if (a < ldexpf(1.0f, -14)) {   /* subnormal: units of 2^-24, nearest even */
        float q = nearbyintf(ldexpf(a, 24));
        return sign | (uint16_t)q;
    }
    int e;
    float m = frexpf(a, &e);       /* a = m * 2^e, m in [0.5, 1) */
    float q = nearbyintf(ldexpf(m, 11));   /* 11 significant bits, nearest even */
    if (q >= 2048.0f) {
        q /= 2;
        e++;
    }
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)((uint32_t)q & 0x3ff);
}

static void note_field(struct onnx_widening *w, int *field, int64_t *field64, int orig)
{
    if (w->n_fields == w->cap_fields) {
        int cap = w->cap_fields ? 2 * w->cap_fields : 16;
        struct widen_field *f = realloc(w->fields, (size_t)cap * sizeof *f);
        if (!f) {
            w->failed = 1;
            return;
        }
        w->fields = f;
        w->cap_fields = cap;
    }
    w->fields[w->n_fields++] = (struct widen_field){ field, field64, orig };
}

static void widen_int(struct onnx_widening *w, int *field)
{
    if (is_half(*field)) {
        note_field(w, field, NULL, *field);
        *field = ONNX_DTYPE_FLOAT;
    }
}

static void widen_int64(struct onnx_widening *w, int64_t *field)
{
    if (is_half(*field)) {
        note_field(w, NULL, field, (int)*field);
        *field = ONNX_DTYPE_FLOAT;
    }
}

static void widen_tensor(struct onnx_widening *w, struct onnx_tensor *t)
{
    if (!t || !is_half(t->dtype) || w->failed)
        return;
    int64_t n = onnx_tensor_numel(t);
    float *data = malloc((size_t)(n ? n : 1) * sizeof *data);
    if (w->n_tensors == w->cap_tensors) {
        int cap = w->cap_tensors ? 2 * w->cap_tensors : 16;
        struct widen_tensor *nt = realloc(w->tensors, (size_t)cap * sizeof *nt);
        if (nt) {
            w->tensors = nt;
            w->cap_tensors = cap;
        }
    }
    if (!data || w->n_tensors == w->cap_tensors) {
        free(data);
        w->failed = 1;
        return;
    }
    const uint16_t *src = t->data;
    for (int64_t i = 0; i < n; i++)
        data[i] = onnx_half_to_float(src[i], t->dtype);
    w->tensors[w->n_tensors++] = (struct widen_tensor){ t, t->dtype };
    free(t->data);
    t->data = data;
    t->dtype = ONNX_DTYPE_FLOAT;
    t->size_bytes = (size_t)n * sizeof *data;
}

static void widen_infos(struct onnx_widening *w, struct onnx_value_info *vi, int n)
{
    for (int i = 0; i < n; i++)
        widen_int(w, &vi[i].elem_type);
}

/* Attributes that name an element type. */
static int is_dtype_attr(const struct onnx_node *node, const struct onnx_attr *a)
{
    if (a->type != ONNX_ATTR_INT)
        return 0;
    if (!strcmp(a->name, "to"))
        return !strcmp(node->op_type, "Cast");
    if (!strcmp(a->name, "output_dtype"))   /* a float16 DequantizeLinear output */
        return !strcmp(node->op_type, "DequantizeLinear");
    return !strcmp(a->name, "dtype");   /* EyeLike, Random*, Multinomial, Bernoulli */
}

static void widen_graph(struct onnx_widening *w, struct onnx_graph *g)
{
    for (int i = 0; i < g->n_initializers; i++)
        widen_tensor(w, &g->initializers[i]);
    widen_infos(w, g->inputs, g->n_inputs);
    widen_infos(w, g->outputs, g->n_outputs);
    widen_infos(w, g->value_info, g->n_value_info);
    widen_infos(w, g->default_inputs, g->n_default_inputs);
    for (int k = 0; k < g->n_nodes; k++) {
        struct onnx_node *node = &g->nodes[k];
        if (node->domain[0])
            continue;
        for (int j = 0; j < node->n_attrs; j++) {
            struct onnx_attr *a = &node->attrs[j];
            if (is_dtype_attr(node, a))
                widen_int64(w, &a->i);
            else if (a->type == ONNX_ATTR_TENSOR)
                widen_tensor(w, a->t);
            else if (a->type == ONNX_ATTR_TENSORS)
                for (int t = 0; t < a->n; t++)
                    widen_tensor(w, a->tensors[t]);
            else if (a->type == ONNX_ATTR_GRAPH && a->g)
                widen_graph(w, a->g);
            else if (a->type == ONNX_ATTR_GRAPHS)
                for (int t = 0; t < a->n; t++)
                    widen_graph(w, a->graphs[t]);
        }
    }
}

void onnx_widening_free(struct onnx_widening *w)
{
    if (!w)
        return;
    free(w->fields);
    free(w->tensors);
    free(w);
}

int onnx_model_widen_half(struct onnx_model *m, struct onnx_widening **out, char *err, size_t err_size)
{
    *out = NULL;
    struct onnx_widening *w = calloc(1, sizeof *w);
    if (!w)
        return onnx_error(err, err_size, "out of memory widening float16 values");
    widen_graph(w, m->graph);
    if (w->failed) {
        onnx_widening_free(w);
        return onnx_error(err, err_size, "out of memory widening float16 values");
    }
    if (!w->n_fields && !w->n_tensors) {
        onnx_widening_free(w);
        return 0;
    }
    *out = w;
    return 0;
}

int onnx_model_save_narrowed(struct onnx_model *m, const struct onnx_widening *w, const char *path, char *err,
                             size_t err_size)
{
    if (!w)
        return onnx_model_save(m, path, err, err_size);
    /* The widened float data is set aside, not converted back: the model in
     * memory (and its float32 master weights) stays as it was. */
    void **kept = calloc((size_t)w->n_tensors + 1, sizeof *kept);
    if (!kept)
        return onnx_error(err, err_size, "out of memory narrowing float16 values");
    int rc = 0, done = 0;
    for (; done < w->n_tensors; done++) {
        struct onnx_tensor *t = w->tensors[done].t;
        int64_t n = onnx_tensor_numel(t);
        uint16_t *half = malloc((size_t)(n ? n : 1) * sizeof *half);
        if (!half) {
            rc = onnx_error(err, err_size, "out of memory narrowing float16 values");
            break;
        }
        const float *src = t->data;
        for (int64_t i = 0; i < n; i++)
            half[i] = onnx_float_to_half(src[i], w->tensors[done].orig);
        kept[done] = t->data;
        t->data = half;
        t->dtype = w->tensors[done].orig;
        t->size_bytes = (size_t)n * sizeof *half;
    }
    for (int i = 0; i < w->n_fields; i++) {
        if (w->fields[i].field)
            *w->fields[i].field = w->fields[i].orig;
        else
            *w->fields[i].field64 = w->fields[i].orig;
    }
    if (!rc)
        rc = onnx_model_save(m, path, err, err_size);
    for (int i = 0; i < w->n_fields; i++) {
        if (w->fields[i].field)
            *w->fields[i].field = ONNX_DTYPE_FLOAT;
        else
            *w->fields[i].field64 = ONNX_DTYPE_FLOAT;
    }
    for (int i = 0; i < done; i++) {
        struct onnx_tensor *t = w->tensors[i].t;
        free(t->data);
        t->data = kept[i];
        t->dtype = ONNX_DTYPE_FLOAT;
        t->size_bytes = (size_t)onnx_tensor_numel(t) * sizeof(float);
    }
    free(kept);
    return rc;
}

int onnx_widening_file_dtype(const struct onnx_widening *w, const struct onnx_tensor *t)
{
    for (int i = 0; w && i < w->n_tensors; i++)
        if (w->tensors[i].t == t)
            return w->tensors[i].orig;
    return t->dtype;
}
