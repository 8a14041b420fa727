/* runtime/plan.c — turns a loaded graph into values and operator closures:
 * every name becomes a value, every node a call resolved against the
 * registry at the model's opset, with its attributes parsed once. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/names.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

static void value_desc_from_info(struct dtrx_value_desc *d, const struct onnx_value_info *vi)
{
    d->name = vi->name;
    d->kind = vi->kind == ONNX_VALUE_SEQUENCE ? DTRX_VALUE_SEQUENCE :
              vi->kind == ONNX_VALUE_OPTIONAL ? DTRX_VALUE_OPTIONAL : DTRX_VALUE_TENSOR;
    d->dtype = vi->elem_type;
    d->rank = vi->rank;
    for (int i = 0; i < vi->rank && i < DTRX_MAX_RANK; i++) {
        d->dims[i] = vi->dims[i];
        d->dim_names[i] = vi->dim_params[i];
    }
}

static int new_value(struct dtrx_session *s, struct rt_names *names, const char *name, int kind)
{
    int id = rt_value_new(s, name, kind);
    if (id >= 0)
        rt_names_put(names, name, id);
    return id;
}

int rt_scope_lookup(const struct rt_scope *scope, const char *name)
{
    for (; scope; scope = scope->parent) {
        int id = rt_names_get(&scope->names, name);
        if (id >= 0)
            return id;
    }
    return -1;
}

/* The names a control node's subgraphs read from enclosing scopes: its
 * implicit inputs, which must stay alive until the node has run. */
static int implicit_input_count(const struct onnx_node *n)
{
    int count = 0;
    for (int a = 0; a < n->n_attrs; a++) {
        const struct onnx_attr *at = &n->attrs[a];
        if (at->type == ONNX_ATTR_GRAPH && at->g)
            count += at->g->n_outer_refs;
        for (int k = 0; at->type == ONNX_ATTR_GRAPHS && k < at->n; k++)
            count += at->graphs[k] ? at->graphs[k]->n_outer_refs : 0;
    }
    return count;
}

static const char *implicit_input_name(const struct onnx_node *n, int index)
{
    for (int a = 0; a < n->n_attrs; a++) {
        const struct onnx_attr *at = &n->attrs[a];
        int ng = at->type == ONNX_ATTR_GRAPH ? 1 : at->type == ONNX_ATTR_GRAPHS ? at->n : 0;
        for (int k = 0; k < ng; k++) {
            const struct onnx_graph *g = at->type == ONNX_ATTR_GRAPH ? at->g : at->graphs[k];
            if (!g)
                continue;
            if (index < g->n_outer_refs)
                return g->outer_refs[index];
            index -= g->n_outer_refs;
        }
    }
    return NULL;
}

/* Initializers become resident storages in the arena: parameters count
 * against the budget like every other tensor. */
static enum dtrx_status load_initializer(struct dtrx_session *s, struct rt_value *v,
                                         const struct onnx_tensor *init)
{
    v->t.dtype = init->dtype;
    v->t.rank = init->rank;
    memcpy(v->t.dims, init->dims, sizeof v->t.dims);
    if (!onnx_dtype_size(init->dtype))
        return rt_fail(DTRX_ERR_INPUT, "initializer '%s': element type %s is not supported",
                       init->name, onnx_dtype_name(init->dtype));
    enum dtrx_status st = rt_value_alloc(s, v);
    if (st)
        return st;
    return rt_to_device(s, v->t.data, init->data, tensor_size_bytes(&v->t));
}

/* The initializers of every subgraph under node n become persistent values
 * once, like the main graph's: constants of every iteration, never
 * allocated again per instance (nor trained: no plan call counts them). */
