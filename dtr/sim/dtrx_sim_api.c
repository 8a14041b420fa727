/* dtr/sim/dtrx_sim_api.c — the public C API of the simulator and planners
 * (dtr/sim/dtrx_sim_api.h): the steps of `dtrexec sim --json`, `sim --plan
 * --json` and `plan --json` (cli/cmd_sim.c, cli/cmd_plan.c) with their
 * output as JSON text instead of stdout and their messages kept for
 * dtrx_sim_last_error instead of stderr. The JSON objects carry the same
 * fields, in the same order, written by the same number writer
 * (json_write_number), so a caller can compare them with the command's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtr/sim/dtrx_sim_api.h"
#include "dtr/sim/sim.h"
#include "dtr/format/json.h"

#define BUDGET_BYTES_MAX 4611686018427387904.0 /* 2^62, the command's largest */

static _Thread_local char last_error[1024];

static enum dtrx_status fail(enum dtrx_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

const char *dtrx_sim_last_error(void)
{
    return last_error;
}

void dtrx_sim_json_free(char *json)
{
    free(json);
}

/* "0.5", "0.5x" -> ratio; "4GB", "1000000B" -> bytes; NULL or "" -> none
 * (both 0); as the command's sim and plan read --budget (a bare number
 * below 16 is a ratio). */
static int parse_budget(const char *text, double *ratio, uint64_t *bytes)
{
    *ratio = 0;
    *bytes = 0;
    if (!text || !*text)
        return 0;
    char *end;
    double v = strtod(text, &end);
    if (end != text && !*end && v > 0 && v < 16) {
        *ratio = v;
        return 0;
    }
    double b, r;
    if (dtrx_parse_budget(text, &b, &r))
        return -1;
    if (r > 0) {
        *ratio = r;
        return 0;
    }
    *bytes = (uint64_t)b;
    return 0;
}

static enum dtrx_status bad_budget(const char *text)
{
    return fail(DTRX_ERR_INPUT, "budget '%s' is not a size from 1 byte to 2^62 bytes (4GB, 512MiB, 3000000B) or a "
                                "ratio of the unbudgeted peak from 1e-06x to 1000x (0.5x, or a bare number below 16)",
                text);
}

/* A ratio of a peak as bytes, floor(peak x ratio), within 1 byte to 2^62. */
static enum dtrx_status ratio_bytes(const char *text, double ratio, uint64_t peak, const char *of, uint64_t *out)
{
    double b = floor((double)peak * ratio);
    if (!(b >= 1) || b > BUDGET_BYTES_MAX)
        return fail(DTRX_ERR_INPUT, "budget %s of %s %llu bytes is %.17g bytes, outside 1 byte to 2^62 bytes", text, of,
                    (unsigned long long)peak, b);
    *out = (uint64_t)b;
    return DTRX_OK;
}

/* A file the caller names must be there and readable: the readers' own
 * "cannot open" says less than errno does. */
static enum dtrx_status check_file(const char *what, const char *path)
{
    if (!path || !*path)
        return fail(DTRX_ERR_INPUT, "no %s file given", what);
    if (access(path, R_OK))
        return fail(DTRX_ERR_INPUT, "%s file %s: %s", what, path, strerror(errno));
    return DTRX_OK;
}

/* A memory stream for the JSON text; -1 when it cannot be opened. */
struct text {
    char *buf;
    size_t len;
    FILE *f;
};

static int text_open(struct text *t)
{
    t->buf = NULL;
    t->len = 0;
    t->f = open_memstream(&t->buf, &t->len);
    return t->f ? 0 : -1;
}

/* Closes the stream: its text (the caller's to free), or NULL on failure. */
static char *text_close(struct text *t)
{
    if (!t->f)
        return NULL;
    int bad = ferror(t->f);
    if (fclose(t->f) || bad) {
        free(t->buf);
        return NULL;
    }
    return t->buf;
}

static char *schedule_text(const struct fmt_graph *g, const struct schedule *s, char *err, size_t err_size);

/* The plan and schedule-check results: the schedule's text and the stream
 * of the JSON object, then its last fields (the graph and the schedule)
 * and the text in *json. */
static enum dtrx_status result_open(const struct fmt_graph *g, const struct schedule *s, char **sched,
                                    struct text *t)
{
    char err[1200];
    t->f = NULL;
    if (!(*sched = schedule_text(g, s, err, sizeof err)))
        return fail(DTRX_ERR_INTERNAL, "%s", err);
    if (text_open(t))
        return fail(DTRX_ERR_INTERNAL, "out of host memory");
    return DTRX_OK;
}

static enum dtrx_status result_close(struct text *t, const char *graph_path, const char *sched, char **json)
{
    fprintf(t->f, ", \"graph\": ");
    json_write_string(t->f, graph_path);
    fprintf(t->f, ",\n\"schedule\": %s}\n", sched);
    if (!(*json = text_close(t)))
        return fail(DTRX_ERR_INTERNAL, "out of host memory writing the result");
    return DTRX_OK;
}

/* ---- simulate ---- */

void dtrx_sim_options_init(struct dtrx_sim_options *o)
{
    struct sim_options d;
    sim_options_default(&d);
    memset(o, 0, sizeof *o);
    o->remat_limit = d.remat_limit;
    o->seed = d.seed;
    o->min_evict_bytes = d.min_evict_bytes;
    o->sample_sqrt = d.sample_sqrt;
}

/* The object `dtrexec sim --json` prints (cli/cmd_sim.c print_json). */
static void write_sim_json(FILE *f, const char *model, const struct sim_options *o, const struct sim_baseline *b,
                           const struct sim_result *r)
{
    fprintf(f, "{\"model\": ");
    json_write_string(f, model);
    fprintf(f, ", \"heuristic\": \"%s\", \"dealloc\": \"%s\"", dtr_heuristic_name(o->heuristic),
            dtr_dealloc_name(o->dealloc));
    fprintf(f, ", \"outcome\": \"%s\", \"oom\": %s, \"remat_exceeded\": %s", sim_outcome_name(r->outcome),
            r->outcome == SIM_OOM ? "true" : "false", r->outcome == SIM_REMAT_EXCEEDED ? "true" : "false");
    fprintf(f, ", \"budget_bytes\": %llu, \"budget_ratio\": ", (unsigned long long)r->budget_bytes);
    json_write_number(f, b->peak_bytes ? (double)r->budget_bytes / (double)b->peak_bytes : 0);
    fprintf(f, ", \"baseline_peak_bytes\": %llu, \"peak_bytes\": %llu, \"pinned_bytes\": %llu",
            (unsigned long long)b->peak_bytes, (unsigned long long)r->peak_bytes, (unsigned long long)r->pinned_bytes);
    fprintf(f, ", \"baseline_compute\": ");
    json_write_number(f, b->compute);
    fprintf(f, ", \"total_compute\": ");
    json_write_number(f, r->total_compute);
    fprintf(f, ", \"remat_compute\": ");
    json_write_number(f, r->remat_compute);
    fprintf(f, ", \"overhead\": ");
    json_write_number(f, r->overhead);
    fprintf(f, ", \"evictions\": %llu, \"dealloc_evictions\": %llu, \"remats\": %llu, \"banishes\": %llu",
            (unsigned long long)r->evictions, (unsigned long long)r->dealloc_evictions, (unsigned long long)r->remats,
            (unsigned long long)r->banishes);
    fprintf(f, ", \"executions\": %llu, \"heuristic_evaluations\": %llu, \"metadata_accesses\": %llu",
            (unsigned long long)r->executions, (unsigned long long)r->heuristic_evaluations,
            (unsigned long long)r->metadata_accesses);
    fprintf(f, ", \"wall_s\": ");
    json_write_number(f, r->wall_s);
    fprintf(f, ", \"dtr_overhead_seconds\": ");
    json_write_number(f, r->wall_s);
    fprintf(f, ", \"message\": ");
    json_write_string(f, r->message);
    fprintf(f, "}");
}

static enum dtrx_status sim_options_from(const struct dtrx_sim_options *in, struct sim_options *o)
{
    struct dtrx_sim_options d;
    if (!in) {
        dtrx_sim_options_init(&d);
        in = &d;
    }
    sim_options_default(o);
    if (in->heuristic && dtr_heuristic_parse(in->heuristic, &o->heuristic))
        return fail(DTRX_ERR_INPUT, "unknown heuristic '%s' (dtr, dtr-eq, dtr-local, lru, size, msps, random)",
                    in->heuristic);
    if (in->dealloc && dtr_dealloc_parse(in->dealloc, &o->dealloc))
        return fail(DTRX_ERR_INPUT, "unknown dealloc policy '%s' (eager, banish, ignore)", in->dealloc);
    if (isnan(in->remat_limit))
        return fail(DTRX_ERR_INPUT, "remat_limit is not a number (a limit >= 0, or < 0 for none)");
    o->remat_limit = in->remat_limit < 0 ? -1 : in->remat_limit;
    o->min_evict_bytes = in->min_evict_bytes;
    o->sample_sqrt = in->sample_sqrt != 0;
    o->seed = in->seed;
    return DTRX_OK;
}

enum dtrx_status dtrx_sim_simulate(const char *path, const struct dtrx_sim_options *in, const char *const *budgets,
                                   int n_budgets, char **json)
{
    *json = NULL;
    last_error[0] = 0;
    enum dtrx_status st = check_file("op log or graph", path);
    if (st)
        return st;
    if (n_budgets < 0 || (n_budgets > 0 && !budgets))
        return fail(DTRX_ERR_INPUT, "%d budgets given", n_budgets);
    struct sim_options o;
    st = sim_options_from(in, &o);
    if (st)
        return st;
    int n = n_budgets ? n_budgets : 1;
    double *ratio = calloc((size_t)n, sizeof *ratio);
    uint64_t *bytes = calloc((size_t)n, sizeof *bytes);
    uint64_t *ws = NULL, *kept = NULL;
    struct text t = { 0 };
    char err[600];
    struct sim_program prog;
    struct sim_baseline base;
    int loaded = 0;
    if (!ratio || !bytes) {
        st = fail(DTRX_ERR_INTERNAL, "out of host memory");
        goto out;
    }
    /* Every budget checked before the (possibly long) first replay. */
    for (int i = 0; i < n_budgets; i++)
        if (parse_budget(budgets[i], &ratio[i], &bytes[i])) {
            st = bad_budget(budgets[i]);
            goto out;
        }
    if (sim_program_load(path, &prog, err, sizeof err)) {
        st = fail(DTRX_ERR_INPUT, "%s", err);
        goto out;
    }
    loaded = 1;
    if (sim_baseline_run(&prog, &base, err, sizeof err)) {
        st = fail(DTRX_ERR_INPUT, "%s", err);
        goto out;
    }
    if (in && in->planners_memory) {
        struct fmt_graph g;
        int bad = fmt_graph_read(path, &g, err, sizeof err) ||
                  sim_schedule_planners_memory(&g, &prog, &ws, &kept, err, sizeof err);
        fmt_graph_free(&g);   /* zeroed by a failed read */
        if (bad) {
            st = fail(DTRX_ERR_INPUT, "planners_memory needs a graph: %s", err);
            goto out;
        }
        o.step_workspace = ws;
        o.step_kept = kept;
    }
    if (text_open(&t)) {
        st = fail(DTRX_ERR_INTERNAL, "out of host memory");
        goto out;
    }
    fputc('[', t.f);
    for (int i = 0; i < n; i++) {
        struct sim_result r;
        o.budget_ratio = ratio[i];
        o.budget_bytes = bytes[i];
        if (sim_run(&prog, &base, &o, &r) || r.outcome == SIM_ERROR) {
            st = fail(DTRX_ERR_INPUT, "%s: %s", path, r.message);
            goto out;
        }
        if (i)
            fputs(",\n ", t.f);
        write_sim_json(t.f, prog.name, &o, &base, &r);
    }
    fputs("]\n", t.f);
    if (!(*json = text_close(&t)))
        st = fail(DTRX_ERR_INTERNAL, "out of host memory writing the result");
    t.f = NULL;
out:
    if (t.f)
        free(text_close(&t));
    if (loaded)
        sim_program_free(&prog);
    free(ws);
    free(kept);
    free(ratio);
    free(bytes);
    return st;
}

/* ---- schedules as text ---- */

/* s in the steps form, as schedule_save writes the file (malloc'd, trailing
 * newline dropped), through a temporary file: the format has one writer. */
static char *schedule_text(const struct fmt_graph *g, const struct schedule *s, char *err, size_t err_size)
{
    const char *dir = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/dtrx-schedule-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(err, err_size, "cannot make a temporary file %s: %s", path, strerror(errno));
        return NULL;
    }
    close(fd);
    char *out = NULL;
    FILE *f = NULL;
    if (schedule_save(path, g, s, err, err_size))
        goto done;
    if (!(f = fopen(path, "rb"))) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        goto done;
    }
    struct text t;
    if (text_open(&t)) {
        snprintf(err, err_size, "out of host memory");
        goto done;
    }
    char buf[8192];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, t.f);
    int bad = ferror(f);
    out = text_close(&t);
    if (bad || !out) {
        snprintf(err, err_size, "%s: cannot read the schedule back", path);
        free(out);
        out = NULL;
        goto done;
    }
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = 0;
done:
    if (f)
        fclose(f);
    unlink(path);
    return out;
}

