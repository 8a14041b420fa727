/* ops/string.c — operators on STRING tensors (representation: see
 * ops/string-impl.h):
 *
 * StringNormalizer (10): drops the elements equal to a stopword (compared
 * case-insensitively unless is_case_sensitive), then maps case
 * (case_change_action NONE, LOWER, UPPER); input [C] or [1, C], output
 * [C'] or [1, C'], or one "" ([1] / [1, 1]) when every element is dropped.
 * `locale` is accepted and not read (no locale-specific rules); no accent
 * stripping.
 * StringConcat (20): X + Y element-wise, numpy broadcasting.
 * StringSplit (20): each element split at `delimiter` (Python's
 * str.split(delimiter): consecutive delimiters give empty strings), or at
 * runs of whitespace with leading and trailing whitespace ignored when the
 * delimiter is absent or "" (str.split()); at most `maxsplit` splits. Y [..., M] padded
 * with "", Z int64 [...] the count of each.
 * Equal (19) on strings: op_string_equal_cpu, called from compare.c.
 *
 * The output shapes of StringNormalizer and StringSplit depend on the
 * values, so their infer reads input 0 on the host (host_inputs). None is
 * differentiable; on a device they run on host copies (op_host_bridge). */
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

static int need_string(struct op_call *c, int i, const char *what)
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
    if (need_string(c, 0, "input 0") || need_string(c, 1, "input 1"))
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

/* ---- StringNormalizer ------------------------------------------------------ */

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

struct norm_params {
    int action;
    int case_sensitive;
    int n_stops;
    struct onnx_string *stops;     /* lower-cased when not case-sensitive */
    char *stop_bytes;
};

static void norm_free(void *params)
{
    struct norm_params *p = params;
    if (!p)
        return;
    free(p->stops);
    free(p->stop_bytes);
    free(p);
}

static int norm_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    (void)version;
    struct norm_params *p = calloc(1, sizeof *p);
    if (!p)
        return ew_parse_error(err, err_size, "out of memory");
    *params = p;
    const char *action = onnx_node_attr_string(node, "case_change_action", "NONE");
    if (!strcmp(action, "NONE"))
        p->action = CASE_NONE;
    else if (!strcmp(action, "LOWER"))
        p->action = CASE_LOWER;
    else if (!strcmp(action, "UPPER"))
        p->action = CASE_UPPER;
    else
        return ew_parse_error(err, err_size, "case_change_action '%s' is not NONE, LOWER or UPPER", action);
    p->case_sensitive = onnx_node_attr_int(node, "is_case_sensitive", 0) != 0;
    const struct onnx_attr *a = onnx_node_attr(node, "stopwords");
    if (a && a->type != ONNX_ATTR_STRINGS)
        return ew_parse_error(err, err_size, "attribute 'stopwords' must be a list of strings");
    int n = a ? a->n : 0;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += 2 * strlen(a->strings[i]);
    p->stops = calloc((size_t)n + 1, sizeof *p->stops);
    p->stop_bytes = malloc(total + 1);
    if (!p->stops || !p->stop_bytes)
        return ew_parse_error(err, err_size, "out of memory");
    char *w = p->stop_bytes;
    for (int i = 0; i < n; i++) {
        struct onnx_string s = { a->strings[i], strlen(a->strings[i]) };
        size_t len = p->case_sensitive ? (memcpy(w, s.data, s.len), s.len) : op_utf8_case(&s, 0, w);
        p->stops[i] = (struct onnx_string){ w, len };
        w += len;
    }
    p->n_stops = n;
    return 0;
}

/* 1 when element x is a stopword; buf holds 2 * x->len bytes. */
static int is_stop(const struct norm_params *p, const struct onnx_string *x, char *buf)
{
    if (!p->n_stops)
        return 0;
    struct onnx_string key = *x;
    if (!p->case_sensitive) {
        key.len = op_utf8_case(x, 0, buf);
        key.data = buf;
    }
    for (int i = 0; i < p->n_stops; i++)
        if (op_string_eq(&key, &p->stops[i]))
            return 1;
    return 0;
}

static size_t max_len(const struct tensor *x)
{
    size_t m = 0;
    int64_t n = tensor_numel(x);
    for (int64_t i = 0; i < n; i++)
        if (op_string_at(x, i)->len > m)
            m = op_string_at(x, i)->len;
    return m;
}

static int norm_infer(struct op_call *c)
{
    const struct norm_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (need_string(c, 0, "X"))
        return -1;
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1))) {
        char d[96];
        return op_error(c, "X is %s; it must be [C] or [1, C]", tensor_describe(x, d, sizeof d));
    }
    char *buf = malloc(2 * max_len(x) + 1);
    if (!buf)
        return op_error(c, "out of host memory");
    int64_t n = tensor_numel(x), kept = 0;
    for (int64_t i = 0; i < n; i++)
        kept += !is_stop(p, op_string_at(x, i), buf);
    free(buf);
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    c->out[0]->dims[x->rank - 1] = kept ? kept : 1;
    return 0;
}

