/* dtr/format/schedule.c — the schedule format's one reader and one writer
 * (dtr/format/schedule.h): the steps form and Checkmate's stages form read,
 * lowered and checked against a graph; written in the steps form. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dtr/format/json.h"
#include "dtr/format/schedule.h"

void schedule_init(struct schedule *s)
{
    memset(s, 0, sizeof *s);
    s->solver.seconds = 0;
    s->solver.solve_seconds = NAN;
    s->solver.objective = NAN;
    s->solver.bound = NAN;
    s->solver.gap = NAN;
}

void schedule_free(struct schedule *s)
{
    free(s->steps);
    s->steps = NULL;
    s->n_steps = s->cap_steps = 0;
}

int schedule_copy(const struct schedule *s, struct schedule *out)
{
    *out = *s;
    out->steps = NULL;
    out->cap_steps = s->n_steps;
    if (s->n_steps && !(out->steps = malloc((size_t)s->n_steps * sizeof *s->steps)))
        return -1;
    if (s->n_steps)
        memcpy(out->steps, s->steps, (size_t)s->n_steps * sizeof *s->steps);
    return 0;
}

int schedule_push(struct schedule *s, enum schedule_step_kind kind, uint32_t node, int recompute)
{
    if (s->n_steps == s->cap_steps) {
        uint32_t cap = s->cap_steps ? 2 * s->cap_steps : 256;
        void *p = realloc(s->steps, (size_t)cap * sizeof *s->steps);
        if (!p)
            return -1;
        s->steps = p;
        s->cap_steps = cap;
    }
    struct schedule_step *st = &s->steps[s->n_steps];
    st->kind = (uint8_t)kind;
    st->recompute = (uint8_t)(recompute != 0);
    st->node = node;
    st->src = s->n_steps;
    st->stage = -1;
    s->n_steps++;
    return 0;
}

/* ---- reading ---- */

static int node_of(const struct fmt_graph *g, const struct json_value *v, uint32_t *out)
{
    const char *name = json_string(v);
    int32_t i = name ? fmt_graph_find(g, name) : -1;
    if (i < 0)
        return -1;
    *out = (uint32_t)i;
    return 0;
}

static void describe(const struct json_value *v, char *buf, size_t n)
{
    const char *s = json_string(v);
    if (s)
        snprintf(buf, n, "'%.80s'", s);
    else
        snprintf(buf, n, "a %s", !v ? "missing value" : v->type == JSON_NUMBER ? "number" : v->type == JSON_ARRAY ? "list"
                                                    : v->type == JSON_OBJECT ? "object" : "literal");
}

static int parse_steps(const struct json_value *js, const struct fmt_graph *g, struct schedule *s, char *err,
                       size_t err_size)
{
    for (size_t k = 0; k < js->u.array.n; k++) {
        const struct json_value *st = &js->u.array.items[k];
        const struct json_value *run = json_get(st, "run"), *fr = json_get(st, "free");
        char what[100];
        if (st->type != JSON_OBJECT || (!run && !fr) || (run && fr)) {
            snprintf(err, err_size, "step %zu: expected {\"run\": NAME} or {\"free\": [NAMES]}", k);
            return -1;
        }
        if (run) {
            const struct json_value *rc = json_get(st, "recompute");
            uint32_t v;
            if (rc && rc->type != JSON_TRUE && rc->type != JSON_FALSE) {
                snprintf(err, err_size, "step %zu: \"recompute\" must be true or false", k);
                return -1;
            }
            if (node_of(g, run, &v)) {
                describe(run, what, sizeof what);
                snprintf(err, err_size, "step %zu: runs %s, which is no node of %s", k, what, g->name);
                return -1;
            }
            if (schedule_push(s, SCHEDULE_RUN, v, rc && rc->type == JSON_TRUE))
                goto oom;
            s->steps[s->n_steps - 1].src = (uint32_t)k;
            continue;
        }
        const struct json_value *one = fr->type == JSON_STRING ? fr : NULL;
        size_t nf = one ? 1 : fr->type == JSON_ARRAY ? fr->u.array.n : 0;
        if (!one && fr->type != JSON_ARRAY) {
            snprintf(err, err_size, "step %zu: \"free\" must be a list of node names", k);
            return -1;
        }
        for (size_t q = 0; q < nf; q++) {
            const struct json_value *nv = one ? one : &fr->u.array.items[q];
            uint32_t v;
            if (node_of(g, nv, &v)) {
                describe(nv, what, sizeof what);
                snprintf(err, err_size, "step %zu: frees %s, which is no node of %s", k, what, g->name);
                return -1;
            }
            if (schedule_push(s, SCHEDULE_FREE, v, 0))
                goto oom;
            s->steps[s->n_steps - 1].src = (uint32_t)k;
        }
    }
    return 0;
oom:
    snprintf(err, err_size, "out of memory");
    return -1;
}

