/* runtime/session.c — the embedding API: session life cycle, inputs,
 * outputs and statistics. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>

#include "ops/syslib.h"
#include "runtime/arena.h"
#include "runtime/budget.h"
#include "runtime/control.h"
#include "runtime/device.h"
#include "runtime/emit.h"
#include "runtime/memory.h"
#include "runtime/names.h"
#include "runtime/params.h"
#include "runtime/plan.h"
#include "runtime/planned.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/strings.h"
#include "runtime/stepnames.h"
#include "runtime/trace.h"
#include "runtime/train.h"
#include "runtime/values.h"

size_t dtrx_dtype_size(int dtype) { return onnx_dtype_size(dtype); }

int64_t dtrx_tensor_numel(const struct dtrx_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

void dtrx_options_init(struct dtrx_options *o)
{
    memset(o, 0, sizeof *o);
    o->device = "cpu";
}

/* Kernel scratch memory comes from the arena like every tensor. */
static void *env_scratch_alloc(void *ctx, size_t bytes)
{
    struct dtrx_session *s = ctx;
    return rt_budget_active(s) ? rt_budget_scratch_alloc(s, bytes) : arena_alloc(&s->arena, bytes, NULL);
}

static void env_scratch_free(void *ctx, void *ptr)
{
    struct dtrx_session *s = ctx;
    if (rt_budget_active(s))
        rt_budget_scratch_free(s, ptr);
    else
        arena_free(&s->arena, ptr);
}

/* Notes the half types of the top-level inputs and outputs, then widens
 * the whole model to float (onnx/half.c). */
static enum dtrx_status widen_half(struct dtrx_session *s)
{
    const struct onnx_graph *g = s->model->graph;
    s->input_half = calloc((size_t)g->n_inputs + 1, sizeof *s->input_half);
    s->output_half = calloc((size_t)g->n_outputs + 1, sizeof *s->output_half);
    s->output_narrow = calloc((size_t)g->n_outputs + 1, sizeof *s->output_narrow);
    if (!s->input_half || !s->output_half || !s->output_narrow)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i].kind == ONNX_VALUE_TENSOR && (g->inputs[i].elem_type == ONNX_DTYPE_FLOAT16 ||
                                                        g->inputs[i].elem_type == ONNX_DTYPE_BFLOAT16))
            s->input_half[i] = g->inputs[i].elem_type;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i].kind == ONNX_VALUE_TENSOR && (g->outputs[i].elem_type == ONNX_DTYPE_FLOAT16 ||
                                                         g->outputs[i].elem_type == ONNX_DTYPE_BFLOAT16))
            s->output_half[i] = g->outputs[i].elem_type;
    char err[1024] = "";
    if (onnx_model_widen_half(s->model, &s->widening, err, sizeof err))
        return rt_fail(DTRX_ERR_INTERNAL, "%s", err);
    return DTRX_OK;
}

/* Inputs and outputs are described in the file's types. */
static enum dtrx_status narrow_descs(struct dtrx_session *s)
{
    for (int i = 0; i < s->n_inputs; i++)
        if (s->input_half[i])
            s->input_desc[i].dtype = s->input_half[i];
    for (int i = 0; i < s->n_outputs; i++)
        if (s->output_half[i])
            s->output_desc[i].dtype = s->output_half[i];
    return DTRX_OK;
}

static void set_threads(int threads)
{
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
}

enum dtrx_status dtrx_session_create(const char *model_path, const struct dtrx_options *opts,
                                     struct dtrx_session **out)
{
    *out = NULL;
    struct dtrx_session *s = calloc(1, sizeof *s);
    if (!s)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    s->run_runtime_op = rt_control_exec;
    s->memory = &rt_memory_plain;
    if (opts)
        s->opts = *opts;
    else
        dtrx_options_init(&s->opts);
    if (!s->opts.device)
        s->opts.device = "cpu";
    if (s->opts.threads <= 0)
        s->opts.threads = omp_get_num_procs();
    char lib_err[600];
    if (syslib_open_kernels(lib_err, sizeof lib_err)) {
        free(s);
        return rt_fail(DTRX_ERR_INTERNAL, "%s", lib_err);
    }
    set_threads(s->opts.threads);

