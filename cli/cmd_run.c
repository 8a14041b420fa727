/* cli/cmd_run.c — `dtrexec MODEL.onnx [options]`: one inference (repeated
 * with --repeat), inputs from files or seeded random data, outputs written
 * as TensorProto files, statistics as JSON. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "dtr/format/stats.h"
#include "dtr/sim/sim.h"
#include "onnx/onnx.h"
#include "runtime/dtrexec.h"

#define RUN_MAX_ARGS 64

struct run_args {
    const char *model;
    const char *input_names[RUN_MAX_ARGS];   /* NULL: bind by position */
    const char *input_files[RUN_MAX_ARGS];
    int n_inputs;
    const char *dim_names[RUN_MAX_ARGS];
    long long dim_values[RUN_MAX_ARGS];
    long long dim_hi[RUN_MAX_ARGS];          /* NAME=LO:HI draws a value per step; hi == value when fixed */
    int n_dims;
    int fresh;                     /* new dimensions, inputs and targets every step */
    const char *update_given;      /* --update's value, when given */
    long long *step_dims;          /* per step, per dim: the values drawn (for --stats) */
    const char *output_dir;
    const char *stats_path;
    const char *device;
    int threads;
    int repeat;
    unsigned long long seed;
    int quiet;
    int train;
    int steps;
    const char *labels_path;
    const char *save_path;
    struct dtrx_train_options topts;
    double budget_bytes;           /* --budget 4GB */
    double budget_ratio;           /* --budget 0.5x (of the unbudgeted peak) */
    const char *heuristic;
    const char *dealloc;
    const char *trace_path;
    int verify_remat;
    int measured_costs;
    const char *export_path;       /* dtrexec export: write the step's graph instead of training */
    const char *train_only;        /* the first option given that only a training run reads */
    const char *plan_path;         /* --plan SCHEDULE.json */
    const char *grad_dir;          /* --grad-dir DIR: the last step's gradients */
    char *freeze, *trainable;      /* --freeze/--trainable, repeated: comma-joined patterns */
    int nonfinite_step;            /* the step whose loss was not finite, 0 none */
};

static const char *const optimizer_names[] = { "sgd", "momentum", "adam", "adamw" };
static const char *const loss_names[] = { "auto", "mse", "cross-entropy", "sum", "graph" };

static int parse_choice(const char *opt, const char *val, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(val, names[i]))
            return i;
    fprintf(stderr, "dtrexec: %s: unknown value '%s' (one of:", opt, val);
    for (int i = 0; i < n; i++)
        fprintf(stderr, " %s", names[i]);
    fprintf(stderr, ")\n");
    return -1;
}

/* A finite number within [min, max] that float holds (1e39 is refused, not
 * rounded to infinity). */
static int parse_float(const char *opt, const char *text, double min, double max, float *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < min || v > max || !isfinite((float)v)) {
        fprintf(stderr, "dtrexec: %s expects a finite number from %g to %g, got '%s'\n", opt, min, max, text);
        return -1;
    }
    *out = (float)v;
    return 0;
}

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: dtrexec MODEL.onnx [options]\n"
            "  --input NAME=FILE | FILE...  inputs as TensorProto .pb or .npy (positional files bind in order)\n"
            "  --dim NAME=N|NAME=LO:HI      bind a symbolic dimension for random inputs; a range draws a value\n"
            "                               per training step (new inputs and targets each step)\n"
            "  --fresh-inputs               draw new random inputs and targets every training step\n"
            "  --output-dir DIR             write outputs as DIR/output_<i>.pb\n"
            "  --device cpu|cuda            (default cpu)\n"
            "  --threads N  --seed N  --repeat N  --stats FILE.json  --quiet\n"
            "training:\n"
            "  --train --steps N --lr F --optimizer sgd|momentum|adam|adamw\n"
            "  --loss auto|mse|cross-entropy|sum|graph  (cross-entropy: classes on axis 1, or the last axis of\n"
            "                               [N, T, V] logits with [N, T] labels; labels -100 are ignored)\n"
            "  --labels FILE  --save OUT.onnx  --momentum F  --nesterov\n"
            "  --freeze PATTERN  --trainable PATTERN  glob patterns over initializer names (repeatable, or\n"
            "                               comma-separated) overriding which are parameters (dtrexec params)\n"
            "  --weight-decay F  --adam-bias-correction pytorch|hf\n"
            "  --update in-backward|after-backward  when parameters are updated: each as soon as its gradient\n"
            "                  is final, freeing it (default), or all after the backward pass (as PyTorch's\n"
            "                  optimizer.step(); always with --plan, --export and --grad-dir); the same results\n"
            "  --grad-dir DIR  write each parameter's gradient of the last step as DIR/<name>.pb, listed in\n"
            "                  DIR/index.json\n"
            "memory budget:\n"
            "  --budget SIZE|Rx  --heuristic dtr|dtr-eq|dtr-local|lru|size|msps|random  --dealloc eager|banish|ignore\n"
            "  --cost flops|measured  --trace FILE.jsonl  --verify-remat (check every recomputation bit for bit)\n"
            "  --plan SCHEDULE.json  run a static schedule (dtrexec plan) instead of DTR\n"
            "  -o|--export GRAPH.json  record the training step's graph for the planners instead of taking it\n"
            "exit status: 0 success, 1 bad input or usage, 2 budget infeasible or out of memory, 3 internal error,\n"
            "  4 training diverged (a non-finite loss: the message names the step and the first non-finite call)\n");
}

