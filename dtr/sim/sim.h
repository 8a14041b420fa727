/* dtr/sim — the simulator and the static planners, a library of their own
 * (dtrx_sim, static; linked by the command and the tests, not part of
 * libdtrexec): simulator programs built from traces and graphs, replay
 * under the DTR core with a simulated clock, budget sweeps, CSV and SVG
 * output, schedules checked and replayed, the classic planners and
 * Checkmate's MILP (its Python solver front ends in bench/solvers/). It
 * sits above runtime/, dtr/ and dtr/format/ (the interchange formats it
 * reads and writes) and below cli/.
 *
 * One header for the module; each part keeps its declarations in its own
 * marked section. */
#ifndef DTRX_SIM_H
#define DTRX_SIM_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "dtr/dtr.h"
#include "dtr/format/graph.h"
#include "dtr/format/trace.h"
#include "dtr/format/schedule.h"

/* Text helpers shared by the CSV and SVG writers (plot.c): XML-escaped text,
 * a CSV field quoted when it must be, a round axis step for a range. */
void bench_xml_text(FILE *f, const char *s);
void bench_csv_field(FILE *f, const char *s);
double bench_nice_step(double range);

/* ======================================================================
 * Simulator: programs from traces and graphs, replay under DTR, sweeps.
 * (dtr/sim/trace.c, dtr/sim/graph.c, dtr/sim/sim.c, dtr/sim/sweep.c, dtr/sim/plot.c)
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
    SIM_STEP_MUTATE,        /* value `out` is about to change in place (dtr_tensor_mutate) */
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

/* A DTR op log (dtr/format/trace.h) as a program. Replay starts after
 * ANNOTATE START when the log has one. Errors name the file (path) and
 * line. sim_program_load_trace: fmt_trace_read, then this. */
int sim_program_from_trace(const struct fmt_trace *t, const char *path, struct sim_program *p, char *err,
                           size_t err_size);
int sim_program_load_trace(const char *path, struct sim_program *p, char *err, size_t err_size);
/* A graph (dtr/format/graph.h) as a program: nodes run in its topological
 * order, each value is released after its last use, sinks stay live. */
int sim_program_from_graph(const struct fmt_graph *g, struct sim_program *p, char *err, size_t err_size);
/* fmt_graph_read and sim_program_from_graph. */
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
    /* The planners' memory accounting (see the static checkpointing
     * section), per program step, NULL: none: a call's workspace counts
     * while it runs, its kept bytes from its first run to the end; both
     * come off the budget before anything is allocated (the baseline
     * leaves them out). sim_schedule_planners_memory fills them. */
    const uint64_t *step_workspace;
    const uint64_t *step_kept;
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

/* A replay's events, in the order the core made them (sim_run_recorded):
 * run: the call of program step `step` ran, first or again (remat 1);
 * free: the buffer first made by step `step` was freed (evicted, dropped or
 * banished). dtr/sim/sim_schedule.c turns them into a schedule. */
struct sim_recorder {
    void *ctx;
    void (*run)(void *ctx, uint32_t step, int remat);
    void (*free)(void *ctx, uint32_t step);
};
/* sim_run with rec told of every run and free (rec NULL: sim_run). */
int sim_run_recorded(const struct sim_program *p, const struct sim_baseline *b, const struct sim_options *o,
                     const struct sim_recorder *rec, struct sim_result *r);

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

/* ======================================================================
 * Static checkpointing: graphs with names, schedules, planners.
 * (dtr/sim/planners_graph.c, dtr/sim/schedule.c, dtr/sim/planners.c,
 *  dtr/sim/milp.c with bench/solvers/milp_highs.py, dtr/sim/planners_compare.c)
 *
 * Memory accounting (Checkmate's, Jain et al. 2020): while node v runs, the
 * memory in use is the parameters of every node (param_cost, resident for
 * the whole step) + the output bytes of every resident value + v's own
 * output bytes + v's workspace (workspace_ram: kernel scratch it needs
 * only while it runs; 0 when the graph has none, as Checkmate's) + the
 * kept bytes (kept_ram: outputs the runtime holds to the end, such as
 * final gradients) of every node run so far; v's inputs are still
 * resident then. A free returns a value's bytes (not its kept bytes) at
 * once. The peak is the largest such sum over the run
 * steps. A schedule that runs every node once, in the graph's topological
 * order, and frees each value after its last reader ("checkpoint-all")
 * has exactly the peak of the simulator's unbudgeted replay
 * (sim_baseline_run), so budget ratios mean the same thing for DTR and for
 * the planners.
 * ====================================================================== */