    dtr_config_default(&s->budget.config);
    enum dtrx_status bad = DTRX_OK;
    if (s->opts.heuristic && dtr_heuristic_parse(s->opts.heuristic, &s->budget.config.heuristic))
        bad = rt_fail(DTRX_ERR_INPUT, "unknown heuristic '%s' (dtr, dtr-eq, dtr-local, lru, size, msps, random)",
                      s->opts.heuristic);
    else if (s->opts.dealloc && dtr_dealloc_parse(s->opts.dealloc, &s->budget.config.dealloc))
        bad = rt_fail(DTRX_ERR_INPUT, "unknown dealloc policy '%s' (eager, banish, ignore)", s->opts.dealloc);
    if (bad) {
        free(s);
        return bad;
    }
    s->budget.config.remat_limit = -1;
    s->verify.on = s->opts.verify_remat;
    s->budget.measured_costs = s->opts.measured_costs;
    if (s->opts.budget_bytes && s->opts.budget_bytes < 4096) {
        enum dtrx_status st = rt_fail(DTRX_ERR_BUDGET, "a budget of %zu bytes cannot hold any model", s->opts.budget_bytes);
        free(s);
        return st;
    }
    enum dtrx_status dev = rt_device_open(s);
    if (dev) {
        free(s);
        return dev;
    }
    if (arena_init(&s->arena, rt_backend(s), s->opts.budget_bytes)) {
        enum dtrx_status st = rt_fail(s->opts.budget_bytes ? DTRX_ERR_BUDGET : DTRX_ERR_INTERNAL,
                                      "cannot allocate the tensor arena of %zu bytes on %s", s->opts.budget_bytes,
                                      rt_backend(s)->name);
        rt_device_close(s);
        free(s);
        return st;
    }
    if (s->opts.trace_path && rt_trace_open(s, s->opts.trace_path)) {
        arena_release(&s->arena);
        rt_device_close(s);
        free(s);
        return DTRX_ERR_INPUT;
    }
    s->env = (struct op_env){
        .ctx = s, .scratch_alloc = env_scratch_alloc, .scratch_free = env_scratch_free,
        .backend = rt_backend(s), .threads = s->opts.threads, .seed = s->opts.seed,
        .err = s->op_err, .err_size = sizeof s->op_err,
    };
    rt_strings_init(s);

    char err[1024] = "";
    if (onnx_model_load(model_path, &s->model, err, sizeof err)) {
        rt_trace_close(s);
        arena_release(&s->arena);
        rt_device_close(s);
        free(s);
        /* the loader's allocation failures are out of memory (exit 2), the
         * rest bad input */
        return rt_fail(strstr(err, "out of memory") ? DTRX_ERR_BUDGET : DTRX_ERR_INPUT, "%s", err);
    }
    enum dtrx_status st = widen_half(s);
    if (!st)
        st = rt_plan_build(s);
    if (!st)
        st = narrow_descs(s);
    if (st) {
        dtrx_session_destroy(s);
        return st;
    }
    s->stats.pinned_bytes = s->arena.in_use_bytes;
    s->train.base_values = s->n_values;   /* values above are made per run (subgraph instances) */
    *out = s;
    return DTRX_OK;
}

void dtrx_session_destroy(struct dtrx_session *s)
{
    if (!s)
        return;
    rt_train_free(s);
    rt_budget_free(s);
    rt_step_names_free(s);
    rt_plan_free(s);
    rt_trace_close(s);
    for (int i = 0; s->output_host && i < s->n_outputs; i++)
        free(s->output_host[i]);
    free(s->output_host);
    for (int i = 0; s->output_narrow && i < s->n_outputs; i++)
        free(s->output_narrow[i]);
    free(s->output_narrow);
    free(s->input_half);
    free(s->output_half);
    onnx_widening_free(s->widening);
    free(s->grad_host);
    rt_params_free(s->param_decisions, s->n_param_decisions);
    free(s->param_info);
    for (int i = 0; i < s->n_values; i++)
        rt_value_destroy(s, s->values[i]);
    for (int i = 0; i < s->n_calls; i++)
        rt_call_clear(&s->calls[i]);
    for (int i = 0; i < s->n_dims; i++)
        free(s->dims[i].name);
    free(s->dims);
    free(s->calls);
    free(s->values);
    free(s->input_values);
    free(s->input_desc);
    free(s->input_set);
    free(s->output_values);
    free(s->output_desc);
    free(s->stats.step_seconds);
    free(s->stats.losses);
    rt_names_free(&s->main_scope.names);
    free(s->sub_inits);
    free(s->tape);
    onnx_model_free(s->model);
    rt_strings_free(s);
    arena_release(&s->arena);
    rt_device_close(s);
    free(s);
}