static int parse_count_in(const char *opt, const char *text, long long min, long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        fprintf(stderr, "dtrexec: %s expects an integer from %lld to %lld, got '%s'\n", opt, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* --dim's largest value: 2^62, so that hi - lo + 1 and the element counts
 * the runtime checks stay within int64 */
#define DIM_MAX (1LL << 62)

static int parse_count(const char *opt, const char *text, long long min, long long *out)
{
    return parse_count_in(opt, text, min, INT_MAX, out);
}

static int parse_run_args(int argc, char **argv, struct run_args *a)
{
    memset(a, 0, sizeof *a);
    a->repeat = 1;
    a->steps = 1;
    a->device = "cpu";
    dtrx_train_options_init(&a->topts);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            run_usage(stdout);
            return 1;
        }
        if (!strcmp(arg, "--quiet")) {
            a->quiet = 1;
            continue;
        }
        if (!strcmp(arg, "--train")) {
            a->train = 1;
            continue;
        }
        if (!strcmp(arg, "--fresh-inputs")) {
            a->fresh = 1;
            continue;
        }
        if (!strcmp(arg, "--verify-remat")) {
            a->verify_remat = 1;
            continue;
        }
        static const char *const training_options[] = {
            "--steps", "--lr", "--momentum", "--nesterov", "--weight-decay", "--optimizer", "--loss",
            "--adam-bias-correction", "--freeze", "--trainable", "--labels", "--grad-dir", "-o", "--export",
            "--update",
        };
        for (size_t k = 0; k < sizeof training_options / sizeof training_options[0] && !a->train_only; k++)
            if (!strcmp(arg, training_options[k]))
                a->train_only = arg;
        if (!strcmp(arg, "--nesterov")) {
            a->topts.nesterov = 1;
            continue;
        }
        if (arg[0] != '-' || !arg[1]) {
            if (!a->model) {
                a->model = arg;
                continue;
            }
            if (a->n_inputs == RUN_MAX_ARGS)
                goto too_many;
            a->input_files[a->n_inputs++] = arg;
            continue;
        }
        static const char *const with_value[] = {
            "--input", "--dim", "--output-dir", "--stats", "--device", "--threads", "--repeat", "--seed",
            "--steps", "--lr", "--momentum", "--weight-decay", "--optimizer", "--loss", "--adam-bias-correction",
            "--freeze", "--trainable", "--labels", "--save", "--budget", "--heuristic", "--dealloc", "--trace", "--cost", "--plan",
            "-o", "--export", "--grad-dir", "--update",
        };
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known |= !strcmp(arg, with_value[k]);
        if (!known) {
            fprintf(stderr, "dtrexec: unknown option '%s' (see dtrexec MODEL.onnx --help)\n", arg);
            return -1;
        }
        if (!val) {
            fprintf(stderr, "dtrexec: option %s needs a value\n", arg);
            return -1;
        }
        i++;
        if (!strcmp(arg, "--input")) {
            const char *eq = strchr(val, '=');
            if (!eq || eq == val || !eq[1]) {
                fprintf(stderr, "dtrexec: --input expects NAME=FILE, got '%s'\n", val);
                return -1;
            }
            if (a->n_inputs == RUN_MAX_ARGS)
                goto too_many;
            a->input_names[a->n_inputs] = strndup(val, (size_t)(eq - val));
            a->input_files[a->n_inputs++] = eq + 1;
        } else if (!strcmp(arg, "--dim")) {
            const char *eq = strchr(val, '=');
            if (!eq || eq == val || a->n_dims == RUN_MAX_ARGS) {
                fprintf(stderr, "dtrexec: --dim expects NAME=N or NAME=LO:HI, got '%s'\n", val);
                return -1;
            }
            const char *colon = strchr(eq + 1, ':');
            long long hi = 0;
            char lo_text[64];
            snprintf(lo_text, sizeof lo_text, "%.*s", colon ? (int)(colon - eq - 1) : 63, eq + 1);
            if (parse_count_in("--dim", lo_text, 1, DIM_MAX, &n) ||
                (colon && parse_count_in("--dim", colon + 1, 1, DIM_MAX, &hi)))
                return -1;
            if (colon && hi < n) {
                fprintf(stderr, "dtrexec: --dim %s: the range is empty\n", val);
                return -1;
            }
            a->fresh |= colon != NULL;
            a->dim_names[a->n_dims] = strndup(val, (size_t)(eq - val));
            a->dim_hi[a->n_dims] = colon ? hi : n;
            a->dim_values[a->n_dims++] = n;
        } else if (!strcmp(arg, "--output-dir")) {
            a->output_dir = val;
        } else if (!strcmp(arg, "--stats")) {
            a->stats_path = val;
        } else if (!strcmp(arg, "--device")) {
            a->device = val;
        } else if (!strcmp(arg, "--threads")) {
            if (parse_count_in(arg, val, 1, CLI_THREADS_MAX, &n))
                return -1;
            a->threads = (int)n;
        } else if (!strcmp(arg, "--repeat")) {
            if (parse_count(arg, val, 1, &n))
                return -1;
            a->repeat = (int)n;
        } else if (!strcmp(arg, "--seed")) {
            if (parse_count_in(arg, val, 0, LLONG_MAX, &n))
                return -1;
            a->seed = (unsigned long long)n;
        } else if (!strcmp(arg, "--steps")) {
            if (parse_count(arg, val, 1, &n))
                return -1;
            a->steps = (int)n;
        } else if (!strcmp(arg, "--lr")) {
            if (parse_float(arg, val, 0, 1e6, &a->topts.lr))
                return -1;
        } else if (!strcmp(arg, "--momentum")) {
            if (parse_float(arg, val, 0, 1, &a->topts.momentum))
                return -1;
        } else if (!strcmp(arg, "--weight-decay")) {
            if (parse_float(arg, val, 0, 1e6, &a->topts.weight_decay))
                return -1;
        } else if (!strcmp(arg, "--optimizer")) {
            if ((a->topts.optimizer = parse_choice(arg, val, optimizer_names, 4)) < 0)
                return -1;
        } else if (!strcmp(arg, "--loss")) {
            if ((a->topts.loss = parse_choice(arg, val, loss_names, 5)) < 0)
                return -1;
        } else if (!strcmp(arg, "--update")) {
            static const char *const when[] = { "in-backward", "after-backward" };
            if ((a->topts.update_after_backward = parse_choice(arg, val, when, 2)) < 0)
                return -1;
            a->update_given = val;
        } else if (!strcmp(arg, "--adam-bias-correction")) {
            static const char *const conv[] = { "pytorch", "hf" };
            if ((a->topts.hf_bias_correction = parse_choice(arg, val, conv, 2)) < 0)
                return -1;
        } else if (!strcmp(arg, "--freeze") || !strcmp(arg, "--trainable")) {
            if (cli_patterns_add(arg[2] == 'f' ? &a->freeze : &a->trainable, val)) {
                fprintf(stderr, "dtrexec: out of memory\n");
                return -1;
            }
            a->topts.freeze = a->freeze;
            a->topts.trainable = a->trainable;
        } else if (!strcmp(arg, "--labels")) {
            a->labels_path = val;
        } else if (!strcmp(arg, "--save")) {
            a->save_path = val;
        } else if (!strcmp(arg, "--budget")) {
            /* sim and plan read a bare number below 16 as a ratio; here it
             * would be a few bytes, so it is refused rather than read either way. */
            char *end;
            double bare = strtod(val, &end);
            if (end != val && !*end && bare > 0 && bare < 16) {
                fprintf(stderr, "dtrexec: --budget %s would be %s bytes, which holds no model; write %sx for "
                        "that ratio of the unbudgeted peak, or a size with its unit (%sGB)\n", val, val, val, val);
                return -1;
            }
            if (cli_parse_size(val, &a->budget_bytes, &a->budget_ratio)) {
                fprintf(stderr, "dtrexec: --budget expects " CLI_SIZE_RANGE ", got '%s'\n", val);
                return -1;
            }
        } else if (!strcmp(arg, "--heuristic")) {
            a->heuristic = val;
        } else if (!strcmp(arg, "--dealloc")) {
            a->dealloc = val;
        } else if (!strcmp(arg, "--trace")) {
            a->trace_path = val;
        } else if (!strcmp(arg, "-o") || !strcmp(arg, "--export")) {
            a->export_path = val;
        } else if (!strcmp(arg, "--cost")) {
            static const char *const costs[] = { "flops", "measured" };
            if ((a->measured_costs = parse_choice(arg, val, costs, 2)) < 0)
                return -1;
        } else if (!strcmp(arg, "--plan")) {
            a->plan_path = val;
        } else if (!strcmp(arg, "--grad-dir")) {
            a->grad_dir = val;
        } else {
            fprintf(stderr, "dtrexec: unknown option '%s' (see dtrexec --help)\n", arg);
            return -1;
        }
    }
    if (!a->model) {
        run_usage(stderr);
        return -1;
    }
    if (a->train_only && !a->train) {
        fprintf(stderr, "dtrexec: %s is an option of training runs and needs --train\n", a->train_only);
        return -1;
    }
    if (a->update_given && !a->topts.update_after_backward && (a->plan_path || a->export_path || a->grad_dir)) {
        fprintf(stderr, "dtrexec: --update in-backward cannot be combined with %s\n",
                a->plan_path ? "--plan: schedules update after the backward pass" :
                a->export_path ? "--export: exported graphs update after the backward pass" :
                "--grad-dir: the gradients are freed as they are used; --update after-backward keeps them");
        return -1;
    }
    /* The gradients --grad-dir writes must outlive the backward pass. */
    if (a->grad_dir)
        a->topts.update_after_backward = 1;
    a->topts.fresh_targets = a->fresh;
    if (a->fresh && a->n_dims &&
        !(a->step_dims = calloc((size_t)a->steps * (size_t)a->n_dims + 1, sizeof *a->step_dims))) {
        fprintf(stderr, "dtrexec: out of memory\n");
        return -1;
    }
    return 0;
too_many:
    fprintf(stderr, "dtrexec: too many inputs (at most %d)\n", RUN_MAX_ARGS);
    return -1;
}

