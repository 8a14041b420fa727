/* dtr/format/stats.h — the run statistics JSON (`dtrexec --stats FILE`):
 * one object with the device, the DTR policy (heuristic and dealloc, or
 * "heuristic": null unbudgeted), memory (peak, budget, pinned bytes),
 * compute (baseline, total, remat: cost-model units), event counts
 * (evictions, window_evictions, compactions, remats, view_remats,
 * op_calls, updates_in_backward, in_place_calls), compaction_bytes, the seconds DTR and compactions took,
 * step_seconds per step, and optionally step_dims (per step, each --dim
 * name's value) and, when training, loss per step and nonfinite_step.
 * Non-finite numbers are written as null. In memory: struct fmt_stats;
 * fmt_stats_read reads back what fmt_stats_write writes. */
#ifndef DTRX_FORMAT_STATS_H
#define DTRX_FORMAT_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fmt_stats {
    char device[32];
    char heuristic[32];          /* "" when unbudgeted: written as null, dealloc omitted */
    char dealloc[32];
    uint64_t peak_bytes, budget_bytes, pinned_bytes;
    double baseline_compute, total_compute, remat_compute;
    long long evictions, window_evictions, compactions;
    double compaction_bytes;
    long long remats, view_remats, op_calls;
    long long updates_in_backward;  /* optional when read: 0 if absent */
    long long in_place_calls;       /* optional when read: 0 if absent */
    double dtr_overhead_seconds, compaction_seconds;
    int runs;
    double *step_seconds;        /* runs entries */
    int n_dims;                  /* step_dims: 0 none */
    char **dim_names;            /* n_dims names */
    long long *step_dims;        /* dim_steps x n_dims, row per step */
    int dim_steps;
    int train;                   /* loss and nonfinite_step present */
    double *losses;              /* runs entries (+1: the non-finite step's, written as null) */
    int nonfinite_step;          /* 0 none */
};

/* Writes s; 0, or -1 when writing failed. */
int fmt_stats_write(FILE *f, const struct fmt_stats *s);
/* Reads a statistics file into s (arrays malloc'd; free with
 * fmt_stats_free). Returns 0, or -1 with "PATH: what" in err naming the
 * field. */
int fmt_stats_read(const char *path, struct fmt_stats *s, char *err, size_t err_size);
void fmt_stats_free(struct fmt_stats *s);

#endif
