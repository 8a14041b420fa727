/* ops/regex.c — RegexFullMatch (20): Y[i] = whether the whole of X[i]
 * matches `pattern`.
 *
 * ONNX specifies RE2 syntax; this runs POSIX extended regular expressions
 * (glibc regcomp/regexec) on a translation of the pattern: \d \D \w \W \s
 * \S become bracket expressions (also inside brackets: [\w.\-] is
 * [[:alnum:]_.-]), \b \B stay (glibc's GNU operators), escaped punctuation
 * and \t \n \r \f \v become literals, . becomes [^\n] (RE2's . stops at a
 * newline), (?: becomes (, and the whole is
 * anchored as ^(...)$ for the full match. RE2 features the translation
 * does not cover (lazy quantifiers, flags such as (?i), named groups, \pN
 * and other letter escapes) are refused at load with a message naming the
 * node, as is a pattern regcomp rejects. Matching is byte-wise, with ASCII classes, as
 * RE2's \w \d \s are. Not differentiable; host kernel (op_host_bridge on a
 * device). */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/string-impl.h"

struct regex_params {
    regex_t re;
    int compiled;
};

static void regex_free(void *params)
{
    struct regex_params *p = params;
    if (p && p->compiled)
        regfree(&p->re);
    free(p);
}

/* The bracket-expression body of a class escape (\d \w \s), or NULL. */
static const char *class_body(char ch)
{
    switch (ch) {
    case 'd': case 'D': return "0-9";
    case 'w': case 'W': return "[:alnum:]_";
    case 's': case 'S': return "[:space:]";
    default: return NULL;
    }
}

static int literal_escape(char ch, char *out)
{
    switch (ch) {
    case 't': *out = '\t'; return 1;
    case 'n': *out = '\n'; return 1;
    case 'r': *out = '\r'; return 1;
    case 'f': *out = '\f'; return 1;
    case 'v': *out = '\v'; return 1;
    default:
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
            return 0;
        *out = ch;     /* escaped punctuation */
        return 1;
    }
}

struct buf {
    char *p;
    size_t n, cap;
};