/* One row of R or S: a list of node names, or a 0/1 list over the graph's
 * nodes in topological order (Checkmate's matrices). */
static int stage_row(const struct json_value *row, const struct fmt_graph *g, uint8_t *out, size_t t,
                     const char *which, char *err, size_t err_size)
{
    memset(out, 0, g->n);
    if (!row)
        return 0;
    if (row->type != JSON_ARRAY) {
        snprintf(err, err_size, "stage %zu: \"%s\" must be a list", t, which);
        return -1;
    }
    int indicator = row->u.array.n == g->n && row->u.array.n && row->u.array.items[0].type == JSON_NUMBER;
    for (size_t k = 0; k < row->u.array.n; k++) {
        const struct json_value *v = &row->u.array.items[k];
        if (indicator) {
            double x;
            if (json_as_double(v, &x) || (x != 0 && x != 1)) {
                snprintf(err, err_size, "stage %zu: \"%s\"[%zu] must be 0 or 1", t, which, k);
                return -1;
            }
            out[k] = x == 1;
        } else {
            uint32_t i;
            char what[100];
            if (node_of(g, v, &i)) {
                describe(v, what, sizeof what);
                snprintf(err, err_size, "stage %zu: \"%s\" names %s, which is no node of %s", t, which, what, g->name);
                return -1;
            }
            out[i] = 1;
        }
    }
    return 0;
}