static void free_run_args(struct run_args *a)
{
    free(a->freeze);
    free(a->trainable);
    a->freeze = a->trainable = NULL;
    free(a->step_dims);
    a->step_dims = NULL;
    for (int i = 0; i < a->n_inputs; i++)
        free((char *)a->input_names[i]);
    for (int i = 0; i < a->n_dims; i++)
        free((char *)a->dim_names[i]);
}

/* The value of dimension i at step k: drawn from its range with the seed. */
static long long dim_at(const struct run_args *a, int i, int k)
{
    if (a->dim_hi[i] == a->dim_values[i])
        return a->dim_values[i];
    uint64_t z = (uint64_t)a->seed * 0x9e3779b97f4a7c15ull + (uint64_t)k * 0xbf58476d1ce4e5b9ull + (uint64_t)i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return a->dim_values[i] + (long long)(z % (uint64_t)(a->dim_hi[i] - a->dim_values[i] + 1));
}

/* Step k of a run with changing shapes: its dimensions and a new draw of the
 * random inputs. */
static enum dtrx_status step_inputs(struct dtrx_session *s, struct run_args *a, int k)
{
    for (int i = 0; i < a->n_dims; i++) {
        long long v = dim_at(a, i, k);
        if (a->step_dims && k < a->steps)
            a->step_dims[(size_t)k * (size_t)a->n_dims + (size_t)i] = v;
        enum dtrx_status st = dtrx_session_bind_dim(s, a->dim_names[i], v);
        if (st)
            return st;
    }
    enum dtrx_status st = dtrx_session_redraw_inputs(s, (uint64_t)k);
    if (st)
        fprintf(stderr, "dtrexec: step %d: %s\n", k + 1, dtrx_last_error());
    return st;
}

