/* dtr/format/json.c — recursive-descent JSON reader (depth-limited, so hostile
 * input cannot overflow the stack) and writer helpers. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/json.h"

#define JSON_MAX_DEPTH 512

struct parser {
    const char *s;
    size_t len, pos;
    int depth;
    char *err;
    size_t err_size;
    int failed;
};

static void where(const struct parser *p, size_t pos, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        if (p->s[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

__attribute__((format(printf, 2, 3))) static int perr(struct parser *p, const char *fmt, ...)
{
    if (p->failed)
        return -1;
    p->failed = 1;
    if (p->err && p->err_size) {
        int line, col;
        where(p, p->pos, &line, &col);
        int n = snprintf(p->err, p->err_size, "line %d, column %d: ", line, col);
        if (n >= 0 && (size_t)n < p->err_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->err_size - n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            p->pos++;
        else
            break;
    }
}

static int parse_value(struct parser *p, struct json_value *v);

static int hex4(struct parser *p, unsigned *out)
{
    if (p->pos + 4 > p->len)
        return perr(p, "truncated \\u escape");
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + i];
        x <<= 4;
        if (c >= '0' && c <= '9')
            x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            x |= (unsigned)(c - 'A' + 10);
        else
            return perr(p, "bad hex digit in \\u escape");
    }
    p->pos += 4;
    *out = x;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* p->pos is just after the opening quote. */
static int parse_string(struct parser *p, char **out, size_t *out_len)
{
    size_t start = p->pos, end = start;
    int escapes = 0;
    while (end < p->len && p->s[end] != '"') {
        unsigned char c = (unsigned char)p->s[end];
        if (c < 0x20) {
            p->pos = end;
            return perr(p, "control character in string");
        }
        if (c == '\\') {
            escapes = 1;
            end++;
        }
        end++;
    }
    if (end >= p->len) {
        p->pos = start;
        return perr(p, "unterminated string");
    }
    /* decoding never makes a string longer */
    char *o = malloc(end - start + 1);
    if (!o)
        return perr(p, "out of memory");
    size_t n = 0;
    if (!escapes) {
        memcpy(o, p->s + start, end - start);
        n = end - start;
        p->pos = end + 1;
    } else {
        while (p->pos < end) {
            char c = p->s[p->pos++];
            if (c != '\\') {
                o[n++] = c;
                continue;
            }
            char e = p->s[p->pos++];
            switch (e) {
            case '"': o[n++] = '"'; break;
            case '\\': o[n++] = '\\'; break;
            case '/': o[n++] = '/'; break;
            case 'b': o[n++] = '\b'; break;
            case 'f': o[n++] = '\f'; break;
            case 'n': o[n++] = '\n'; break;
            case 'r': o[n++] = '\r'; break;
            case 't': o[n++] = '\t'; break;
            case 'u': {
                unsigned cp;
                if (hex4(p, &cp)) {
                    free(o);
                    return -1;
                }
                if (cp >= 0xD800 && cp < 0xDC00) {
                    unsigned lo;
                    if (p->pos + 2 > end || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                        free(o);
                        return perr(p, "unpaired surrogate in \\u escape");
                    }
                    p->pos += 2;
                    if (hex4(p, &lo)) {
                        free(o);
                        return -1;
                    }
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        free(o);
                        return perr(p, "bad low surrogate in \\u escape");
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp < 0xE000) {
                    free(o);
                    return perr(p, "unpaired surrogate in \\u escape");
                }
                /* "\uXXXX" is 6 bytes, at most 4 written (8 for 12) */
                n += put_utf8(o + n, cp);
                break;
            }
            default:
                free(o);
                p->pos--;
                return perr(p, "bad escape '\\%c'", e);
            }
        }
        p->pos = end + 1;
    }
    o[n] = 0;
    *out = o;
    *out_len = n;
    return 0;
}