static int parse_stages(const struct json_value *js, const struct fmt_graph *g, struct schedule *s, char *err,
                        size_t err_size)
{
    size_t T = js->u.array.n, n = g->n;
    int rc = -1;
    uint8_t *R = malloc(T * n + 1), *S = malloc((T + 1) * n + 1), *res = calloc(n, 1), *ever = calloc(n, 1);
    int32_t *last = malloc(n * sizeof *last);
    if (!R || !S || !res || !ever || !last) {
        snprintf(err, err_size, "out of memory");
        goto out;
    }
    for (size_t t = 0; t < T; t++) {
        const struct json_value *st = &js->u.array.items[t];
        if (st->type != JSON_OBJECT || !json_get(st, "R")) {
            snprintf(err, err_size, "stage %zu: expected {\"R\": [...], \"S\": [...]}", t);
            goto out;
        }
        if (stage_row(json_get(st, "R"), g, R + t * n, t, "R", err, err_size) ||
            stage_row(json_get(st, "S"), g, S + t * n, t, "S", err, err_size))
            goto out;
    }
    /* after the last stage only the outputs are kept */
    memcpy(S + T * n, g->sink, n);
    for (size_t t = 0; t < T; t++) {
        const uint8_t *Rt = R + t * n, *St = S + t * n, *Sn = S + (t + 1) * n;
        for (size_t i = 0; i < n; i++)
            if (St[i] && !res[i]) {
                snprintf(err, err_size, "stage %zu (step %u): keeps '%s' (S), which is %s", t, s->n_steps, g->names[i],
                         t ? "neither kept from nor computed in the stage before" : "not computed yet");
                goto out;
            }
        /* the last run of this stage that reads each value */
        for (size_t i = 0; i < n; i++)
            last[i] = -1;
        for (size_t k = 0; k < n; k++)
            if (Rt[k])
                for (uint32_t q = g->pred_at[k]; q < g->pred_at[k + 1]; q++)
                    last[g->preds[q]] = (int32_t)k;
        /* kept into this stage but neither used nor kept after it */
        for (size_t i = 0; i < n; i++)
            if (res[i] && !Sn[i] && last[i] < 0 && !Rt[i]) {
                if (schedule_push(s, SCHEDULE_FREE, (uint32_t)i, 0))
                    goto oom;
                s->steps[s->n_steps - 1].stage = (int32_t)t;
                res[i] = 0;
            }
        for (size_t k = 0; k < n; k++) {
            if (!Rt[k])
                continue;
            /* computing a value that is resident is a no-op in Checkmate's
             * accounting terms (R and S both 1): nothing to run */
            if (!res[k]) {
                if (schedule_push(s, SCHEDULE_RUN, (uint32_t)k, ever[k]))
                    goto oom;
                s->steps[s->n_steps - 1].stage = (int32_t)t;
                res[k] = ever[k] = 1;
            }
            /* free k's inputs and k itself once nothing later in the stage
             * reads them and the next stage does not keep them */
            for (uint32_t q = g->pred_at[k]; q <= g->pred_at[k + 1]; q++) {
                uint32_t i = q < g->pred_at[k + 1] ? g->preds[q] : (uint32_t)k;
                if (res[i] && !Sn[i] && last[i] <= (int32_t)k) {
                    if (schedule_push(s, SCHEDULE_FREE, i, 0))
                        goto oom;
                    s->steps[s->n_steps - 1].stage = (int32_t)t;
                    res[i] = 0;
                }
            }
        }
        /* what the next stage keeps must be here now */
        for (size_t i = 0; i < n; i++)
            if (Sn[i] && !res[i] && t + 1 < T) {
                snprintf(err, err_size, "stage %zu (step %u): keeps '%s' (S), which is neither kept from nor computed in "
                         "stage %zu", t + 1, s->n_steps, g->names[i], t);
                goto out;
            }
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, err_size, "out of memory");
out:
    free(R);
    free(S);
    free(res);
    free(ever);
    free(last);
    return rc;
}

/* "format" and "version". */
static int check_header(const struct json_value *root, char *err, size_t err_size)
{
    const struct json_value *fmt = json_get(root, "format"), *ver = json_get(root, "version");
    int64_t version;
    if (root->type != JSON_OBJECT) {
        snprintf(err, err_size, "a schedule is a JSON object");
        return -1;
    }
    if (!json_string(fmt) || strcmp(json_string(fmt), "dtrexec-schedule")) {
        snprintf(err, err_size, "\"format\" must be \"dtrexec-schedule\"");
        return -1;
    }
    if (json_as_int64(ver, &version) || version != 1) {
        snprintf(err, err_size, "\"version\" must be 1");
        return -1;
    }
    return 0;
}

/* "graph": {"file", "sha256"}; the sha256 against g's when g is given. */
static int read_graph_ref(const struct json_value *root, const struct fmt_graph *g, struct schedule *s, char *err,
                          size_t err_size)
{
    const struct json_value *jg = json_get(root, "graph");
    if (!jg)
        return 0;
    const struct json_value *jf = json_get(jg, "file"), *jh = json_get(jg, "sha256");
    if (jg->type != JSON_OBJECT || (jf && !json_string(jf)) || (jh && !json_string(jh))) {
        snprintf(err, err_size, "\"graph\" must be {\"file\": TEXT, \"sha256\": HEX}");
        return -1;
    }
    if (jf)
        snprintf(s->graph_file, sizeof s->graph_file, "%s", json_string(jf));
    if (jh) {
        snprintf(s->graph_sha256, sizeof s->graph_sha256, "%s", json_string(jh));
        if (g && strcasecmp(s->graph_sha256, g->sha256)) {
            snprintf(err, err_size, "made for another graph: sha256 %s, but %s has %s", s->graph_sha256, g->name,
                     g->sha256);
            return -1;
        }
    }
    return 0;
}