static enum dtrx_status bind_inputs(struct dtrx_session *s, const struct run_args *a)
{
    for (int i = 0; i < a->n_dims; i++) {
        enum dtrx_status st = dtrx_session_bind_dim(s, a->dim_names[i], dim_at(a, i, 0));
        if (st)
            return st;
    }
    int position = 0;
    for (int i = 0; i < a->n_inputs; i++) {
        int index = a->input_names[i] ? dtrx_session_input_index(s, a->input_names[i]) : position++;
        if (index < 0 || index >= dtrx_session_input_count(s)) {
            if (a->input_names[i])
                fprintf(stderr, "dtrexec: the model has no input named '%s'\n", a->input_names[i]);
            else
                fprintf(stderr, "dtrexec: %d positional inputs given, the model has %d\n",
                        position, dtrx_session_input_count(s));
            return DTRX_ERR_INPUT;
        }
        struct onnx_tensor t;
        char err[512];
        if (onnx_tensor_load(a->input_files[i], &t, err, sizeof err)) {
            fprintf(stderr, "dtrexec: %s\n", err);
            return DTRX_ERR_INPUT;
        }
        struct dtrx_tensor in = { .dtype = t.dtype, .rank = t.rank, .data = t.data };
        memcpy(in.dims, t.dims, sizeof in.dims);
        enum dtrx_status st = dtrx_session_set_input(s, index, &in);
        onnx_tensor_clear(&t);
        if (st) {
            fprintf(stderr, "dtrexec: %s (file %s)\n", dtrx_last_error(), a->input_files[i]);
            return st;
        }
    }
    enum dtrx_status st = dtrx_session_fill_inputs(s);
    if (st)
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
    return st;
}

static int write_outputs(struct dtrx_session *s, const char *dir)
{
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "dtrexec: cannot create output directory '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < dtrx_session_output_count(s); i++) {
        struct dtrx_tensor out;
        if (dtrx_session_get_output(s, i, &out))
            return -1;
        struct onnx_tensor t = { .name = (char *)dtrx_session_output(s, i)->name, .dtype = out.dtype,
                                 .rank = out.rank, .data = out.data,
                                 .size_bytes = (size_t)dtrx_tensor_numel(&out) * dtrx_dtype_size(out.dtype) };
        memcpy(t.dims, out.dims, sizeof t.dims);
        char path[4096], err[512];
        snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
        if (onnx_tensor_save(&t, path, err, sizeof err)) {
            fprintf(stderr, "dtrexec: %s\n", err);
            return -1;
        }
    }
    return 0;
}

