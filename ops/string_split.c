/* ops/string_split.c — StringSplit (20) on STRING tensors (see
 * ops/string-impl.h): each element split at `delimiter` (Python's
 * str.split(delimiter): consecutive delimiters give empty strings), or at
 * runs of whitespace with leading and trailing whitespace ignored when the
 * delimiter is absent or "" (str.split()); at most `maxsplit` splits. Y
 * [..., M] padded with "", Z int64 [...] the count of each. The pieces
 * point into X's bytes (session-lifetime, see runtime/strings.c). The
 * output shape depends on the values, so infer reads X on the host
 * (host_inputs). Not differentiable; on a device it runs on host copies
 * (op_host_bridge). */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/string-impl.h"

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
    if (op_string_need(c, 0, "X"))
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
