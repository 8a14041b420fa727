/* dtr/sim/sweep.c — budget sweeps over programs x heuristics x ratios, and
 * their CSV. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"

int sweep_parse_ratios(const char *text, double **out)
{
    *out = NULL;
    double a, b, step;
    char tail;
    if (sscanf(text, "%lf:%lf:%lf%c", &a, &b, &step, &tail) == 3) {
        if (!(a > 0) || !(b >= a) || !(step > 0) || (b - a) / step > 100000)
            return -1;
        int n = (int)floor((b - a) / step + 1e-9) + 1;
        double *r = malloc(n * sizeof *r);
        if (!r)
            return -1;
        for (int i = 0; i < n; i++)
            /* rounded to 9 decimals, so that 0.1 + 2 x 0.1 is the 0.3 one
             * would write (budgets are floor(peak x ratio)) */
            r[i] = round((a + i * step) * 1e9) / 1e9;
        *out = r;
        return n;
    }
    int n = 1;
    for (const char *c = text; *c; c++)
        n += *c == ',';
    double *r = malloc(n * sizeof *r);
    if (!r)
        return -1;
    const char *c = text;
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        r[i] = strtod(c, &end);
        if (end == c || errno || !(r[i] > 0) || (*end && *end != ',')) {
            free(r);
            return -1;
        }
        c = *end ? end + 1 : end;
    }
    *out = r;
    return n;
}

int sweep_parse_heuristics(const char *text, enum dtr_heuristic **out)
{
    *out = NULL;
    int n = 1;
    for (const char *c = text; *c; c++)
        n += *c == ',';
    enum dtr_heuristic *h = malloc(n * sizeof *h);
    char *copy = strdup(text);
    if (!h || !copy) {
        free(h);
        free(copy);
        return -1;
    }
    char *save = NULL, *tok = strtok_r(copy, ",", &save);
    int k = 0;
    for (; tok && k < n; tok = strtok_r(NULL, ",", &save))
        if (dtr_heuristic_parse(tok, &h[k++])) {
            free(h);
            free(copy);
            return -1;
        }
    free(copy);
    if (!k) {
        free(h);
        return -1;
    }
    *out = h;
    return k;
}

int sweep_run(struct sim_program *const *programs, int n_programs, const double *ratios, int n_ratios,
              const enum dtr_heuristic *heuristics, int n_heuristics, const struct sim_options *base,
              struct sweep_row **rows, size_t *n_rows, char *err, size_t err_size)
{
    size_t n = (size_t)n_programs * n_ratios * n_heuristics, k = 0;
    struct sweep_row *out = calloc(n ? n : 1, sizeof *out);
    *rows = NULL;
    *n_rows = 0;
    if (!out) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    for (int p = 0; p < n_programs; p++) {
        struct sim_baseline b;
        if (sim_baseline_run(programs[p], &b, err, err_size)) {
            free(out);
            return -1;
        }
        for (int h = 0; h < n_heuristics; h++)
            for (int r = 0; r < n_ratios; r++) {
                struct sweep_row *row = &out[k++];
                struct sim_options o = *base;
                o.heuristic = heuristics[h];
                o.budget_ratio = ratios[r];
                o.budget_bytes = 0;
                row->model = programs[p]->name;
                row->heuristic = heuristics[h];
                row->ratio = ratios[r];
                row->baseline = b;
                if (sim_run(programs[p], &b, &o, &row->result)) {
                    snprintf(err, err_size, "%s, %s at %g: %s", programs[p]->name, dtr_heuristic_name(heuristics[h]),
                             ratios[r], row->result.message);
                    free(out);
                    return -1;
                }
            }
    }
    *rows = out;
    *n_rows = k;
    return 0;
}

int sweep_write_csv(const char *path, const struct sweep_row *rows, size_t n, char *err, size_t err_size)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "model,heuristic,ratio,budget_bytes,result,overhead,total_compute,remat_compute,baseline_compute,"
               "baseline_peak_bytes,peak_bytes,evictions,dealloc_evictions,remats,heuristic_evaluations,"
               "metadata_accesses,wall_s\n");
    for (size_t i = 0; i < n; i++) {
        const struct sweep_row *r = &rows[i];
        bench_csv_field(f, r->model);
        fprintf(f, ",%s,%.6g,%llu,%s,%.6f,%.17g,%.17g,%.17g,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.6f\n",
                dtr_heuristic_name(r->heuristic), r->ratio, (unsigned long long)r->result.budget_bytes,
                sim_outcome_name(r->result.outcome), r->result.overhead, r->result.total_compute,
                r->result.remat_compute, r->baseline.compute, (unsigned long long)r->baseline.peak_bytes,
                (unsigned long long)r->result.peak_bytes, (unsigned long long)r->result.evictions,
                (unsigned long long)r->result.dealloc_evictions, (unsigned long long)r->result.remats,
                (unsigned long long)r->result.heuristic_evaluations,
                (unsigned long long)r->result.metadata_accesses, r->result.wall_s);
    }
    if (fclose(f)) {
        snprintf(err, err_size, "%s: write error", path);
        return -1;
    }
    return 0;
}
