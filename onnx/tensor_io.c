/* onnx/tensor_io.c — single tensors from and to files: ONNX TensorProto .pb
 * (read and written) and NumPy .npy (read), told apart by content. */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx-impl.h"

static const char NPY_MAGIC[6] = {(char)0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Position just after `key`'s ':' in a .npy header dict, or NULL. */
static const char *npy_value(const char *h, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = h; (p = strstr(p, key)) != NULL; p += kl) {
        if (p == h || (p[-1] != '\'' && p[-1] != '"') || (p[kl] != '\'' && p[kl] != '"'))
            continue;
        const char *q = p + kl + 1;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != ':')
            continue;
        q++;
        while (isspace((unsigned char)*q))
            q++;
        return q;
    }
    return NULL;
}

static int npy_dtype(const char *descr, int *dtype, char *err, size_t size)
{
    static const struct { const char *code; int dtype; } table[] = {
        {"f4", ONNX_DTYPE_FLOAT}, {"f8", ONNX_DTYPE_DOUBLE}, {"f2", ONNX_DTYPE_FLOAT16},
        {"i8", ONNX_DTYPE_INT64}, {"i4", ONNX_DTYPE_INT32}, {"i2", ONNX_DTYPE_INT16},
        {"i1", ONNX_DTYPE_INT8}, {"u1", ONNX_DTYPE_UINT8}, {"u2", ONNX_DTYPE_UINT16},
        {"u4", ONNX_DTYPE_UINT32}, {"u8", ONNX_DTYPE_UINT64}, {"b1", ONNX_DTYPE_BOOL},
        {"c8", ONNX_DTYPE_COMPLEX64}, {"c16", ONNX_DTYPE_COMPLEX128},
    };
    char order = descr[0];
    if (order != '<' && order != '|' && order != '=' && order != '>')
        return onnx_error(err, size, "unsupported .npy dtype '%s'", descr);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(descr + 1, table[i].code) != 0)
            continue;
        if (order == '>' && onnx_dtype_size(table[i].dtype) > 1)
            return onnx_error(err, size, "big-endian .npy dtype '%s' is not supported", descr);
        *dtype = table[i].dtype;
        return 0;
    }
    return onnx_error(err, size, "unsupported .npy dtype '%s'", descr);
}

static int npy_parse(const uint8_t *buf, size_t len, struct onnx_tensor *out, char *err, size_t size)
{
    if (len < 10)
        return onnx_error(err, size, "truncated .npy header");
    unsigned major = buf[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return onnx_error(err, size, "truncated .npy header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        return onnx_error(err, size, "unsupported .npy format version %u", major);
    }
    if (hlen > len - hoff)
        return onnx_error(err, size, "truncated .npy header (%zu bytes declared, %zu present)", hlen, len - hoff);
    char *h = malloc(hlen + 1);
    if (!h)
        return onnx_error(err, size, "out of memory");
    memcpy(h, buf + hoff, hlen);
    h[hlen] = 0;

    int rc = -1;
    const char *v = npy_value(h, "descr");
    char descr[16];
    size_t dl = 0;
    if (!v || (*v != '\'' && *v != '"')) {
        onnx_error(err, size, ".npy header has no 'descr'");
        goto done;
    }
    for (const char *q = v + 1; *q && *q != *v; q++) {
        if (dl + 1 >= sizeof descr) {
            onnx_error(err, size, "unsupported .npy dtype (structured or too long)");
            goto done;
        }
        descr[dl++] = *q;
    }
    descr[dl] = 0;
    int dtype;
    if (npy_dtype(descr, &dtype, err, size) != 0)
        goto done;
    v = npy_value(h, "fortran_order");
    if (!v) {
        onnx_error(err, size, ".npy header has no 'fortran_order'");
        goto done;
    }
    if (strncmp(v, "True", 4) == 0) {
        onnx_error(err, size, ".npy array is in Fortran (column-major) order; save it C-ordered (np.ascontiguousarray)");
        goto done;
    }
    if (strncmp(v, "False", 5) != 0) {
        onnx_error(err, size, ".npy header has a malformed 'fortran_order'");
        goto done;
    }
    v = npy_value(h, "shape");
    if (!v || *v != '(') {
        onnx_error(err, size, ".npy header has no 'shape' tuple");
        goto done;
    }
    int rank = 0;
    int64_t numel = 1;
    const char *q = v + 1;
    for (;;) {
        while (isspace((unsigned char)*q))
            q++;
        if (*q == ')')
            break;
        if (!isdigit((unsigned char)*q)) {
            onnx_error(err, size, ".npy header has a malformed 'shape'");
            goto done;
        }
        int64_t d = 0;
        while (isdigit((unsigned char)*q)) {
            if (d > ONNX_MAX_NUMEL) {
                onnx_error(err, size, ".npy shape has an absurd dimension");
                goto done;
            }
            d = d * 10 + (*q++ - '0');
        }
        if (*q == 'L')
            q++;
        if (rank >= ONNX_MAX_RANK) {
            onnx_error(err, size, ".npy rank exceeds the maximum of %d", ONNX_MAX_RANK);
            goto done;
        }
        if (d > ONNX_MAX_NUMEL || (d && numel > ONNX_MAX_NUMEL / d)) {
            onnx_error(err, size, ".npy shape is absurd (more than 2^40 elements)");
            goto done;
        }
        numel *= d;
        out->dims[rank++] = d;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == ',')
            q++;
        else if (*q != ')') {
            onnx_error(err, size, ".npy header has a malformed 'shape'");
            goto done;
        }
    }
    out->dtype = dtype;
    out->rank = rank;
    size_t bytes = (size_t)numel * onnx_dtype_size(dtype);
    size_t have = len - hoff - hlen;
    if (have != bytes) {
        char shape[160];
        onnx_error(err, size, ".npy data has %zu bytes, expected %zu for %s%s", have, bytes,
                   onnx_shape_describe(dtype, rank, out->dims, shape, sizeof shape),
                   have < bytes ? " (truncated)" : "");
        goto done;
    }
    out->data = malloc(bytes ? bytes : 1);
    out->name = strdup("");
    if (!out->data || !out->name) {
        onnx_error(err, size, "out of memory");
        goto done;
    }
    if (bytes)
        memcpy(out->data, buf + hoff + hlen, bytes);
    out->size_bytes = bytes;
    rc = 0;
done:
    free(h);
    if (rc != 0)
        onnx_tensor_clear(out);
    return rc;
}

