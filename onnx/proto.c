/* onnx/proto.c — the protobuf side shared by model and tensor loading:
 * error messages, file I/O, a pre-check of the wire format that bounds
 * nesting before protobuf-c recurses, and TensorProto decoding (typed fields,
 * raw_data, external data with path confinement).
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx-impl.h"

int onnx_error(char *err, size_t size, const char *fmt, ...)
{
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int onnx_error_prefix(char *err, size_t size, const char *fmt, ...)
{
    if (!err || !size)
        return -1;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char *old = strdup(err);
    if (!old)
        return -1;
    /* When the chain of contexts outgrows the buffer, keep the outermost
     * context and the innermost cause and elide the middle. */
    size_t need = strlen(prefix) + 2 + strlen(old);
    if (need < size || size < 64)
        snprintf(err, size, "%s: %s", prefix, old);
    else {
        size_t keep = size - 1 - (strlen(prefix) + 2 + 3);
        if (strlen(prefix) + 2 + 3 >= size - 16)
            keep = 12;
        snprintf(err, size, "%s: ...%s", prefix, old + strlen(old) - keep);
    }
    free(old);
    return -1;
}

char *onnx_strdup(const char *s)
{
    return strdup(s ? s : "");
}

char *onnx_dirname(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = 0;
    }
    return d;
}

int onnx_file_read(const char *path, uint8_t **data, size_t *len, char *err, size_t size)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return onnx_error(err, size, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return onnx_error(err, size, "%s: not a regular file", path);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return onnx_error(err, size, "%s: out of memory reading %zu bytes", path, n);
    }
    if (n && fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        return onnx_error(err, size, "%s: read failed", path);
    }
    fclose(f);
    *data = buf;
    *len = n;
    return 0;
}

int onnx_file_map(const char *path, struct onnx_file_view *v, char *err, size_t size)
{
    memset(v, 0, sizeof *v);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return onnx_error(err, size, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return onnx_error(err, size, "%s: not a regular file", path);
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            v->data = p;
            v->len = (size_t)st.st_size;
            v->mapped = 1;
            return 0;
        }
    }
    close(fd);
    uint8_t *buf;
    if (onnx_file_read(path, &buf, &v->len, err, size) != 0)
        return -1;
    v->data = buf;
    return 0;
}

void onnx_file_unmap(struct onnx_file_view *v)
{
    if (v->mapped)
        munmap((void *)v->data, v->len);
    else
        free((void *)v->data);
    memset(v, 0, sizeof *v);
}

int onnx_file_write(const char *path, const void *data, size_t len, char *err, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return onnx_error(err, size, "%s: cannot create: %s", path, strerror(errno));
    int ok = (len == 0 || fwrite(data, 1, len, f) == len);
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        return onnx_error(err, size, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

/* ---- wire-format pre-check ---------------------------------------------- */

static int read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= len)
            return -1;
        uint8_t b = p[(*pos)++];
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int proto_scan(const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *desc,
                      int depth, size_t base, char *err, size_t size)
{
    if (depth > ONNX_PROTO_MAX_DEPTH)
        return onnx_error(err, size, "protobuf messages nested deeper than %d levels at byte %zu",
                          ONNX_PROTO_MAX_DEPTH, base);
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        uint64_t key, v;
        if (read_varint(p, len, &i, &key) != 0)
            return onnx_error(err, size, "truncated or corrupt protobuf: bad field tag at byte %zu",
                              base + start);
        uint64_t field = key >> 3;
        unsigned wire = (unsigned)(key & 7);
        if (field == 0 || field > 536870911u)
            return onnx_error(err, size, "corrupt protobuf: invalid field number at byte %zu",
                              base + start);
        switch (wire) {
        case 0:
            if (read_varint(p, len, &i, &v) != 0)
                return onnx_error(err, size, "truncated or corrupt protobuf: bad varint at byte %zu",
                                  base + start);
            break;
        case 1:
            if (len - i < 8)
                return onnx_error(err, size, "truncated protobuf: 8-byte field at byte %zu runs past the end",
                                  base + start);
            i += 8;
            break;
        case 5:
            if (len - i < 4)
                return onnx_error(err, size, "truncated protobuf: 4-byte field at byte %zu runs past the end",
                                  base + start);
            i += 4;
            break;
        case 2: {
            if (read_varint(p, len, &i, &v) != 0)
                return onnx_error(err, size, "truncated or corrupt protobuf: bad length at byte %zu",
                                  base + start);
            if (v > len - i)
                return onnx_error(err, size,
                                  "truncated protobuf: field %llu at byte %zu claims %llu bytes, only %zu remain",
                                  (unsigned long long)field, base + start, (unsigned long long)v, len - i);
            const ProtobufCFieldDescriptor *fd =
                desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)field) : NULL;
            if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE &&
                proto_scan(p + i, (size_t)v, fd->descriptor, depth + 1, base + i, err, size) != 0)
                return -1;
            i += (size_t)v;
            break;
        }
        default:
            return onnx_error(err, size, "corrupt protobuf: unsupported wire type %u at byte %zu",
                              wire, base + start);
        }
    }
    return 0;
}

