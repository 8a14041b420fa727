/* dtr/sim/milp.c — Checkmate's optimal rematerialization MILP (Jain et al.,
 * "Checkmate: Breaking the Memory Wall with Optimal Tensor
 * Rematerialization", MLSys 2020), built here and solved by HiGHS through
 * bench/solvers/milp_highs.py; and its LP relaxation with Checkmate's two-phase
 * rounding (round S by a threshold, then recompute R by the closure).
 *
 * The model (T = nodes in topological order, stage t computes node t):
 *   R[t,i] = 1: stage t computes node i (i <= t; R[t,t] = 1)
 *   S[t,i] = 1: the value of i is kept from stage t-1 into t (i < t)
 *   F[t,i,k] = 1: after computing k in stage t, free i (an input of k, or k)
 *   U[t,k]: memory in use while stage t computes k (continuous, <= budget)
 * minimise sum cost[i] R[t,i] subject to
 *   S[t+1,i] <= S[t,i] + R[t,i]                (kept values come from somewhere)
 *   R[t,v] <= R[t,u] + S[t,u] for edges u->v   (inputs present)
 *   F[t,i,k] = R[t,k] (1 - S[t+1,i]) prod_{j in succ(i), k<j<=t} (1 - R[t,j]),
 *     linearised with Checkmate's hazard counts (two rows each)
 *   U[t,0] = M0 R[t,0] + sum_i M_i S[t,i]
 *   U[t,k+1] = U[t,k] + M_{k+1} R[t,k+1] - sum_{i in pred(k) + k} M_i F[t,i,k]
 * Graph outputs (sinks) must survive: S[t,i] = 1 for t > i, and they are
 * never freed in the last stage. Memory is in units of the gcd of the
 * sizes (coarser, rounded conservatively, when that would make the numbers
 * too large for the solver); parameters come off the budget first.
 *
 * Python is used only as the solver's front end: the C side writes the
 * model (CPLEX LP format), reads back S, lowers it and validates the
 * schedule itself. */
#define _GNU_SOURCE   /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dtr/sim/sim.h"
#include "dtr/sim/solver_paths.h"
#include "dtr/format/json.h"

extern char **environ;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Which formulation write_lp writes (DTRX_MILP_FORM=paper for the
 * published one; bench/experiments/milp_speed.py compares them):
 *   paper: Checkmate's rows: each F tied to its hazard count h by two
 *     aggregated rows, 1 - F <= h and maxh (1 - F) >= h (F = 1 exactly when
 *     nothing holds the value).
 *   default: only the second row (F may be 1 only when h = 0). Freeing
 *     never hurts, so a solution that frees less than it may is only
 *     conservative (U stays an upper bound of the memory in use): the same
 *     integer optima and LP bound with a third fewer rows. Also fixed by
 *     bounds: outputs are never recomputed (R = 0 once kept) and no F whose
 *     value the stage's own node reads later is 1.
 * (A disaggregated form, F continuous with one row per hazard, has the same
 * integer optima but its LP took HiGHS's simplex 6x the iterations on
 * MobileNet without converging: measured, not kept.) */
static int milp_paper_form(void)
{
    const char *e = getenv("DTRX_MILP_FORM");
    return e && !strcmp(e, "paper");
}

/* DTRX_MILP_FORM=disagg: each hazard its own row (F <= R[t,k],
 * F <= 1 - S[t+1,i], F <= 1 - R[t,j]) and F continuous: the same integer
 * optima, a tighter relaxation (the aggregated row lets F reach
 * 1 - h / maxh), more rows. */
static int milp_disagg_form(void)
{
    const char *e = getenv("DTRX_MILP_FORM");
    return e && !strcmp(e, "disagg");
}

/* Kept bytes (units) resident while stage t computes k: every node's
 * before t, and t's own from its computation (k = t) on. */
static double kept_units(const double *M, uint32_t T, uint32_t t, uint32_t k)
{
    return k == t ? M[2 * T + t] : t ? M[2 * T + t - 1] : 0;
}