/* An optional solver figure: absent or null leaves *out; else a finite
 * number (non-negative for times). */
static int solver_number(const struct json_value *js, const char *key, int nonneg, double *out, char *err,
                         size_t err_size)
{
    const struct json_value *v = json_get(js, key);
    if (!v || v->type == JSON_NULL)
        return 0;
    double x;
    if (json_as_double(v, &x) || !isfinite(x) || (nonneg && x < 0)) {
        snprintf(err, err_size, "\"solver\": \"%s\" must be a finite%s number", key, nonneg ? " non-negative" : "");
        return -1;
    }
    *out = x;
    return 0;
}

static int solver_text(const struct json_value *js, const char *key, char *out, size_t n, char *err, size_t err_size)
{
    const struct json_value *v = json_get(js, key);
    if (!v)
        return 0;
    if (!json_string(v)) {
        snprintf(err, err_size, "\"solver\": \"%s\" must be a string", key);
        return -1;
    }
    snprintf(out, n, "%s", json_string(v));
    return 0;
}

static int read_solver(const struct json_value *root, struct schedule *s, char *err, size_t err_size)
{
    const struct json_value *js = json_get(root, "solver");
    if (!js || js->type == JSON_NULL)
        return 0;
    if (js->type != JSON_OBJECT) {
        snprintf(err, err_size, "\"solver\" must be an object");
        return -1;
    }
    struct schedule_solver *v = &s->solver;
    return solver_text(js, "name", v->name, sizeof v->name, err, err_size) ||
                   solver_text(js, "status", v->status, sizeof v->status, err, err_size) ||
                   solver_text(js, "backend", v->backend, sizeof v->backend, err, err_size) ||
                   solver_number(js, "seconds", 1, &v->seconds, err, err_size) ||
                   solver_number(js, "solve_seconds", 1, &v->solve_seconds, err, err_size) ||
                   solver_number(js, "objective", 0, &v->objective, err, err_size) ||
                   solver_number(js, "bound", 0, &v->bound, err, err_size) ||
                   solver_number(js, "gap", 0, &v->gap, err, err_size) ||
                   solver_number(js, "time_limit", 1, &v->time_limit, err, err_size)
               ? -1
               : 0;
}

static int read_budget(const struct json_value *root, struct schedule *s, char *err, size_t err_size)
{
    const struct json_value *jb = json_get(root, "budget_bytes");
    if (!jb || jb->type == JSON_NULL)
        return 0;
    int64_t b;
    if (json_as_int64(jb, &b) || b < 0 || b > SCHEDULE_MAX_BYTES) {
        snprintf(err, err_size, "\"budget_bytes\" must be an integer from 0 to 2^62");
        return -1;
    }
    s->budget_bytes = (uint64_t)b;
    return 0;
}

int schedule_parse(const char *text, size_t len, const struct fmt_graph *g, struct schedule *s, char *err,
                   size_t err_size)
{
    schedule_init(s);
    struct json_value root;
    char jerr[256];
    if (json_parse(text, len, &root, jerr, sizeof jerr)) {
        snprintf(err, err_size, "not JSON: %s", jerr);
        return -1;
    }
    int rc = -1;
    const struct json_value *steps = json_get(&root, "steps"), *stages = json_get(&root, "stages");
    if (check_header(&root, err, err_size) || read_graph_ref(&root, g, s, err, err_size) ||
        read_budget(&root, s, err, err_size) || read_solver(&root, s, err, err_size))
        goto out;
    if ((steps != NULL) == (stages != NULL)) {
        snprintf(err, err_size, "a schedule has either \"steps\" or \"stages\"");
        goto out;
    }
    if ((steps && steps->type != JSON_ARRAY) || (stages && stages->type != JSON_ARRAY)) {
        snprintf(err, err_size, "\"%s\" must be a list", steps ? "steps" : "stages");
        goto out;
    }
    rc = steps ? parse_steps(steps, g, s, err, err_size) : parse_stages(stages, g, s, err, err_size);
out:
    json_free(&root);
    if (rc)
        schedule_free(s);
    return rc;
}