/* checkpoint-all's peak of g: what budget ratios of schedules refer to. */
static enum dtrx_status checkpoint_all(const struct fmt_graph *g, struct schedule_result *base)
{
    char err[600];
    struct schedule all;
    enum dtrx_status st = DTRX_OK;
    if (plan_make(g, PLAN_CHECKPOINT_ALL, 0, NULL, &all, err, sizeof err) ||
        schedule_simulate(g, &all, 0, base, err, sizeof err))
        st = fail(DTRX_ERR_INTERNAL, "%s: %s", g->name, err);
    schedule_free(&all);
    return st;
}

/* ---- planning ---- */

void dtrx_sim_plan_options_init(struct dtrx_sim_plan_options *o)
{
    memset(o, 0, sizeof *o);
    o->solver = "checkpoint-all";
    o->time_limit_s = 600;
}

/* A MIP start file: read against g, in Checkmate's stages, within budget
 * (as `plan --start`). */
static enum dtrx_status load_start(const char *path, const struct fmt_graph *g, uint64_t budget, struct schedule *out)
{
    char err[600];
    struct schedule s;
    struct schedule_result r;
    if (schedule_load(path, g, &s, err, sizeof err))
        return fail(DTRX_ERR_INPUT, "start %s: %s", path, err);
    int rc = sim_schedule_to_stages(g, &s, out, err, sizeof err);
    schedule_free(&s);
    if (rc)
        return fail(DTRX_ERR_INPUT, "start %s: not mappable to Checkmate's stages: %s", path, err);
    if (schedule_simulate(g, out, budget, &r, err, sizeof err)) {
        schedule_free(out);
        return fail(DTRX_ERR_INPUT, "start %s, in Checkmate's stages: %s", path, err);
    }
    return DTRX_OK;
}