/* Writes the model; budget_units: U's bound. Returns 0 or -1. */
static int write_lp(const char *path, const struct fmt_graph *g, const double *M, double budget_units, int relax)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int paper = milp_paper_form(), disagg = milp_disagg_form();
    uint32_t T = g->n;
    /* objective */
    fprintf(f, "Minimize\n obj:");
    int col = 0;
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t i = 0; i <= t; i++)
            if (g->cost[i] > 0) {
                fprintf(f, " + %.17g R%u_%u", g->cost[i], t, i);
                if (++col % 8 == 0)
                    fprintf(f, "\n");
            }
    if (!col)
        fprintf(f, " 0 R0_0");
    fprintf(f, "\nSubject To\n");
    for (uint32_t t = 0; t < T; t++) {
        /* kept values come from somewhere: S[t+1,i] <= S[t,i] + R[t,i] */
        if (t + 1 < T)
            for (uint32_t i = 0; i < t; i++)
                fprintf(f, " k%u_%u: S%u_%u - S%u_%u - R%u_%u <= 0\n", t, i, t + 1, i, t, i, t, i);
        /* inputs present */
        for (uint32_t v = 0; v <= t; v++)
            for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++) {
                uint32_t u = g->preds[q];
                fprintf(f, " d%u_%u_%u: R%u_%u - R%u_%u - S%u_%u <= 0\n", t, u, v, t, v, t, u, t, u);
            }
        for (uint32_t k = 0; k <= t; k++)
            for (uint32_t q = g->pred_at[k]; q <= g->pred_at[k + 1]; q++) {
                /* hazards h = 1 - R[t,k] + S[t+1,i] + sum R[t,j]
                 * (+1 for an output in the last stage); F = 1 exactly when
                 * h = 0:   1 - F <= h   and   maxh (1 - F) >= h */
                uint32_t i = q < g->pred_at[k + 1] ? g->preds[q] : k;
                int last_out = g->sink[i] && t + 1 == T;
                int maxh = 1 + (t + 1 < T) + last_out;
                for (uint32_t p = g->succ_at[i]; p < g->succ_at[i + 1]; p++)
                    maxh += g->succs[p] > k && g->succs[p] <= t;
                char keep[40] = "";
                if (t + 1 < T)
                    snprintf(keep, sizeof keep, " - S%u_%u", t + 1, i);
                /* fa: -F + R[t,k] - S[t+1,i] - sum R <= last_out
                 * fb: -maxh F + R[t,k] - S[t+1,i] - sum R >= 1 + last_out - maxh */
                if (disagg) {
                    /* F <= R[t,k]; F <= 1 - S[t+1,i]; F <= 1 - R[t,j] */
                    fprintf(f, " ga%u_%u_%u: F%u_%u_%u - R%u_%u <= 0\n", t, i, k, t, i, k, t, k);
                    if (t + 1 < T)
                        fprintf(f, " gb%u_%u_%u: F%u_%u_%u + S%u_%u <= 1\n", t, i, k, t, i, k, t + 1, i);
                    for (uint32_t p = g->succ_at[i]; p < g->succ_at[i + 1]; p++) {
                        uint32_t j = g->succs[p];
                        if (j > k && j <= t)
                            fprintf(f, " gc%u_%u_%u_%u: F%u_%u_%u + R%u_%u <= 1\n", t, i, k, j, t, i, k, t, j);
                    }
                    continue;
                }
                for (int row = !paper; row < 2; row++) {
                    if (row == 0)
                        fprintf(f, " fa%u_%u_%u: - F%u_%u_%u + R%u_%u%s", t, i, k, t, i, k, t, k, keep);
                    else
                        fprintf(f, " fb%u_%u_%u: - %d F%u_%u_%u + R%u_%u%s", t, i, k, maxh, t, i, k, t, k, keep);
                    int c = 0;
                    for (uint32_t p = g->succ_at[i]; p < g->succ_at[i + 1]; p++) {
                        uint32_t j = g->succs[p];
                        if (j > k && j <= t)
                            fprintf(f, "%s - R%u_%u", ++c % 8 == 0 ? "\n" : "", t, j);
                    }
                    if (row == 0)
                        fprintf(f, " <= %d\n", last_out);
                    else
                        fprintf(f, " >= %d\n", 1 + last_out - maxh);
                }
            }
        /* memory */
        fprintf(f, " u%u_0: U%u_0 - %.17g R%u_0", t, t, M[0], t);
        for (uint32_t i = 0; i < t; i++)
            if (M[i] > 0)
                fprintf(f, "%s - %.17g S%u_%u", i % 8 == 7 ? "\n" : "", M[i], t, i);
        fprintf(f, " = 0\n");
        for (uint32_t k = 0; k + 1 <= t; k++) {
            fprintf(f, " u%u_%u: U%u_%u - U%u_%u - %.17g R%u_%u", t, k + 1, t, k + 1, t, k, M[k + 1], t, k + 1);
            for (uint32_t q = g->pred_at[k]; q <= g->pred_at[k + 1]; q++) {
                uint32_t i = q < g->pred_at[k + 1] ? g->preds[q] : k;
                if (M[i] > 0)
                    fprintf(f, " + %.17g F%u_%u_%u", M[i], t, i, k);
            }
            fprintf(f, " = 0\n");
        }
        /* a node's workspace (M[T + k]) counts while it runs */
        for (uint32_t k = 0; k <= t; k++)
            if (M[T + k] > 0)
                fprintf(f, " w%u_%u: U%u_%u + %.17g R%u_%u <= %.17g\n", t, k, t, k, M[T + k], t, k,
                        budget_units - kept_units(M, T, t, k));
    }
    fprintf(f, "Bounds\n");
    for (uint32_t t = 0; t < T; t++) {
        fprintf(f, " R%u_%u = 1\n", t, t);
        for (uint32_t k = 0; k <= t; k++)
            fprintf(f, " 0 <= U%u_%u <= %.17g\n", t, k, budget_units - kept_units(M, T, t, k));
        /* outputs are kept; so is a value of no bytes (a view, a node
         * that only makes kept bytes): keeping it costs nothing and
         * never hurts, so some optimum keeps it and never recomputes it */
        for (uint32_t i = 0; i < t; i++)
            if (g->sink[i] || (!paper && M[i] == 0)) {
                fprintf(f, " S%u_%u = 1\n", t, i);
                if (!paper)
                    fprintf(f, " R%u_%u = 0\n", t, i);
            }
        if (relax) {
            /* an LP: every 0/1 variable in [0, 1] */
            for (uint32_t i = 0; i < t; i++)
                fprintf(f, " R%u_%u <= 1\n S%u_%u <= 1\n", t, i, t, i);
        }
        for (uint32_t k = 0; (relax || !paper) && k <= t; k++)
            for (uint32_t q = g->pred_at[k]; q <= g->pred_at[k + 1]; q++) {
                uint32_t i = q < g->pred_at[k + 1] ? g->preds[q] : k;
                /* a value the stage's own node reads later, or an output
                 * in the last stage, is not freed */
                int fixed = 0;
                for (uint32_t p = g->succ_at[i]; !paper && p < g->succ_at[i + 1]; p++)
                    fixed |= g->succs[p] > k && g->succs[p] == t;
                if (!paper && g->sink[i] && t + 1 == T)
                    fixed = 1;
                fprintf(f, " F%u_%u_%u %s\n", t, i, k, fixed ? "= 0" : "<= 1");
            }
    }
    if (!relax) {
        fprintf(f, "Binary\n");
        for (uint32_t t = 0; t < T; t++) {
            for (uint32_t i = 0; i < t; i++)
                fprintf(f, " R%u_%u S%u_%u\n", t, i, t, i);
            for (uint32_t k = 0; !disagg && k <= t; k++)
                for (uint32_t q = g->pred_at[k]; q <= g->pred_at[k + 1]; q++)
                    fprintf(f, " F%u_%u_%u\n", t, q < g->pred_at[k + 1] ? g->preds[q] : k, k);
        }
    }
    fprintf(f, "End\n");
    return fclose(f) ? -1 : 0;
}