static int put(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = 2 * (b->n + n + 1);
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static int puts_(struct buf *b, const char *s) { return put(b, s, strlen(s)); }

/* A literal character outside brackets, escaped for ERE where needed. */
static int put_literal(struct buf *b, char ch)
{
    if (strchr(".[]()*+?{}|^$\\", ch)) {
        char e[2] = { '\\', ch };
        return put(b, e, 2);
    }
    return put(b, &ch, 1);
}

/* Translates a bracket expression starting after '[' at *i; -1 with err. */
static int translate_bracket(const char *pat, size_t len, size_t *i, struct buf *out, char *err, size_t err_size)
{
    struct buf body = { 0 };
    int negate = 0, has_rbracket = 0, has_dash = 0, has_caret = 0, rc = -1;
    size_t k = *i;
    if (k < len && pat[k] == '^') {
        negate = 1;
        k++;
    }
    int first = 1;
    for (; k < len; first = 0) {
        char ch = pat[k];
        if (ch == ']' && !first)
            break;
        if (ch == '[' && k + 1 < len && pat[k + 1] == ':') {       /* [:alpha:] passes through */
            const char *end = strstr(pat + k + 2, ":]");
            if (!end) {
                ew_parse_error(err, err_size, "pattern: unterminated character class name");
                goto done;
            }
            if (put(&body, pat + k, (size_t)(end + 2 - (pat + k))))
                goto oom;
            k = (size_t)(end + 2 - pat);
            continue;
        }
        char lit = ch;
        if (ch == '\\') {
            if (k + 1 >= len) {
                ew_parse_error(err, err_size, "pattern ends in a backslash");
                goto done;
            }
            char e = pat[k + 1];
            const char *cls = class_body(e);
            if (cls && e >= 'a') {
                if (puts_(&body, cls))
                    goto oom;
                k += 2;
                continue;
            }
            if (cls || !literal_escape(e, &lit)) {
                ew_parse_error(err, err_size, "pattern: \\%c inside [...] is not supported", e);
                goto done;
            }
            k += 2;
        } else {
            k++;
        }
        /* A range a-z (the '-' not last) passes through; lone ']', '-' and
         * '^' are placed where POSIX reads them literally. */
        if (k + 1 < len && pat[k] == '-' && pat[k + 1] != ']' && lit != ']' && lit != '-' && lit != '^') {
            char hi = pat[k + 1];
            size_t step = 2;
            if (hi == '\\' && k + 2 < len && literal_escape(pat[k + 2], &hi))
                step = 3;
            char r[3] = { lit, '-', hi };
            if (put(&body, r, 3))
                goto oom;
            k += step;
            continue;
        }
        if (lit == ']')
            has_rbracket = 1;
        else if (lit == '-')
            has_dash = 1;
        else if (lit == '^')
            has_caret = 1;
        else if (put(&body, &lit, 1))
            goto oom;
    }
    if (k >= len) {
        ew_parse_error(err, err_size, "pattern: unterminated [...]");
        goto done;
    }
    *i = k + 1;
    if (puts_(out, negate ? "[^" : "[") || (has_rbracket && puts_(out, "]")) || (body.n && put(out, body.p, body.n)) ||
        (has_caret && puts_(out, "^")) || (has_dash && puts_(out, "-")) || puts_(out, "]"))
        goto oom;
    if (!body.n && !has_rbracket && !has_caret && !has_dash) {
        ew_parse_error(err, err_size, "pattern: empty [...]");
        goto done;
    }
    rc = 0;
    goto done;
oom:
    ew_parse_error(err, err_size, "out of memory");
done:
    free(body.p);
    return rc;
}

/* RE2 pattern -> anchored POSIX ERE (see the top); -1 with err. */
static int translate(const char *pat, size_t len, struct buf *out, char *err, size_t err_size)
{
    if (puts_(out, "^("))
        return ew_parse_error(err, err_size, "out of memory");
    for (size_t i = 0; i < len;) {
        char ch = pat[i];
        int rc = 0;
        if (ch == '\\') {
            if (i + 1 >= len)
                return ew_parse_error(err, err_size, "pattern ends in a backslash");
            char e = pat[i + 1], lit;
            const char *cls = class_body(e);
            if (cls) {
                rc = puts_(out, e >= 'a' ? "[" : "[^") || puts_(out, cls) || puts_(out, "]");
            } else if (e == 'b' || e == 'B') {
                char s[2] = { '\\', e };
                rc = put(out, s, 2);
            } else if (literal_escape(e, &lit)) {
                rc = put_literal(out, lit);
            } else {
                return ew_parse_error(err, err_size, "pattern: the escape \\%c is not supported", e);
            }
            i += 2;
        } else if (ch == '[') {
            i++;
            if (translate_bracket(pat, len, &i, out, err, err_size))
                return -1;
        } else if (ch == '(' && i + 1 < len && pat[i + 1] == '?') {
            if (i + 2 < len && pat[i + 2] == ':') {
                rc = puts_(out, "(");
                i += 3;
            } else {
                return ew_parse_error(err, err_size, "pattern: group flags and named groups (?...) are not supported");
            }
        } else if (ch == '.') {
            rc = puts_(out, "[^\n]");      /* RE2's . (without (?s)) does not match a newline; POSIX's does */
            i++;
        } else if ((ch == '*' || ch == '+' || ch == '?' || ch == '}') && i + 1 < len && pat[i + 1] == '?') {
            return ew_parse_error(err, err_size, "pattern: lazy quantifiers (%c?) are not supported", ch);
        } else {
            rc = put(out, &ch, 1);
            i++;
        }
        if (rc)
            return ew_parse_error(err, err_size, "out of memory");
    }
    if (puts_(out, ")$"))
        return ew_parse_error(err, err_size, "out of memory");
    return 0;
}

static int regex_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    (void)version;
    const struct onnx_attr *a = onnx_node_attr(node, "pattern");
    if (!a || a->type != ONNX_ATTR_STRING)
        return ew_parse_error(err, err_size, "attribute 'pattern' (a string) is required");
    if (memchr(a->s, 0, a->s_len))
        return ew_parse_error(err, err_size, "pattern holds a NUL byte");
    struct regex_params *p = calloc(1, sizeof *p);
    if (!p)
        return ew_parse_error(err, err_size, "out of memory");
    *params = p;
    struct buf ere = { 0 };
    char why[256];
    if (translate(a->s, a->s_len, &ere, why, sizeof why)) {
        free(ere.p);
        return ew_parse_error(err, err_size, "invalid pattern '%s': %s", a->s, why);
    }
    int rc = regcomp(&p->re, ere.p, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        regerror(rc, &p->re, why, sizeof why);
        free(ere.p);
        return ew_parse_error(err, err_size, "invalid pattern '%s': %s", a->s, why);
    }
    free(ere.p);
    p->compiled = 1;
    return 0;
}

static int regex_infer(struct op_call *c)
{
    if (c->in[0]->dtype != ONNX_DTYPE_STRING)
        return op_error(c, "X is %s; it must be a string tensor", onnx_dtype_name(c->in[0]->dtype));
    *c->out[0] = *c->in[0];
    c->out[0]->data = NULL;
    c->out[0]->dtype = ONNX_DTYPE_BOOL;
    return 0;
}

static int regex_cpu(struct op_call *c)
{
    const struct regex_params *p = c->params;
    int64_t n = tensor_numel(c->in[0]);
    for (int64_t i = 0; i < n; i++) {
        const struct onnx_string *s = op_string_at(c->in[0], i);
        regmatch_t m = { .rm_so = 0, .rm_eo = (regoff_t)s->len };
        int rc = regexec(&p->re, s->len ? s->data : "", 1, &m, REG_STARTEND);
        if (rc && rc != REG_NOMATCH)
            return op_error(c, "matching element %lld failed (regexec error %d)", (long long)i, rc);
        ((uint8_t *)c->out[0]->data)[i] = rc == 0;
    }
    return 0;
}

const struct op_def op_regex_full_match = {
    .domain = "", .name = "RegexFullMatch", .since = { 20 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = regex_parse, .params_free = regex_free, .infer = regex_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = regex_cpu, [BACKEND_CUDA] = op_host_bridge },
};
