/* dtr/format/trace.c — the op log's one reader and one writer
 * (dtr/format/trace.h). The file is read whole; each line is scanned by a
 * fast path that handles what logs hold (a flat object of plain strings,
 * numbers and lists of them) and falls back to the general JSON parser
 * (dtr/format/json.h) for anything else, so that escapes, nesting and
 * syntax errors are treated, and reported, exactly as JSON. Both paths
 * fill the same raw fields, checked and interned in one place. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/json.h"
#include "dtr/format/trace.h"

static const char *const kind_names[FMT_TRACE_KIND_COUNT] = {
    "CONSTANT", "MEMORY", "ALIAS", "CALL", "MUTATE", "COPY", "COPY_FROM", "RELEASE", "ANNOTATE",
};

const char *fmt_trace_kind_name(enum fmt_trace_kind k)
{
    return (unsigned)k < FMT_TRACE_KIND_COUNT ? kind_names[k] : "?";
}

/* ---- names ---- */

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int rehash(struct fmt_trace *t, uint32_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t k = 0; k < t->n_names; k++) {
        const char *s = t->pool + t->name_at[k];
        uint32_t i = hash_bytes(s, strlen(s)) & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = k + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

static uint32_t lookup(const struct fmt_trace *t, const char *s, size_t n, uint32_t h)
{
    if (!t->n_slots)
        return UINT32_MAX;
    for (uint32_t i = h & (t->n_slots - 1);; i = (i + 1) & (t->n_slots - 1)) {
        uint32_t e = t->slots[i];
        if (!e)
            return UINT32_MAX;
        const char *c = t->pool + t->name_at[e - 1];
        if (!memcmp(c, s, n) && !c[n])
            return e - 1;
    }
}

uint32_t fmt_trace_find(const struct fmt_trace *t, const char *name)
{
    size_t n = strlen(name);
    return lookup(t, name, n, hash_bytes(name, n));
}

/* The id of s[0..n) (no NUL inside), added when new; UINT32_MAX out of memory. */
static uint32_t intern(struct fmt_trace *t, const char *s, size_t n)
{
    uint32_t h = hash_bytes(s, n), k = lookup(t, s, n, h);
    if (k != UINT32_MAX)
        return k;
    if ((t->n_names + 1) * 2 > t->n_slots && rehash(t, t->n_slots ? t->n_slots * 2 : 1024))
        return UINT32_MAX;
    if (t->n_names == t->cap_names) {
        uint32_t nc = t->cap_names ? t->cap_names * 2 : 512;
        uint32_t *a = realloc(t->name_at, nc * sizeof *a);
        if (!a)
            return UINT32_MAX;
        t->name_at = a;
        t->cap_names = nc;
    }
    if (t->pool_len + n + 1 > t->pool_cap) {
        size_t nc = t->pool_cap ? t->pool_cap * 2 : 8192;
        while (nc < t->pool_len + n + 1)
            nc *= 2;
        char *p = realloc(t->pool, nc);
        if (!p)
            return UINT32_MAX;
        t->pool = p;
        t->pool_cap = nc;
    }
    if (t->pool_len > UINT32_MAX - n - 1)
        return UINT32_MAX;
    memcpy(t->pool + t->pool_len, s, n);
    t->pool[t->pool_len + n] = 0;
    t->name_at[t->n_names] = (uint32_t)t->pool_len;
    t->pool_len += n + 1;
    uint32_t i = h & (t->n_slots - 1);
    while (t->slots[i])
        i = (i + 1) & (t->n_slots - 1);
    t->slots[i] = ++t->n_names;
    return t->n_names - 1;
}

/* ---- raw fields of one line ---- */

enum raw_type { RAW_ABSENT = 0, RAW_STRING, RAW_NUMBER, RAW_LIST, RAW_OTHER };

struct raw {
    uint8_t type;
    uint8_t has_nul;       /* a string with \u0000: not a name */
    const char *s;         /* string chars or number text (not NUL-terminated) */
    size_t len;
    uint32_t item_at, n_items;   /* RAW_LIST: into the line's items */
};

enum field { F_INSTRUCTION, F_NAME, F_ARGS, F_RESULT, F_TIME, F_MEMORY, F_ALIAS, F_MUTATE, F_DST, F_SRC,
             F_ANNOTATION, F_IN_PLACE, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "INSTRUCTION", "NAME", "ARGS", "RESULT", "TIME", "MEMORY", "ALIAS", "MUTATE", "DST", "SRC", "ANNOTATION",
    "IN_PLACE",
};

struct line {
    struct raw f[F_COUNT];
    struct raw *items;     /* list items (strings or numbers; others RAW_OTHER) */
    uint32_t n_items, cap_items;
};

static int field_of(const char *k, size_t n)
{
    for (int i = 0; i < F_COUNT; i++)
        if (strlen(field_names[i]) == n && !memcmp(field_names[i], k, n))
            return i;
    return -1;
}

static int push_item(struct line *l, struct raw r)
{
    if (l->n_items == l->cap_items) {
        uint32_t nc = l->cap_items ? l->cap_items * 2 : 64;
        struct raw *a = realloc(l->items, nc * sizeof *a);
        if (!a)
            return -1;
        l->items = a;
        l->cap_items = nc;
    }
    l->items[l->n_items++] = r;
    return 0;
}

/* ---- fast path: returns 1 when the line was taken, 0 to fall back ---- */

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* A plain ASCII string (no escapes, no control characters) at p (the quote). */
static const char *fast_string(const char *p, const char *e, struct raw *r)
{
    const char *s = ++p;
    while (p < e && *p != '"') {
        if (*p == '\\' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x80)
            return NULL;   /* escapes, control bytes, UTF-8: the general parser's */
        p++;
    }
    if (p >= e)
        return NULL;
    r->type = RAW_STRING;
    r->s = s;
    r->len = (size_t)(p - s);
    return p + 1;
}

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A JSON number at p. */
static const char *fast_number(const char *p, const char *e, struct raw *r)
{
    const char *s = p;
    if (p < e && *p == '-')
        p++;
    if (p >= e || !digit(*p))
        return NULL;
    if (*p == '0')
        p++;
    else
        while (p < e && digit(*p))
            p++;
    if (p < e && *p == '.') {
        if (++p >= e || !digit(*p))
            return NULL;
        while (p < e && digit(*p))
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        if (++p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || !digit(*p))
            return NULL;
        while (p < e && digit(*p))
            p++;
    }
    r->type = RAW_NUMBER;
    r->s = s;
    r->len = (size_t)(p - s);
    return p;
}

static const char *fast_scalar(const char *p, const char *e, struct raw *r)
{
    if (p < e && *p == '"')
        return fast_string(p, e, r);
    return fast_number(p, e, r);
}

static const char *fast_list(const char *p, const char *e, struct line *l, struct raw *r)
{
    r->type = RAW_LIST;
    r->item_at = l->n_items;
    r->n_items = 0;
    p = ws(p + 1, e);
    if (p < e && *p == ']')
        return p + 1;
    for (;;) {
        struct raw it = { 0 };
        if (!(p = fast_scalar(ws(p, e), e, &it)) || push_item(l, it))
            return NULL;
        r->n_items++;
        p = ws(p, e);
        if (p < e && *p == ',') {
            p++;
            continue;
        }
        return p < e && *p == ']' ? p + 1 : NULL;
    }
}

static int fast_line(const char *p, const char *e, struct line *l)
{
    p = ws(p, e);
    if (p >= e || *p != '{')
        return 0;
    p = ws(p + 1, e);
    if (p < e && *p == '}')
        return ws(p + 1, e) == e;
    for (;;) {
        struct raw key = { 0 }, val = { 0 };
        if (p >= e || *p != '"' || !(p = fast_string(p, e, &key)))
            return 0;
        p = ws(p, e);
        if (p >= e || *p != ':')
            return 0;
        p = ws(p + 1, e);
        if (p >= e)
            return 0;
        p = *p == '[' ? fast_list(p, e, l, &val) : fast_scalar(p, e, &val);
        if (!p)
            return 0;
        int f = field_of(key.s, key.len);
        if (f >= 0 && !l->f[f].type)   /* the first of duplicate keys, as json_get */
            l->f[f] = val;
        p = ws(p, e);
        if (p < e && *p == ',') {
            p = ws(p + 1, e);
            continue;
        }
        if (p < e && *p == '}')
            return ws(p + 1, e) == e;
        return 0;
    }
}

/* ---- slow path: the general parser's tree as raw fields ---- */

static struct raw raw_of(const struct json_value *v)
{
    struct raw r = { 0 };
    if (!v)
        return r;
    if (v->type == JSON_STRING) {
        r.type = RAW_STRING;
        r.s = v->u.string.chars;
        r.len = v->u.string.len;
        r.has_nul = strlen(r.s) != r.len;
    } else if (v->type == JSON_NUMBER) {
        r.type = RAW_NUMBER;
        r.s = v->u.number.text;
        r.len = strlen(r.s);
    } else {
        r.type = RAW_OTHER;
    }
    return r;
}

static int slow_line(const struct json_value *v, struct line *l)
{
    for (int f = 0; f < F_COUNT; f++) {
        const struct json_value *x = json_get(v, field_names[f]);
        if (x && x->type == JSON_ARRAY) {
            l->f[f].type = RAW_LIST;
            l->f[f].item_at = l->n_items;
            l->f[f].n_items = (uint32_t)x->u.array.n;
            for (size_t k = 0; k < x->u.array.n; k++)
                if (push_item(l, raw_of(&x->u.array.items[k])))
                    return -1;
        } else {
            l->f[f] = raw_of(x);
        }
    }
    return 0;
}

/* ---- checking and storing one record ---- */

struct rd {
    struct fmt_trace *t;
    const char *name;
    uint32_t line;
    char *err;
    size_t err_size;
    struct line l;
};

__attribute__((format(printf, 2, 3))) static int fail(struct rd *r, const char *fmt, ...)
{
    int n = snprintf(r->err, r->err_size, "%s:%u: ", r->name, r->line);
    if (n >= 0 && (size_t)n < r->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* json_as_double's rule on raw text: a number, or a string holding one. */
static int raw_double(const struct raw *v, double *out)
{
    char buf[128];
    if ((v->type != RAW_NUMBER && v->type != RAW_STRING) || !v->len || v->len >= sizeof buf || v->has_nul)
        return -1;
    memcpy(buf, v->s, v->len);
    buf[v->len] = 0;
    char *end;
    errno = 0;
    double x = strtod(buf, &end);
    if (v->type == RAW_STRING && (*end || errno || end == buf))
        return -1;
    *out = x;
    return 0;
}

/* json_as_int64's rule: exact integers, also written as 1e3 or 12.0. */
static int raw_int64(const struct raw *v, int64_t *out)
{
    char buf[128];
    if ((v->type != RAW_NUMBER && v->type != RAW_STRING) || !v->len || v->len >= sizeof buf || v->has_nul)
        return -1;
    memcpy(buf, v->s, v->len);
    buf[v->len] = 0;
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end || errno || end == buf) {
        double d;
        if (raw_double(v, &d) || d != floor(d) || !(fabs(d) < 9.2e18))
            return -1;
        *out = (int64_t)d;
        return 0;
    }
    *out = x;
    return 0;
}

/* A string field as a name id. */
static int name_field(struct rd *r, int f, const char *kind, uint32_t *out)
{
    const struct raw *v = &r->l.f[f];
    if (v->type != RAW_STRING || v->has_nul)
        return fail(r, "%s record without a string %s", kind, field_names[f]);
    if ((*out = intern(r->t, v->s, v->len)) == UINT32_MAX)
        return fail(r, "out of memory");
    return 0;
}

static int reserve_ids(struct fmt_trace *t, uint32_t n)
{
    if (t->n_ids + n <= t->cap_ids)
        return 0;
    uint32_t nc = t->cap_ids ? t->cap_ids : 4096;
    while (nc < t->n_ids + n)
        nc *= 2;
    uint32_t *a = realloc(t->ids, nc * sizeof *a);
    if (!a)
        return -1;
    t->ids = a;
    t->cap_ids = nc;
    return 0;
}

/* A list of names (ARGS, RESULT) into ids. */
static int names_field(struct rd *r, int f, const char *kind, uint32_t *at, uint32_t *n)
{
    const struct raw *v = &r->l.f[f];
    if (v->type != RAW_LIST)
        return fail(r, "%s record without a %s list", kind, field_names[f]);
    if (reserve_ids(r->t, v->n_items))
        return fail(r, "out of memory");
    *at = r->t->n_ids;
    *n = v->n_items;
    for (uint32_t k = 0; k < v->n_items; k++) {
        const struct raw *it = &r->l.items[v->item_at + k];
        if (it->type != RAW_STRING || it->has_nul)
            return fail(r, "%s: %s[%u] is not a name", kind, field_names[f], k);
        uint32_t id = intern(r->t, it->s, it->len);
        if (id == UINT32_MAX)
            return fail(r, "out of memory");
        r->t->ids[r->t->n_ids++] = id;
    }
    return 0;
}

static int time_field(struct rd *r, const char *kind, const char *op, double *out)
{
    if (raw_double(&r->l.f[F_TIME], out) || !(*out >= 0) || !isfinite(*out))
        return fail(r, "%s %s: TIME is not a finite non-negative number", kind, op);
    return 0;
}

static int call_fields(struct rd *r, struct fmt_trace_record *rec, int mutate)
{
    const char *kind = mutate ? "MUTATE" : "CALL";
    if (name_field(r, F_NAME, kind, &rec->name) || names_field(r, F_ARGS, kind, &rec->args_at, &rec->n_args))
        return -1;
    const char *op = fmt_trace_name(r->t, rec->name);
    if (!mutate) {
        if (names_field(r, F_RESULT, kind, &rec->res_at, &rec->n_res) || time_field(r, kind, op, &rec->time))
            return -1;
        /* dtrexec's extension: arguments the call changes in place */
        const struct raw *ip = &r->l.f[F_IN_PLACE];
        if (ip->type == RAW_ABSENT)
            return 0;
        if (ip->type != RAW_LIST || reserve_ids(r->t, ip->n_items))
            return fail(r, "CALL %s: IN_PLACE is not a list of argument indices", op);
        rec->in_place_at = r->t->n_ids;
        rec->n_in_place = ip->n_items;
        for (uint32_t k = 0; k < ip->n_items; k++) {
            int64_t x;
            if (raw_int64(&r->l.items[ip->item_at + k], &x) || x < 0 || x >= rec->n_args)
                return fail(r, "CALL %s: IN_PLACE[%u] is not an argument index below %u", op, k, rec->n_args);
            r->t->ids[r->t->n_ids++] = (uint32_t)x;
        }
        return 0;
    }
    const struct raw *m = &r->l.f[F_MUTATE];
    if (m->type != RAW_LIST || !m->n_items)
        return fail(r, "MUTATE %s without a MUTATE list", op);
    if (time_field(r, kind, op, &rec->time) || reserve_ids(r->t, m->n_items))
        return -1;
    rec->res_at = r->t->n_ids;
    rec->n_res = m->n_items;
    for (uint32_t k = 0; k < m->n_items; k++) {
        int64_t x;
        if (raw_int64(&r->l.items[m->item_at + k], &x) || x < 0 || x > INT32_MAX)
            return fail(r, "MUTATE %s: MUTATE[%u] is not a non-negative argument index", op, k);
        r->t->ids[r->t->n_ids++] = (uint32_t)x;
    }
    return 0;
}

static int kind_of(struct rd *r, uint8_t *kind)
{
    const struct raw *v = &r->l.f[F_INSTRUCTION];
    if (v->type != RAW_STRING || v->has_nul)
        return fail(r, "record without a string INSTRUCTION");
    for (int k = 0; k < FMT_TRACE_KIND_COUNT; k++)
        if (strlen(kind_names[k]) == v->len && !memcmp(kind_names[k], v->s, v->len)) {
            *kind = (uint8_t)k;
            return 0;
        }
    return fail(r, "unknown INSTRUCTION '%.*s'", (int)(v->len < 64 ? v->len : 64), v->s);
}

static int store(struct rd *r)
{
    struct fmt_trace_record rec = { .line = r->line, .value = 0 };
    if (kind_of(r, &rec.kind))
        return -1;
    const char *kind = kind_names[rec.kind];
    int rc = 0;
    switch (rec.kind) {
    case FMT_TRACE_CONSTANT:
    case FMT_TRACE_RELEASE:
        rc = name_field(r, F_NAME, kind, &rec.name);
        break;
    case FMT_TRACE_MEMORY:
        if (!(rc = name_field(r, F_NAME, kind, &rec.name)) &&
            (raw_int64(&r->l.f[F_MEMORY], &rec.value) || rec.value < 0 || rec.value > FMT_TRACE_MAX_BYTES))
            rc = fail(r, "MEMORY of '%s' is not a byte count (an integer from 0 to 2^62)",
                      fmt_trace_name(r->t, rec.name));
        break;
    case FMT_TRACE_ALIAS:
        if (!(rc = name_field(r, F_NAME, kind, &rec.name)) &&
            (raw_int64(&r->l.f[F_ALIAS], &rec.value) || rec.value < -1 || rec.value > INT32_MAX))
            rc = fail(r, "ALIAS of '%s' is not -1 or an argument index", fmt_trace_name(r->t, rec.name));
        break;
    case FMT_TRACE_CALL:
    case FMT_TRACE_MUTATE:
        rc = call_fields(r, &rec, rec.kind == FMT_TRACE_MUTATE);
        break;
    case FMT_TRACE_COPY:
    case FMT_TRACE_COPY_FROM:
        rc = name_field(r, F_DST, kind, &rec.name) || name_field(r, F_SRC, kind, &rec.src) ? -1 : 0;
        break;
    case FMT_TRACE_ANNOTATE:
        rc = name_field(r, F_ANNOTATION, kind, &rec.name);
        break;
    }
    if (rc)
        return -1;
    struct fmt_trace *t = r->t;
    if (t->n_recs == t->cap_recs) {
        uint32_t nc = t->cap_recs ? t->cap_recs * 2 : 4096;
        void *a = realloc(t->recs, nc * sizeof *t->recs);
        if (!a)
            return fail(r, "out of memory");
        t->recs = a;
        t->cap_recs = nc;
    }
    t->recs[t->n_recs++] = rec;
    return 0;
}

static int parse_line(struct rd *r, const char *s, const char *e)
{
    memset(r->l.f, 0, sizeof r->l.f);
    r->l.n_items = 0;
    if (fast_line(s, e, &r->l))
        return store(r);
    /* anything the fast path does not take: the general parser decides */
    memset(r->l.f, 0, sizeof r->l.f);
    r->l.n_items = 0;
    struct json_value v;
    char msg[200];
    if (json_parse(s, (size_t)(e - s), &v, msg, sizeof msg))
        return fail(r, "not JSON: %s", msg);
    int rc = v.type != JSON_OBJECT ? fail(r, "a record must be a JSON object")
             : slow_line(&v, &r->l)   ? fail(r, "out of memory")
                                      : store(r);
    json_free(&v);
    return rc;
}

int fmt_trace_parse(const char *text, size_t len, const char *name, struct fmt_trace *t, char *err, size_t err_size)
{
    memset(t, 0, sizeof *t);
    struct rd r = { .t = t, .name = name, .err = err, .err_size = err_size };
    /* one record per non-blank line: size the record array once */
    uint32_t lines = 1;
    for (const char *p = text, *e = text + len; (p = memchr(p, '\n', (size_t)(e - p))); p++)
        lines++;
    t->recs = malloc(lines * sizeof *t->recs);
    if (!t->recs) {
        snprintf(err, err_size, "%s: out of memory", name);
        return -1;
    }
    t->cap_recs = lines;
    int rc = 0;
    const char *p = text, *end = text + len;
    while (!rc && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        r.line++;
        const char *s = ws(p, e);
        if (s < e)
            rc = parse_line(&r, s, e);
        p = e + 1;
    }
    free(r.l.items);
    if (rc)
        fmt_trace_free(t);
    return rc;
}

int fmt_trace_read(const char *path, struct fmt_trace *t, char *err, size_t err_size)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    rewind(f);
    cap = size > 0 ? (size_t)size + 1 : 65536;
    int rc = -1;
    while ((buf = buf ? buf : malloc(cap))) {
        if ((got = fread(buf + len, 1, cap - len, f)) > 0)
            len += got;
        if (len < cap) {
            rc = ferror(f) ? -1 : 0;
            break;
        }
        char *b = realloc(buf, cap * 2);
        if (!b)
            break;
        buf = b;
        cap *= 2;
    }
    fclose(f);
    if (rc) {
        free(buf);
        snprintf(err, err_size, "%s: %s", path, buf ? "read error" : "out of memory");
        return -1;
    }
    rc = fmt_trace_parse(buf, len, path, t, err, err_size);
    free(buf);
    return rc;
}

void fmt_trace_free(struct fmt_trace *t)
{
    free(t->recs);
    free(t->ids);
    free(t->pool);
    free(t->name_at);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---- writer ---- */

static void put_names(FILE *f, const char *key, const char *const *names, uint32_t n)
{
    fprintf(f, "\"%s\":[", key);
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        json_write_string(f, names[i]);
    }
    fputc(']', f);
}

/* A number as a JSON string, the shortest way that reads back. */
static void put_number(FILE *f, double x)
{
    fputc('"', f);
    json_write_number(f, x);
    fputc('"', f);
}

void fmt_trace_put_constant(FILE *f, const char *name)
{
    fprintf(f, "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":");
    json_write_string(f, name);
    fprintf(f, "}\n");
}

void fmt_trace_put_memory(FILE *f, const char *name, uint64_t bytes)
{
    fprintf(f, "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"%llu\",\"NAME\":", (unsigned long long)bytes);
    json_write_string(f, name);
    fprintf(f, "}\n");
}

void fmt_trace_put_alias(FILE *f, const char *name, int64_t alias)
{
    fprintf(f, "{\"ALIAS\":\"%lld\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":", (long long)alias);
    json_write_string(f, name);
    fprintf(f, "}\n");
}

void fmt_trace_put_call(FILE *f, const char *op, const char *const *args, uint32_t n_args,
                        const char *const *results, uint32_t n_results, double time)
{
    fmt_trace_put_call_in_place(f, op, args, n_args, results, n_results, NULL, 0, time);
}

void fmt_trace_put_call_in_place(FILE *f, const char *op, const char *const *args, uint32_t n_args,
                                 const char *const *results, uint32_t n_results, const uint32_t *in_place,
                                 uint32_t n_in_place, double time)
{
    fputc('{', f);
    put_names(f, "ARGS", args, n_args);
    fprintf(f, ",\"INSTRUCTION\":\"CALL\"");
    if (n_in_place) {
        fprintf(f, ",\"IN_PLACE\":[");
        for (uint32_t i = 0; i < n_in_place; i++)
            fprintf(f, i ? ",\"%u\"" : "\"%u\"", in_place[i]);
        fputc(']', f);
    }
    fprintf(f, ",\"NAME\":");
    json_write_string(f, op);
    fputc(',', f);
    put_names(f, "RESULT", results, n_results);
    fprintf(f, ",\"TIME\":");
    put_number(f, time);
    fprintf(f, "}\n");
}

void fmt_trace_put_mutate(FILE *f, const char *op, const char *const *args, uint32_t n_args,
                          const uint32_t *mutated, uint32_t n_mutated, double time)
{
    fputc('{', f);
    put_names(f, "ARGS", args, n_args);
    fprintf(f, ",\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[");
    for (uint32_t i = 0; i < n_mutated; i++)
        fprintf(f, i ? ",%u" : "%u", mutated[i]);
    fprintf(f, "],\"NAME\":");
    json_write_string(f, op);
    fprintf(f, ",\"TIME\":");
    put_number(f, time);
    fprintf(f, "}\n");
}

void fmt_trace_put_copy(FILE *f, int from, const char *dst, const char *src)
{
    fprintf(f, "{\"DST\":");
    json_write_string(f, dst);
    fprintf(f, ",\"INSTRUCTION\":\"%s\",\"SRC\":", from ? "COPY_FROM" : "COPY");
    json_write_string(f, src);
    fprintf(f, "}\n");
}

void fmt_trace_put_release(FILE *f, const char *name)
{
    fprintf(f, "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":");
    json_write_string(f, name);
    fprintf(f, "}\n");
}

void fmt_trace_put_annotate(FILE *f, const char *annotation)
{
    fprintf(f, "{\"ANNOTATION\":");
    json_write_string(f, annotation);
    fprintf(f, ",\"INSTRUCTION\":\"ANNOTATE\"}\n");
}

static int put_record(FILE *f, const struct fmt_trace *t, const struct fmt_trace_record *r)
{
    const char *name = fmt_trace_name(t, r->name);
    const char **args = NULL, **res = NULL;
    switch (r->kind) {
    case FMT_TRACE_CONSTANT: fmt_trace_put_constant(f, name); return 0;
    case FMT_TRACE_MEMORY: fmt_trace_put_memory(f, name, (uint64_t)r->value); return 0;
    case FMT_TRACE_ALIAS: fmt_trace_put_alias(f, name, r->value); return 0;
    case FMT_TRACE_COPY:
    case FMT_TRACE_COPY_FROM:
        fmt_trace_put_copy(f, r->kind == FMT_TRACE_COPY_FROM, name, fmt_trace_name(t, r->src));
        return 0;
    case FMT_TRACE_RELEASE: fmt_trace_put_release(f, name); return 0;
    case FMT_TRACE_ANNOTATE: fmt_trace_put_annotate(f, name); return 0;
    default: break;
    }
    args = malloc((r->n_args + 1) * sizeof *args);
    res = malloc((r->n_res + 1) * sizeof *res);
    if (!args || !res) {
        free(args);
        free(res);
        return -1;
    }
    for (uint32_t i = 0; i < r->n_args; i++)
        args[i] = fmt_trace_name(t, t->ids[r->args_at + i]);
    if (r->kind == FMT_TRACE_CALL) {
        for (uint32_t i = 0; i < r->n_res; i++)
            res[i] = fmt_trace_name(t, t->ids[r->res_at + i]);
        fmt_trace_put_call_in_place(f, name, args, r->n_args, res, r->n_res, t->ids + r->in_place_at, r->n_in_place,
                                    r->time);
    } else {
        fmt_trace_put_mutate(f, name, args, r->n_args, t->ids + r->res_at, r->n_res, r->time);
    }
    free(args);
    free(res);
    return 0;
}

int fmt_trace_write(FILE *f, const struct fmt_trace *t)
{
    for (uint32_t i = 0; i < t->n_recs; i++)
        if (put_record(f, t, &t->recs[i]))
            return -1;
    return ferror(f) ? -1 : 0;
}