static int parse_number(struct parser *p, struct json_value *v)
{
    size_t start = p->pos;
    const char *s = p->s;
    size_t i = p->pos;
    if (i < p->len && s[i] == '-')
        i++;
    if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
        return perr(p, "bad number");
    if (s[i] == '0') {
        i++;
    } else {
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < p->len && s[i] == '.') {
        i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9')) {
            p->pos = i;
            return perr(p, "bad number: digits expected after '.'");
        }
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9')) {
            p->pos = i;
            return perr(p, "bad number: digits expected in exponent");
        }
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    char *text = malloc(i - start + 1);
    if (!text)
        return perr(p, "out of memory");
    memcpy(text, s + start, i - start);
    text[i - start] = 0;
    v->type = JSON_NUMBER;
    v->u.number.text = text;
    v->u.number.value = strtod(text, NULL);
    p->pos = i;
    return 0;
}

static int literal(struct parser *p, const char *word, enum json_type t, struct json_value *v)
{
    size_t n = strlen(word);
    if (p->pos + n > p->len || memcmp(p->s + p->pos, word, n))
        return perr(p, "unexpected character '%c'", p->s[p->pos]);
    p->pos += n;
    v->type = t;
    return 0;
}

static int parse_array(struct parser *p, struct json_value *v)
{
    size_t cap = 0;
    v->type = JSON_ARRAY;
    v->u.array.items = NULL;
    v->u.array.n = 0;
    p->pos++;   /* '[' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (v->u.array.n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            void *q = realloc(v->u.array.items, nc * sizeof *v->u.array.items);
            if (!q)
                return perr(p, "out of memory");
            v->u.array.items = q;
            cap = nc;
        }
        struct json_value *item = &v->u.array.items[v->u.array.n++];
        /* counted before it is parsed, so json_free releases a partial item */
        memset(item, 0, sizeof *item);
        if (parse_value(p, item))
            return -1;
        skip_ws(p);
        if (p->pos >= p->len)
            return perr(p, "unterminated array");
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == ']') {
            p->pos++;
            return 0;
        }
        return perr(p, "',' or ']' expected in array");
    }
}

static int parse_object(struct parser *p, struct json_value *v)
{
    size_t cap = 0;
    v->type = JSON_OBJECT;
    v->u.object.members = NULL;
    v->u.object.n = 0;
    p->pos++;   /* '{' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != '"')
            return perr(p, "string key expected in object");
        if (v->u.object.n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            void *q = realloc(v->u.object.members, nc * sizeof *v->u.object.members);
            if (!q)
                return perr(p, "out of memory");
            v->u.object.members = q;
            cap = nc;
        }
        struct json_member *m = &v->u.object.members[v->u.object.n];
        memset(m, 0, sizeof *m);
        p->pos++;
        if (parse_string(p, &m->key, &m->key_len))
            return -1;
        v->u.object.n++;   /* counted now so that json_free releases the key */
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':')
            return perr(p, "':' expected after object key");
        p->pos++;
        if (parse_value(p, &m->value))
            return -1;
        skip_ws(p);
        if (p->pos >= p->len)
            return perr(p, "unterminated object");
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == '}') {
            p->pos++;
            return 0;
        }
        return perr(p, "',' or '}' expected in object");
    }
}

static int parse_value(struct parser *p, struct json_value *v)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return perr(p, "value expected, found end of input");
    if (++p->depth > JSON_MAX_DEPTH)
        return perr(p, "nesting deeper than %d", JSON_MAX_DEPTH);
    int rc;
    char c = p->s[p->pos];
    switch (c) {
    case '{': rc = parse_object(p, v); break;
    case '[': rc = parse_array(p, v); break;
    case '"':
        p->pos++;
        v->type = JSON_STRING;
        rc = parse_string(p, &v->u.string.chars, &v->u.string.len);
        if (rc)
            v->type = JSON_NULL;
        break;
    case 't': rc = literal(p, "true", JSON_TRUE, v); break;
    case 'f': rc = literal(p, "false", JSON_FALSE, v); break;
    case 'n': rc = literal(p, "null", JSON_NULL, v); break;
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            rc = parse_number(p, v);
        else
            rc = perr(p, "unexpected character '%c'", c);
    }
    p->depth--;
    return rc;
}

