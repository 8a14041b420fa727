/* dtr/format/schedule.h — the schedule format (DESIGN.md "Schedule"): a
 * static checkpointing schedule of a graph (dtr/format/graph.h), made by
 * `dtrexec plan` and `sim --schedule-out`, read by `dtrexec --plan`, `sim
 * --plan` and `plan --start`. A JSON object {"format": "dtrexec-schedule",
 * "version": 1, "graph": {"file", "sha256"}, "budget_bytes", "solver":
 * {"name", "status", "backend", "seconds", "solve_seconds", "objective",
 * "bound", "gap", "time_limit"}} with either "steps" ([{"run": NAME,
 * "recompute": BOOL} | {"free": [NAMES]}]) or Checkmate's "stages" ([{"R",
 * "S"}], lowered to steps on reading). In memory: struct schedule, steps
 * over the graph's node indices. The reader checks every number (budget
 * an integer from 0 to 2^62, the solver's figures finite, times
 * non-negative) and every name against the graph, naming the field or the
 * step. */
#ifndef DTRX_FORMAT_SCHEDULE_H
#define DTRX_FORMAT_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "dtr/format/graph.h"

#define SCHEDULE_MAX_BYTES 4611686018427387904LL /* 2^62 */

/* A schedule: a straight list of run and free steps over node indices. */
enum schedule_step_kind {
    SCHEDULE_RUN = 0,
    SCHEDULE_FREE,
};
struct schedule_step {
    uint8_t kind;
    uint8_t recompute;       /* runs: the file said "recompute": true (informative) */
    uint32_t node;
    uint32_t src;            /* index of the step in the file (a free of k names is k steps) */
    int32_t stage;           /* stages form: its stage, else -1 */
};
struct schedule_solver {
    char name[48];           /* "checkpoint-all", "checkmate-milp", ... */
    char status[32];         /* "optimal", "time_limit", "rounded", "heuristic" ... */
    double seconds;          /* planning time, solver included */
    double solve_seconds;    /* the MILP/LP solver's own time; NaN when none */
    double objective;        /* the solver's objective (cost units); NaN when none */
    double bound;            /* its best lower bound; NaN when none */
    double gap;              /* (objective - bound) / objective; NaN when none */
    double time_limit;       /* seconds; 0 none */
    char backend[32];        /* "highs", "" */
};
struct schedule {
    struct schedule_step *steps;
    uint32_t n_steps, cap_steps;
    uint64_t budget_bytes;   /* 0: none given */
    char graph_file[256];    /* "graph": {"file"}: informative */
    char graph_sha256[65];   /* "" when absent */
    struct schedule_solver solver;
};
void schedule_init(struct schedule *s);
void schedule_free(struct schedule *s);
/* A deep copy of s (steps and all) in *out; -1 out of memory. */
int schedule_copy(const struct schedule *s, struct schedule *out);
int schedule_push(struct schedule *s, enum schedule_step_kind kind, uint32_t node, int recompute);

/* Reads a schedule file (DESIGN.md "Schedule": the steps form or the
 * stages form, which is lowered to steps: stage t runs its R nodes in
 * topological order; a value is freed after its last use in stage t when
 * the next stage does not keep it (S), at the start of stage t when it is
 * kept into t but neither used in t nor kept after it; in the last stage
 * the graph's outputs are kept). Checks the format and node names against
 * g, and the graph's sha256 when the file gives one. Errors name the step
 * (and stage). Does not check residency or memory: see schedule_simulate
 * (dtr/sim/sim.h). */
int schedule_load(const char *path, const struct fmt_graph *g, struct schedule *s, char *err, size_t err_size);
int schedule_parse(const char *text, size_t len, const struct fmt_graph *g, struct schedule *s, char *err,
                   size_t err_size);
/* Writes s in the steps form (consecutive frees as one {"free": [...]}). */
int schedule_save(const char *path, const struct fmt_graph *g, const struct schedule *s, char *err, size_t err_size);
/* The graph file a schedule names ("graph": {"file"}), read before the
 * graph is: the format and version are checked as schedule_load does.
 * Returns 0 with the name in file (empty when the schedule names none),
 * or -1 with "PATH: what" in err. */
int schedule_read_graph_file(const char *path, char *file, size_t file_size, char *err, size_t err_size);

#endif