/* --stats FILE: the statistics in the stats format (dtr/format/stats.h). */
static int write_stats(struct dtrx_session *s, const struct run_args *a)
{
    FILE *f = fopen(a->stats_path, "w");
    if (!f) {
        fprintf(stderr, "dtrexec: cannot write statistics to '%s': %s\n", a->stats_path, strerror(errno));
        return -1;
    }
    struct dtrx_stats st;
    dtrx_session_stats(s, &st);
    struct fmt_stats out = {
        .peak_bytes = st.peak_bytes, .budget_bytes = st.budget_bytes, .pinned_bytes = st.pinned_bytes,
        .baseline_compute = st.baseline_compute, .total_compute = st.total_compute,
        .remat_compute = st.remat_compute, .evictions = st.evictions, .window_evictions = st.window_evictions,
        .compactions = st.compactions, .compaction_bytes = st.compaction_bytes, .remats = st.remats,
        .view_remats = st.view_remats, .op_calls = st.op_calls, .dtr_overhead_seconds = st.dtr_overhead_seconds,
        .compaction_seconds = st.compaction_seconds, .runs = st.runs, .step_seconds = st.step_seconds,
        .train = a->train, .losses = st.losses, .nonfinite_step = a->nonfinite_step,
        .updates_in_backward = st.updates_in_backward, .in_place_calls = st.in_place_calls,
    };
    snprintf(out.device, sizeof out.device, "%s", a->device);
    if (st.budget_bytes) {
        snprintf(out.heuristic, sizeof out.heuristic, "%s", a->heuristic ? a->heuristic : "dtr");
        snprintf(out.dealloc, sizeof out.dealloc, "%s", a->dealloc ? a->dealloc : "eager");
    }
    if (a->fresh && a->step_dims && a->n_dims) {
        out.n_dims = a->n_dims;
        out.dim_names = (char **)a->dim_names;
        out.step_dims = a->step_dims;
        out.dim_steps = st.runs < a->steps ? st.runs : a->steps;
    }
    if (fmt_stats_write(f, &out) | fclose(f)) {
        fprintf(stderr, "dtrexec: cannot write statistics to '%s'\n", a->stats_path);
        return -1;
    }
    return 0;
}

static enum dtrx_status load_labels(struct dtrx_session *s, const char *path)
{
    struct onnx_tensor t;
    char err[512];
    if (onnx_tensor_load(path, &t, err, sizeof err)) {
        fprintf(stderr, "dtrexec: %s\n", err);
        return DTRX_ERR_INPUT;
    }
    struct dtrx_tensor l = { .dtype = t.dtype, .rank = t.rank, .data = t.data };
    memcpy(l.dims, t.dims, sizeof l.dims);
    enum dtrx_status st = dtrx_session_set_labels(s, &l);
    onnx_tensor_clear(&t);
    return st;
}

/* A reason without its " (detail)". */
static size_t reason_key(const char *reason)
{
    size_t n = strcspn(reason, "(");
    while (n && reason[n - 1] == ' ')
        n--;
    return n;
}

/* What trains, on stderr: the warnings of dtrx_session_params, and unless
 * --quiet the counts and the rule's reasons for what it froze. */
static void report_params(struct dtrx_session *s, const struct run_args *a)
{
    const struct dtrx_param_info *p;
    int n;
    if (dtrx_session_params(s, &a->topts, &p, &n))
        return;
    cli_patterns_warn_unmatched("--freeze", a->freeze, p, n);
    cli_patterns_warn_unmatched("--trainable", a->trainable, p, n);
    int trained = 0, by_rule = 0, by_option = 0;
    long long elements = 0;
    const char *reasons[8];
    int counts[8], n_reasons = 0, other = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].warning)
            fprintf(stderr, "dtrexec: warning: %s\n", p[i].warning);
        if (p[i].trainable) {
            trained++;
            elements += p[i].numel;
            continue;
        }
        if (!strcmp(p[i].reason, "--freeze")) {
            by_option++;
            continue;
        }
        by_rule++;
        /* Reasons grouped by their words before any '(' detail. */
        size_t key = reason_key(p[i].reason);
        int r = 0;
        while (r < n_reasons && (reason_key(reasons[r]) != key || strncmp(reasons[r], p[i].reason, key)))
            r++;
        if (r == n_reasons && n_reasons < 8) {
            reasons[n_reasons] = p[i].reason;
            counts[n_reasons++] = 0;
        }
        if (r < n_reasons)
            counts[r]++;
        else
            other++;
    }
    if (a->quiet)
        return;   /* the warnings above are printed all the same */
    fprintf(stderr, "training %d tensors (%lld elements); %d initializers frozen by rule", trained, elements, by_rule);
    for (int r = 0; r < n_reasons; r++)
        fprintf(stderr, "%s%.*s: %d", r ? ", " : " (", (int)reason_key(reasons[r]), reasons[r], counts[r]);
    if (other)
        fprintf(stderr, ", other: %d", other);
    fprintf(stderr, "%s", n_reasons ? ")" : "");
    if (by_option)
        fprintf(stderr, ", %d by --freeze", by_option);
    fprintf(stderr, "; `dtrexec params %s` lists them\n", a->model);
}

static void json_string(FILE *f, const char *text)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    fputc('"', f);
}