/* The MILP solver: DTRX_MILP_SOLVER=highs (the default), scip or cpsat
 * (OR-Tools, bench/solvers/milp_ortools.py, which reads the same variable) or cbc
 * (bench/solvers/milp_cbc.py); the LP relaxations stay with HiGHS in every front
 * end. bench/results/milp_solvers.md compares them. */
static const char *milp_solver(void)
{
    const char *e = getenv("DTRX_MILP_SOLVER");
    return e && *e ? e : "highs";
}

/* The solver front end: DTRX_MILP_SCRIPT when set, else the first
 * readable copy of the script in
 *   1. the caller's folder (plan_options.solvers_dir), when given;
 *   2. beside the code itself, so that an installed tree works wherever it
 *      is moved: for the object holding this function (dladdr: the
 *      dtrexec binary, or libdtrexec_sim.so in the Python package) and for
 *      the running executable (/proc/self/exe), DIR/solvers/ (the
 *      package's layout) and DIR/../share/dtrexec/solvers/ (bin/ under an
 *      install prefix);
 *   3. the install prefix configured (DTRX_SOLVERS_DIR) and the source
 *      tree's bench/solvers (DTRX_SOLVERS_SOURCE_DIR), fixed by CMake
 *      (dtr/sim/solver_paths.h).
 * Writes the path into buf (the last candidate when none is readable) and
 * returns the script's name, NULL for an unknown DTRX_MILP_SOLVER. */
static int dir_of(const char *path, char *dir, size_t size)
{
    char real[4096];
    if (!path || !strchr(path, '/') || !realpath(path, real))
        return -1;
    char *slash = strrchr(real, '/');
    *slash = 0;
    if (strlen(real) + 1 > size)
        return -1;
    strcpy(dir, real);
    return 0;
}

static int try_script(char *buf, size_t size, const char *dir, const char *sub, const char *name)
{
    if (!dir || !*dir)
        return -1;
    int n = snprintf(buf, size, "%s%s/%s", dir, sub, name);
    return n > 0 && (size_t)n < size && !access(buf, R_OK) ? 0 : -1;
}

static const char *script_path(const struct plan_options *o, char *buf, size_t size)
{
    const char *env = getenv("DTRX_MILP_SCRIPT");
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return buf;
    }
    const char *s = milp_solver();
    const char *name = !strcmp(s, "scip") || !strcmp(s, "cpsat") ? "milp_ortools.py"
                       : !strcmp(s, "cbc")                        ? "milp_cbc.py"
                       : !strcmp(s, "highs")                      ? "milp_highs.py"
                                                                  : NULL;
    if (!name)
        return NULL;
    if (!try_script(buf, size, o->solvers_dir, "", name))
        return buf;
    char dirs[2][4096];
    int n_dirs = 0;
    Dl_info info;
    if (dladdr((void *)script_path, &info) && !dir_of(info.dli_fname, dirs[n_dirs], sizeof dirs[0]))
        n_dirs++;
    if (!dir_of("/proc/self/exe", dirs[n_dirs], sizeof dirs[0]))
        n_dirs++;
    for (int i = 0; i < n_dirs; i++)
        if (!try_script(buf, size, dirs[i], "/solvers", name)
            || !try_script(buf, size, dirs[i], "/../share/dtrexec/solvers", name))
            return buf;
    if (!try_script(buf, size, DTRX_SOLVERS_DIR, "", name))
        return buf;
    snprintf(buf, size, "%s/%s", DTRX_SOLVERS_SOURCE_DIR, name);
    return buf;
}

/* A signal that should end the caller while it waits for the solver
 * (kill, timeout(1) or a batch system's SIGTERM reach dtrexec alone, and
 * the solver would go on without it). The caller owns the signal
 * handlers: its handler calls plan_interrupt (installed without
 * SA_RESTART, so that the wait is interrupted); the signal is passed on to
 * the solver, the model's files are removed and the planner returns
 * PLAN_ERROR. */
static volatile sig_atomic_t caught_signal;

void plan_interrupt(int sig)
{
    caught_signal = sig;
}

int plan_interrupted(void)
{
    return (int)caught_signal;
}

void plan_interrupt_clear(void)
{
    caught_signal = 0;
}

/* Runs the solver script; 0 when it exited 0. */
static int run_solver(const char *lp, const char *sol, const char *start, double time_limit,
                      const struct plan_options *o, char *err, size_t err_size)
{
    const char *py = getenv("DTRX_PYTHON");
    if (!py || !*py)
        py = o->python && *o->python ? o->python : "python3";
    char script_buf[4096];
    const char *script = script_path(o, script_buf, sizeof script_buf);
    if (!script) {
        snprintf(err, err_size, "DTRX_MILP_SOLVER=%s: not highs, scip, cpsat or cbc", milp_solver());
        return -1;
    }
    if (access(script, R_OK)) {
        snprintf(err, err_size,
                 "the solver script %s is missing (looked beside the dtrexec binary or library, in %s and in %s; "
                 "set DTRX_MILP_SCRIPT)", script, DTRX_SOLVERS_DIR, DTRX_SOLVERS_SOURCE_DIR);
        return -1;
    }
    if (o->verbose)
        fprintf(stderr, "dtrexec plan: solver front end %s, run by %s\n", script, py);
    char tl[32], th[32];
    snprintf(tl, sizeof tl, "%g", time_limit > 0 ? time_limit : 0.0);
    snprintf(th, sizeof th, "%d", o->threads > 0 ? o->threads : 0);
    char *argv[] = { (char *)py, (char *)script, (char *)lp, (char *)sol, "--time-limit", tl, "--threads", th,
                     o->verbose ? "--verbose" : "--quiet", start ? "--start" : NULL, (char *)start, NULL };
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!o->verbose)
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (caught_signal) {
        posix_spawn_file_actions_destroy(&fa);
        snprintf(err, err_size, "interrupted by signal %d", (int)caught_signal);
        return -1;
    }
    int e = posix_spawnp(&pid, py, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    int status, rc = 0;
    if (e) {
        snprintf(err, err_size, "cannot start %s: %s", py, strerror(e));
        rc = -1;
    }
    while (!rc && waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, err_size, "waiting for the solver: %s", strerror(errno));
            rc = -1;
        } else if (caught_signal) {
            kill(pid, caught_signal);
        }
    }
    if (!rc && caught_signal) {
        snprintf(err, err_size, "interrupted by signal %d (the solver was stopped too)", (int)caught_signal);
        rc = -1;
    }
    if (rc)
        return rc;
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        snprintf(err, err_size, "the solver (%s %s) failed (exit %d); is highspy installed? (pip install highspy)", py,
                 script, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return 0;
}

