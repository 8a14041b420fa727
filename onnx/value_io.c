/* onnx/value_io.c — test-data values that are not plain tensors: the
 * SequenceProto and OptionalProto files of the ONNX node tests.
 *
 * Those messages live in onnx-data.proto, which Debian's libonnx-dev does
 * not ship, so their few fields are read straight off the protobuf wire
 * format here; the tensors inside are ordinary TensorProtos and go through
 * the generated decoder. Every length is checked against the buffer and the
 * nesting is bounded, so a hostile file fails with a message. */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx-impl.h"

#define VALUE_MAX_DEPTH 16

/* SequenceProto / OptionalProto field numbers (onnx-data.proto). */
enum {
    FIELD_NAME = 1,
    FIELD_ELEM_TYPE = 2,
    FIELD_TENSOR = 3,              /* tensor_values (sequence) / tensor_value (optional) */
    FIELD_SPARSE = 4,
    FIELD_SEQUENCE = 5,
    FIELD_MAP = 6,
    FIELD_OPTIONAL = 7,
};

struct wire {
    const uint8_t *p, *end;
};

static int wire_varint(struct wire *w, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (w->p >= w->end)
            return -1;
        uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

static int value_parse(const uint8_t *buf, size_t len, int kind, const char *dir, int depth, struct onnx_value *out,
                       char *err, size_t size);

static struct onnx_value *value_append(struct onnx_value *v)
{
    struct onnx_value *grown = realloc(v->elems, sizeof *grown * (size_t)(v->n_elems + 1));
    if (!grown)
        return NULL;
    v->elems = grown;
    memset(&grown[v->n_elems], 0, sizeof *grown);
    return &grown[v->n_elems++];
}

/* One element field of a sequence or optional: a tensor, sequence or optional. */
static int element_parse(const uint8_t *buf, size_t len, int field, const char *dir, int depth,
                         struct onnx_value *parent, char *err, size_t size)
{
    if (parent->kind == ONNX_VALUE_OPTIONAL && parent->n_elems)
        return onnx_error(err, size, "optional holds more than one value");
    struct onnx_value *e = value_append(parent);
    if (!e)
        return onnx_error(err, size, "out of memory");
    switch (field) {
    case FIELD_TENSOR:
        e->kind = ONNX_VALUE_TENSOR;
        return onnx_tensor_parse_pb(buf, len, dir, &e->tensor, err, size);
    case FIELD_SEQUENCE:
        return value_parse(buf, len, ONNX_VALUE_SEQUENCE, dir, depth + 1, e, err, size);
    case FIELD_OPTIONAL:
        return value_parse(buf, len, ONNX_VALUE_OPTIONAL, dir, depth + 1, e, err, size);
    default:
        parent->n_elems--;
        return onnx_error(err, size, "sparse-tensor and map elements are not supported");
    }
}

static int value_parse(const uint8_t *buf, size_t len, int kind, const char *dir, int depth, struct onnx_value *out,
                       char *err, size_t size)
{
    out->kind = kind;
    if (depth > VALUE_MAX_DEPTH)
        return onnx_error(err, size, "values nested more than %d deep", VALUE_MAX_DEPTH);
    struct wire w = { buf, buf + len };
    while (w.p < w.end) {
        uint64_t key, n;
        if (wire_varint(&w, &key))
            return onnx_error(err, size, "truncated field key");
        int field = (int)(key >> 3), type = (int)(key & 7);
        switch (type) {
        case 0:
            if (wire_varint(&w, &n))
                return onnx_error(err, size, "truncated varint in field %d", field);
            break;
        case 1:
        case 5: {
            size_t skip = type == 1 ? 8 : 4;
            if ((size_t)(w.end - w.p) < skip)
                return onnx_error(err, size, "truncated fixed-size field %d", field);
            w.p += skip;
            break;
        }
        case 2: {
            if (wire_varint(&w, &n) || n > (uint64_t)(w.end - w.p))
                return onnx_error(err, size, "field %d runs past the end of the data", field);
            const uint8_t *body = w.p;
            w.p += n;
            if (field >= FIELD_TENSOR && field <= FIELD_OPTIONAL &&
                element_parse(body, (size_t)n, field, dir, depth, out, err, size))
                return -1;
            break;
        }
        default:
            return onnx_error(err, size, "unknown wire type %d in field %d", type, field);
        }
    }
    return 0;
}

int onnx_value_load(const char *path, int kind, struct onnx_value *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (kind == ONNX_VALUE_TENSOR) {
        out->kind = kind;
        return onnx_tensor_load(path, &out->tensor, err, err_size);
    }
    if (kind != ONNX_VALUE_SEQUENCE && kind != ONNX_VALUE_OPTIONAL)
        return onnx_error(err, err_size, "%s: only tensors, sequences and optionals can be read", path);
    uint8_t *buf;
    size_t len;
    if (onnx_file_read(path, &buf, &len, err, err_size) != 0)
        return -1;
    char *dir = onnx_dirname(path);
    int rc = dir ? value_parse(buf, len, kind, dir, 0, out, err, err_size) : onnx_error(err, err_size, "out of memory");
    free(dir);
    free(buf);
    if (rc) {
        onnx_value_clear(out);
        return onnx_error_prefix(err, err_size, "%s: not a valid %s", path,
                                 kind == ONNX_VALUE_SEQUENCE ? "SequenceProto" : "OptionalProto");
    }
    return 0;
}

void onnx_value_clear(struct onnx_value *v)
{
    if (!v)
        return;
    onnx_tensor_clear(&v->tensor);
    for (int i = 0; i < v->n_elems; i++)
        onnx_value_clear(&v->elems[i]);
    free(v->elems);
    memset(v, 0, sizeof *v);
}
