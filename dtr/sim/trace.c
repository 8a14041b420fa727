/* dtr/sim/trace.c — reads the DTR authors' op logs (JSON lines) into a
 * simulator program, with the meaning their simulator (simrd, parse.py)
 * gives each record:
 *   CONSTANT n + MEMORY n         a pinned constant
 *   CALL (ARGS, RESULT, TIME)     followed, per result, by MEMORY then ALIAS
 *                                 (ALIAS k >= 0: a view of argument k, no bytes)
 *   MUTATE (ARGS, MUTATE, TIME)   copy-on-write: each mutated argument gets a
 *                                 new value of its storage's size; the name
 *                                 moves to it and the old value is released
 *   COPY dst src                  dst names src's value: one more reference
 *   COPY_FROM dst src             dst drops its value and names src's
 *   RELEASE n                     one reference less (unknown names ignored)
 *   ANNOTATE START / BACKWARD     replay starts after START
 * Values still referenced at the end are outputs: they are made resident
 * (recomputed if needed) and pinned, in the order their names first
 * appeared. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"

struct name_table {
    char **names;          /* in first-appearance order */
    uint32_t *value;       /* current binding */
    uint32_t n, cap;
    uint32_t *slots;       /* hash -> index + 1 */
    uint32_t n_slots;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static uint32_t names_find(const struct name_table *t, const char *name)
{
    if (!t->n_slots)
        return UINT32_MAX;
    uint32_t mask = t->n_slots - 1;
    for (uint32_t i = (uint32_t)hash_str(name) & mask;; i = (i + 1) & mask) {
        uint32_t e = t->slots[i];
        if (!e)
            return UINT32_MAX;
        if (!strcmp(t->names[e - 1], name))
            return e - 1;
    }
}

static int names_rehash(struct name_table *t, uint32_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t i = (uint32_t)hash_str(t->names[k]) & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = k + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* Binds name to value, keeping the name's first-appearance position. */
static int names_bind(struct name_table *t, const char *name, uint32_t value)
{
    uint32_t k = names_find(t, name);
    if (k != UINT32_MAX) {
        t->value[k] = value;
        return 0;
    }
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 256;
        char **nn = realloc(t->names, nc * sizeof *nn);
        if (!nn)
            return -1;
        t->names = nn;
        uint32_t *nv = realloc(t->value, nc * sizeof *nv);
        if (!nv)
            return -1;
        t->value = nv;
        t->cap = nc;
    }
    if ((t->n + 1) * 2 > t->n_slots && names_rehash(t, t->n_slots ? t->n_slots * 2 : 512))
        return -1;
    char *copy = strdup(name);
    if (!copy)
        return -1;
    t->names[t->n] = copy;
    t->value[t->n] = value;
    uint32_t i = (uint32_t)hash_str(name) & (t->n_slots - 1);
    while (t->slots[i])
        i = (i + 1) & (t->n_slots - 1);
    t->slots[i] = ++t->n;
    return 0;
}

static void names_free(struct name_table *t)
{
    for (uint32_t k = 0; k < t->n; k++)
        free(t->names[k]);
    free(t->names);
    free(t->value);
    free(t->slots);
}

struct reader {
    const char *path;
    struct json_value *recs;
    uint32_t *lines;
    uint32_t n_recs;
    uint32_t pos;
    struct name_table names;
    int64_t *refs;          /* per value: references the program holds */
    uint64_t *storage_bytes;/* per value: its storage's size (views: the viewed one's) */
    uint32_t cap_values;
    struct sim_program *p;
    char *err;
    size_t err_size;
};