static int norm_cpu(struct op_call *c)
{
    const struct norm_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    char *buf = malloc(2 * max_len(x) + 1);
    if (!buf)
        return op_error(c, "out of host memory");
    int64_t n = tensor_numel(x), w = 0;
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        const struct onnx_string *s = op_string_at(x, i);
        if (is_stop(p, s, buf))
            continue;
        if (w >= tensor_numel(y)) {
            rc = op_error(c, "more elements kept than shape inference counted");
            break;
        }
        if (p->action == CASE_NONE) {
            ((struct onnx_string *)y->data)[w++] = *s;
            continue;
        }
        size_t len = op_utf8_case(s, p->action == CASE_UPPER, buf);
        rc = op_string_set(c, y, w++, buf, len);
    }
    if (!rc && w == 0 && tensor_numel(y) == 1)
        rc = op_string_set(c, y, 0, "", 0);
    else if (!rc && w != tensor_numel(y))
        rc = op_error(c, "%lld elements kept, shape inference counted %lld", (long long)w,
                      (long long)tensor_numel(y));
    free(buf);
    return rc;
}

const struct op_def op_string_normalizer = {
    .domain = "", .name = "StringNormalizer", .since = { 10 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = norm_parse, .params_free = norm_free, .infer = norm_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = norm_cpu, [BACKEND_CUDA] = op_host_bridge },
    .host_inputs = 1u,
};

/* ---- StringSplit ------------------------------------------------------------ */

struct split_params {
    char *delim;                   /* NULL: split at whitespace runs */
    size_t delim_len;
    int64_t maxsplit;              /* -1: unlimited */
};

static void split_free(void *params)
{
    struct split_params *p = params;
    if (p)
        free(p->delim);
    free(p);
}

static int split_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    (void)version;
    struct split_params *p = calloc(1, sizeof *p);
    if (!p)
        return ew_parse_error(err, err_size, "out of memory");
    *params = p;
    const struct onnx_attr *a = onnx_node_attr(node, "delimiter");
    if (a && a->type != ONNX_ATTR_STRING)
        return ew_parse_error(err, err_size, "attribute 'delimiter' must be a string");
    if (a && a->s_len) {
        if (!(p->delim = malloc(a->s_len)))
            return ew_parse_error(err, err_size, "out of memory");
        memcpy(p->delim, a->s, a->s_len);
        p->delim_len = a->s_len;
    }
    p->maxsplit = -1;
    a = onnx_node_attr(node, "maxsplit");
    if (a) {
        if (a->type != ONNX_ATTR_INT)
            return ew_parse_error(err, err_size, "attribute 'maxsplit' must be an int");
        if (a->i < 0)
            return ew_parse_error(err, err_size, "maxsplit is %lld; it must be >= 0", (long long)a->i);
        p->maxsplit = a->i;
    }
    return 0;
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* The pieces of s (Python's str.split semantics, see the top); when out is
 * not NULL they are written there (at most `cap`). Returns the count. */
static int64_t split_one(const struct split_params *p, const struct onnx_string *s, struct onnx_string *out,
                         int64_t cap)
{
    int64_t n = 0, splits = 0;
    const char *b = s->data, *e = s->data + s->len;
    if (!s->len && !p->delim)
        return 0;
#define PIECE(start, end)                                                       \
    do {                                                                        \
        if (out && n < cap)                                                     \
            out[n] = (struct onnx_string){ (start), (size_t)((end) - (start)) }; \
        n++;                                                                    \
    } while (0)
    if (p->delim) {
        const char *start = b;
        for (const char *q = b; q + p->delim_len <= e;) {
            if ((p->maxsplit < 0 || splits < p->maxsplit) && !memcmp(q, p->delim, p->delim_len)) {
                PIECE(start, q);
                splits++;
                q += p->delim_len;
                start = q;
            } else {
                q++;
            }
        }
        PIECE(start, e);
        return n;
    }
    const char *q = b;
    for (;;) {
        while (q < e && is_space(*q))
            q++;
        if (q == e)
            break;
        if (p->maxsplit >= 0 && splits >= p->maxsplit) {
            PIECE(q, e);        /* the rest, its trailing whitespace kept, as Python does */
            break;
        }
        const char *start = q;
        while (q < e && !is_space(*q))
            q++;
        PIECE(start, q);
        splits++;
    }
#undef PIECE
    return n;
}

static int split_infer(struct op_call *c)
{
    const struct split_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (need_string(c, 0, "X"))
        return -1;
    if (x->rank >= TENSOR_MAX_RANK)
        return op_error(c, "X has rank %d; Y would exceed the maximum rank %d", x->rank, TENSOR_MAX_RANK);
    int64_t n = tensor_numel(x), most = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = split_one(p, op_string_at(x, i), NULL, 0);
        if (k > most)
            most = k;
    }
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    c->out[0]->dims[x->rank] = most;
    c->out[0]->rank = x->rank + 1;
    if (c->n_out > 1 && c->out[1]) {
        *c->out[1] = *x;
        c->out[1]->data = NULL;
        c->out[1]->dtype = ONNX_DTYPE_INT64;
    }
    return 0;
}

static int split_cpu(struct op_call *c)
{
    const struct split_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0], *z = c->n_out > 1 ? c->out[1] : NULL;
    int64_t n = tensor_numel(x), m = y->dims[y->rank - 1];
    struct onnx_string *ys = y->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = split_one(p, op_string_at(x, i), ys + i * m, m);
        if (k > m)
            return op_error(c, "element %lld splits into %lld pieces, shape inference counted %lld", (long long)i,
                            (long long)k, (long long)m);
        for (int64_t j = k; j < m; j++)
            ys[i * m + j] = (struct onnx_string){ "", 0 };
        if (z)
            ((int64_t *)z->data)[i] = k;
    }
    return 0;
}

const struct op_def op_string_split = {
    .domain = "", .name = "StringSplit", .since = { 20 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2,
    .parse = split_parse, .params_free = split_free, .infer = split_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = split_cpu, [BACKEND_CUDA] = op_host_bridge },
    .host_inputs = 1u,
};