int dtrx_session_input_count(const struct dtrx_session *s) { return s->n_inputs; }
int dtrx_session_output_count(const struct dtrx_session *s) { return s->n_outputs; }

const struct dtrx_value_desc *dtrx_session_input(const struct dtrx_session *s, int i)
{
    return i >= 0 && i < s->n_inputs ? &s->input_desc[i] : NULL;
}

const struct dtrx_value_desc *dtrx_session_output(const struct dtrx_session *s, int i)
{
    return i >= 0 && i < s->n_outputs ? &s->output_desc[i] : NULL;
}

int dtrx_session_input_index(const struct dtrx_session *s, const char *name)
{
    for (int i = 0; i < s->n_inputs; i++)
        if (!strcmp(s->input_desc[i].name, name))
            return i;
    return -1;
}

enum dtrx_status dtrx_session_bind_dim(struct dtrx_session *s, const char *name, int64_t value)
{
    if (value <= 0)
        return rt_fail(DTRX_ERR_INPUT, "dimension '%s' must be positive, got %lld", name, (long long)value);
    for (int i = 0; i < s->n_dims; i++)
        if (!strcmp(s->dims[i].name, name)) {
            s->dims[i].value = value;
            return DTRX_OK;
        }
    struct rt_dim_binding *d = realloc(s->dims, sizeof *d * (size_t)(s->n_dims + 1));
    if (!d)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    s->dims = d;
    d[s->n_dims].name = strdup(name);
    d[s->n_dims].value = value;
    if (!d[s->n_dims].name)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    s->n_dims++;
    return DTRX_OK;
}

/* A half input of a widened model: given in its half type, run in float. */
static enum dtrx_status set_input_widened(struct dtrx_session *s, int index, const struct dtrx_tensor *t)
{
    struct dtrx_tensor f = *t;
    f.dtype = ONNX_DTYPE_FLOAT;
    int64_t n = dtrx_tensor_numel(t);
    float *data = malloc((size_t)(n > 0 ? n : 1) * sizeof *data);
    if (!data)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory for input '%s'", s->input_desc[index].name);
    for (int64_t i = 0; i < n; i++)
        data[i] = onnx_half_to_float(((const uint16_t *)t->data)[i], t->dtype);
    f.data = data;
    enum dtrx_status st = dtrx_session_set_input(s, index, &f);
    free(data);
    return st;
}

enum dtrx_status dtrx_session_set_input(struct dtrx_session *s, int index, const struct dtrx_tensor *t)
{
    if (index < 0 || index >= s->n_inputs)
        return rt_fail(DTRX_ERR_INPUT, "input index %d out of range (the model has %d inputs)", index,
                       s->n_inputs);
    const struct dtrx_value_desc *d = &s->input_desc[index];
    int half = s->input_half[index];
    if (half && t->dtype == half)
        return set_input_widened(s, index, t);
    if (d->dtype && t->dtype != d->dtype && !(half && t->dtype == ONNX_DTYPE_FLOAT))
        return rt_fail(DTRX_ERR_INPUT, "input '%s': element type %s given, %s expected", d->name,
                       onnx_dtype_name(t->dtype), onnx_dtype_name(d->dtype));
    if (t->rank < 0 || t->rank > DTRX_MAX_RANK)
        return rt_fail(DTRX_ERR_INPUT, "input '%s': rank %d is not supported", d->name, t->rank);
    if (d->rank >= 0) {
        if (t->rank != d->rank)
            return rt_fail(DTRX_ERR_INPUT, "input '%s': rank %d given, the model declares rank %d",
                           d->name, t->rank, d->rank);
        for (int i = 0; i < d->rank; i++)
            if (d->dims[i] >= 0 && t->dims[i] != d->dims[i])
                return rt_fail(DTRX_ERR_INPUT,
                               "input '%s': dimension %d is %lld, the model declares %lld", d->name, i,
                               (long long)t->dims[i], (long long)d->dims[i]);
    }
    struct tensor shape = { .dtype = t->dtype, .rank = t->rank };
    memcpy(shape.dims, t->dims, sizeof t->dims[0] * (size_t)t->rank);
    char msg[400];
    if (tensor_check_size(&shape, msg, sizeof msg))
        return rt_fail(DTRX_ERR_INPUT, "input '%s': %s", d->name, msg);
    struct rt_value *v = s->values[s->input_values[index]];
    size_t old_bytes = rt_value_bytes(s, v);
    rt_value_release(s, v);
    v->t.dtype = t->dtype;
    v->t.rank = t->rank;
    memcpy(v->t.dims, t->dims, sizeof v->t.dims);
    void *strings;
    enum dtrx_status st = rt_strings_stable(s, t->dtype, t->data, tensor_numel(&v->t), &strings);
    if (!st)
        st = rt_value_alloc(s, v);
    if (!st)
        st = rt_to_device(s, v->t.data, strings ? strings : t->data, tensor_size_bytes(&v->t));
    free(strings);
    if (st)
        return st;
    s->input_set[index] = 1;
    /* Inputs are pinned; the arena may also hold the previous step's values
     * still to be freed, so the count follows the input, not the arena. */
    s->stats.pinned_bytes += rt_value_bytes(s, v) - old_bytes;
    return DTRX_OK;
}