static enum dtrx_status load_subgraph_initializers(struct dtrx_session *s, const struct onnx_node *n)
{
    for (int a = 0; a < n->n_attrs; a++) {
        const struct onnx_attr *at = &n->attrs[a];
        int ng = at->type == ONNX_ATTR_GRAPH ? 1 : at->type == ONNX_ATTR_GRAPHS ? at->n : 0;
        for (int k = 0; k < ng; k++) {
            const struct onnx_graph *g = at->type == ONNX_ATTR_GRAPH ? at->g : at->graphs[k];
            for (int i = 0; g && i < g->n_initializers; i++) {
                const struct onnx_tensor *init = &g->initializers[i];
                void *grown = realloc(s->sub_inits, sizeof *s->sub_inits * (size_t)(s->n_sub_inits + 1));
                int id = grown ? rt_value_new(s, init->name, RT_VALUE_INITIALIZER) : -1;
                if (grown)
                    s->sub_inits = grown;
                if (id < 0)
                    return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
                s->sub_inits[s->n_sub_inits++] = (struct rt_sub_init){ init, id };
                enum dtrx_status st = load_initializer(s, s->values[id], init);
                if (st)
                    return st;
            }
            for (int i = 0; g && i < g->n_nodes; i++) {
                enum dtrx_status st = load_subgraph_initializers(s, &g->nodes[i]);
                if (st)
                    return st;
            }
        }
    }
    return DTRX_OK;
}

/* "2..3", or "at least 2" for a variadic maximum, into buf. */
static const char *arity_text(char *buf, size_t size, int min, int max)
{
    if (max == OP_VARIADIC)
        snprintf(buf, size, "at least %d", min);
    else
        snprintf(buf, size, "%d..%d", min, max);
    return buf;
}

enum dtrx_status rt_call_build(struct dtrx_session *s, struct rt_scope *scope, const struct onnx_node *n,
                               struct rt_call *c, int dynamic)
{
    int64_t opset = onnx_model_opset(s->model, n->domain);
    const char *domain_shown = n->domain[0] ? n->domain : "ai.onnx";
    c->name = n->name;
    c->node = n;
    c->def = op_registry_find(n->domain, n->op_type, opset, &c->version);
    c->nondiff_def = NULL;
    if (!c->def)
        return rt_fail(DTRX_ERR_INPUT, "node '%s': unsupported operator %s (domain %s, opset %lld)",
                       n->name, n->op_type, domain_shown, (long long)opset);
    const struct op_def *d = c->def;
    char want[64];
    if (n->n_inputs < d->min_in || (d->max_in != OP_VARIADIC && n->n_inputs > d->max_in))
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %d inputs, expected %s", n->name, n->op_type, n->n_inputs,
                       arity_text(want, sizeof want, d->min_in, d->max_in));
    /* "" marks an omitted optional input; the first min_in are required
     * (but Loop's M and cond and Scan-8's sequence_lens lead and are
     * optional: runtime/control.c checks those). */
    int leading_optional = !strcmp(n->op_type, "Loop") || !strcmp(n->op_type, "Scan");
    for (int i = 0; !leading_optional && i < d->min_in && i < n->n_inputs; i++)
        if (!n->inputs[i][0])
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): input %d is required, but the node leaves it empty",
                           n->name, n->op_type, i);
    if (n->n_outputs < d->min_out || (d->max_out != OP_VARIADIC && n->n_outputs > d->max_out))
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %d outputs, expected %s", n->name, n->op_type, n->n_outputs,
                       arity_text(want, sizeof want, d->min_out, d->max_out));
    if (d->parse) {
        char err[512] = "";
        if (d->parse(n, c->version, &c->params, err, sizeof err))
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %s", n->name, n->op_type, err);
    }
    int n_implicit = d->runtime ? implicit_input_count(n) : 0;
    c->n_in = n->n_inputs + n_implicit;
    c->n_out = n->n_outputs;
    c->in = malloc(sizeof(int) * (size_t)(c->n_in + 1));
    c->out = malloc(sizeof(int) * (size_t)(c->n_out + 1));
    if (!c->in || !c->out)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory building node '%s'", n->name);
    for (int i = 0; i < c->n_in; i++) {
        const char *name = i < n->n_inputs ? n->inputs[i] : implicit_input_name(n, i - n->n_inputs);
        if (!name[0]) {
            c->in[i] = -1;
            continue;
        }
        int id = rt_scope_lookup(scope, name);
        if (id < 0 && i >= n->n_inputs)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): a subgraph reads '%s', which no enclosing graph defines",
                           n->name, n->op_type, name);
        if (id < 0)
            return rt_fail(DTRX_ERR_INPUT, "node '%s': input '%s' is produced by no node, input or initializer",
                           n->name, name);
        c->in[i] = id;
        if (dynamic)
            s->values[id]->use.remaining++;
        else
            s->values[id]->use.consumers++;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        if (!n->outputs[i][0]) {
            c->out[i] = -1;
            continue;
        }
        if (rt_names_get(&scope->names, n->outputs[i]) >= 0)
            return rt_fail(DTRX_ERR_INPUT, "node '%s': value '%s' is produced twice", n->name,
                           n->outputs[i]);
        c->out[i] = new_value(s, &scope->names, n->outputs[i], RT_VALUE_INTERMEDIATE);
        if (c->out[i] >= 0)
            s->values[c->out[i]]->train.grad = -1;
        if (c->out[i] < 0)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory building node '%s'", n->name);
    }
    return DTRX_OK;
}

