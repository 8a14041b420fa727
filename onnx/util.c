/* onnx/util.c — element types, tensor helpers and attribute look-up.
 *
 * Small helpers every module uses on the loaded IR; nothing here touches
 * protobuf-c, so they stay cheap to call from kernels' attribute parsing.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

size_t onnx_dtype_size(int dtype)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: return 4;
    case ONNX_DTYPE_UINT8: return 1;
    case ONNX_DTYPE_INT8: return 1;
    case ONNX_DTYPE_UINT16: return 2;
    case ONNX_DTYPE_INT16: return 2;
    case ONNX_DTYPE_INT32: return 4;
    case ONNX_DTYPE_INT64: return 8;
    case ONNX_DTYPE_BOOL: return 1;
    case ONNX_DTYPE_FLOAT16: return 2;
    case ONNX_DTYPE_DOUBLE: return 8;
    case ONNX_DTYPE_UINT32: return 4;
    case ONNX_DTYPE_UINT64: return 8;
    case ONNX_DTYPE_COMPLEX64: return 8;
    case ONNX_DTYPE_COMPLEX128: return 16;
    case ONNX_DTYPE_BFLOAT16: return 2;
    case ONNX_DTYPE_STRING: return sizeof(struct onnx_string);
    default: return 0;         /* sub-byte and 8-bit float formats */
    }
}

const char *onnx_dtype_name(int dtype)
{
    /* Names follow NumPy where there is one, so messages read naturally next
     * to the .npy files users feed in; 17..26 are the newer ONNX formats. */
    static const char *const names[] = {
        "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32",
        "int64", "string", "bool", "float16", "float64", "uint32", "uint64",
        "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
        "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
        "float8e8m0", "uint2", "int2",
    };
    if (dtype < 0 || (size_t)dtype >= sizeof names / sizeof names[0])
        return "unknown";
    return names[dtype];
}

int64_t onnx_tensor_numel(const struct onnx_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

void onnx_tensor_clear(struct onnx_tensor *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->data);
    memset(t, 0, sizeof *t);
}

const struct onnx_attr *onnx_node_attr(const struct onnx_node *n, const char *name)
{
    if (!n || !name)
        return NULL;
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t onnx_node_attr_int(const struct onnx_node *n, const char *name, int64_t dflt)
{
    const struct onnx_attr *a = onnx_node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == ONNX_ATTR_INT)
        return a->i;
    /* A few exporters write integer-valued attributes as floats. */
    if (a->type == ONNX_ATTR_FLOAT)
        return (int64_t)a->f;
    return dflt;
}

float onnx_node_attr_float(const struct onnx_node *n, const char *name, float dflt)
{
    const struct onnx_attr *a = onnx_node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == ONNX_ATTR_FLOAT)
        return a->f;
    if (a->type == ONNX_ATTR_INT)
        return (float)a->i;
    return dflt;
}

const char *onnx_node_attr_string(const struct onnx_node *n, const char *name, const char *dflt)
{
    const struct onnx_attr *a = onnx_node_attr(n, name);
    if (!a || a->type != ONNX_ATTR_STRING || !a->s)
        return dflt;
    return a->s;
}

int onnx_node_attr_ints(const struct onnx_node *n, const char *name, int64_t *out, int max)
{
    const struct onnx_attr *a = onnx_node_attr(n, name);
    if (!a)
        return -1;
    if (a->type == ONNX_ATTR_INT) {
        /* A lone INT where INTS is expected counts as a one-element list. */
        if (max < 1)
            return -2;
        out[0] = a->i;
        return 1;
    }
    if (a->type != ONNX_ATTR_INTS)
        return -1;
    if (a->n > max)
        return -2;
    for (int i = 0; i < a->n; i++)
        out[i] = a->ints[i];
    return a->n;
}

int onnx_node_attr_floats(const struct onnx_node *n, const char *name, float *out, int max)
{
    const struct onnx_attr *a = onnx_node_attr(n, name);
    if (!a)
        return -1;
    if (a->type == ONNX_ATTR_FLOAT) {
        if (max < 1)
            return -2;
        out[0] = a->f;
        return 1;
    }
    if (a->type != ONNX_ATTR_FLOATS)
        return -1;
    if (a->n > max)
        return -2;
    for (int i = 0; i < a->n; i++)
        out[i] = a->floats[i];
    return a->n;
}