/* --grad-dir: each initializer with a gradient after the last step, as
 * DIR/<name>.pb, and DIR/index.json mapping the names to the files. A name
 * is kept where it is safe as a file name ([A-Za-z0-9._-], not starting with
 * a dot); otherwise its other characters become '_' and "-<k>" (its
 * initializer index) keeps it apart from names that map alike. */
static enum dtrx_status write_grads(struct dtrx_session *s, const struct run_args *a)
{
    char err[1024];
    struct onnx_model *m = NULL;
    if (onnx_model_load(a->model, &m, err, sizeof err)) {
        fprintf(stderr, "dtrexec: %s\n", err);
        return DTRX_ERR_INPUT;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/index.json", a->grad_dir);
    FILE *idx = NULL;
    if ((mkdir(a->grad_dir, 0777) && errno != EEXIST) || !(idx = fopen(path, "w"))) {
        fprintf(stderr, "dtrexec: --grad-dir: cannot write '%s': %s\n", path, strerror(errno));
        onnx_model_free(m);
        return DTRX_ERR_INPUT;
    }
    struct dtrx_stats stats;
    dtrx_session_stats(s, &stats);
    fprintf(idx, "{\"step\": %d, \"gradients\": [", stats.runs);
    enum dtrx_status st = DTRX_OK;
    int n = 0;
    const struct onnx_graph *g = m->graph;
    for (int i = 0; i < g->n_initializers && !st; i++) {
        const char *name = g->initializers[i].name;
        struct dtrx_tensor grad;
        if (dtrx_session_get_grad(s, name, &grad))
            continue;   /* not trained, or no gradient reaches it */
        char file[512];
        int changed = !name[0] || name[0] == '.';
        size_t k = 0;
        for (; name[k] && k < sizeof file - 32; k++) {
            char c = name[k];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                     c == '_' || c == '-';
            file[k] = ok && !(k == 0 && c == '.') ? c : '_';
            changed |= file[k] != c;
        }
        changed |= name[k] != 0;
        if (changed)
            k += (size_t)snprintf(file + k, sizeof file - k, "%s-%d", k ? "" : "_", i);
        snprintf(file + k, sizeof file - k, ".pb");
        struct onnx_tensor t = { .name = (char *)name, .dtype = grad.dtype, .rank = grad.rank, .data = grad.data,
                                 .size_bytes = (size_t)dtrx_tensor_numel(&grad) * dtrx_dtype_size(grad.dtype) };
        memcpy(t.dims, grad.dims, sizeof t.dims);
        snprintf(path, sizeof path, "%s/%s", a->grad_dir, file);
        if (onnx_tensor_save(&t, path, err, sizeof err)) {
            fprintf(stderr, "dtrexec: %s\n", err);
            st = DTRX_ERR_INPUT;
            break;
        }
        fprintf(idx, "%s\n  {\"name\": ", n++ ? "," : "");
        json_string(idx, name);
        fprintf(idx, ", \"file\": ");
        json_string(idx, file);
        fprintf(idx, "}");
    }
    fprintf(idx, "%s]}\n", n ? "\n" : "");
    if (fclose(idx) && !st) {
        fprintf(stderr, "dtrexec: --grad-dir: cannot write '%s/index.json'\n", a->grad_dir);
        st = DTRX_ERR_INPUT;
    }
    onnx_model_free(m);
    return st;
}

static enum dtrx_status train(struct dtrx_session *s, struct run_args *a)
{
    enum dtrx_status st = dtrx_session_train_begin(s, &a->topts);
    if (!st && !a->export_path)
        report_params(s, a);
    if (!st && a->labels_path)
        st = load_labels(s, a->labels_path);
    if (!st && a->export_path) {
        st = dtrx_session_export_graph(s, a->export_path);
        if (st)
            fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
        return st;
    }
    int tty = isatty(fileno(stderr));
    for (int k = 0; k < a->steps && !st; k++) {
        double loss = 0;
        if (a->fresh && (st = step_inputs(s, a, k)))
            return st;
        st = dtrx_session_train_step(s, &loss);
        if (st == DTRX_ERR_NONFINITE)
            a->nonfinite_step = k + 1;
        if (st)
            break;
        if (!k && !a->quiet)
            fprintf(stderr, "loss: %s\n", dtrx_session_loss_description(s));
        struct dtrx_stats stats;
        dtrx_session_stats(s, &stats);
        double sec = stats.step_seconds[stats.runs - 1];
        if (!a->quiet && tty)
            fprintf(stderr, "\rstep %d/%d  loss %.6g  %.1f ms", k + 1, a->steps, loss, 1e3 * sec);
        else if (!a->quiet)
            printf("step %d loss %.9g time_ms %.3f\n", k + 1, loss, 1e3 * sec);
    }
    if (!a->quiet && tty)
        fprintf(stderr, "\n");
    if (st) {
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
        return st;
    }
    if (a->grad_dir && (st = write_grads(s, a)))
        return st;
    if (a->save_path && (st = dtrx_session_save(s, a->save_path)))
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
    return st;
}

/* A static schedule (--plan): read against the graph it names (relative to
 * the schedule file), validated and simulated at its budget, lowered to the
 * runtime's run/recompute/free steps over node names. */
static int load_plan(const char *path, struct dtrx_plan_step **steps, int *n, size_t *budget, char ***names)
{
    char err[1024];
    struct schedule sched;
    struct fmt_graph g;
    memset(&g, 0, sizeof g);
    schedule_init(&sched);
    /* The graph's file name is in the schedule, read before the graph. */
    char file[512] = "";
    if (schedule_read_graph_file(path, file, sizeof file, err, sizeof err)) {
        fprintf(stderr, "dtrexec: %s\n", err);
        return -1;
    }
    if (!file[0]) {
        fprintf(stderr, "dtrexec: %s: the schedule names no graph file (\"graph\": {\"file\": ...})\n", path);
        return -1;
    }
    char graph_path[1024];
    const char *slash = strrchr(path, '/');
    if (file[0] == '/' || !slash)
        snprintf(graph_path, sizeof graph_path, "%s", file);
    else
        snprintf(graph_path, sizeof graph_path, "%.*s/%s", (int)(slash - path), path, file);
    int rc = -1;
    struct schedule_result res;
    if (fmt_graph_read(graph_path, &g, err, sizeof err) || schedule_load(path, &g, &sched, err, sizeof err) ||
        schedule_simulate(&g, &sched, sched.budget_bytes, &res, err, sizeof err)) {
        fprintf(stderr, "dtrexec: %s\n", err);
        goto done;
    }
    *steps = calloc(sched.n_steps + 1, sizeof **steps);
    *names = calloc(g.n + 1, sizeof **names);
    if (!*steps || !*names)
        goto done;
    for (uint32_t i = 0; i < g.n; i++)
        (*names)[i] = strdup(g.names[i]);
    for (uint32_t i = 0; i < sched.n_steps; i++) {
        const struct schedule_step *st = &sched.steps[i];
        (*steps)[i].kind = st->kind == SCHEDULE_FREE ? DTRX_PLAN_FREE : st->recompute ? DTRX_PLAN_RECOMPUTE : DTRX_PLAN_RUN;
        (*steps)[i].node = (*names)[st->node];
    }
    *n = (int)sched.n_steps;
    *budget = sched.budget_bytes;
    rc = 0;
done:
    schedule_free(&sched);
    fmt_graph_free(&g);
    return rc;
}

/* A ratio budget is a fraction of the peak of one unbudgeted run or step,
 * measured in a throwaway session so that the real run starts fresh. */
static enum dtrx_status measure_peak(const struct run_args *a, const struct dtrx_options *base, size_t *peak)
{
    struct dtrx_options opts = *base;
    opts.budget_bytes = 0;
    opts.trace_path = NULL;
    struct run_args one = *a;
    one.steps = 1;
    one.quiet = 1;
    one.save_path = NULL;
    one.step_dims = NULL;
    struct dtrx_session *s = NULL;
    enum dtrx_status st = dtrx_session_create(a->model, &opts, &s);
    if (!st)
        st = bind_inputs(s, &one);
    if (!st && a->train) {
        double loss;
        st = dtrx_session_train_begin(s, &a->topts);
        if (!st && a->labels_path)
            st = load_labels(s, a->labels_path);
        /* With shapes that change per step, the peak of the whole run. */
        for (int k = 0; k < (a->fresh ? a->steps : 1) && !st; k++)
            if (!(a->fresh && (st = step_inputs(s, &one, k))))
                st = dtrx_session_train_step(s, &loss);
    } else if (!st) {
        st = dtrx_session_run(s);
    }
    if (st)
        fprintf(stderr, "dtrexec: measuring the unbudgeted peak: %s\n", dtrx_last_error());
    struct dtrx_stats stats;
    if (!st) {
        dtrx_session_stats(s, &stats);
        *peak = stats.peak_bytes;
    }
    dtrx_session_destroy(s);
    return st;
}

int cmd_export(int argc, char **argv)
{
    /* `dtrexec export MODEL --train [options] -o GRAPH.json` is a run that
     * records the training step instead of taking it. */
    struct run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (!rc && (!a.train || !a.export_path)) {
        fprintf(stderr, "usage: dtrexec export MODEL.onnx --train [--dim N=V] [--input ...] [--labels F] [--loss L] -o GRAPH.json\n");
        rc = -1;
    }
    free_run_args(&a);
    if (rc)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    return cmd_run(argc, argv);
}

/* dims as "[2,3]" ("?" where symbolic) into buf. */
static const char *dims_text(char *buf, size_t cap, int rank, const int64_t *dims)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int k = 0; k < rank && n < cap; k++)
        n += (size_t)(dims[k] < 0 ? snprintf(buf + n, cap - n, k ? ",?" : "?")
                                  : snprintf(buf + n, cap - n, k ? ",%lld" : "%lld", (long long)dims[k]));
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* A declared output shape the run contradicts is said once, as onnxruntime
 * does; the computed shape is the one returned. */
