/* ops/string_normalizer.c — StringNormalizer (10) on STRING tensors (see
 * ops/string-impl.h): drops the elements equal to a stopword (compared
 * case-insensitively unless is_case_sensitive), then maps case
 * (case_change_action NONE, LOWER, UPPER; op_utf8_case); input [C] or
 * [1, C], output [C'] or [1, C'], or one "" ([1] / [1, 1]) when every
 * element is dropped. `locale` is accepted and not read (no
 * locale-specific rules); no accent stripping. The output shape depends on
 * the values, so infer reads X on the host (host_inputs). Not
 * differentiable; on a device it runs on host copies (op_host_bridge). */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/string-impl.h"

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
    if (op_string_need(c, 0, "X"))
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