int onnx_proto_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                     char *err, size_t size)
{
    return proto_scan(buf, len, desc, 0, 0, err, size);
}

/* ---- TensorProto decoding ----------------------------------------------- */

const char *onnx_shape_describe(int dtype, int rank, const int64_t *dims, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "%s[", onnx_dtype_name(dtype));
    for (int i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* Element type, rank and dims of tp into out, with every dimension checked. */
static int tensor_header(const Onnx__TensorProto *tp, const char *name, struct onnx_tensor *out,
                         int64_t *numel, char *err, size_t size)
{
    if (!tp->has_data_type || tp->data_type == ONNX_DTYPE_UNDEFINED)
        return onnx_error(err, size, "tensor '%s': no data type", name);
    if (tp->n_dims > ONNX_MAX_RANK)
        return onnx_error(err, size, "tensor '%s': rank %zu exceeds the maximum of %d", name,
                          tp->n_dims, ONNX_MAX_RANK);
    int64_t n = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0)
            return onnx_error(err, size, "tensor '%s': dimension %zu is negative (%lld)", name, i,
                              (long long)d);
        if (d > ONNX_MAX_NUMEL || (d && n > ONNX_MAX_NUMEL / d))
            return onnx_error(err, size, "tensor '%s': absurd dims (more than 2^40 elements)", name);
        n *= d;
        out->dims[i] = d;
    }
    out->dtype = tp->data_type;
    out->rank = (int)tp->n_dims;
    *numel = n;
    return 0;
}

static int is_path_sep(char c) { return c == '/' || c == '\\'; }

/* External data must stay inside the model's directory: no absolute paths,
 * no ".." that climbs above it (a/../data.bin is data.bin, resolved
 * lexically), and (after resolving symbolic links) a real path below it. */