static void warn_declared_shapes(const struct dtrx_session *s)
{
    for (int i = 0; i < dtrx_session_output_count(s); i++) {
        const struct dtrx_value_desc *d = dtrx_session_output(s, i);
        struct dtrx_tensor out;
        if (d->kind != DTRX_VALUE_TENSOR || d->rank < 0 || dtrx_session_get_output(s, i, &out))
            continue;
        int differs = d->rank != out.rank;
        for (int k = 0; !differs && k < out.rank; k++)
            differs = d->dims[k] >= 0 && d->dims[k] != out.dims[k];
        char want[256], got[256];
        if (differs)
            fprintf(stderr, "dtrexec: warning: graph output '%s' is declared %s, but the graph computes %s "
                    "(the computed shape is used)\n", d->name, dims_text(want, sizeof want, d->rank, d->dims),
                    dims_text(got, sizeof got, out.rank, out.dims));
    }
}

int cmd_run(int argc, char **argv)
{
    struct run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (rc) {
        free_run_args(&a);
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    /* A run that fails writes no statistics: an earlier run's file must not
     * pass for this one's. */
    if (a.stats_path)
        remove(a.stats_path);
    struct dtrx_options opts;
    dtrx_options_init(&opts);
    opts.threads = a.threads;
    opts.seed = a.seed;
    opts.device = a.device;
    opts.heuristic = a.heuristic;
    opts.dealloc = a.dealloc;
    opts.trace_path = a.trace_path;
    opts.verify_remat = a.verify_remat;
    opts.measured_costs = a.measured_costs;
    opts.budget_bytes = (size_t)a.budget_bytes;
    opts.optimize_inference = !a.train;   /* fused convolutions from the second run on (unbudgeted) */
    enum dtrx_status st = DTRX_OK;
    if (a.budget_ratio > 0) {
        size_t peak = 0;
        st = measure_peak(&a, &opts, &peak);
        if (st) {
            free_run_args(&a);
            return (int)st;
        }
        double b = floor(a.budget_ratio * (double)peak);
        if (!(b >= 1) || b > CLI_SIZE_MAX) {
            fprintf(stderr, "dtrexec: --budget %gx of the unbudgeted peak %zu bytes is %.17g bytes, outside 1 byte to "
                            "2^62 bytes\n", a.budget_ratio, peak, b);
            free_run_args(&a);
            return CLI_EXIT_USAGE;
        }
        opts.budget_bytes = (size_t)b;
        if (!a.quiet)
            fprintf(stderr, "budget %.3gx of the unbudgeted peak %zu bytes = %zu bytes\n", a.budget_ratio, peak,
                    opts.budget_bytes);
    }
    struct dtrx_plan_step *plan = NULL;
    char **plan_names = NULL;
    int n_plan = 0;
    size_t plan_budget = 0;
    if (a.plan_path) {
        if (!a.train || load_plan(a.plan_path, &plan, &n_plan, &plan_budget, &plan_names)) {
            if (!a.train)
                fprintf(stderr, "dtrexec: --plan needs --train\n");
            free_run_args(&a);
            return CLI_EXIT_USAGE;
        }
        if (!opts.budget_bytes)
            opts.budget_bytes = plan_budget;
    }
    struct dtrx_session *s = NULL;
    st = dtrx_session_create(a.model, &opts, &s);
    if (st) {
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
        free_run_args(&a);
        return (int)st;
    }
    if (plan && (st = dtrx_session_set_plan(s, plan, n_plan)))
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
    for (int i = 0; plan_names && plan_names[i]; i++)
        free(plan_names[i]);
    free(plan_names);
    free(plan);
    if (!st)
        st = bind_inputs(s, &a);
    if (!st && a.train)
        st = train(s, &a);
    if (a.export_path)
        a.quiet = 1;
    for (int r = 0; r < a.repeat && !st && !a.train; r++) {
        st = dtrx_session_run(s);
        if (st)
            fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
    }
    if (!st)
        warn_declared_shapes(s);
    if (!st && a.output_dir && write_outputs(s, a.output_dir))
        st = DTRX_ERR_INPUT;
    /* A diverged run's statistics say so (nonfinite_step), so they are kept. */
    if ((!st || st == DTRX_ERR_NONFINITE) && a.stats_path && write_stats(s, &a))
        st = st ? st : DTRX_ERR_INPUT;
    if (!st && !a.quiet) {
        struct dtrx_stats stats;
        dtrx_session_stats(s, &stats);
        for (int i = 0; i < dtrx_session_output_count(s); i++) {
            struct dtrx_tensor out;
            dtrx_session_get_output(s, i, &out);
            printf("output %d '%s': %s [", i, dtrx_session_output(s, i)->name, onnx_dtype_name(out.dtype));
            for (int k = 0; k < out.rank; k++)
                printf(k ? ",%lld" : "%lld", (long long)out.dims[k]);
            printf("]\n");
        }
        printf("peak tensor memory %zu bytes, last run %.3f ms\n", stats.peak_bytes,
               stats.runs ? 1e3 * stats.step_seconds[stats.runs - 1] : 0.0);
    }
    dtrx_session_destroy(s);
    free_run_args(&a);
    return (int)st;
}