int onnx_tensor_parse_pb(const uint8_t *buf, size_t len, const char *base_dir, struct onnx_tensor *out,
                         char *err, size_t size)
{
    if (onnx_proto_check(buf, len, &onnx__tensor_proto__descriptor, err, size) != 0)
        return onnx_error_prefix(err, size, "not a valid TensorProto");
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp)
        return onnx_error(err, size, "not a valid TensorProto: protobuf decoding failed (corrupt or truncated file)");
    int rc = onnx_tensor_from_proto(tp, base_dir, out, err, size);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return rc;
}

int onnx_tensor_load(const char *path, struct onnx_tensor *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    uint8_t *buf;
    size_t len;
    if (onnx_file_read(path, &buf, &len, err, err_size) != 0)
        return -1;
    int rc;
    if (len >= sizeof NPY_MAGIC && memcmp(buf, NPY_MAGIC, sizeof NPY_MAGIC) == 0) {
        rc = npy_parse(buf, len, out, err, err_size);
    } else if (len == 0) {
        rc = onnx_error(err, err_size, "empty file: neither a TensorProto nor a .npy array");
    } else {
        char *dir = onnx_dirname(path);
        rc = dir ? onnx_tensor_parse_pb(buf, len, dir, out, err, err_size) : onnx_error(err, err_size, "out of memory");
        free(dir);
    }
    free(buf);
    if (rc != 0)
        return onnx_error_prefix(err, err_size, "%s", path);
    return 0;
}

int onnx_tensor_save(const struct onnx_tensor *t, const char *path, char *err, size_t err_size)
{
    size_t esize = onnx_dtype_size(t->dtype);
    if (esize == 0)
        return onnx_error(err, err_size, "%s: cannot save tensor '%s' of type %s", path, t->name ? t->name : "",
                          onnx_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > ONNX_MAX_RANK)
        return onnx_error(err, err_size, "%s: tensor '%s' has invalid rank %d", path, t->name ? t->name : "", t->rank);
    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0 || (t->dims[i] && numel > ONNX_MAX_NUMEL / t->dims[i]))
            return onnx_error(err, err_size, "%s: tensor '%s' has invalid dims", path, t->name ? t->name : "");
        numel *= t->dims[i];
    }
    size_t bytes = (size_t)numel * esize;
    if (bytes && !t->data)
        return onnx_error(err, err_size, "%s: tensor '%s' has no data", path, t->name ? t->name : "");
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[ONNX_MAX_RANK];
    memcpy(dims, t->dims, sizeof dims);
    tp.n_dims = (size_t)t->rank;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = t->dtype;
    tp.name = (char *)(t->name ? t->name : "");
    ProtobufCBinaryData *strings = NULL;
    if (t->dtype == ONNX_DTYPE_STRING) {
        const struct onnx_string *h = t->data;
        if (!(strings = malloc((size_t)(numel ? numel : 1) * sizeof *strings)))
            return onnx_error(err, err_size, "%s: out of memory", path);
        for (int64_t i = 0; i < numel; i++)
            strings[i] = (ProtobufCBinaryData){ .len = h[i].len, .data = (uint8_t *)h[i].data };
        tp.n_string_data = (size_t)numel;
        tp.string_data = strings;
    } else {
        tp.has_raw_data = 1;
        tp.raw_data.len = bytes;
        tp.raw_data.data = (uint8_t *)t->data;
    }
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        free(strings);
        return onnx_error(err, err_size, "%s: out of memory", path);
    }
    onnx__tensor_proto__pack(&tp, buf);
    free(strings);
    int rc = onnx_file_write(path, buf, n, err, err_size);
    free(buf);
    return rc;
}