static int external_path(const char *base_dir, const char *loc, const char *name, char **out,
                         char *err, size_t size)
{
    *out = NULL;
    if (!base_dir)
        return onnx_error(err, size,
                          "tensor '%s': external data '%s' but the model has no directory (loaded from a buffer)",
                          name, loc);
    if (!loc[0])
        return onnx_error(err, size, "tensor '%s': external data with an empty location", name);
    if (is_path_sep(loc[0]) || (loc[0] && loc[1] == ':'))
        return onnx_error(err, size, "tensor '%s': external data location '%s' is an absolute path",
                          name, loc);
    /* the location's components with "." dropped and ".." taken back */
    size_t ll = strlen(loc), bl0 = strlen(base_dir);
    char *rel = malloc(ll + 1);
    size_t *starts = malloc((ll + 1) * sizeof *starts);
    if (!rel || !starts) {
        free(rel);
        free(starts);
        return onnx_error(err, size, "tensor '%s': out of memory", name);
    }
    size_t used = 0, depth = 0;
    for (const char *c = loc; *c;) {
        const char *e = c;
        while (*e && !is_path_sep(*e))
            e++;
        size_t len = (size_t)(e - c);
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            if (!depth) {
                free(rel);
                free(starts);
                return onnx_error(err, size,
                                  "tensor '%s': external data location '%s' escapes the model directory ('..')",
                                  name, loc);
            }
            used = starts[--depth];
        } else if (len && !(len == 1 && c[0] == '.')) {
            starts[depth++] = used;
            if (used)
                rel[used++] = '/';
            memcpy(rel + used, c, len);
            used += len;
        }
        c = *e ? e + 1 : e;
    }
    rel[used] = 0;
    free(starts);
    if (!used) {
        free(rel);
        return onnx_error(err, size, "tensor '%s': external data location '%s' names the model directory itself",
                          name, loc);
    }
    size_t n = bl0 + used + 2;
    char *full = malloc(n);
    if (!full) {
        free(rel);
        return onnx_error(err, size, "tensor '%s': out of memory", name);
    }
    snprintf(full, n, "%s/%s", base_dir, rel);
    free(rel);
    char *real_base = realpath(base_dir, NULL);
    char *real_file = realpath(full, NULL);
    if (!real_file) {
        int e = errno;
        free(real_base);
        onnx_error(err, size, "tensor '%s': external data file '%s' missing: %s", name, full, strerror(e));
        free(full);
        return -1;
    }
    size_t bl = real_base ? strlen(real_base) : 0;
    int inside = real_base && strncmp(real_file, real_base, bl) == 0 &&
                 (real_file[bl] == '/' || (bl == 1 && real_base[0] == '/'));
    free(real_base);
    free(real_file);
    if (!inside) {
        onnx_error(err, size, "tensor '%s': external data file '%s' resolves outside the model directory",
                   name, full);
        free(full);
        return -1;
    }
    *out = full;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

/* Checks the external-data fields, resolves and opens the file, and checks
 * that it holds `bytes` at the offset: all before anything is allocated for
 * the tensor. Returns the open descriptor, or -1 with the message. */
static int external_open(const Onnx__TensorProto *tp, const char *base_dir, const char *name, size_t bytes,
                         uint64_t *offset_out, char **path_out, char *err, size_t size)
{
    const char *loc = NULL;
    uint64_t offset = 0, length = 0;
    int has_length = 0;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        const char *k = kv->key ? kv->key : "";
        if (strcmp(k, "location") == 0)
            loc = kv->value ? kv->value : "";
        else if (strcmp(k, "offset") == 0) {
            if (parse_u64(kv->value, &offset) != 0)
                return onnx_error(err, size, "tensor '%s': external data offset '%s' is not a number",
                                  name, kv->value ? kv->value : "");
        } else if (strcmp(k, "length") == 0) {
            if (parse_u64(kv->value, &length) != 0)
                return onnx_error(err, size, "tensor '%s': external data length '%s' is not a number",
                                  name, kv->value ? kv->value : "");
            has_length = 1;
        }
    }
    if (!loc)
        return onnx_error(err, size, "tensor '%s': external data without a location", name);
    if (has_length && length != bytes)
        return onnx_error(err, size, "tensor '%s': external data length %llu does not match %zu bytes of its dims",
                          name, (unsigned long long)length, bytes);
    char *path;
    if (external_path(base_dir, loc, name, &path, err, size) != 0)
        return -1;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        onnx_error(err, size, "tensor '%s': cannot open external data file '%s'", name, path);
        if (fd >= 0)
            close(fd);
        free(path);
        return -1;
    }
    uint64_t fsize = (uint64_t)st.st_size;
    if (offset > fsize || bytes > fsize - offset) {
        onnx_error(err, size,
                   "tensor '%s': external data file '%s' too short: %llu bytes, need %zu at offset %llu",
                   name, path, (unsigned long long)fsize, bytes, (unsigned long long)offset);
        close(fd);
        free(path);
        return -1;
    }
    *offset_out = offset;
    *path_out = path;
    return fd;
}

static int external_read(int fd, const char *path, uint64_t offset, const char *name, void *dst, size_t bytes,
                         char *err, size_t size)
{
    size_t done = 0;
    while (done < bytes) {
        ssize_t r = pread(fd, (char *)dst + done, bytes - done, (off_t)(offset + done));
        if (r <= 0)
            return onnx_error(err, size, "tensor '%s': reading external data file '%s' failed", name, path);
        done += (size_t)r;
    }
    return 0;
}