/* A half output of a widened model, rounded from its float value into the
 * output's own buffer (valid until the next call for that output). */
static enum dtrx_status narrow_output(const struct dtrx_session *s, int index, struct dtrx_tensor *out)
{
    int64_t n = dtrx_tensor_numel(out);
    uint16_t *half = realloc(s->output_narrow[index], (size_t)(n > 0 ? n : 1) * sizeof *half);
    if (!half)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory for output %d", index);
    s->output_narrow[index] = half;
    for (int64_t i = 0; i < n; i++)
        half[i] = onnx_float_to_half(((const float *)out->data)[i], s->output_half[index]);
    out->dtype = s->output_half[index];
    out->data = half;
    return DTRX_OK;
}

enum dtrx_status dtrx_session_get_output(const struct dtrx_session *s, int index, struct dtrx_tensor *out)
{
    if (index < 0 || index >= s->n_outputs)
        return rt_fail(DTRX_ERR_INPUT, "output index %d out of range", index);
    const struct rt_value *v = s->values[s->output_values[index]];
    if (!s->memory->live(s, v))
        return rt_fail(DTRX_ERR_INPUT, "output '%s' has no value: run the session first", v->name);
    out->dtype = v->t.dtype;
    out->rank = v->t.rank;
    memcpy(out->dims, v->t.dims, sizeof out->dims);
    out->data = (rt_budget_active(s) && !v->mem.storage) || !rt_device_on_host(s) ? s->output_host[index] : v->t.data;
    if (s->output_half[index] && v->t.dtype == ONNX_DTYPE_FLOAT)
        return narrow_output(s, index, out);
    return DTRX_OK;
}

void dtrx_session_stats(const struct dtrx_session *s, struct dtrx_stats *out)
{
    *out = s->stats;
    out->peak_bytes = s->arena.peak_bytes;
    out->budget_bytes = s->arena.budget_bytes;
    out->window_evictions = s->budget.window_evictions;
    out->compactions = s->budget.compactions;
    out->compaction_bytes = s->budget.compaction_bytes;
    out->compaction_seconds = s->budget.compaction_seconds;
    if (rt_budget_active(s)) {
        /* The live instance's counts join those of finished ones. */
        struct dtr_stats ds;
        dtr_stats_get(s->budget.dtr, &ds);
        out->evictions += (long long)ds.evictions;
        out->remats += (long long)ds.remats;
        out->remat_compute += ds.remat_compute;
    }
}

enum dtrx_status dtrx_session_tensor(struct dtrx_session *s, const char *name, struct dtrx_tensor *out)
{
    for (int i = 0; i < s->n_values; i++) {
        struct rt_value *v = s->values[i];
        if (v->kind == RT_VALUE_INTERMEDIATE || strcmp(v->name, name))
            continue;
        if (!v->mem.storage)
            return rt_fail(DTRX_ERR_INPUT, "'%s' has no value yet", name);
        out->dtype = v->t.dtype;
        out->rank = v->t.rank;
        memcpy(out->dims, v->t.dims, sizeof out->dims);
        /* On a device: a host copy, written back before the next run. */
        out->data = rt_host_mirror(s, v);
        return out->data ? DTRX_OK : DTRX_ERR_INTERNAL;
    }
    return rt_fail(DTRX_ERR_INPUT, "no initializer or input named '%s'", name);
}