enum dtrx_status dtrx_sim_plan(const char *graph_path, const struct dtrx_sim_plan_options *in, char **json)
{
    *json = NULL;
    last_error[0] = 0;
    struct dtrx_sim_plan_options d;
    if (!in) {
        dtrx_sim_plan_options_init(&d);
        in = &d;
    }
    enum dtrx_status st = check_file("graph", graph_path);
    if (st)
        return st;
    enum plan_solver solver;
    if (!in->solver || plan_solver_parse(in->solver, &solver))
        return fail(DTRX_ERR_INPUT, "unknown solver '%s' (checkpoint-all, chen-sqrtn, chen-greedy, griewank, "
                                    "checkmate, checkmate-lp)", in->solver ? in->solver : "");
    if (!(in->time_limit_s >= 0) || !(in->time_limit_s <= 1e7))
        return fail(DTRX_ERR_INPUT, "time limit %g is not a number of seconds from 0 to 1e7", in->time_limit_s);
    if (in->threads < 0)
        return fail(DTRX_ERR_INPUT, "threads %d is negative", in->threads);
    if (in->start && *in->start && solver != PLAN_CHECKMATE_MILP)
        return fail(DTRX_ERR_INPUT, "a start schedule is a MIP start: it needs the solver checkmate");
    double ratio;
    uint64_t budget;
    if (parse_budget(in->budget, &ratio, &budget))
        return bad_budget(in->budget);
    char err[600];
    struct fmt_graph g;
    if (fmt_graph_read(graph_path, &g, err, sizeof err))
        return fail(DTRX_ERR_INPUT, "%s", err);
    struct schedule s, start;
    schedule_init(&s);
    schedule_init(&start);
    struct schedule_result base, r;
    char *sched = NULL;
    st = checkpoint_all(&g, &base);
    if (!st && ratio > 0)
        st = ratio_bytes(in->budget, ratio, base.peak_bytes, "checkpoint-all's peak", &budget);
    if (!st && in->start && *in->start)
        st = load_start(in->start, &g, budget, &start);
    if (st)
        goto out;
    struct plan_options po;
    plan_options_default(&po);
    po.time_limit_s = in->time_limit_s;
    po.threads = in->threads;
    po.verbose = in->verbose;
    po.start = in->start && *in->start ? &start : NULL;
    po.solvers_dir = in->solvers_dir;
    po.python = in->python;
    enum plan_status ps = plan_make(&g, solver, budget, &po, &s, err, sizeof err);
    if (ps == PLAN_INFEASIBLE) {
        st = fail(DTRX_ERR_BUDGET, "%s, %s at %llu bytes: %s", g.name, plan_solver_name(solver),
                  (unsigned long long)budget, err);
        goto out;
    }
    if (ps != PLAN_OK) {
        st = fail(DTRX_ERR_INTERNAL, "%s, %s: %s", g.name, plan_solver_name(solver), err);
        goto out;
    }
    if (schedule_simulate(&g, &s, budget, &r, err, sizeof err)) {
        st = fail(DTRX_ERR_INTERNAL, "internal: the schedule does not validate: %s", err);
        goto out;
    }
    struct text t;
    if ((st = result_open(&g, &s, &sched, &t)))
        goto out;
    /* plan --json's fields (cli/cmd_plan.c), then the graph and the schedule */
    fprintf(t.f, "{\"model\": ");
    json_write_string(t.f, g.name);
    fprintf(t.f, ", \"solver\": \"%s\", \"status\": ", plan_solver_name(solver));
    json_write_string(t.f, s.solver.status);
    fprintf(t.f, ", \"backend\": ");
    json_write_string(t.f, s.solver.backend);
    fprintf(t.f, ", \"budget_bytes\": %llu, \"baseline_peak_bytes\": %llu, \"peak_bytes\": %llu",
            (unsigned long long)budget, (unsigned long long)base.peak_bytes, (unsigned long long)r.peak_bytes);
    fprintf(t.f, ", \"baseline_compute\": ");
    json_write_number(t.f, r.baseline_compute);
    fprintf(t.f, ", \"total_compute\": ");
    json_write_number(t.f, r.total_compute);
    fprintf(t.f, ", \"overhead\": ");
    json_write_number(t.f, r.overhead);
    fprintf(t.f, ", \"runs\": %u, \"recomputes\": %u, \"seconds\": ", r.runs, r.recomputes);
    json_write_number(t.f, s.solver.seconds);
    fprintf(t.f, ", \"solve_seconds\": ");
    json_write_number(t.f, s.solver.solve_seconds);
    fprintf(t.f, ", \"gap\": ");
    json_write_number(t.f, s.solver.gap);
    st = result_close(&t, graph_path, sched, json);
out:
    free(sched);
    schedule_free(&start);
    schedule_free(&s);
    fmt_graph_free(&g);
    return st;
}