__attribute__((format(printf, 3, 4))) static int rerr(struct reader *r, uint32_t line, const char *fmt, ...)
{
    int n = snprintf(r->err, r->err_size, "%s:%u: ", r->path, line);
    if (n >= 0 && (size_t)n < r->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->err_size - n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *instr(const struct json_value *v)
{
    return json_string(json_get(v, "INSTRUCTION"));
}

static const char *field_str(struct reader *r, uint32_t i, const char *key)
{
    const char *s = json_string(json_get(&r->recs[i], key));
    if (!s)
        rerr(r, r->lines[i], "%s record without a string %s", instr(&r->recs[i]), key);
    return s;
}

static const struct json_value *field_names(struct reader *r, uint32_t i, const char *key)
{
    const struct json_value *a = json_get(&r->recs[i], key);
    if (!a || a->type != JSON_ARRAY) {
        rerr(r, r->lines[i], "%s record without a %s list", instr(&r->recs[i]), key);
        return NULL;
    }
    for (size_t k = 0; k < a->u.array.n; k++)
        if (a->u.array.items[k].type != JSON_STRING) {
            rerr(r, r->lines[i], "%s: %s[%zu] is not a name", instr(&r->recs[i]), key, k);
            return NULL;
        }
    return a;
}

static int values_reserve(struct reader *r, uint32_t n)
{
    if (n <= r->cap_values)
        return 0;
    uint32_t nc = r->cap_values ? r->cap_values : 1024;
    while (nc < n)
        nc *= 2;
    int64_t *a = realloc(r->refs, nc * sizeof *a);
    if (!a)
        return -1;
    r->refs = a;
    uint64_t *b = realloc(r->storage_bytes, nc * sizeof *b);
    if (!b)
        return -1;
    r->storage_bytes = b;
    r->cap_values = nc;
    return 0;
}

/* The value a name is bound to, or an error naming the line. */
static int lookup(struct reader *r, uint32_t line, const char *what, const char *name, uint32_t *value)
{
    uint32_t k = names_find(&r->names, name);
    if (k == UINT32_MAX)
        return rerr(r, line, "%s uses '%s', which was never defined", what, name);
    *value = r->names.value[k];
    return 0;
}

static int do_constant(struct reader *r, uint32_t i)
{
    const char *name = field_str(r, i, "NAME");
    if (!name)
        return -1;
    if (i + 1 >= r->n_recs || !instr(&r->recs[i + 1]) || strcmp(instr(&r->recs[i + 1]), "MEMORY"))
        return rerr(r, r->lines[i], "CONSTANT '%s' is not followed by its MEMORY record", name);
    const char *mname = field_str(r, i + 1, "NAME");
    if (!mname)
        return -1;
    if (strcmp(mname, name))
        return rerr(r, r->lines[i + 1], "MEMORY for '%s' follows CONSTANT '%s'", mname, name);
    int64_t bytes;
    if (json_as_int64(json_get(&r->recs[i + 1], "MEMORY"), &bytes) || bytes < 0)
        return rerr(r, r->lines[i + 1], "MEMORY of '%s' is not a byte count", name);
    uint32_t v = sim_program_constant(r->p, (uint64_t)bytes, r->lines[i]);
    if (v == UINT32_MAX || values_reserve(r, v + 1) || names_bind(&r->names, name, v))
        return rerr(r, r->lines[i], "out of memory");
    r->refs[v] = 1;
    r->storage_bytes[v] = (uint64_t)bytes;
    r->pos = i + 2;
    return 0;
}

static int do_call(struct reader *r, uint32_t i)
{
    uint32_t line = r->lines[i];
    const char *op = field_str(r, i, "NAME");
    const struct json_value *args = field_names(r, i, "ARGS");
    const struct json_value *res = args ? field_names(r, i, "RESULT") : NULL;
    if (!op || !args || !res)
        return -1;
    double cost;
    if (json_as_double(json_get(&r->recs[i], "TIME"), &cost) || !(cost >= 0))
        return rerr(r, line, "CALL %s: TIME is not a non-negative number", op);
    uint32_t n_in = (uint32_t)args->u.array.n, n_out = (uint32_t)res->u.array.n;
    if (!n_out)
        return rerr(r, line, "CALL %s has no RESULT", op);
    uint32_t *in = malloc((n_in + 1) * sizeof *in);
    uint64_t *bytes = malloc(n_out * sizeof *bytes);
    int32_t *alias = malloc(n_out * sizeof *alias);
    int rc = -1;
    if (!in || !bytes || !alias) {
        rerr(r, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_in; k++)
        if (lookup(r, line, op, args->u.array.items[k].u.string.chars, &in[k]))
            goto out;
    for (uint32_t k = 0; k < n_out; k++) {
        const char *rn = res->u.array.items[k].u.string.chars;
        uint32_t mi = i + 1 + 2 * k, ai = mi + 1;
        if (names_find(&r->names, rn) != UINT32_MAX) {
            rerr(r, line, "CALL %s: result '%s' is already defined", op, rn);
            goto out;
        }
        if (ai >= r->n_recs || !instr(&r->recs[mi]) || strcmp(instr(&r->recs[mi]), "MEMORY") ||
            !instr(&r->recs[ai]) || strcmp(instr(&r->recs[ai]), "ALIAS")) {
            rerr(r, line, "CALL %s: result '%s' is not followed by MEMORY and ALIAS records", op, rn);
            goto out;
        }
        const char *mn = field_str(r, mi, "NAME"), *an = mn ? field_str(r, ai, "NAME") : NULL;
        if (!mn || !an)
            goto out;
        if (strcmp(mn, rn) || strcmp(an, rn)) {
            rerr(r, r->lines[strcmp(mn, rn) ? mi : ai], "MEMORY/ALIAS for '%s' where '%s' (result %u of %s) was expected",
                 strcmp(mn, rn) ? mn : an, rn, k, op);
            goto out;
        }
        int64_t m, a;
        if (json_as_int64(json_get(&r->recs[mi], "MEMORY"), &m) || m < 0) {
            rerr(r, r->lines[mi], "MEMORY of '%s' is not a byte count", rn);
            goto out;
        }
        if (json_as_int64(json_get(&r->recs[ai], "ALIAS"), &a) || a < -1 || a >= (int64_t)n_in) {
            rerr(r, r->lines[ai], "ALIAS of '%s' is not -1 or an argument index below %u", rn, n_in);
            goto out;
        }
        alias[k] = (int32_t)a;
        bytes[k] = a >= 0 ? 0 : (uint64_t)m;   /* a view has no bytes of its own */
    }
    uint32_t v = sim_program_call(r->p, in, n_in, bytes, alias, n_out, cost, line);
    if (v == UINT32_MAX || values_reserve(r, v + n_out)) {
        rerr(r, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        r->refs[v + k] = 1;
        r->storage_bytes[v + k] = alias[k] >= 0 ? r->storage_bytes[in[alias[k]]] : bytes[k];
        if (names_bind(&r->names, res->u.array.items[k].u.string.chars, v + k)) {
            rerr(r, line, "out of memory");
            goto out;
        }
    }
    r->pos = i + 1 + 2 * n_out;
    rc = 0;
out:
    free(in);
    free(bytes);
    free(alias);
    return rc;
}

static int do_mutate(struct reader *r, uint32_t i)
{
    uint32_t line = r->lines[i];
    const char *op = field_str(r, i, "NAME");
    const struct json_value *args = field_names(r, i, "ARGS");
    const struct json_value *mut = json_get(&r->recs[i], "MUTATE");
    if (!op || !args)
        return -1;
    if (!mut || mut->type != JSON_ARRAY || !mut->u.array.n)
        return rerr(r, line, "MUTATE %s without a MUTATE list", op);
    double cost;
    if (json_as_double(json_get(&r->recs[i], "TIME"), &cost) || !(cost >= 0))
        return rerr(r, line, "MUTATE %s: TIME is not a non-negative number", op);
    uint32_t n_in = (uint32_t)args->u.array.n, n_out = (uint32_t)mut->u.array.n;
    uint32_t *in = malloc((n_in + 1) * sizeof *in);
    uint32_t *idx = malloc(n_out * sizeof *idx);
    uint64_t *bytes = malloc(n_out * sizeof *bytes);
    int rc = -1;
    if (!in || !idx || !bytes) {
        rerr(r, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_in; k++)
        if (lookup(r, line, op, args->u.array.items[k].u.string.chars, &in[k]))
            goto out;
    for (uint32_t k = 0; k < n_out; k++) {
        int64_t m;
        if (json_as_int64(&mut->u.array.items[k], &m) || m < 0 || m >= (int64_t)n_in) {
            rerr(r, line, "MUTATE %s: MUTATE[%u] is not an argument index below %u", op, k, n_in);
            goto out;
        }
        idx[k] = (uint32_t)m;
        bytes[k] = r->storage_bytes[in[m]];
    }
    uint32_t v = sim_program_call(r->p, in, n_in, bytes, NULL, n_out, cost, line);
    if (v == UINT32_MAX || values_reserve(r, v + n_out)) {
        rerr(r, line, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        const char *name = args->u.array.items[idx[k]].u.string.chars;
        uint32_t old;
        if (lookup(r, line, op, name, &old))
            goto out;
        r->refs[v + k] = 1;
        r->storage_bytes[v + k] = bytes[k];
        if (names_bind(&r->names, name, v + k)) {
            rerr(r, line, "out of memory");
            goto out;
        }
        if (r->refs[old] <= 0) {
            rerr(r, line, "MUTATE %s: '%s' has no references left", op, name);
            goto out;
        }
        r->refs[old]--;
        if (sim_program_ref(r->p, SIM_STEP_RELEASE, old, line)) {
            rerr(r, line, "out of memory");
            goto out;
        }
    }
    r->pos = i + 1;
    rc = 0;
out:
    free(in);
    free(idx);
    free(bytes);
    return rc;
}

static int step(struct reader *r)
{
    uint32_t i = r->pos, line = r->lines[i];
    const char *kind = instr(&r->recs[i]);
    if (!kind)
        return rerr(r, line, "record without a string INSTRUCTION");
    if (!strcmp(kind, "CONSTANT"))
        return do_constant(r, i);
    if (!strcmp(kind, "CALL"))
        return do_call(r, i);
    if (!strcmp(kind, "MUTATE"))
        return do_mutate(r, i);
    r->pos = i + 1;
    if (!strcmp(kind, "COPY") || !strcmp(kind, "COPY_FROM")) {
        const char *dst = field_str(r, i, "DST"), *src = dst ? field_str(r, i, "SRC") : NULL;
        uint32_t sv, dv;
        if (!src || lookup(r, line, kind, src, &sv))
            return -1;
        if (!strcmp(kind, "COPY")) {
            if (names_find(&r->names, dst) != UINT32_MAX)
                return rerr(r, line, "COPY to '%s', which is already defined", dst);
        } else {
            if (lookup(r, line, kind, dst, &dv))
                return -1;
            if (r->refs[dv] <= 0)
                return rerr(r, line, "COPY_FROM: '%s' has no references left", dst);
            r->refs[dv]--;
            if (sim_program_ref(r->p, SIM_STEP_RELEASE, dv, line))
                return rerr(r, line, "out of memory");
        }
        if (r->refs[sv] <= 0)
            return rerr(r, line, "%s from '%s', which has no references left", kind, src);
        if (names_bind(&r->names, dst, sv) || sim_program_ref(r->p, SIM_STEP_RETAIN, sv, line))
            return rerr(r, line, "out of memory");
        r->refs[sv]++;
        return 0;
    }
    if (!strcmp(kind, "RELEASE")) {
        const char *name = field_str(r, i, "NAME");
        if (!name)
            return -1;
        uint32_t k = names_find(&r->names, name);
        if (k == UINT32_MAX) {
            r->p->ignored_releases++;   /* defined before START: simrd ignores these too */
            return 0;
        }
        uint32_t v = r->names.value[k];
        if (r->refs[v] <= 0)
            return rerr(r, line, "RELEASE of '%s', which has no references left", name);
        r->refs[v]--;
        return sim_program_ref(r->p, SIM_STEP_RELEASE, v, line) ? rerr(r, line, "out of memory") : 0;
    }
    if (!strcmp(kind, "ANNOTATE")) {
        if (!field_str(r, i, "ANNOTATION"))
            return -1;
        return 0;
    }
    if (!strcmp(kind, "MEMORY") || !strcmp(kind, "ALIAS"))
        return rerr(r, line, "%s record that follows no CONSTANT or CALL", kind);
    return rerr(r, line, "unknown INSTRUCTION '%s'", kind);
}

static int read_lines(struct reader *r)
{
    FILE *f = fopen(r->path, "rb");
    if (!f) {
        snprintf(r->err, r->err_size, "%s: %s", r->path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    uint32_t cap_recs = 0, line = 0;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&buf, &cap, f)) >= 0) {
        line++;
        size_t n = (size_t)got;
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
            n--;
        size_t s = 0;
        while (s < n && (buf[s] == ' ' || buf[s] == '\t'))
            s++;
        if (s == n)
            continue;
        if (r->n_recs == cap_recs) {
            uint32_t nc = cap_recs ? cap_recs * 2 : 4096;
            void *a = realloc(r->recs, nc * sizeof *r->recs);
            if (!a) {
                rc = rerr(r, line, "out of memory");
                break;
            }
            r->recs = a;
            void *b = realloc(r->lines, nc * sizeof *r->lines);
            if (!b) {
                rc = rerr(r, line, "out of memory");
                break;
            }
            r->lines = b;
            cap_recs = nc;
        }
        char msg[200];
        if (json_parse(buf + s, n - s, &r->recs[r->n_recs], msg, sizeof msg)) {
            rc = rerr(r, line, "not JSON: %s", msg);
            break;
        }
        if (r->recs[r->n_recs].type != JSON_OBJECT) {
            json_free(&r->recs[r->n_recs]);
            rc = rerr(r, line, "a record must be a JSON object");
            break;
        }
        r->lines[r->n_recs++] = line;
    }
    free(buf);
    fclose(f);
    return rc;
}

int sim_program_load_trace(const char *path, struct sim_program *p, char *err, size_t err_size)
{
    memset(p, 0, sizeof *p);
    struct reader r = { .path = path, .p = p, .err = err, .err_size = err_size };
    int rc = read_lines(&r);
    if (!rc && !r.n_recs)
        rc = rerr(&r, 1, "empty log");
    if (!rc) {
        /* replay from just after ANNOTATE START, when there is one */
        for (uint32_t i = 0; i < r.n_recs; i++) {
            const char *k = instr(&r.recs[i]);
            const char *a = json_string(json_get(&r.recs[i], "ANNOTATION"));
            if (k && a && !strcmp(k, "ANNOTATE") && !strcmp(a, "START")) {
                r.pos = i + 1;
                break;
            }
        }
        while (!rc && r.pos < r.n_recs)
            rc = step(&r);
    }
    if (!rc) {
        /* what the program still holds at the end is its output */
        for (uint32_t k = 0; k < r.names.n && !rc; k++) {
            uint32_t v = r.names.value[k];
            if (r.refs[v] > 0 && sim_program_ref(p, SIM_STEP_PIN, v, r.n_recs ? r.lines[r.n_recs - 1] : 0))
                rc = rerr(&r, 0, "out of memory");
        }
    }
    if (!rc && !p->n_calls)
        rc = rerr(&r, r.n_recs ? r.lines[r.n_recs - 1] : 0, "no CALL records to replay");
    if (!rc) {
        const char *base = strrchr(path, '/');
        p->name = strdup(base ? base + 1 : path);
        if (!p->name)
            rc = rerr(&r, 0, "out of memory");
    }
    for (uint32_t i = 0; i < r.n_recs; i++)
        json_free(&r.recs[i]);
    free(r.recs);
    free(r.lines);
    free(r.refs);
    free(r.storage_bytes);
    names_free(&r.names);
    if (rc)
        sim_program_free(p);
    return rc;
}
