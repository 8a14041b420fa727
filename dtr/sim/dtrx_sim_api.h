/* dtr/sim/dtrx_sim_api.h — the simulator and the static planners as a
 * public C API for embedders that do not link the command (the Python
 * package's dtrexec.simulate and dtrexec.plan, over ctypes). Built into its
 * own shared library, libdtrexec_sim.so, self-contained: it carries a hidden
 * copy of what it uses of dtrx_sim and libdtrexec's static library (as the
 * CUDA module does) and exports only these functions, so it loads beside
 * libdtrexec.so or without it.
 *
 * Everything goes by file: a DTR op log or a graph JSON in, JSON text out
 * (the fields of `dtrexec sim --json` and `plan --json`, DESIGN.md), so the
 * interface has no struct of the simulator's in it and the command's numbers
 * and the API's are the same by construction. Budgets are text, as the
 * command's --budget: bytes ("4GB", "512MiB", "3000000B") or a ratio of the
 * unbudgeted (checkpoint-all) peak ("0.5x", or a bare number below 16).
 *
 * Every function returns an enum dtrx_status (runtime/dtrexec.h: 1 bad
 * input, 2 no schedule fits the budget, 3 internal) and, on success, a
 * malloc'd NUL-terminated JSON text in *json that the caller frees with
 * dtrx_sim_json_free. On failure *json is NULL and dtrx_sim_last_error()
 * (this thread's, valid until its next call here) says what failed, on
 * which file, budget or name. A simulated run that runs out of memory is not
 * a failure: its outcome ("OOM", "remat_exceeded") is in the JSON, as the
 * command's --json reports it. No function keeps state between calls or
 * installs a signal handler; calls in different threads run in parallel. */
#ifndef DTRX_SIM_API_H
#define DTRX_SIM_API_H

#include <stdint.h>

#include "runtime/dtrexec.h"

#if defined(__GNUC__)
#define DTRX_SIM_API __attribute__((visibility("default")))
#else
#define DTRX_SIM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The replay options of `dtrexec sim` (dtrx_sim_options_init: the
 * command's defaults). */
struct dtrx_sim_options {
    const char *heuristic;     /* dtr, dtr-eq, dtr-local, lru, size, msps, random; NULL: dtr */
    const char *dealloc;       /* eager, banish, ignore; NULL: eager */
    double remat_limit;        /* fail once recomputation exceeds this x baseline compute; < 0 never (default 1) */
    uint64_t min_evict_bytes;  /* do not score storages smaller than this (default 0) */
    int sample_sqrt;           /* score about sqrt(n) random candidates per eviction */
    uint64_t seed;             /* of random choices (default 1) */
    int planners_memory;       /* a graph: count workspaces and kept bytes as the planners do */
};
DTRX_SIM_API void dtrx_sim_options_init(struct dtrx_sim_options *o);

/* Replays the op log or graph at path once per budget (budgets[i], NULL or
 * "" for unlimited; n_budgets 0: one unlimited replay), loading it and
 * running its unbudgeted baseline once. *json: an array of n objects (at
 * least one), each the object `dtrexec sim --json` prints for that budget. */
DTRX_SIM_API enum dtrx_status dtrx_sim_simulate(const char *path, const struct dtrx_sim_options *o,
                                                const char *const *budgets, int n_budgets, char **json);

/* What `dtrexec plan` takes (dtrx_sim_plan_options_init: its defaults). */
struct dtrx_sim_plan_options {
    const char *solver;        /* checkpoint-all, chen-sqrtn, chen-greedy, griewank, checkmate, checkmate-lp */
    const char *budget;        /* NULL or "": none */
    double time_limit_s;       /* MILP/LP: default 600; 0 none */
    int threads;               /* MILP/LP: 0 the solver's default */
    int verbose;               /* the solver's log on stdout */
    const char *start;         /* checkmate: a schedule file offered as the MIP start; NULL none */
    /* Where the solver front ends are (milp_highs.py, ...) and the Python
     * that runs them (the Python package passes its solvers/ folder and
     * sys.executable); DTRX_MILP_SCRIPT (resp. DTRX_PYTHON) still override
     * them. NULL: found beside the library or the binary, then at the
     * paths fixed at configure time (dtr/sim/milp.c), and python3. */
    const char *solvers_dir;
    const char *python;
};
DTRX_SIM_API void dtrx_sim_plan_options_init(struct dtrx_sim_plan_options *o);

/* A schedule of the graph at graph_path (`dtrexec plan GRAPH --solver S
 * --budget B --json`), validated by replaying it. *json: the fields of
 * `plan --json` (no "output"), "graph" (graph_path) and "schedule": the
 * schedule file's object, byte for byte what `plan -o` writes. A budget no
 * schedule of that kind fits is DTRX_ERR_BUDGET; a failed solver (highspy
 * missing, time limit without a schedule) DTRX_ERR_INTERNAL. */
DTRX_SIM_API enum dtrx_status dtrx_sim_plan(const char *graph_path, const struct dtrx_sim_plan_options *o,
                                            char **json);

/* A schedule file read and checked on its graph (`dtrexec sim GRAPH --plan
 * SCHEDULE --json`): graph_path NULL takes the graph the schedule names,
 * relative to the schedule's folder (as `dtrexec --plan`); budget NULL or ""
 * its own budget_bytes; staged: mapped to Checkmate's stages first. *json:
 * the fields of `sim --plan --json`, "graph" (the graph's path) and
 * "schedule" (the schedule in the steps form, as `plan -o` writes it). An
 * invalid schedule is DTRX_ERR_INPUT naming the step. */
DTRX_SIM_API enum dtrx_status dtrx_sim_schedule_check(const char *schedule_path, const char *graph_path,
                                                      const char *budget, int staged, char **json);

DTRX_SIM_API void dtrx_sim_json_free(char *json);
/* This thread's last failure; "" when none. */
DTRX_SIM_API const char *dtrx_sim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