/* ---- checking a schedule file ---- */

enum dtrx_status dtrx_sim_schedule_check(const char *schedule_path, const char *graph_path, const char *budget_text,
                                         int staged, char **json)
{
    *json = NULL;
    last_error[0] = 0;
    enum dtrx_status st = check_file("schedule", schedule_path);
    if (st)
        return st;
    double ratio;
    uint64_t budget;
    if (parse_budget(budget_text, &ratio, &budget))
        return bad_budget(budget_text);
    char err[1200], graph_buf[1536];
    if (!graph_path || !*graph_path) {
        /* the graph the schedule names, beside the schedule (dtrexec --plan) */
        char file[512] = "";
        if (schedule_read_graph_file(schedule_path, file, sizeof file, err, sizeof err))
            return fail(DTRX_ERR_INPUT, "%s", err);
        if (!file[0])
            return fail(DTRX_ERR_INPUT, "%s: the schedule names no graph file (\"graph\": {\"file\": ...})",
                        schedule_path);
        const char *slash = strrchr(schedule_path, '/');
        if (file[0] == '/' || !slash)
            snprintf(graph_buf, sizeof graph_buf, "%s", file);
        else
            snprintf(graph_buf, sizeof graph_buf, "%.*s/%s", (int)(slash - schedule_path), schedule_path, file);
        graph_path = graph_buf;
    }
    struct fmt_graph g;
    if ((st = check_file("graph", graph_path)))
        return st;
    if (fmt_graph_read(graph_path, &g, err, sizeof err))
        return fail(DTRX_ERR_INPUT, "%s", err);
    struct schedule s;
    schedule_init(&s);
    struct schedule_result base, r;
    char *sched = NULL;
    st = checkpoint_all(&g, &base);
    if (st)
        goto out;
    if (schedule_load(schedule_path, &g, &s, err, sizeof err)) {
        st = fail(DTRX_ERR_INPUT, "%s", err);
        goto out;
    }
    if (staged) {
        struct schedule stg;
        if (sim_schedule_to_stages(&g, &s, &stg, err, sizeof err)) {
            st = fail(DTRX_ERR_INPUT, "%s: not mappable to Checkmate's stages: %s", schedule_path, err);
            goto out;
        }
        schedule_free(&s);
        s = stg;
    }
    if (ratio > 0 && (st = ratio_bytes(budget_text, ratio, base.peak_bytes, "the peak", &budget)))
        goto out;
    if (!budget_text || !*budget_text)
        budget = s.budget_bytes;
    if (schedule_simulate(&g, &s, budget, &r, err, sizeof err)) {
        st = fail(DTRX_ERR_INPUT, "%s: %s", schedule_path, err);
        goto out;
    }
    struct text t;
    if ((st = result_open(&g, &s, &sched, &t)))
        goto out;
    /* sim --plan --json's fields (cli/cmd_sim.c), then the graph and the schedule */
    fprintf(t.f, "{\"model\": ");
    json_write_string(t.f, g.name);
    fprintf(t.f, ", \"schedule_file\": ");
    json_write_string(t.f, schedule_path);
    fprintf(t.f, ", \"solver\": ");
    json_write_string(t.f, s.solver.name);
    fprintf(t.f, ", \"staged\": %s", staged ? "true" : "false");
    fprintf(t.f, ", \"outcome\": \"pass\", \"oom\": false, \"remat_exceeded\": false");
    fprintf(t.f, ", \"budget_bytes\": %llu, \"baseline_peak_bytes\": %llu, \"peak_bytes\": %llu, \"peak_step\": %u",
            (unsigned long long)budget, (unsigned long long)base.peak_bytes, (unsigned long long)r.peak_bytes,
            r.peak_step);
    fprintf(t.f, ", \"pinned_bytes\": %llu, \"baseline_compute\": ", (unsigned long long)g.param_bytes);
    json_write_number(t.f, r.baseline_compute);
    fprintf(t.f, ", \"total_compute\": ");
    json_write_number(t.f, r.total_compute);
    fprintf(t.f, ", \"remat_compute\": ");
    json_write_number(t.f, r.remat_compute);
    fprintf(t.f, ", \"overhead\": ");
    json_write_number(t.f, r.overhead);
    fprintf(t.f, ", \"runs\": %u, \"remats\": %u, \"frees\": %u, \"steps\": %u", r.runs, r.recomputes, r.frees,
            s.n_steps);
    st = result_close(&t, graph_path, sched, json);
out:
    free(sched);
    schedule_free(&s);
    fmt_graph_free(&g);
    return st;
}
