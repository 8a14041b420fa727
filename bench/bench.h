/* bench — everything around runs that is not the runtime itself: trace and
 * graph readers, the DTR simulator, budget sweeps, CSV and SVG output (and,
 * later, static planners and schedules). It sits above runtime/ and dtr/ and
 * below cli/. Its JSON reader is bench/json.h.
 *
 * One header for the module; each part keeps its declarations in its own
 * marked section. */
#ifndef DTRX_BENCH_H
#define DTRX_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "dtr/dtr.h"

/* ======================================================================
 * Simulator: programs from traces and graphs, replay under DTR, sweeps.
 * (bench/trace.c, bench/graph.c, bench/sim.c, bench/sweep.c, bench/plot.c)
 * ====================================================================== */

/* A program is what the simulator replays: a straight-line list of steps
 * over numbered values (a value is one tensor the program holds; a call's
 * outputs are consecutive values). Built from an op log or a static graph. */
enum sim_step_kind {
    SIM_STEP_CONSTANT = 0,  /* new value: a pinned constant of out_bytes[out_at] */
    SIM_STEP_CALL,          /* new values out..out+n_out-1 from inputs; cost */
    SIM_STEP_RETAIN,        /* one more reference to value `out` */
    SIM_STEP_RELEASE,       /* one reference less */
    SIM_STEP_PIN,           /* value `out` is an output: resident at the end */
};

struct sim_step {
    uint8_t kind;
    uint32_t n_in, n_out;
    uint32_t in_at;         /* into program.inputs */
    uint32_t out_at;        /* into program.out_bytes / out_alias */
    uint32_t out;           /* first new value, or the value retained/released/pinned */
    double cost;
    uint32_t line;          /* source line (trace) or node index (graph), for messages */
};

struct sim_program {
    char *name;             /* the file's base name */
    struct sim_step *steps;
    uint32_t n_steps, cap_steps;
    uint32_t *inputs;
    uint32_t n_inputs, cap_inputs;
    uint64_t *out_bytes;
    int32_t *out_alias;     /* input index a view output shares, or -1 */
    uint32_t n_outs, cap_outs;
    uint32_t n_values;
    uint32_t n_calls;
    uint32_t ignored_releases;   /* RELEASE of names never defined (ignored, as simrd does) */
};

/* Reads a DTR op log (JSON lines; see DESIGN.md "Trace"). Replay starts
 * after ANNOTATE START when the log has one. Errors name file and line. */
int sim_program_load_trace(const char *path, struct sim_program *p, char *err, size_t err_size);
/* Reads a Checkmate node-link graph (either layout, see
 * ../shared/data/checkmate-graphs/README.md): nodes run in topological
 * order, each value is released after its last use, sinks stay live. */
int sim_program_load_graph(const char *path, struct sim_program *p, char *err, size_t err_size);
/* Either of the above, by looking at the file's first character. */
int sim_program_load(const char *path, struct sim_program *p, char *err, size_t err_size);
void sim_program_free(struct sim_program *p);

/* Steps appended by the readers (and by tests that build programs by hand).
 * Return the step's first new value, or UINT32_MAX when out of memory. */
uint32_t sim_program_constant(struct sim_program *p, uint64_t bytes, uint32_t line);
uint32_t sim_program_call(struct sim_program *p, const uint32_t *inputs, uint32_t n_in, const uint64_t *out_bytes,
                          const int32_t *out_alias, uint32_t n_out, double cost, uint32_t line);
int sim_program_ref(struct sim_program *p, enum sim_step_kind kind, uint32_t value, uint32_t line);

/* The unbudgeted replay every ratio refers to (banishing, as simrd's
 * baseline): total compute and peak bytes. */
struct sim_baseline {
    double compute;
    uint64_t peak_bytes;
    uint64_t constant_bytes;
    uint32_t calls;
};
int sim_baseline_run(const struct sim_program *p, struct sim_baseline *b, char *err, size_t err_size);

struct sim_options {
    enum dtr_heuristic heuristic;
    enum dtr_dealloc dealloc;
    double budget_ratio;     /* of the baseline peak, floored to bytes; used when budget_bytes is 0 */
    uint64_t budget_bytes;   /* 0 and ratio <= 0: unlimited */
    double remat_limit;      /* fail once recomputation exceeds this x baseline compute; < 0: never */
    uint64_t min_evict_bytes;
    int sample_sqrt;
    uint64_t seed;
};
/* dtr, eager, unlimited, remat limit 1.0 (the DTR authors' rule). */
void sim_options_default(struct sim_options *o);

enum sim_outcome {
    SIM_PASS = 0,
    SIM_OOM,
    SIM_REMAT_EXCEEDED,
    SIM_ERROR,               /* bad program (message says which step) */
};
const char *sim_outcome_name(enum sim_outcome o);   /* "pass", "OOM", "remat_exceeded", "error" */

struct sim_result {
    enum sim_outcome outcome;
    uint64_t budget_bytes;       /* 0: unlimited */
    uint64_t peak_bytes;
    uint64_t pinned_bytes;
    double baseline_compute;
    double total_compute;        /* everything executed, up to a failure */
    double remat_compute;
    double overhead;             /* total / baseline compute */
    uint64_t evictions, dealloc_evictions, remats, banishes;
    uint64_t heuristic_evaluations, metadata_accesses;
    uint64_t executions;         /* calls run, first time or again */
    double wall_s;
    char message[320];
};
/* Replays p under o. Returns 0 when the replay ran to an outcome (pass, OOM
 * or remat_exceeded), -1 for SIM_ERROR (message set). */
int sim_run(const struct sim_program *p, const struct sim_baseline *b, const struct sim_options *o,
            struct sim_result *r);

/* Budget sweeps: every program x heuristic x ratio. */
struct sweep_row {
    const char *model;           /* program name (not owned) */
    enum dtr_heuristic heuristic;
    double ratio;
    struct sim_baseline baseline;
    struct sim_result result;
};
/* Ratios "a:b:step" (inclusive, decimal-rounded so 0.3 is the literal 0.3)
 * or a comma list. Returns the count, or -1. *out is malloc'd. */
int sweep_parse_ratios(const char *text, double **out);
/* Heuristic names, comma-separated. Returns the count, or -1. */
int sweep_parse_heuristics(const char *text, enum dtr_heuristic **out);
/* Runs the sweep; rows are malloc'd, in program, heuristic, ratio order. */
int sweep_run(struct sim_program *const *programs, int n_programs, const double *ratios, int n_ratios,
              const enum dtr_heuristic *heuristics, int n_heuristics, const struct sim_options *base,
              struct sweep_row **rows, size_t *n_rows, char *err, size_t err_size);
int sweep_write_csv(const char *path, const struct sweep_row *rows, size_t n, char *err, size_t err_size);
/* Slowdown (overhead) against budget ratio, a line per heuristic, a panel
 * per model (the DTR paper's Figure 2); failed runs are marked at the top. */
int sweep_write_svg(const char *path, const struct sweep_row *rows, size_t n, char *err, size_t err_size);

/* ======================================================================
 * (end of the simulator section)
 * ====================================================================== */

#endif