/* Graphs are the graph JSON's in-memory form, struct fmt_graph
 * (dtr/format/graph.h), nodes in the same topological order as
 * sim_program_from_graph's calls. */
/* Sum of every node's cost: the compute of one plain pass, the unit of
 * every overhead ratio. */
double plan_graph_compute(const struct fmt_graph *g);
/* A lower bound of any schedule's peak: parameters + the largest
 * (inputs + output) of one node, and the outputs kept at the end. */
uint64_t plan_graph_min_peak(const struct fmt_graph *g);

/* Schedules are the schedule format's in-memory form, struct schedule
 * (dtr/format/schedule.h: reading, writing). */

struct schedule_result {
    double baseline_compute; /* plan_graph_compute */
    double total_compute;    /* sum of the costs of every run step */
    double remat_compute;    /* of the runs of nodes run before */
    double overhead;         /* total / baseline */
    uint64_t peak_bytes;     /* see the accounting above */
    uint32_t peak_step;      /* the first step that reaches the peak */
    uint32_t runs, recomputes, frees;
};
/* Replays s on g and checks it: every input resident when a node runs, no
 * node run while its own output is resident, no free of a value that is
 * not resident, every graph output resident at the end, and the peak
 * within budget_bytes (when not 0). Returns 0, or -1 with the first
 * violation and its step index in err (r is filled up to there). */
int schedule_simulate(const struct fmt_graph *g, const struct schedule *s, uint64_t budget_bytes,
                      struct schedule_result *r, char *err, size_t err_size);

/* Frees of a list of runs: each value is freed right after its last read
 * before it is run again (or right after its run when nothing reads it),
 * graph outputs stay. Replaces s's steps. */
int schedule_insert_frees(const struct fmt_graph *g, struct schedule *s, char *err, size_t err_size);

/* Planners. Each makes a schedule of g within budget_bytes (0: none) or
 * returns PLAN_INFEASIBLE with the reason in err. */
enum plan_status {
    PLAN_OK = 0,
    PLAN_ERROR = -1,          /* bad input or internal failure (err says) */
    PLAN_INFEASIBLE = 1,      /* no schedule of this kind fits the budget */
};
enum plan_solver {
    PLAN_CHECKPOINT_ALL = 0,
    PLAN_CHEN_SQRTN,
    PLAN_CHEN_GREEDY,
    PLAN_GRIEWANK,
    PLAN_CHECKMATE_MILP,
    PLAN_CHECKMATE_LP,        /* LP relaxation + two-phase rounding */
    PLAN_SOLVER_COUNT
};
const char *plan_solver_name(enum plan_solver s);
int plan_solver_parse(const char *name, enum plan_solver *out);
struct plan_options {
    double time_limit_s;      /* MILP/LP: 0 none */
    int threads;              /* MILP/LP: 0 the solver's default */
    int verbose;              /* solver log on stderr */
    const char *keep_model;   /* when set, the LP model is written here too */
    /* checkmate: a schedule in Checkmate's stages (sim_schedule_to_stages)
     * the MIP start when it fits (the LP rounding skipped; a cheaper classic
     * or DTR start still replaces it); NULL none */
    const struct schedule *start;
    /* MILP/LP: the folder of the solver front ends and the Python that runs
     * them; NULL: found as milp.c says (DTRX_MILP_SCRIPT and DTRX_PYTHON
     * override both) */
    const char *solvers_dir;
    const char *python;
};
void plan_options_default(struct plan_options *o);
enum plan_status plan_make(const struct fmt_graph *g, enum plan_solver solver, uint64_t budget_bytes,
                           const struct plan_options *o, struct schedule *out, char *err, size_t err_size);
/* Checkmate's MILP (or its LP relaxation with rounding), solved by HiGHS
 * through bench/solvers/milp_highs.py (python3 and highspy). */
enum plan_status plan_checkmate(const struct fmt_graph *g, uint64_t budget_bytes, int relax,
                                const struct plan_options *o, struct schedule *out, char *err, size_t err_size);
