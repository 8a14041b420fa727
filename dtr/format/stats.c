/* dtr/format/stats.c — the statistics JSON's writer and reader
 * (dtr/format/stats.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/json.h"
#include "dtr/format/stats.h"

/* A number with `digits` significant digits; NaN and infinities as null. */
static void number(FILE *f, const char *sep, double v, int digits)
{
    if (isfinite(v))
        fprintf(f, "%s%.*g", sep, digits, v);
    else
        fprintf(f, "%snull", sep);
}

static void write_dims(FILE *f, const struct fmt_stats *s)
{
    fprintf(f, ",\n  \"step_dims\": [");
    for (int k = 0; k < s->dim_steps; k++) {
        fprintf(f, "%s{", k ? ", " : "");
        for (int i = 0; i < s->n_dims; i++) {
            fprintf(f, "%s", i ? ", " : "");
            json_write_string(f, s->dim_names[i]);
            fprintf(f, ": %lld", s->step_dims[(size_t)k * (size_t)s->n_dims + (size_t)i]);
        }
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

int fmt_stats_write(FILE *f, const struct fmt_stats *s)
{
    fprintf(f, "{\n  \"device\": ");
    json_write_string(f, s->device);
    fprintf(f, ",\n");
    if (s->heuristic[0]) {
        fprintf(f, "  \"heuristic\": ");
        json_write_string(f, s->heuristic);
        fprintf(f, ",\n  \"dealloc\": ");
        json_write_string(f, s->dealloc);
        fprintf(f, ",\n");
    } else {
        fprintf(f, "  \"heuristic\": null,\n");
    }
    fprintf(f, "  \"peak_bytes\": %llu,\n  \"budget_bytes\": %llu,\n  \"pinned_bytes\": %llu,\n",
            (unsigned long long)s->peak_bytes, (unsigned long long)s->budget_bytes,
            (unsigned long long)s->pinned_bytes);
    number(f, "  \"baseline_compute\": ", s->baseline_compute, 17);
    number(f, ",\n  \"total_compute\": ", s->total_compute, 17);
    number(f, ",\n  \"remat_compute\": ", s->remat_compute, 17);
    fprintf(f, ",\n");
    fprintf(f, "  \"evictions\": %lld,\n  \"window_evictions\": %lld,\n  \"compactions\": %lld,\n", s->evictions,
            s->window_evictions, s->compactions);
    number(f, "  \"compaction_bytes\": ", s->compaction_bytes, 17);
    fprintf(f, ",\n  \"remats\": %lld,\n  \"view_remats\": %lld,\n  \"op_calls\": %lld,\n", s->remats, s->view_remats,
            s->op_calls);
    fprintf(f, "  \"updates_in_backward\": %lld,\n  \"in_place_calls\": %lld,\n", s->updates_in_backward,
            s->in_place_calls);
    number(f, "  \"dtr_overhead_seconds\": ", s->dtr_overhead_seconds, 9);
    number(f, ",\n  \"compaction_seconds\": ", s->compaction_seconds, 9);
    fprintf(f, ",\n  \"step_seconds\": [");
    for (int i = 0; i < s->runs; i++)
        number(f, i ? ", " : "", s->step_seconds[i], 9);
    fprintf(f, "]");
    if (s->n_dims && s->step_dims)
        write_dims(f, s);
    if (s->train) {
        fprintf(f, ",\n  \"loss\": [");
        for (int i = 0; i < s->runs; i++)
            number(f, i ? ", " : "", s->losses[i], 9);
        /* The step that stopped the run is not recorded: its loss was not finite. */
        if (s->nonfinite_step)
            fprintf(f, "%snull", s->runs ? ", " : "");
        fprintf(f, "],\n  \"nonfinite_step\": ");
        if (s->nonfinite_step)
            fprintf(f, "%d", s->nonfinite_step);
        else
            fprintf(f, "null");
    }
    fprintf(f, "\n}\n");
    return ferror(f) ? -1 : 0;
}

/* ---- reading ---- */

struct rd {
    const struct json_value *root;
    const char *path;
    char *err;
    size_t err_size;
};

static int bad(struct rd *r, const char *key, const char *what)
{
    snprintf(r->err, r->err_size, "%s: \"%s\" must be %s", r->path, key, what);
    return -1;
}

/* A number or null (NaN); required. */
static int get_double(struct rd *r, const char *key, double *out)
{
    const struct json_value *v = json_get(r->root, key);
    if (v && v->type == JSON_NULL) {
        *out = NAN;
        return 0;
    }
    if (!v || v->type != JSON_NUMBER)
        return bad(r, key, "a number or null");
    *out = v->u.number.value;
    return 0;
}

static int get_count(struct rd *r, const char *key, long long *out)
{
    int64_t x;
    if (json_as_int64(json_get(r->root, key), &x) || x < 0 || json_get(r->root, key)->type != JSON_NUMBER)
        return bad(r, key, "a non-negative integer");
    *out = x;
    return 0;
}

static int get_bytes(struct rd *r, const char *key, uint64_t *out)
{
    long long x;
    if (get_count(r, key, &x))
        return -1;
    *out = (uint64_t)x;
    return 0;
}

static int get_text(struct rd *r, const char *key, char *out, size_t n, int nullable)
{
    const struct json_value *v = json_get(r->root, key);
    if (nullable && v && v->type == JSON_NULL) {
        out[0] = 0;
        return 0;
    }
    if (!json_string(v) || strlen(json_string(v)) >= n)
        return bad(r, key, nullable ? "a short string or null" : "a short string");
    snprintf(out, n, "%s", json_string(v));
    return 0;
}

/* A list of numbers or nulls, malloc'd. */
static int get_list(struct rd *r, const char *key, double **out, int *n)
{
    const struct json_value *v = json_get(r->root, key);
    if (!v || v->type != JSON_ARRAY)
        return bad(r, key, "a list of numbers");
    *n = (int)v->u.array.n;
    if (!(*out = malloc((v->u.array.n + 1) * sizeof **out)))
        return bad(r, key, "readable (out of memory)");
    for (size_t i = 0; i < v->u.array.n; i++) {
        const struct json_value *x = &v->u.array.items[i];
        if (x->type != JSON_NUMBER && x->type != JSON_NULL)
            return bad(r, key, "a list of numbers or nulls");
        (*out)[i] = x->type == JSON_NUMBER ? x->u.number.value : NAN;
    }
    return 0;
}

static int get_dims(struct rd *r, struct fmt_stats *s)
{
    const struct json_value *v = json_get(r->root, "step_dims");
    if (!v)
        return 0;
    if (v->type != JSON_ARRAY || !v->u.array.n || v->u.array.items[0].type != JSON_OBJECT)
        return bad(r, "step_dims", "a list of objects");
    const struct json_value *first = &v->u.array.items[0];
    s->n_dims = (int)first->u.object.n;
    s->dim_steps = (int)v->u.array.n;
    s->dim_names = calloc((size_t)s->n_dims + 1, sizeof *s->dim_names);
    s->step_dims = malloc(((size_t)s->n_dims * (size_t)s->dim_steps + 1) * sizeof *s->step_dims);
    if (!s->dim_names || !s->step_dims)
        return bad(r, "step_dims", "readable (out of memory)");
    for (int i = 0; i < s->n_dims; i++)
        if (!(s->dim_names[i] = strdup(first->u.object.members[i].key)))
            return bad(r, "step_dims", "readable (out of memory)");
    for (int k = 0; k < s->dim_steps; k++) {
        const struct json_value *o = &v->u.array.items[k];
        for (int i = 0; i < s->n_dims; i++) {
            int64_t x;
            if (o->type != JSON_OBJECT || json_as_int64(json_get(o, s->dim_names[i]), &x))
                return bad(r, "step_dims", "a list of objects with the same integer dimensions");
            s->step_dims[(size_t)k * (size_t)s->n_dims + (size_t)i] = x;
        }
    }
    return 0;
}

static int get_train(struct rd *r, struct fmt_stats *s)
{
    const struct json_value *loss = json_get(r->root, "loss"), *nf = json_get(r->root, "nonfinite_step");
    if (!loss && !nf)
        return 0;
    s->train = 1;
    int n;
    if (get_list(r, "loss", &s->losses, &n))
        return -1;
    int64_t x = 0;
    if (!nf || (nf->type != JSON_NULL && (json_as_int64(nf, &x) || x < 1 || x > 1 << 30)))
        return bad(r, "nonfinite_step", "a step number or null");
    s->nonfinite_step = (int)x;
    if (n != s->runs + (s->nonfinite_step ? 1 : 0))
        return bad(r, "loss", "one entry per step");
    return 0;
}

int fmt_stats_read(const char *path, struct fmt_stats *s, char *err, size_t err_size)
{
    memset(s, 0, sizeof *s);
    struct json_value root;
    if (json_parse_file(path, &root, err, err_size))
        return -1;
    struct rd r = { .root = &root, .path = path, .err = err, .err_size = err_size };
    int rc = -1;
    if (root.type != JSON_OBJECT) {
        snprintf(err, err_size, "%s: the statistics are a JSON object", path);
        goto out;
    }
    if (get_text(&r, "device", s->device, sizeof s->device, 0) ||
        get_text(&r, "heuristic", s->heuristic, sizeof s->heuristic, 1) ||
        (s->heuristic[0] && get_text(&r, "dealloc", s->dealloc, sizeof s->dealloc, 0)) ||
        get_bytes(&r, "peak_bytes", &s->peak_bytes) || get_bytes(&r, "budget_bytes", &s->budget_bytes) ||
        get_bytes(&r, "pinned_bytes", &s->pinned_bytes) ||
        get_double(&r, "baseline_compute", &s->baseline_compute) ||
        get_double(&r, "total_compute", &s->total_compute) || get_double(&r, "remat_compute", &s->remat_compute) ||
        get_count(&r, "evictions", &s->evictions) || get_count(&r, "window_evictions", &s->window_evictions) ||
        get_count(&r, "compactions", &s->compactions) ||
        get_double(&r, "compaction_bytes", &s->compaction_bytes) || get_count(&r, "remats", &s->remats) ||
        get_count(&r, "view_remats", &s->view_remats) || get_count(&r, "op_calls", &s->op_calls) ||
        (json_get(r.root, "updates_in_backward") &&
         get_count(&r, "updates_in_backward", &s->updates_in_backward)) ||
        (json_get(r.root, "in_place_calls") && get_count(&r, "in_place_calls", &s->in_place_calls)) ||
        get_double(&r, "dtr_overhead_seconds", &s->dtr_overhead_seconds) ||
        get_double(&r, "compaction_seconds", &s->compaction_seconds) ||
        get_list(&r, "step_seconds", &s->step_seconds, &s->runs) || get_dims(&r, s) || get_train(&r, s))
        goto out;
    rc = 0;
out:
    json_free(&root);
    if (rc)
        fmt_stats_free(s);
    return rc;
}

void fmt_stats_free(struct fmt_stats *s)
{
    for (int i = 0; s->dim_names && i < s->n_dims; i++)
        free(s->dim_names[i]);
    free(s->dim_names);
    free(s->step_dims);
    free(s->step_seconds);
    free(s->losses);
    memset(s, 0, sizeof *s);
}