static int count_error(const char *name, const char *field, size_t have, int64_t want,
                       const char *shape, char *err, size_t size)
{
    if (have == 0)
        return onnx_error(err, size, "tensor '%s': no data for %s (expected %lld values)", name, shape,
                          (long long)want);
    return onnx_error(err, size, "tensor '%s': %s holds %zu values, expected %lld for %s", name, field,
                      have, (long long)want, shape);
}

/* A STRING tensor's string_data as handles followed by the bytes, in one
 * block (see struct onnx_tensor). */
static int strings_from_proto(const Onnx__TensorProto *tp, const char *name, int64_t numel, const char *shape,
                              struct onnx_tensor *out, char *err, size_t size)
{
    if (tp->has_raw_data || (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return onnx_error(err, size, "tensor '%s': a string tensor keeps its values in string_data, not in raw or "
                          "external data", name);
    if (tp->n_string_data != (size_t)numel)
        return count_error(name, "string_data", tp->n_string_data, numel, shape, err, size);
    size_t handles = (size_t)numel * sizeof(struct onnx_string), total = handles;
    for (size_t i = 0; i < tp->n_string_data; i++) {
        if (tp->string_data[i].len > ONNX_MAX_NUMEL || total > ONNX_MAX_NUMEL)
            return onnx_error(err, size, "tensor '%s': string_data is absurdly large", name);
        total += tp->string_data[i].len;
    }
    if (!(out->data = malloc(total ? total : 1)))
        return onnx_error(err, size, "tensor '%s': out of memory allocating %zu bytes", name, total);
    struct onnx_string *h = out->data;
    char *bytes = (char *)out->data + handles;
    for (size_t i = 0; i < tp->n_string_data; i++) {
        size_t len = tp->string_data[i].len;
        if (len)
            memcpy(bytes, tp->string_data[i].data, len);
        h[i] = (struct onnx_string){ .data = bytes, .len = len };
        bytes += len;
    }
    return 0;
}

int onnx_tensor_from_proto(Onnx__TensorProto *tp, const char *base_dir, struct onnx_tensor *out,
                           char *err, size_t size)
{
    memset(out, 0, sizeof *out);
    const char *name = tp->name ? tp->name : "";
    int64_t numel = 0;
    if (tensor_header(tp, name, out, &numel, err, size) != 0)
        return -1;
    char shape[160];
    onnx_shape_describe(out->dtype, out->rank, out->dims, shape, sizeof shape);
    size_t esize = onnx_dtype_size(out->dtype);
    if (esize == 0)
        return onnx_error(err, size, "tensor '%s': data type %s (%d) is not supported", name,
                          onnx_dtype_name(out->dtype), out->dtype);
    if (tp->segment)
        return onnx_error(err, size, "tensor '%s': segmented tensors are not supported", name);
    /* numel <= 2^40 and esize <= 16, so this cannot overflow a 64-bit size_t. */
    size_t bytes = (size_t)numel * esize;
    out->name = onnx_strdup(name);
    if (!out->name)
        return onnx_error(err, size, "tensor '%s': out of memory", name);
    out->size_bytes = bytes;
    if (out->dtype == ONNX_DTYPE_STRING) {
        if (strings_from_proto(tp, name, numel, shape, out, err, size) == 0)
            return 0;
        onnx_tensor_clear(out);
        return -1;
    }

    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        uint64_t offset = 0;
        char *path = NULL;
        int fd = external_open(tp, base_dir, name, bytes, &offset, &path, err, size);
        if (fd < 0)
            goto fail;
        out->data = malloc(bytes ? bytes : 1);
        int rc = !out->data ? onnx_error(err, size, "tensor '%s': out of memory for %zu bytes", name, bytes)
                            : external_read(fd, path, offset, name, out->data, bytes, err, size);
        close(fd);
        free(path);
        if (rc != 0)
            goto fail;
        return 0;
    }
    if (tp->has_raw_data) {
        if (tp->raw_data.len != bytes) {
            onnx_error(err, size, "tensor '%s': raw_data has %zu bytes, expected %zu for %s", name,
                       tp->raw_data.len, bytes, shape);
            goto fail;
        }
        if (bytes && tp->raw_data.data) {
            /* protobuf-c gives every bytes field its own malloc'ed buffer, so
             * it can be taken over instead of copying large weights. */
            out->data = tp->raw_data.data;
            tp->raw_data.data = NULL;
            tp->raw_data.len = 0;
            tp->has_raw_data = 0;
            return 0;
        }
        out->data = malloc(1);
        if (!out->data)
            goto oom;
        return 0;
    }

    /* Typed fields: check the element count before allocating, so absurd dims
     * with little data fail without a huge allocation. */
    size_t want = (size_t)numel;
    size_t have;
    const char *field;
    switch (out->dtype) {
    case ONNX_DTYPE_FLOAT: have = tp->n_float_data; field = "float_data"; break;
    case ONNX_DTYPE_COMPLEX64: have = tp->n_float_data; field = "float_data"; want *= 2; break;
    case ONNX_DTYPE_DOUBLE: have = tp->n_double_data; field = "double_data"; break;
    case ONNX_DTYPE_COMPLEX128: have = tp->n_double_data; field = "double_data"; want *= 2; break;
    case ONNX_DTYPE_INT64: have = tp->n_int64_data; field = "int64_data"; break;
    case ONNX_DTYPE_UINT32:
    case ONNX_DTYPE_UINT64: have = tp->n_uint64_data; field = "uint64_data"; break;
    default: have = tp->n_int32_data; field = "int32_data"; break;
    }
    if (have != want) {
        count_error(name, field, have, (int64_t)want, shape, err, size);
        goto fail;
    }
    out->data = malloc(bytes ? bytes : 1);
    if (!out->data)
        goto oom;
    /* Empty tensors have no typed values (their arrays may be NULL). */
    switch (want ? out->dtype : ONNX_DTYPE_UNDEFINED) {
    case ONNX_DTYPE_UNDEFINED:
        break;
    case ONNX_DTYPE_FLOAT:
    case ONNX_DTYPE_COMPLEX64:
        memcpy(out->data, tp->float_data, bytes);
        break;
    case ONNX_DTYPE_DOUBLE:
    case ONNX_DTYPE_COMPLEX128:
        memcpy(out->data, tp->double_data, bytes);
        break;
    case ONNX_DTYPE_INT64:
        memcpy(out->data, tp->int64_data, bytes);
        break;
    case ONNX_DTYPE_UINT64:
        memcpy(out->data, tp->uint64_data, bytes);
        break;
    case ONNX_DTYPE_UINT32:
        for (size_t i = 0; i < want; i++)
            ((uint32_t *)out->data)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case ONNX_DTYPE_INT32:
        memcpy(out->data, tp->int32_data, bytes);
        break;
    /* The narrow types sit one element per int32 (float16/bfloat16 as their
     * bit patterns), per the TensorProto spec. */
    case ONNX_DTYPE_INT16:
    case ONNX_DTYPE_UINT16:
    case ONNX_DTYPE_FLOAT16:
    case ONNX_DTYPE_BFLOAT16:
        for (size_t i = 0; i < want; i++)
            ((uint16_t *)out->data)[i] = (uint16_t)tp->int32_data[i];
        break;
    case ONNX_DTYPE_INT8:
    case ONNX_DTYPE_UINT8:
        for (size_t i = 0; i < want; i++)
            ((uint8_t *)out->data)[i] = (uint8_t)tp->int32_data[i];
        break;
    case ONNX_DTYPE_BOOL:
        for (size_t i = 0; i < want; i++)
            ((uint8_t *)out->data)[i] = tp->int32_data[i] != 0;
        break;
    default:
        onnx_error(err, size, "tensor '%s': data type %s is not supported", name, onnx_dtype_name(out->dtype));
        goto fail;
    }
    return 0;
oom:
    onnx_error(err, size, "tensor '%s': out of memory allocating %zu bytes", name, bytes);
fail:
    onnx_tensor_clear(out);
    return -1;
}