/* Interrupts (the library installs no signal handlers): a caller that
 * wants a signal to stop a running solver installs its own handler (without
 * SA_RESTART) that calls plan_interrupt(sig), which is async-signal-safe.
 * The solver subprocess then gets the same signal, the model's files are
 * removed and the planner returns PLAN_ERROR ("interrupted by signal N");
 * no further solver starts until plan_interrupt_clear. plan_interrupted:
 * the signal caught, 0 none. */
void plan_interrupt(int sig);
int plan_interrupted(void);
void plan_interrupt_clear(void);
/* Lowers a stage matrix S (T x T, row t = values kept at the start of stage
 * t) to a schedule: R by Checkmate's closure (each stage computes its own
 * node, what the next stage keeps and is not kept now, and every missing
 * input of those), then runs in stage order and frees after last use. */
int plan_schedule_from_s(const struct fmt_graph *g, const uint8_t *S, struct schedule *out, char *err,
                         size_t err_size);

/* DTR's simulated run on a graph as a static schedule (dtr/sim/sim_schedule.c).
 * sim_schedule_record: the program p (sim_program_load_graph of g's file)
 * replayed under o, every run (first or again, recomputations marked) and
 * every free in order, in the steps form; r as sim_run's. Fails (-1) when p
 * is not g's program or the replay errs; a replay that ends in OOM or
 * remat_exceeded gives r's outcome and the schedule up to there. */
int sim_schedule_record(const struct fmt_graph *g, const struct sim_program *p, const struct sim_baseline *b,
                        const struct sim_options *o, struct sim_result *r, struct schedule *out, char *err,
                        size_t err_size);
/* The per-step workspace and kept bytes of g's nodes for p's calls
 * (sim_options.step_workspace / step_kept: DTR then counts memory as the
 * planners do, so its recorded schedule fits the same budget). Both arrays
 * malloc'd, n_steps long; -1 when p is not g's program. */
int sim_schedule_planners_memory(const struct fmt_graph *g, const struct sim_program *p, uint64_t **workspace,
                                 uint64_t **kept, char *err, size_t err_size);
/* A steps schedule whose first runs come in node order (as DTR's on a
 * graph) mapped to Checkmate's stages: stage t ends with node t's first
 * run; S[t] = the values resident when stage t begins whose copy is read
 * again before it is freed (or graph outputs); lowered by
 * plan_schedule_from_s (R by Checkmate's closure, runs in node order within
 * a stage, frees after last use), so recomputations DTR made before node
 * t's first run land in stage t. The peak can differ from the original's. */
int sim_schedule_to_stages(const struct fmt_graph *g, const struct schedule *s, struct schedule *out, char *err,
                           size_t err_size);
/* The cheapest staged DTR schedule within budget_bytes that fits(ctx, sc)
 * accepts: DTR (dtr-eq, dtr; no remat limit) replayed at a few budgets at
 * and below budget_bytes, each run mapped to stages and checked with
 * schedule_simulate at budget_bytes. DTR runs with the planners' memory
 * accounting (sim_schedule_planners_memory). PLAN_OK with it in *out (its compute
 * in *cost, "dtr-eq@0.96" in label: heuristic and budget factor), or
 * PLAN_INFEASIBLE. A MIP start for Checkmate's MILP (milp.c). */
enum plan_status sim_schedule_start(const struct fmt_graph *g, uint64_t budget_bytes,
                                    int (*fits)(void *ctx, const struct schedule *sc), void *ctx,
                                    struct schedule *out, double *cost, char *label, size_t label_size);

/* Comparison of DTR heuristics and planners per budget (dtrexec bench). */
struct compare_row {
    const char *model;        /* not owned */
    char method[48];          /* heuristic or solver name */
    int is_solver;
    double ratio;             /* budget / checkpoint-all peak */
    uint64_t budget_bytes;
    int ok;                   /* a schedule / a completed run within the budget */
    char outcome[32];         /* "pass", "OOM", "infeasible", "time_limit", "error", ... */
    double overhead;
    uint64_t peak_bytes;
    double solve_s;           /* planning (or simulation) time */
    double gap;               /* solvers: optimality gap, NaN otherwise */
};
int compare_write_csv(const char *path, const struct compare_row *rows, size_t n, char *err, size_t err_size);
/* Overhead against budget ratio, a line per method, a panel per model. */
int compare_write_svg(const char *path, const struct compare_row *rows, size_t n, char *err, size_t err_size);

/* ======================================================================
 * (end of the static checkpointing section)
 * ====================================================================== */

#endif