struct lp_solution {
    char status[32];         /* optimal, infeasible, time_limit, ... */
    int has_solution;
    double objective, bound, gap, seconds;
    float *S;                /* T x T */
};

static int read_solution(const char *path, uint32_t T, struct lp_solution *s, char *err, size_t err_size)
{
    struct json_value root;
    if (json_parse_file(path, &root, err, err_size))
        return -1;
    int rc = -1;
    const char *st = json_string(json_get(&root, "status"));
    snprintf(s->status, sizeof s->status, "%s", st ? st : "unknown");
    const struct json_value *hs = json_get(&root, "has_solution");
    s->has_solution = hs && hs->type == JSON_TRUE;
    s->objective = s->bound = s->gap = s->seconds = NAN;
    json_as_double(json_get(&root, "objective"), &s->objective);
    json_as_double(json_get(&root, "bound"), &s->bound);
    json_as_double(json_get(&root, "gap"), &s->gap);
    json_as_double(json_get(&root, "seconds"), &s->seconds);
    s->S = calloc((size_t)T * T + 1, sizeof *s->S);
    if (!s->S) {
        snprintf(err, err_size, "out of memory");
        goto out;
    }
    const struct json_value *jS = json_get(&root, "S");
    if (s->has_solution && (!jS || jS->type != JSON_ARRAY)) {
        snprintf(err, err_size, "%s: no \"S\" list in the solver's answer", path);
        goto out;
    }
    for (size_t k = 0; jS && k < jS->u.array.n; k++) {
        const struct json_value *e = &jS->u.array.items[k];
        int64_t t, i;
        double x;
        if (e->type != JSON_ARRAY || e->u.array.n != 3 || json_as_int64(&e->u.array.items[0], &t) ||
            json_as_int64(&e->u.array.items[1], &i) || json_as_double(&e->u.array.items[2], &x) || t < 0 ||
            (uint64_t)t >= T || i < 0 || i >= t) {
            snprintf(err, err_size, "%s: bad S entry %zu", path, k);
            goto out;
        }
        s->S[(size_t)t * T + (size_t)i] = (float)x;
    }
    rc = 0;
out:
    json_free(&root);
    if (rc) {
        free(s->S);
        s->S = NULL;
    }
    return rc;
}

/* Stages of a steps schedule, as Checkmate's frontier-advancing stages:
 * stage t ends with the first run of node t, so the first runs must come in
 * node order, and a stage may run each node once, in increasing order.
 * Returns a copy with the stages set, or -1 when s has no such form. */
static int stage_copy(const struct fmt_graph *g, const struct schedule *s, struct schedule *out)
{
    uint32_t T = g->n, next = 0;
    int32_t *last = malloc((T + 1) * sizeof *last);   /* stage of each node's latest run */
    int rc = -1;
    schedule_init(out);
    if (!last)
        return -1;
    for (uint32_t v = 0; v < T; v++)
        last[v] = -1;
    int32_t prev = -1;
    for (uint32_t k = 0; k < s->n_steps; k++) {
        const struct schedule_step *st = &s->steps[k];
        if (st->kind == SCHEDULE_RUN) {
            uint32_t v = st->node;
            if (last[v] < 0 && v != next)
                goto out;                       /* a first run out of node order */
            int32_t stage = (int32_t)next;
            if (last[v] == stage || (prev >= 0 && out->steps[prev].stage == stage && out->steps[prev].node >= v))
                goto out;                       /* twice in a stage, or not in increasing order */
            last[v] = stage;
            if (v == next)
                next++;
            if (schedule_push(out, SCHEDULE_RUN, v, 0))
                goto out;
            out->steps[out->n_steps - 1].stage = stage;
            prev = (int32_t)out->n_steps - 1;
        } else if (schedule_push(out, SCHEDULE_FREE, st->node, 0)) {
            goto out;
        }
    }
    rc = next == T ? 0 : -1;
out:
    free(last);
    if (rc)
        schedule_free(out);
    return rc;
}

/* A MIP start from a schedule made of stages (plan_schedule_from_s or
 * stage_copy): R = the runs of each stage, S = what is resident when a
 * stage begins, F and U by the model's own definitions. With frees after
 * last use this is the schedule's own memory in the model's units; *max_u
 * is its highest U, so the caller can tell whether the start fits the
 * model's budget (the units are rounded up per value). With f NULL only
 * max_u is computed. */