int schedule_read_graph_file(const char *path, char *file, size_t file_size, char *err, size_t err_size)
{
    struct json_value root;
    struct schedule s;
    char e[400];
    schedule_init(&s);
    if (json_parse_file(path, &root, err, err_size))
        return -1;
    int rc = check_header(&root, e, sizeof e) || read_graph_ref(&root, NULL, &s, e, sizeof e) ? -1 : 0;
    json_free(&root);
    if (rc) {
        snprintf(err, err_size, "%s: %s", path, e);
        return -1;
    }
    snprintf(file, file_size, "%s", s.graph_file);
    return 0;
}

int schedule_load(const char *path, const struct fmt_graph *g, struct schedule *s, char *err, size_t err_size)
{
    schedule_init(s);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        snprintf(err, err_size, "%s: out of memory", path);
        return -1;
    }
    char e[400];
    int rc = schedule_parse(buf, len, g, s, e, sizeof e);
    free(buf);
    if (rc)
        snprintf(err, err_size, "%s: %s", path, e);
    return rc;
}

/* ---- writing ---- */

static void write_num_field(FILE *f, const char *key, double x)
{
    if (isnan(x))
        return;
    fprintf(f, ", \"%s\": ", key);
    json_write_number(f, x);
}

int schedule_save(const char *path, const struct fmt_graph *g, const struct schedule *s, char *err, size_t err_size)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\"format\": \"dtrexec-schedule\", \"version\": 1,\n \"graph\": {\"file\": ");
    json_write_string(f, g->name);
    fprintf(f, ", \"sha256\": \"%s\"},\n", g->sha256);
    if (s->budget_bytes)
        fprintf(f, " \"budget_bytes\": %llu,\n", (unsigned long long)s->budget_bytes);
    fprintf(f, " \"solver\": {\"name\": ");
    json_write_string(f, s->solver.name[0] ? s->solver.name : "unknown");
    if (s->solver.status[0]) {
        fprintf(f, ", \"status\": ");
        json_write_string(f, s->solver.status);
    }
    if (s->solver.backend[0]) {
        fprintf(f, ", \"backend\": ");
        json_write_string(f, s->solver.backend);
    }
    write_num_field(f, "seconds", s->solver.seconds);
    write_num_field(f, "solve_seconds", s->solver.solve_seconds);
    write_num_field(f, "objective", s->solver.objective);
    write_num_field(f, "bound", s->solver.bound);
    write_num_field(f, "gap", s->solver.gap);
    if (s->solver.time_limit > 0)
        write_num_field(f, "time_limit", s->solver.time_limit);
    fprintf(f, "},\n \"steps\": [");
    for (uint32_t k = 0; k < s->n_steps; k++) {
        const struct schedule_step *st = &s->steps[k];
        fprintf(f, "%s\n  ", k ? "," : "");
        if (st->kind == SCHEDULE_RUN) {
            fprintf(f, "{\"run\": ");
            json_write_string(f, g->names[st->node]);
            fprintf(f, "%s}", st->recompute ? ", \"recompute\": true" : "");
            continue;
        }
        fprintf(f, "{\"free\": [");
        for (uint32_t q = k; q < s->n_steps && s->steps[q].kind == SCHEDULE_FREE; q++) {
            if (q > k)
                fprintf(f, ", ");
            json_write_string(f, g->names[s->steps[q].node]);
            k = q;
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n ]}\n");
    if (fclose(f)) {
        snprintf(err, err_size, "%s: write error", path);
        return -1;
    }
    return 0;
}
