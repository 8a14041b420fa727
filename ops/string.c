/* ops/string.c — what the string operators share (representation: see
 * ops/string-impl.h): op_string_set, UTF-8 case mapping, the string-input
 * check; and the element-wise string operators:
 *
 * StringConcat (20): X + Y element-wise, numpy broadcasting.
 * Equal (19) on strings: op_string_equal_cpu, called from compare.c.
 *
 * StringNormalizer is in ops/string_normalizer.c, StringSplit in
 * ops/string_split.c, RegexFullMatch in ops/regex.c. Not differentiable; on
 * a device they run on host copies (op_host_bridge). */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/string-impl.h"

int op_string_set(struct op_call *c, struct tensor *t, int64_t i, const char *bytes, size_t len)
{
    struct op_env *env = c->env;
    const char *p = env && env->string_intern ? env->string_intern(env->ctx, bytes, len) : NULL;
    if (!p)
        return op_error(c, env && env->string_intern ? "out of host memory for the string heap"
                                                    : "no string heap to write string outputs into");
    ((struct onnx_string *)t->data)[i] = (struct onnx_string){ .data = p, .len = len };
    return 0;
}

/* ---- UTF-8 case mapping ----------------------------------------------------- */

static uint32_t cp_upper(uint32_t c)
{
    if (c >= 'a' && c <= 'z')
        return c - 32;
    if (c < 0x80)
        return c;
    if ((c >= 0xe0 && c <= 0xfe && c != 0xf7))
        return c - 0x20;
    if (c == 0xff)
        return 0x178;
    if (c == 0x131)
        return 'I';
    if (c == 0x17f)
        return 'S';
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return c & ~1u;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
        return (c & 1) ? c : c - 1;
    if (c == 0x3c2)
        return 0x3a3;
    if ((c >= 0x3b1 && c <= 0x3c9) || (c >= 0x430 && c <= 0x44f))
        return c - 0x20;
    if (c >= 0x450 && c <= 0x45f)
        return c - 0x50;
    return c;
}

static uint32_t cp_lower(uint32_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if (c < 0x80)
        return c;
    if (c >= 0xc0 && c <= 0xde && c != 0xd7)
        return c + 0x20;
    if (c == 0x178)
        return 0xff;
    if (c == 0x130)
        return 'i';
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return c | 1u;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
        return (c & 1) ? c + 1 : c;
    if ((c >= 0x391 && c <= 0x3a9 && c != 0x3a2) || (c >= 0x410 && c <= 0x42f))
        return c + 0x20;
    if (c >= 0x400 && c <= 0x40f)
        return c + 0x50;
    return c;
}

/* One code point at p (n bytes left): its value and length; an invalid
 * sequence reads as one byte, len 0 (passed through unchanged). */
static uint32_t utf8_decode(const unsigned char *p, size_t n, size_t *len)
{
    *len = 0;
    if (p[0] < 0x80) {
        *len = 1;
        return p[0];
    }
    int k = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!k || (size_t)k > n)
        return p[0];
    uint32_t c = p[0] & (0x7f >> k);
    for (int i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return p[0];
        c = c << 6 | (p[i] & 0x3f);
    }
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < min[k] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return p[0];
    *len = (size_t)k;
    return c;
}

static size_t utf8_encode(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3f));
    out[2] = (char)(0x80 | (c >> 6 & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

size_t op_utf8_case(const struct onnx_string *s, int upper, char *out)
{
    const unsigned char *p = (const unsigned char *)s->data;
    size_t w = 0;
    for (size_t i = 0; i < s->len;) {
        size_t len;
        uint32_t c = utf8_decode(p + i, s->len - i, &len);
        if (!len) {
            out[w++] = (char)p[i++];
            continue;
        }
        w += utf8_encode(upper ? cp_upper(c) : cp_lower(c), out + w);
        i += len;
    }
    return w;
}

/* ---- shared checks and broadcasting ---------------------------------------- */

int op_string_need(struct op_call *c, int i, const char *what)
{
    if (c->in[i]->dtype != ONNX_DTYPE_STRING)
        return op_error(c, "%s is %s; it must be a string tensor", what, onnx_dtype_name(c->in[i]->dtype));
    return 0;
}

/* Element offsets into a and b of output element i of the broadcast. */
static void bcast_offsets(const struct tensor *out, const int64_t *sa, const int64_t *sb, int64_t i, int64_t *oa,
                          int64_t *ob)
{
    *oa = *ob = 0;
    for (int d = out->rank - 1; d >= 0; d--) {
        int64_t k = out->dims[d] ? i % out->dims[d] : 0;
        i = out->dims[d] ? i / out->dims[d] : 0;
        *oa += k * sa[d];
        *ob += k * sb[d];
    }
}

static int string_binary_infer(struct op_call *c, int out_dtype)
{
    if (op_string_need(c, 0, "input 0") || op_string_need(c, 1, "input 1"))
        return -1;
    char err[256];
    if (broadcast_shape(c->in, 2, c->out[0], err, sizeof err))
        return op_error(c, "%s", err);
    c->out[0]->dtype = out_dtype;
    c->out[0]->data = NULL;
    return 0;
}

int op_string_equal_cpu(struct op_call *c)
{
    struct tensor *y = c->out[0];
    int64_t sa[TENSOR_MAX_RANK], sb[TENSOR_MAX_RANK];
    broadcast_strides(c->in[0], y, sa);
    broadcast_strides(c->in[1], y, sb);
    int64_t n = tensor_numel(y);
    for (int64_t i = 0; i < n; i++) {
        int64_t a, b;
        bcast_offsets(y, sa, sb, i, &a, &b);
        ((uint8_t *)y->data)[i] = (uint8_t)op_string_eq(op_string_at(c->in[0], a), op_string_at(c->in[1], b));
    }
    return 0;
}

/* ---- StringConcat -------------------------------------------------------- */

static int concat_infer(struct op_call *c) { return string_binary_infer(c, ONNX_DTYPE_STRING); }

static int concat_cpu(struct op_call *c)
{
    struct tensor *y = c->out[0];
    int64_t sa[TENSOR_MAX_RANK], sb[TENSOR_MAX_RANK];
    broadcast_strides(c->in[0], y, sa);
    broadcast_strides(c->in[1], y, sb);
    int64_t n = tensor_numel(y);
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        int64_t a, b;
        bcast_offsets(y, sa, sb, i, &a, &b);
        const struct onnx_string *x = op_string_at(c->in[0], a), *z = op_string_at(c->in[1], b);
        size_t len = x->len + z->len;
        if (len > cap) {
            char *p = realloc(buf, len);
            if (!p) {
                rc = op_error(c, "out of host memory for a string of %zu bytes", len);
                break;
            }
            buf = p;
            cap = len;
        }
        if (x->len)
            memcpy(buf, x->data, x->len);
        if (z->len)
            memcpy(buf + x->len, z->data, z->len);
        rc = op_string_set(c, y, i, buf, len);
    }
    free(buf);
    return rc;
}

const struct op_def op_string_concat = {
    .domain = "", .name = "StringConcat", .since = { 20 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = concat_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = concat_cpu, [BACKEND_CUDA] = op_host_bridge },
};