static int start_values(FILE *f, const struct fmt_graph *g, const double *M, const struct schedule *sc,
                        double *max_u)
{
    uint32_t T = g->n;
    uint8_t *R = calloc((size_t)T * T + 1, 1), *S = calloc((size_t)(T + 1) * T + 1, 1), *res = calloc(T + 1, 1);
    int rc = -1;
    *max_u = 0;
    if (!R || !S || !res)
        goto out;
    int32_t stage = -1;
    for (uint32_t k = 0; k < sc->n_steps; k++) {
        const struct schedule_step *st = &sc->steps[k];
        if (st->kind == SCHEDULE_FREE) {
            res[st->node] = 0;
            continue;
        }
        if (st->stage < 0 || (uint32_t)st->stage >= T || st->stage < stage)
            goto out;
        while (stage < st->stage) {
            stage++;
            memcpy(S + (size_t)stage * T, res, T);
        }
        R[(size_t)stage * T + st->node] = 1;
        res[st->node] = 1;
    }
    /* as the model's bounds fix them: a value of no bytes is kept from its
     * stage on and never recomputed (only cheaper, and it fits as before) */
    for (uint32_t i = 0; !milp_paper_form() && i < T; i++)
        for (uint32_t t = i + 1; M[i] == 0 && t < T; t++) {
            S[(size_t)t * T + i] = 1;
            R[(size_t)t * T + i] = 0;
        }
    for (uint32_t t = 0; t < T; t++) {
        const uint8_t *Rt = R + (size_t)t * T, *St = S + (size_t)t * T, *Sn = S + (size_t)(t + 1) * T;
        for (uint32_t i = 0; f && i <= t; i++) {
            fprintf(f, "R%u_%u %d\n", t, i, Rt[i]);
            if (i < t)
                fprintf(f, "S%u_%u %d\n", t, i, St[i]);
        }
        double u = M[0] * Rt[0];
        for (uint32_t i = 0; i < t; i++)
            u += M[i] * St[i];
        for (uint32_t k = 0; k <= t; k++) {
            if (k)
                u += M[k] * Rt[k];
            if (f)
                fprintf(f, "U%u_%u %.17g\n", t, k, u);
            double running = u + M[T + k] * Rt[k] + kept_units(M, T, t, k);
            if (running > *max_u)
                *max_u = running;
            for (uint32_t q = g->pred_at[k]; q <= g->pred_at[k + 1]; q++) {
                uint32_t i = q < g->pred_at[k + 1] ? g->preds[q] : k;
                int h = 1 - Rt[k] + (t + 1 < T ? Sn[i] : g->sink[i]);
                for (uint32_t p = g->succ_at[i]; p < g->succ_at[i + 1]; p++)
                    h += g->succs[p] > k && g->succs[p] <= t && Rt[g->succs[p]];
                if (f)
                    fprintf(f, "F%u_%u_%u %d\n", t, i, k, h == 0);
                if (h == 0)
                    u -= M[i];
            }
        }
    }
    rc = 0;
out:
    free(R);
    free(S);
    free(res);
    return rc;
}

static int write_start(const char *path, const struct fmt_graph *g, const double *M, const struct schedule *sc)
{
    FILE *f = fopen(path, "w");
    double max_u;
    if (!f)
        return -1;
    int rc = start_values(f, g, M, sc, &max_u);
    if (fclose(f))
        rc = -1;
    return rc;
}

/* A temporary folder for the model and the answer. */
static int make_workdir(char *dir, size_t n, char *err, size_t err_size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, n, "%s/dtrexec-milp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, err_size, "%s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static void remove_workdir(const char *dir, const char *lp, const char *sol)
{
    unlink(lp);
    unlink(sol);
    rmdir(dir);
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t k;
    int rc = a && b ? 0 : -1;
    while (!rc && (k = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, k, b) != k)
            rc = -1;
    if (a)
        fclose(a);
    if (b && fclose(b))
        rc = -1;
    return rc;
}

/* Writes, solves and reads one model. */
static int solve_model(const struct fmt_graph *g, const double *M, double budget_units, int relax,
                       const struct schedule *start, double time_limit, const struct plan_options *o,
                       struct lp_solution *sol, char *err, size_t err_size)
{
    char dir[512], lp[600], out[600], st[600];
    if (make_workdir(dir, sizeof dir, err, err_size))
        return -1;
    snprintf(lp, sizeof lp, "%s/model.lp", dir);
    snprintf(out, sizeof out, "%s/solution.json", dir);
    snprintf(st, sizeof st, "%s/start.txt", dir);
    int rc = -1;
    if (start && write_start(st, g, M, start)) {
        snprintf(err, err_size, "%s: cannot write the MIP start", st);
        goto done;
    }
    if (write_lp(lp, g, M, budget_units, relax)) {
        snprintf(err, err_size, "%s: cannot write the model: %s", lp, strerror(errno));
        goto done;
    }
    if (o->keep_model && copy_file(lp, o->keep_model)) {
        snprintf(err, err_size, "%s: cannot write the model", o->keep_model);
        goto done;
    }
    if (run_solver(lp, out, start ? st : NULL, time_limit, o, err, err_size) ||
        read_solution(out, g->n, sol, err, err_size))
        goto done;
    rc = 0;
done:
    unlink(st);
    remove_workdir(dir, lp, out);
    return rc;
}

/* Checkmate's two-phase rounding: the LP relaxation solved below the
 * budget (0.9 of it, as Checkmate; then the full budget, where an
 * infeasible relaxation proves that no schedule exists; then lower), S
 * rounded at thresholds 0.1 ... 0.9, R by the closure; the cheapest
 * schedule within the budget. PLAN_INFEASIBLE with "infeasible" in err
 * when the relaxation itself has no solution at the full budget.
 * *lp_bound: the full-budget relaxation's optimum when it was solved to
 * optimality (a lower bound of the MILP's optimum), else NAN; with
 * want_bound the full budget is solved (and rounded too) even after 0.9
 * gave a schedule. */
static enum plan_status lp_round(const struct fmt_graph *g, const double *M, double budget_units,
                                 uint64_t budget_bytes, const struct plan_options *o, int want_bound,
                                 struct schedule *best_out, double *best_cost, double *lp_bound, double *seconds,
                                 char *err, size_t err_size)
{
    static const double factors[] = { 0.9, 1.0, 0.75, 0.5 };
    uint32_t T = g->n;
    uint8_t *S = malloc((size_t)T * T + 1);
    struct lp_solution sol = { 0 };
    struct schedule_result r;
    char e[400];
    enum plan_status rc = PLAN_ERROR;
    double t0 = now_s();
    *best_cost = INFINITY;
    *lp_bound = NAN;
    if (!S) {
        snprintf(err, err_size, "out of memory");
        return PLAN_ERROR;
    }
    for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++) {
        if (isfinite(*best_cost) && !(want_bound && factors[f] == 1.0))
            continue;
        if (o->time_limit_s > 0 && now_s() - t0 > o->time_limit_s)
            break;
        free(sol.S);
        sol.S = NULL;
        double left = o->time_limit_s > 0 ? fmax(1, o->time_limit_s - (now_s() - t0)) : 0;
        if (solve_model(g, M, floor(budget_units * factors[f]), 1, NULL, left, o, &sol, err, err_size))
            goto done;
        if (!sol.has_solution) {
            if (factors[f] == 1.0 && !strcmp(sol.status, "infeasible")) {
                snprintf(err, err_size, "infeasible: no schedule of %s fits %llu bytes (the LP relaxation is "
                         "infeasible)", g->name, (unsigned long long)budget_bytes);
                rc = PLAN_INFEASIBLE;
                goto done;
            }
            continue;
        }
        if (factors[f] == 1.0 && !strcmp(sol.status, "optimal"))
            *lp_bound = sol.objective;
        for (int th = 1; th <= 9; th++) {
            struct schedule cand;
            for (size_t k = 0; k < (size_t)T * T; k++)
                S[k] = sol.S[k] >= th / 10.0f - 1e-6f;
            schedule_init(&cand);
            if (plan_schedule_from_s(g, S, &cand, err, err_size)) {
                schedule_free(&cand);
                goto done;
            }
            if (schedule_simulate(g, &cand, 0, &r, e, sizeof e)) {
                schedule_free(&cand);
                snprintf(err, err_size, "internal: a rounded schedule does not validate: %s", e);
                goto done;
            }
            if (r.peak_bytes <= budget_bytes && r.total_compute < *best_cost) {
                *best_cost = r.total_compute;
                schedule_free(best_out);
                *best_out = cand;
            } else {
                schedule_free(&cand);
            }
        }
    }
    if (!isfinite(*best_cost)) {
        if (isfinite(*lp_bound))
            snprintf(err, err_size, "no rounding of the LP relaxation fits %llu bytes (the relaxation's optimum, "
                     "a lower bound of any schedule's compute: %.17g)", (unsigned long long)budget_bytes, *lp_bound);
        else
            snprintf(err, err_size, "no rounding of the LP relaxation fits %llu bytes",
                     (unsigned long long)budget_bytes);
        rc = PLAN_INFEASIBLE;
        goto done;
    }
    rc = PLAN_OK;
done:
    *seconds = now_s() - t0;
    free(S);
    free(sol.S);
    return rc;
}