enum dtrx_status rt_plan_build(struct dtrx_session *s)
{
    const struct onnx_graph *g = s->model->graph;
    int cap = g->n_initializers + g->n_inputs;
    for (int i = 0; i < g->n_nodes; i++)
        cap += g->nodes[i].n_outputs;
    s->calls = calloc((size_t)g->n_nodes + 1, sizeof *s->calls);
    s->input_values = calloc((size_t)g->n_inputs + 1, sizeof(int));
    s->input_desc = calloc((size_t)g->n_inputs + 1, sizeof *s->input_desc);
    s->input_set = calloc((size_t)g->n_inputs + 1, sizeof(int));
    s->output_values = calloc((size_t)g->n_outputs + 1, sizeof(int));
    s->output_desc = calloc((size_t)g->n_outputs + 1, sizeof *s->output_desc);
    struct rt_names *names = &s->main_scope.names;
    if (!s->calls || !s->input_values || !s->input_desc || !s->input_set ||
        !s->output_values || !s->output_desc || rt_names_init(&s->main_scope.names, cap))
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory building the plan");

    enum dtrx_status st = DTRX_OK;
    for (int i = 0; i < g->n_initializers && !st; i++) {
        const struct onnx_tensor *init = &g->initializers[i];
        if (rt_names_get(names, init->name) >= 0) {
            st = rt_fail(DTRX_ERR_INPUT, "initializer '%s' is defined twice", init->name);
            break;
        }
        int id = new_value(s, names, init->name, RT_VALUE_INITIALIZER);
        st = id < 0 ? rt_fail(DTRX_ERR_BUDGET, "out of host memory") : load_initializer(s, s->values[id], init);
    }
    for (int i = 0; i < g->n_inputs && !st; i++) {
        const struct onnx_value_info *vi = &g->inputs[i];
        if (rt_names_get(names, vi->name) >= 0) {
            st = rt_fail(DTRX_ERR_INPUT, "graph input '%s' is defined twice", vi->name);
            break;
        }
        if (vi->kind == ONNX_VALUE_OTHER) {
            st = rt_fail(DTRX_ERR_INPUT, "graph input '%s': only tensor, sequence and optional inputs are supported",
                         vi->name);
            break;
        }
        s->input_values[s->n_inputs] = new_value(s, names, vi->name, RT_VALUE_INPUT);
        if (s->input_values[s->n_inputs] < 0) {
            st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
            break;
        }
        value_desc_from_info(&s->input_desc[s->n_inputs], vi);
        s->n_inputs++;
    }
    for (int i = 0; i < g->n_nodes && !st; i++) {
        st = rt_call_build(s, &s->main_scope, &g->nodes[i], &s->calls[i], 0);
        s->n_calls = i + 1;
    }
    for (int i = 0; i < g->n_outputs && !st; i++) {
        const struct onnx_value_info *vi = &g->outputs[i];
        int id = rt_names_get(names, vi->name);
        if (id < 0) {
            st = rt_fail(DTRX_ERR_INPUT, "graph output '%s' is produced by no node", vi->name);
            break;
        }
        s->values[id]->use.is_output = 1;
        s->output_values[i] = id;
        value_desc_from_info(&s->output_desc[i], vi);
        s->n_outputs = i + 1;
    }
    for (int i = 0; i < g->n_nodes && !st; i++)
        st = load_subgraph_initializers(s, &g->nodes[i]);
    return st;
}

int rt_subgraph_initializer(const struct dtrx_session *s, const struct onnx_tensor *init)
{
    for (int i = 0; i < s->n_sub_inits; i++)
        if (s->sub_inits[i].init == init)
            return s->sub_inits[i].id;
    return -1;
}