int json_parse(const char *text, size_t len, struct json_value *out, char *err, size_t err_size)
{
    struct parser p = { .s = text, .len = len, .err = err, .err_size = err_size };
    memset(out, 0, sizeof *out);
    if (err && err_size)
        err[0] = 0;
    if (parse_value(&p, out)) {
        json_free(out);
        return -1;
    }
    skip_ws(&p);
    if (p.pos != p.len) {
        perr(&p, "unexpected text after the value");
        json_free(out);
        return -1;
    }
    return 0;
}

int json_parse_file(const char *path, struct json_value *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *q = realloc(buf, cap *= 2);
        if (!q) {
            free(buf);
            buf = NULL;
        } else {
            buf = q;
        }
    }
    int rd_err = ferror(f);
    fclose(f);
    if (!buf || rd_err) {
        free(buf);
        snprintf(err, err_size, "%s: %s", path, buf ? "read error" : "out of memory");
        return -1;
    }
    char msg[256];
    int rc = json_parse(buf, n, out, msg, sizeof msg);
    free(buf);
    if (rc)
        snprintf(err, err_size, "%s: %s", path, msg);
    return rc;
}

void json_free(struct json_value *v)
{
    if (!v)
        return;
    switch (v->type) {
    case JSON_NUMBER: free(v->u.number.text); break;
    case JSON_STRING: free(v->u.string.chars); break;
    case JSON_ARRAY:
        for (size_t i = 0; i < v->u.array.n; i++)
            json_free(&v->u.array.items[i]);
        free(v->u.array.items);
        break;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->u.object.n; i++) {
            free(v->u.object.members[i].key);
            json_free(&v->u.object.members[i].value);
        }
        free(v->u.object.members);
        break;
    default: break;
    }
    memset(v, 0, sizeof *v);
}

const struct json_value *json_get(const struct json_value *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->u.object.n; i++)
        if (!strcmp(v->u.object.members[i].key, key))
            return &v->u.object.members[i].value;
    return NULL;
}

const char *json_string(const struct json_value *v)
{
    return v && v->type == JSON_STRING ? v->u.string.chars : NULL;
}

int json_as_double(const struct json_value *v, double *out)
{
    if (!v)
        return -1;
    if (v->type == JSON_NUMBER) {
        *out = v->u.number.value;
        return 0;
    }
    if (v->type == JSON_STRING && v->u.string.len) {
        char *end;
        errno = 0;
        double x = strtod(v->u.string.chars, &end);
        if (*end || errno || end == v->u.string.chars)
            return -1;
        *out = x;
        return 0;
    }
    return -1;
}

int json_as_int64(const struct json_value *v, int64_t *out)
{
    const char *text = NULL;
    if (!v)
        return -1;
    if (v->type == JSON_NUMBER)
        text = v->u.number.text;
    else if (v->type == JSON_STRING && v->u.string.len)
        text = v->u.string.chars;
    if (!text)
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (*end || errno || end == text) {
        /* "1e3" or "12.0": accept when the value is an exact integer */
        double d;
        if (json_as_double(v, &d) || d != floor(d) || !(fabs(d) < 9.2e18))
            return -1;
        *out = (int64_t)d;
        return 0;
    }
    *out = x;
    return 0;
}

void json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*c < 0x20)
                fprintf(f, "\\u%04x", *c);
            else
                fputc(*c, f);
        }
    }
    fputc('"', f);
}

void json_write_number(FILE *f, double x)
{
    if (!isfinite(x)) {
        fputs("null", f);
        return;
    }
    if (x == floor(x) && fabs(x) < 9e15) {
        fprintf(f, "%.0f", x);
        return;
    }
    char buf[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    fputs(buf, f);
}