/* The cheapest classic planner's schedule (checkpoint-all, Chen, Griewank)
 * within the budget that has Checkmate's stage form and fits the model's
 * memory: PLAN_OK with it in *best, PLAN_INFEASIBLE when none. */
static enum plan_status classic_start(const struct fmt_graph *g, const double *M, double budget_units,
                                      uint64_t budget_bytes, struct schedule *best, double *best_cost, char *backend,
                                      size_t backend_size)
{
    enum plan_status rc = PLAN_INFEASIBLE;
    for (int k = PLAN_CHECKPOINT_ALL; k <= PLAN_GRIEWANK; k++) {
        struct schedule b, staged;
        struct schedule_result r;
        char e[400];
        double max_u;
        if (plan_make(g, (enum plan_solver)k, budget_bytes, NULL, &b, e, sizeof e) != PLAN_OK)
            continue;
        int ok = !schedule_simulate(g, &b, budget_bytes, &r, e, sizeof e) && r.total_compute < *best_cost &&
                 !stage_copy(g, &b, &staged);
        schedule_free(&b);
        if (!ok)
            continue;
        if (start_values(NULL, g, M, &staged, &max_u) || max_u > budget_units) {
            schedule_free(&staged);
            continue;
        }
        schedule_free(best);
        *best = staged;
        *best_cost = r.total_compute;
        snprintf(backend, backend_size, "%s; start %s", milp_solver(), plan_solver_name(k));
        rc = PLAN_OK;
    }
    return rc;
}

/* DTR's simulated run mapped to stages (dtr/sim/sim_schedule.c) as the
 * start, when it fits the model's memory and beats *best_cost (the
 * rounding's or a classic planner's). DTRX_MILP_DTR_START=0: never;
 * =force: whenever one fits, cheaper or not (to see where HiGHS goes from
 * DTR's schedule). */
struct start_fit {
    const struct fmt_graph *g;
    const double *M;
    double budget_units;
};

static int start_fits(void *ctx, const struct schedule *sc)
{
    const struct start_fit *c = ctx;
    double max_u;
    return !start_values(NULL, c->g, c->M, sc, &max_u) && max_u <= c->budget_units;
}

static enum plan_status dtr_start(const struct fmt_graph *g, const double *M, double budget_units,
                                  uint64_t budget_bytes, struct schedule *best, double *best_cost, char *backend,
                                  size_t backend_size)
{
    const char *e = getenv("DTRX_MILP_DTR_START");
    struct start_fit c = { g, M, budget_units };
    struct schedule sc;
    double cost;
    char label[16];
    if (e && !strcmp(e, "0"))
        return PLAN_INFEASIBLE;
    schedule_init(&sc);
    if (sim_schedule_start(g, budget_bytes, start_fits, &c, &sc, &cost, label, sizeof label) != PLAN_OK ||
        !(cost < *best_cost || (e && !strcmp(e, "force")))) {
        schedule_free(&sc);
        return PLAN_INFEASIBLE;
    }
    schedule_free(best);
    *best = sc;
    *best_cost = cost;
    snprintf(backend, backend_size, "%s; start %s", milp_solver(), label);
    return PLAN_OK;
}

/* The caller's start (plan_options.start, already in stages) as the MIP
 * start, its compute in *best_cost, when it fits the model's memory; the
 * classic planners' and DTR's starts replace it only when cheaper. */
static enum plan_status given_start(const struct fmt_graph *g, const double *M, double budget_units,
                                    uint64_t budget_bytes, const struct schedule *start, struct schedule *best,
                                    double *best_cost, char *backend, size_t backend_size)
{
    struct schedule_result r;
    struct schedule copy;
    char e[400];
    double max_u;
    if (!start || schedule_simulate(g, start, budget_bytes, &r, e, sizeof e) ||
        start_values(NULL, g, M, start, &max_u) || max_u > budget_units || schedule_copy(start, &copy))
        return PLAN_INFEASIBLE;
    schedule_free(best);
    *best = copy;
    *best_cost = r.total_compute;
    snprintf(backend, backend_size, "%s; start given", milp_solver());
    return PLAN_OK;
}

enum plan_status plan_checkmate(const struct fmt_graph *g, uint64_t budget_bytes, int relax,
                                const struct plan_options *o, struct schedule *out, char *err, size_t err_size)
{
    uint32_t T = g->n;
    struct schedule_result r;
    char e[400];
    snprintf(out->solver.backend, sizeof out->solver.backend, "%s", milp_solver());
    out->solver.time_limit = o->time_limit_s;
    /* Every node runs at least once, so when checkpoint-all fits it is
     * optimal: no model to solve. */
    struct schedule all;
    schedule_init(&all);
    for (uint32_t v = 0; v < T; v++)
        if (schedule_push(&all, SCHEDULE_RUN, v, 0)) {
            schedule_free(&all);
            snprintf(err, err_size, "out of memory");
            return PLAN_ERROR;
        }
    if (schedule_insert_frees(g, &all, err, err_size) || schedule_simulate(g, &all, 0, &r, e, sizeof e)) {
        schedule_free(&all);
        return PLAN_ERROR;
    }
    if (!budget_bytes || r.peak_bytes <= budget_bytes) {
        schedule_free(out);
        *out = all;
        snprintf(out->solver.status, sizeof out->solver.status, "optimal");
        snprintf(out->solver.backend, sizeof out->solver.backend, "none: checkpoint-all fits");
        out->solver.objective = out->solver.bound = r.total_compute;
        out->solver.gap = 0;
        out->solver.solve_seconds = 0;
        return PLAN_OK;
    }
    schedule_free(&all);
    if (budget_bytes <= g->param_bytes) {
        snprintf(err, err_size, "the parameters alone (%llu bytes) fill the budget of %llu bytes",
                 (unsigned long long)g->param_bytes, (unsigned long long)budget_bytes);
        return PLAN_INFEASIBLE;
    }
    /* memory units: the gcd of every size the model counts (outputs,
     * workspaces, kept bytes), so that rounding them up to whole units
     * changes nothing unless the units had to be made coarser */
    uint64_t unit = 0, maxb = 0;
    for (uint32_t i = 0; i < T; i++) {
        unit = gcd64(gcd64(gcd64(unit, g->bytes[i]), g->workspace[i]), g->kept[i]);
        if (g->bytes[i] > maxb)
            maxb = g->bytes[i];
    }
    if (!unit)
        unit = 1;
    if (maxb / unit > 1000000)
        unit = (maxb + 999999) / 1000000;
    /* M[i]: node i's output; M[T + i]: its workspace while it runs;
     * M[2T + i]: the kept bytes (kept_ram) of nodes 0..i, resident from
     * their first computation (stage i) to the end */
    double *M = malloc((3 * (size_t)T + 1) * sizeof *M);
    uint8_t *S = malloc((size_t)T * T + 1);
    if (!M || !S) {
        free(M);
        free(S);
        snprintf(err, err_size, "out of memory");
        return PLAN_ERROR;
    }
    for (uint32_t i = 0; i < T; i++) {
        M[i] = (double)((g->bytes[i] + unit - 1) / unit);
        M[T + i] = (double)((g->workspace[i] + unit - 1) / unit);
        M[2 * T + i] = (i ? M[2 * T + i - 1] : 0) + (double)((g->kept[i] + unit - 1) / unit);
    }
    double budget_units = floor((double)(budget_bytes - g->param_bytes) / (double)unit);
    enum plan_status rc = PLAN_ERROR;
    struct lp_solution sol = { 0 };
    double t0 = now_s(), lp_s = 0, lp_best = INFINITY, lp_bound = NAN;
    struct schedule rounded;
    schedule_init(&rounded);
    /* The LP relaxation with rounding: the answer of checkmate-lp (with
     * the full-budget relaxation's optimum as its bound), and the MIP
     * start of checkmate (the MILP's own search finds no incumbent for a
     * long time on the larger graphs). A start given that fits makes it
     * moot: the rounding would only compete with it, and on ResNet-50 at
     * 0.3 its LP alone took 14 minutes. */
    enum plan_status lrc = PLAN_INFEASIBLE;
    if (!relax && !milp_paper_form() && o->start)
        lrc = given_start(g, M, budget_units, budget_bytes, o->start, &rounded, &lp_best, out->solver.backend,
                          sizeof out->solver.backend);
    if (lrc != PLAN_OK)
        lrc = lp_round(g, M, budget_units, budget_bytes, o, relax, &rounded, &lp_best, &lp_bound, &lp_s, err,
                       err_size);
    if (lrc == PLAN_ERROR)
        goto done;
    if (!relax && !milp_paper_form() && !(lrc == PLAN_INFEASIBLE && strstr(err, "infeasible"))) {
        /* and the cheapest classic schedule when it beats the rounding:
         * HiGHS prunes with the start's cost from its first node */
        enum plan_status crc = classic_start(g, M, budget_units, budget_bytes, &rounded, &lp_best,
                                             out->solver.backend, sizeof out->solver.backend);
        if (crc == PLAN_OK)
            lrc = PLAN_OK;
        if (dtr_start(g, M, budget_units, budget_bytes, &rounded, &lp_best, out->solver.backend,
                      sizeof out->solver.backend) == PLAN_OK)
            lrc = PLAN_OK;
    }
    if (relax) {
        out->solver.solve_seconds = lp_s;
        if (lrc != PLAN_OK) {
            rc = lrc;
            goto done;
        }
        schedule_free(out);
        out->steps = rounded.steps;
        out->n_steps = rounded.n_steps;
        out->cap_steps = rounded.cap_steps;
        rounded.steps = NULL;
        snprintf(out->solver.status, sizeof out->solver.status, "rounded");
        out->solver.objective = lp_best;
        out->solver.bound = lp_bound;
        if (isfinite(lp_bound))
            out->solver.gap = lp_best > 0 ? fmax(0, (lp_best - lp_bound) / lp_best) : 0;
        rc = PLAN_OK;
        goto done;
    }
    if (lrc == PLAN_INFEASIBLE && strstr(err, "infeasible")) {
        /* the relaxation is infeasible at the full budget: so is the MILP */
        rc = PLAN_INFEASIBLE;
        goto done;
    }
    double left = o->time_limit_s > 0 ? o->time_limit_s - (now_s() - t0) : 0;
    if (o->time_limit_s > 0 && left < 1)
        left = 1;
    if (solve_model(g, M, budget_units, 0, lrc == PLAN_OK ? &rounded : NULL, left, o, &sol, err, err_size))
        goto done;
    out->solver.solve_seconds = sol.seconds + lp_s;
    out->solver.objective = sol.objective;
    /* the MILP's bound, or the relaxation's when it is higher or the MILP
     * has none (stopped before its root LP) */
    out->solver.bound = isfinite(lp_bound) && !(sol.bound >= lp_bound) ? lp_bound : sol.bound;
    out->solver.gap = sol.gap;
    if (isfinite(out->solver.bound) && isfinite(sol.objective) && out->solver.bound != sol.bound)
        out->solver.gap = sol.objective > 0 ? fmax(0, (sol.objective - out->solver.bound) / sol.objective) : 0;
    snprintf(out->solver.status, sizeof out->solver.status, "%s", sol.status);
    if (!strcmp(sol.status, "infeasible")) {
        snprintf(err, err_size, "infeasible: no schedule of %s fits %llu bytes (the MILP is infeasible, %.3g s)",
                 g->name, (unsigned long long)budget_bytes, sol.seconds);
        rc = PLAN_INFEASIBLE;
        goto done;
    }
    double have = INFINITY;
    if (sol.has_solution) {
        for (size_t k = 0; k < (size_t)T * T; k++)
            S[k] = sol.S[k] > 0.5f;
        if (plan_schedule_from_s(g, S, out, err, err_size))
            goto done;
        if (schedule_simulate(g, out, budget_bytes, &r, e, sizeof e)) {
            snprintf(err, err_size, "internal: the MILP's schedule does not validate: %s", e);
            goto done;
        }
    }
    if (lrc == PLAN_OK && (!sol.has_solution || r.total_compute > lp_best)) {
        /* the start is still the best known */
        schedule_free(out);
        out->steps = rounded.steps;
        out->n_steps = rounded.n_steps;
        out->cap_steps = rounded.cap_steps;
        rounded.steps = NULL;
        out->solver.objective = lp_best;
        if (isfinite(out->solver.bound))
            out->solver.gap = lp_best > 0 ? fmax(0, (lp_best - out->solver.bound) / lp_best) : 0;
    }
    /* A solve stopped by its time limit can hold a worse incumbent than a
     * classic planner: the cheapest schedule known is returned, and the
     * gap is measured from it to the MILP's bound. (A cheaper baseline
     * after a proven optimum would mean a schedule outside Checkmate's
     * frontier-advancing stages; it is returned too, and says so.) */
    if (lrc == PLAN_OK || sol.has_solution) {
        if (schedule_simulate(g, out, budget_bytes, &r, e, sizeof e)) {
            snprintf(err, err_size, "internal: the MILP's schedule does not validate: %s", e);
            goto done;
        }
        have = r.total_compute;
    }
    for (int k = PLAN_CHECKPOINT_ALL; k <= PLAN_GRIEWANK; k++) {
        struct schedule b;
        char be[400];
        if (plan_make(g, (enum plan_solver)k, budget_bytes, NULL, &b, be, sizeof be) != PLAN_OK)
            continue;
        if (schedule_simulate(g, &b, budget_bytes, &r, be, sizeof be) || r.total_compute >= have) {
            schedule_free(&b);
            continue;
        }
        have = r.total_compute;
        schedule_free(out);
        out->steps = b.steps;
        out->n_steps = b.n_steps;
        out->cap_steps = b.cap_steps;
        out->solver.objective = have;
        if (isfinite(out->solver.bound))
            out->solver.gap = have > 0 ? fmax(0, (have - out->solver.bound) / have) : 0;
        snprintf(out->solver.backend, sizeof out->solver.backend, "%s; incumbent %s", milp_solver(),
                 plan_solver_name(k));
        if (!strcmp(out->solver.status, "optimal"))
            snprintf(out->solver.status, sizeof out->solver.status, "outside_model");
    }
    if (!isfinite(have)) {
        snprintf(err, err_size, "no schedule found within %.3g s (solver status %s; not proven infeasible)",
                 sol.seconds, sol.status);
        rc = PLAN_INFEASIBLE;
        goto done;
    }
    rc = PLAN_OK;
done:
    schedule_free(&rounded);
    free(M);
    free(S);
    free(sol.S);
    return rc;
}
