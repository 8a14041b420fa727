/* runtime/params.c — which initializers train: the parameters as a PyTorch
 * user means them, decided from the graph alone.
 *
 * Exporters (torch.onnx's dynamo path above all) lift every constant into an
 * initializer: GELU-tanh's and RMSNorm's Pow exponents, attention scales,
 * sqrt(2), the -3.4e38 fill of a causal mask, epsilons. Trained, these drift
 * and the loss turns NaN within steps. The rule:
 *
 *   A float initializer (float32, float64, float16, bfloat16) trains when
 *   (a) it plays a parameter's role for at least one node that reads it:
 *       - a weight or bias slot: Conv/ConvTranspose W and B, Gemm B and C,
 *         either MatMul operand, the scale and bias of Layer-, Batch-,
 *         Instance-, Group- and RMSNormalization, Gather's data (an
 *         embedding), LSTM/GRU/RNN W, R, B and peepholes, PRelu's slope —
 *         whatever its size;
 *       - any other differentiable input (an added position embedding or
 *         cls token, a Mul'd RMSNorm weight, a Concat'd token) when it has
 *         at least 2 elements; a 1-element tensor only as the bias added
 *         to a MatMul/Gemm/Conv result (nn.Linear(n, 1)'s);
 *     and is not one of: Pow's exponent, BatchNormalization's running mean
 *     and variance, Clip's bounds, Pad's fill value, an RNN's initial state,
 *     a 0-d or 1-element tensor in any other slot (scales, epsilons,
 *     exponents, fill values), a tensor outside the weight slots holding
 *     values of magnitude >= 1e30 or non-finite ones (additive masks; only
 *     those tensors' values are read), a tensor named like a PyTorch
 *     buffer (names ending in inv_freq, cos_cached, sin_cached, running_mean,
 *     running_var: rotary tables and running statistics);
 *   (b) a gradient can reach it: some node it feeds in such a role has a
 *       float output from which a float graph output is reachable through
 *       differentiable inputs only. No gradient flows through integer or
 *       bool values (Shape, Size, ConstantOfShape's shape, Cast to an
 *       integer, comparisons), through Where's condition, Dropout's ratio,
 *       Resize's roi and scales, Range, the *Like random generators, nor
 *       through ops whose derivative is zero almost everywhere (Floor,
 *       Ceil, Round, Sign, ArgMax, ArgMin), nor through the quantization
 *       ops (QuantizeLinear ... ConvInteger): rt_input_differentiable.
 *
 * Overrides, fnmatch patterns over initializer names: --freeze wins over
 * everything, --trainable makes a float initializer train whatever the rule
 * says ("*" trains every used float initializer: gradient checks); one
 * forced so that no gradient reaches (every use cut, as above) is warned
 * about, since it keeps its value.
 *
 * Exporters also merge initializers of equal value (every LayerNorm scale
 * is all ones at init): one tensor that fills several bias or norm roles is
 * reported, since training then updates those roles as one. So is a
 * trained tensor outside the weight slots that repeats one slice along
 * axis 0: a parameter expanded to the batch and lifted (a cls token).
 * Subgraph (If/Loop/Scan body) initializers are constants of the body and
 * do not train.
 *
 * So is an eval-mode export whose exporter folded BatchNormalization into
 * the convolutions (the dynamo exporter's rewriter records
 * FuseBatchNormIntoConv on the Conv; TorchScript's constant folding names
 * the folded weight "onnx::Conv_<n>"): it trains a network without its
 * normalization. The warning rides on the first weight concerned and
 * counts the rest. (A BatchNormalization kept in inference mode, as an
 * eval export and the dynamo exporter's train export both write it,
 * trains with batch statistics, as PyTorch's train() does.)
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/names.h"
#include "runtime/params.h"
#include "runtime/session.h"
#include "runtime/status.h"

void dtrx_train_options_init(struct dtrx_train_options *o)
{
    memset(o, 0, sizeof *o);
    o->optimizer = DTRX_OPTIMIZER_SGD;
    o->loss = DTRX_LOSS_AUTO;
    o->lr = 0.01f;
    o->momentum = 0.9f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
}

int rt_dtype_is_float(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE || dtype == ONNX_DTYPE_FLOAT16 ||
           dtype == ONNX_DTYPE_BFLOAT16;
}

/* Inputs (bit i) of default-domain ops through which no gradient flows. */
static const struct {
    const char *op;
    uint32_t mask;
} no_grad_inputs[] = {
    { "Where", 1u }, { "Dropout", 6u }, { "Resize", 6u }, { "Upsample", 2u }, { "OneHot", 3u },
    { "Range", ~0u }, { "RandomNormalLike", ~0u }, { "RandomUniformLike", ~0u }, { "EyeLike", ~0u },
    { "Bernoulli", ~0u }, { "Multinomial", ~0u }, { "Shape", ~0u }, { "Size", ~0u },
    { "ConstantOfShape", ~0u }, { "NonZero", ~0u }, { "IsNaN", ~0u }, { "IsInf", ~0u },
    { "Equal", ~0u }, { "Less", ~0u }, { "LessOrEqual", ~0u }, { "Greater", ~0u }, { "GreaterOrEqual", ~0u },
    /* Derivative zero almost everywhere: PyTorch's autograd gives none. */
    { "Floor", ~0u }, { "Ceil", ~0u }, { "Round", ~0u }, { "Sign", ~0u }, { "ArgMax", ~0u }, { "ArgMin", ~0u },
    /* Quantization: integer values, and ONNX defines no derivative for
     * the float scales either (a QDQ model's weights train only through
     * a float path). */
    { "QuantizeLinear", ~0u }, { "DequantizeLinear", ~0u }, { "DynamicQuantizeLinear", ~0u },
    { "QLinearMatMul", ~0u }, { "QLinearConv", ~0u }, { "MatMulInteger", ~0u }, { "ConvInteger", ~0u },
    /* Selections that move in steps: no gradient (ops/nms.c, unique.c, roi_align.c's rois). */
    { "NonMaxSuppression", ~0u }, { "Unique", ~0u }, { "RoiAlign", 2u },
};

/* Bit i: no gradient flows into input i (i < 32), in one pass of the table. */
static uint32_t nondiff_mask(const char *domain, const char *op)
{
    if (domain && !strcmp(domain, "ai.onnx.ml"))
        return ~0u;   /* classical ML: steps and selections (ops/ml.c) */
    if (domain && domain[0])
        return 0;
    for (size_t k = 0; k < sizeof no_grad_inputs / sizeof no_grad_inputs[0]; k++)
        if (!strcmp(op, no_grad_inputs[k].op))
            return no_grad_inputs[k].mask;
    return 0;
}

int rt_input_differentiable(const char *domain, const char *op, int i)
{
    if (i >= 32)   /* only the classical-ML domain is cut off that far */
        return !(domain && !strcmp(domain, "ai.onnx.ml"));
    return !(nondiff_mask(domain, op) >> i & 1);
}

int rt_call_input_differentiable(struct rt_call *c, int i)
{
    if (i >= 32)
        return rt_input_differentiable(c->def->domain, c->def->name, i);
    if (c->nondiff_def != c->def) {   /* first asked, or the call was rewritten (fuse.c) */
        c->nondiff_in = nondiff_mask(c->def->domain, c->def->name);
        c->nondiff_def = c->def;
    }
    return !(c->nondiff_in >> i & 1);
}

int rt_patterns_match(const char *patterns, const char *name)
{
    if (!patterns || !*patterns)
        return 0;
    const char *p = patterns;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char buf[512];
        if (len && len < sizeof buf) {
            memcpy(buf, p, len);
            buf[len] = 0;
            if (!fnmatch(buf, name, 0))
                return 1;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/* ---- value facts over the main graph -------------------------------------- */

struct facts {
    const struct onnx_graph *g;
    struct rt_names names;
    int n;
    int8_t *is_float;              /* 1 float, 0 not */
    int8_t *reaches;               /* a gradient can flow from a float graph output to it */
    int *producer;                 /* node index, -1 */
    int *live;                     /* per node: some float output reaches */
    int *use_start, *use_node, *use_slot;   /* consumers of each value (slot -1: read inside a subgraph) */
};

static int value_id(struct facts *f, const char *name)
{
    return name && name[0] ? rt_names_get(&f->names, name) : -1;
}

static int add_value(struct facts *f, const char *name)
{
    if (!name || !name[0])
        return -1;
    int id = rt_names_get(&f->names, name);
    if (id < 0) {
        id = f->n++;
        rt_names_put(&f->names, name, id);
    }
    return id;
}

static int attr_tensor_float(const struct onnx_node *n, const char *name, int dflt)
{
    const struct onnx_attr *a = onnx_node_attr(n, name);
    return a && a->type == ONNX_ATTR_TENSOR && a->t ? rt_dtype_is_float(a->t->dtype) : dflt;
}

/* Whether output k of node n is float, from its inputs' types. */
static int output_float(struct facts *f, const struct onnx_node *n, int k)
{
    const char *op = n->op_type;
    int in0 = n->n_inputs > 0 ? value_id(f, n->inputs[0]) : -1;
    int in1 = n->n_inputs > 1 ? value_id(f, n->inputs[1]) : -1;
    int f0 = in0 >= 0 ? f->is_float[in0] : 1;
    if (n->domain[0])
        return f0;
    /* If, Loop, Scan: the body's declared output type; float when unknown,
     * so that a guess never cuts a parameter's gradient path. */
    const struct onnx_attr *body = onnx_node_attr(n, !strcmp(op, "If") ? "then_branch" : "body");
    if (body && body->type == ONNX_ATTR_GRAPH && body->g) {
        int at = !strcmp(op, "Loop") ? k + 1 : k;
        const struct onnx_graph *b = body->g;
        return at < b->n_outputs && b->outputs[at].elem_type ? rt_dtype_is_float(b->outputs[at].elem_type) : 1;
    }
    if (!strcmp(op, "SequenceLength"))
        return 0;
    if (!strcmp(op, "SequenceEmpty"))
        return rt_dtype_is_float((int)onnx_node_attr_int(n, "dtype", ONNX_DTYPE_FLOAT));
    static const char *const integral[] = {
        "Shape", "Size", "NonZero", "ArgMax", "ArgMin", "Equal", "Less", "LessOrEqual", "Greater",
        "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf", "QuantizeLinear",
        "DynamicQuantizeLinear", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
        "StringNormalizer", "NonMaxSuppression",
    };
    for (size_t i = 0; i < sizeof integral / sizeof integral[0]; i++)
        if (!strcmp(op, integral[i]))
            return !strcmp(op, "DynamicQuantizeLinear") && k == 1;   /* its scale */
    if ((!strcmp(op, "TopK") || !strcmp(op, "MaxPool") || !strcmp(op, "Unique")) && k > 0)
        return 0;   /* indices, counts */
    if (!strcmp(op, "Cast"))
        return rt_dtype_is_float((int)onnx_node_attr_int(n, "to", ONNX_DTYPE_FLOAT));
    if (!strcmp(op, "CastLike"))
        return in1 >= 0 ? f->is_float[in1] : 1;
    if (!strcmp(op, "ConstantOfShape"))
        return attr_tensor_float(n, "value", 1);
    if (!strcmp(op, "Constant")) {
        if (onnx_node_attr(n, "value_int") || onnx_node_attr(n, "value_ints") || onnx_node_attr(n, "value_string"))
            return 0;
        return attr_tensor_float(n, "value", 1);
    }
    if (!strcmp(op, "Where"))
        return in1 >= 0 ? f->is_float[in1] : 1;
    if (!strcmp(op, "OneHot")) {
        int v = n->n_inputs > 2 ? value_id(f, n->inputs[2]) : -1;
        return v >= 0 ? f->is_float[v] : 1;
    }
    if (!strcmp(op, "DequantizeLinear") || !strcmp(op, "RandomNormal") || !strcmp(op, "RandomUniform"))
        return 1;
    if (!strcmp(op, "EyeLike") || !strcmp(op, "RandomNormalLike") || !strcmp(op, "RandomUniformLike") ||
        !strcmp(op, "Bernoulli"))
        return onnx_node_attr(n, "dtype") ? rt_dtype_is_float((int)onnx_node_attr_int(n, "dtype", 1)) : f0;
    if (!strcmp(op, "Multinomial"))
        return 0;
    return f0;
}

static void facts_free(struct facts *f)
{
    rt_names_free(&f->names);
    free(f->is_float);
    free(f->reaches);
    free(f->producer);
    free(f->live);
    free(f->use_start);
    free(f->use_node);
    free(f->use_slot);
}

static int node_graph_count(const struct onnx_node *n, int a)
{
    const struct onnx_attr *at = &n->attrs[a];
    return at->type == ONNX_ATTR_GRAPH ? (at->g != NULL) : at->type == ONNX_ATTR_GRAPHS ? at->n : 0;
}

static const struct onnx_graph *node_graph(const struct onnx_node *n, int a, int k)
{
    const struct onnx_attr *at = &n->attrs[a];
    return at->type == ONNX_ATTR_GRAPH ? at->g : at->graphs[k];
}

static enum dtrx_status facts_build(struct facts *f, const struct onnx_graph *g)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    int cap = g->n_initializers + g->n_inputs + g->n_default_inputs + 1, n_uses = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        cap += g->nodes[k].n_outputs;
        n_uses += g->nodes[k].n_inputs;
        for (int a = 0; a < g->nodes[k].n_attrs; a++)
            for (int j = 0; j < node_graph_count(&g->nodes[k], a); j++)
                n_uses += node_graph(&g->nodes[k], a, j)->n_outer_refs;
    }
    if (rt_names_init(&f->names, cap))
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    f->is_float = calloc((size_t)cap, 1);
    f->reaches = calloc((size_t)cap, 1);
    f->producer = malloc(sizeof(int) * (size_t)cap);
    f->live = calloc((size_t)g->n_nodes + 1, sizeof(int));
    f->use_start = calloc((size_t)cap + 1, sizeof(int));
    f->use_node = malloc(sizeof(int) * (size_t)(n_uses + 1));
    f->use_slot = malloc(sizeof(int) * (size_t)(n_uses + 1));
    if (!f->is_float || !f->reaches || !f->producer || !f->live || !f->use_start || !f->use_node || !f->use_slot)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int i = 0; i < cap; i++)
        f->producer[i] = -1;
    for (int i = 0; i < g->n_initializers; i++)
        f->is_float[add_value(f, g->initializers[i].name)] = (int8_t)rt_dtype_is_float(g->initializers[i].dtype);
    for (int i = 0; i < g->n_inputs; i++) {
        int id = add_value(f, g->inputs[i].name);
        if (id >= 0)
            f->is_float[id] = (int8_t)rt_dtype_is_float(g->inputs[i].elem_type);
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const struct onnx_node *n = &g->nodes[k];
        for (int o = 0; o < n->n_outputs; o++) {
            int id = add_value(f, n->outputs[o]);
            if (id < 0)
                continue;
            f->producer[id] = k;
            f->is_float[id] = (int8_t)output_float(f, n, o);
        }
    }
    /* Declared types, where the file has them, over the guesses. */
    for (int i = 0; i < g->n_value_info + g->n_outputs; i++) {
        const struct onnx_value_info *vi = i < g->n_value_info ? &g->value_info[i] : &g->outputs[i - g->n_value_info];
        int id = value_id(f, vi->name);
        if (id >= 0 && vi->kind == ONNX_VALUE_TENSOR && vi->elem_type)
            f->is_float[id] = (int8_t)rt_dtype_is_float(vi->elem_type);
    }
    /* Consumers, as compressed rows: count, prefix-sum, fill. */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < g->n_nodes; k++) {
            const struct onnx_node *n = &g->nodes[k];
            for (int i = 0; i < n->n_inputs; i++) {
                int id = value_id(f, n->inputs[i]);
                if (id < 0)
                    continue;
                if (!pass) {
                    f->use_start[id + 1]++;
                } else {
                    int at = f->use_start[id]++;
                    f->use_node[at] = k;
                    f->use_slot[at] = i;
                }
            }
            for (int a = 0; a < n->n_attrs; a++)
                for (int j = 0; j < node_graph_count(n, a); j++) {
                    const struct onnx_graph *sub = node_graph(n, a, j);
                    for (int r = 0; r < sub->n_outer_refs; r++) {
                        int id = value_id(f, sub->outer_refs[r]);
                        if (id < 0)
                            continue;
                        if (!pass) {
                            f->use_start[id + 1]++;
                        } else {
                            int at = f->use_start[id]++;
                            f->use_node[at] = k;
                            f->use_slot[at] = -1;
                        }
                    }
                }
        }
        if (!pass)
            for (int i = 0; i < f->n; i++)
                f->use_start[i + 1] += f->use_start[i];
        else
            for (int i = f->n; i > 0; i--)   /* the fill advanced each start to the next row's */
                f->use_start[i] = f->use_start[i - 1];
        if (pass)
            f->use_start[0] = 0;
    }
    /* Gradient reachability, from the float graph outputs backwards. */
    for (int i = 0; i < g->n_outputs; i++) {
        int id = value_id(f, g->outputs[i].name);
        if (id >= 0 && f->is_float[id])
            f->reaches[id] = 1;
    }
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        const struct onnx_node *n = &g->nodes[k];
        for (int o = 0; o < n->n_outputs; o++) {
            int id = value_id(f, n->outputs[o]);
            f->live[k] |= id >= 0 && f->is_float[id] && f->reaches[id];
        }
        if (!f->live[k])
            continue;
        for (int i = 0; i < n->n_inputs; i++) {
            int id = value_id(f, n->inputs[i]);
            if (id >= 0 && f->is_float[id] && rt_input_differentiable(n->domain, n->op_type, i))
                f->reaches[id] = 1;
        }
        for (int a = 0; a < n->n_attrs; a++)
            for (int j = 0; j < node_graph_count(n, a); j++) {
                const struct onnx_graph *sub = node_graph(n, a, j);
                for (int r = 0; r < sub->n_outer_refs; r++) {
                    int id = value_id(f, sub->outer_refs[r]);
                    if (id >= 0 && f->is_float[id])
                        f->reaches[id] = 1;
                }
            }
    }
    return DTRX_OK;
}

/* ---- roles ------------------------------------------------------------------ */

enum use_kind { USE_NOGRAD = 1, USE_FROZEN, USE_PARAM };

/* Parameter slots, trained whatever their size. `merged` marks the roles
 * whose initial values are all equal (biases, norm scales), which
 * exporters merge across nodes. */
static const struct {
    const char *op;
    int slot;
    const char *role;
    int merged;
} param_slots[] = {
    { "Conv", 1, "Conv weight", 0 }, { "Conv", 2, "Conv bias", 1 },
    { "ConvTranspose", 1, "ConvTranspose weight", 0 }, { "ConvTranspose", 2, "ConvTranspose bias", 1 },
    { "Gemm", 0, "Gemm operand", 0 }, { "Gemm", 1, "Gemm weight", 0 }, { "Gemm", 2, "Gemm bias", 1 },
    { "MatMul", 0, "MatMul weight", 0 }, { "MatMul", 1, "MatMul weight", 0 },
    { "LayerNormalization", 1, "LayerNormalization scale", 1 }, { "LayerNormalization", 2, "LayerNormalization bias", 1 },
    { "BatchNormalization", 1, "BatchNormalization scale", 1 }, { "BatchNormalization", 2, "BatchNormalization bias", 1 },
    { "InstanceNormalization", 1, "InstanceNormalization scale", 1 },
    { "InstanceNormalization", 2, "InstanceNormalization bias", 1 },
    { "GroupNormalization", 1, "GroupNormalization scale", 1 }, { "GroupNormalization", 2, "GroupNormalization bias", 1 },
    { "RMSNormalization", 1, "RMSNormalization scale", 1 },
    { "Gather", 0, "embedding", 0 },
    { "LSTM", 1, "LSTM weight", 0 }, { "LSTM", 2, "LSTM recurrent weight", 0 }, { "LSTM", 3, "LSTM bias", 1 },
    { "LSTM", 7, "LSTM peephole weight", 0 },
    { "GRU", 1, "GRU weight", 0 }, { "GRU", 2, "GRU recurrent weight", 0 }, { "GRU", 3, "GRU bias", 1 },
    { "RNN", 1, "RNN weight", 0 }, { "RNN", 2, "RNN recurrent weight", 0 }, { "RNN", 3, "RNN bias", 1 },
    { "PRelu", 1, "PRelu slope", 0 },
};

/* Constants that sit in differentiable slots but are no parameters. */
static const struct {
    const char *op;
    int slot;
    const char *reason;
} constant_slots[] = {
    { "Pow", 1, "Pow exponent" },
    { "BatchNormalization", 3, "BatchNormalization running mean" },
    { "BatchNormalization", 4, "BatchNormalization running variance" },
    { "Clip", 1, "Clip bound" }, { "Clip", 2, "Clip bound" },
    { "Pad", 2, "Pad value" },
    { "LSTM", 5, "RNN initial state" }, { "LSTM", 6, "RNN initial state" },
    { "GRU", 5, "RNN initial state" }, { "RNN", 5, "RNN initial state" },
};

struct use {
    int kind;                      /* enum use_kind */
    int merged;
    int weight_slot;               /* from param_slots: a weight, bias, norm or embedding slot */
    char role[128];
};

static int is_linear_output(struct facts *f, const char *name)
{
    int id = value_id(f, name);
    int k = id >= 0 ? f->producer[id] : -1;
    if (k < 0)
        return 0;
    const char *op = f->g->nodes[k].op_type;
    return !strcmp(op, "MatMul") || !strcmp(op, "Gemm") || !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose");
}

/* The role of a tensor in input `slot` of an op, gradient path aside;
 * `other_linear`: the other operand of a 2-input op is a MatMul/Gemm/Conv
 * result. */
static void classify_role(const struct onnx_node *n, int slot, int other_linear, const struct onnx_tensor *t,
                          struct use *u)
{
    int64_t numel = onnx_tensor_numel(t);
    int default_domain = !n->domain[0];
    u->merged = u->weight_slot = 0;
    for (size_t k = 0; default_domain && k < sizeof constant_slots / sizeof constant_slots[0]; k++)
        if (constant_slots[k].slot == slot && !strcmp(constant_slots[k].op, n->op_type)) {
            u->kind = USE_FROZEN;
            snprintf(u->role, sizeof u->role, "%s", constant_slots[k].reason);
            return;
        }
    for (size_t k = 0; default_domain && k < sizeof param_slots / sizeof param_slots[0]; k++)
        if (param_slots[k].slot == slot && !strcmp(param_slots[k].op, n->op_type)) {
            u->kind = USE_PARAM;
            u->merged = param_slots[k].merged;
            u->weight_slot = 1;
            snprintf(u->role, sizeof u->role, "%s", param_slots[k].role);
            return;
        }
    int add = !strcmp(n->op_type, "Add") || !strcmp(n->op_type, "Sub");
    if (numel < 2) {
        /* nn.Linear(n, 1)'s bias, added to the product. */
        if (add && numel == 1 && t->rank >= 1 && other_linear) {
            u->kind = USE_PARAM;
            u->merged = 1;
            snprintf(u->role, sizeof u->role, "bias");
            return;
        }
        u->kind = USE_FROZEN;
        snprintf(u->role, sizeof u->role, "%s", t->rank ? "1-element constant" : "0-d scalar");
        return;
    }
    u->kind = USE_PARAM;
    if (add) {
        u->merged = 1;
        snprintf(u->role, sizeof u->role, "%s", other_linear ? "bias" : "added tensor");
    } else if (!strcmp(n->op_type, "Mul")) {
        u->merged = 1;
        snprintf(u->role, sizeof u->role, "scale");
    } else if (!strcmp(n->op_type, "Concat")) {
        snprintf(u->role, sizeof u->role, "concatenated tensor");
    } else if (!strcmp(n->op_type, "Expand") && slot == 0) {
        snprintf(u->role, sizeof u->role, "expanded tensor");
    } else {
        snprintf(u->role, sizeof u->role, "input %d of %s", slot, n->op_type);
    }
}

/* The first node under `g` (bodies nested in it included) that reads
 * `name`, and the input it reads it as; NULL if none. */
static const struct onnx_node *inner_reader(const struct onnx_graph *g, const char *name, int *slot, int depth)
{
    for (int k = 0; g && depth < ONNX_MAX_SUBGRAPH_DEPTH && k < g->n_nodes; k++) {
        const struct onnx_node *n = &g->nodes[k];
        for (int i = 0; i < n->n_inputs; i++)
            if (!strcmp(n->inputs[i], name)) {
                *slot = i;
                return n;
            }
        for (int a = 0; a < n->n_attrs; a++)
            for (int j = 0; j < node_graph_count(n, a); j++) {
                const struct onnx_node *r = inner_reader(node_graph(n, a, j), name, slot, depth + 1);
                if (r)
                    return r;
            }
    }
    return NULL;
}

static void classify(struct facts *f, const struct onnx_tensor *t, int node, int slot, struct use *u)
{
    const struct onnx_node *n = &f->g->nodes[node];
    u->merged = 0;
    if (slot >= 0 && !rt_input_differentiable(n->domain, n->op_type, slot)) {
        u->kind = USE_NOGRAD;
        snprintf(u->role, sizeof u->role, "no gradient path (input %d of %s '%s')", slot, n->op_type, n->name);
        return;
    }
    if (!f->live[node]) {
        u->kind = USE_NOGRAD;
        snprintf(u->role, sizeof u->role, "no gradient path (%s '%s' reaches no float output)", n->op_type, n->name);
        return;
    }
    if (slot < 0) {
        /* Read in a body: the role it has there (its path there assumed). */
        int inner_slot = -1;
        const struct onnx_node *r = NULL;
        for (int a = 0; !r && a < n->n_attrs; a++)
            for (int j = 0; !r && j < node_graph_count(n, a); j++)
                r = inner_reader(node_graph(n, a, j), t->name, &inner_slot, 0);
        if (!r || !rt_input_differentiable(r->domain, r->op_type, inner_slot)) {
            u->kind = USE_NOGRAD;
            snprintf(u->role, sizeof u->role, "no gradient path (in the body of %s '%s')", n->op_type, n->name);
            return;
        }
        classify_role(r, inner_slot, 0, t, u);
        size_t len = strlen(u->role);
        snprintf(u->role + len, sizeof u->role - len, " (in the body of %s '%s')", n->op_type, n->name);
        return;
    }
    int other_linear = n->n_inputs == 2 && slot < 2 && is_linear_output(f, n->inputs[1 - slot]);
    classify_role(n, slot, other_linear, t, u);
}

static double element(const struct onnx_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_FLOAT: return ((const float *)t->data)[i];
    case ONNX_DTYPE_DOUBLE: return ((const double *)t->data)[i];
    case ONNX_DTYPE_BFLOAT16: {
        uint32_t u = (uint32_t)((const uint16_t *)t->data)[i] << 16;
        float x;
        memcpy(&x, &u, sizeof x);
        return x;
    }
    case ONNX_DTYPE_FLOAT16: {
        uint16_t h = ((const uint16_t *)t->data)[i];
        int e = h >> 10 & 31, m = h & 1023;
        double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
        return h >> 15 ? -v : v;
    }
    default: return 0;
    }
}

/* A value no weight holds: an additive mask's fill (-3.4e38, -inf). */
static int mask_value(const struct onnx_tensor *t, double *found)
{
    int64_t n = onnx_tensor_numel(t);
    for (int64_t i = 0; t->data && i < n; i++) {
        double v = element(t, i);
        if (!isfinite(v) || fabs(v) >= 1e30) {
            *found = v;
            return 1;
        }
    }
    return 0;
}

static int all_equal(const struct onnx_tensor *t, double *value)
{
    int64_t n = onnx_tensor_numel(t);
    if (!t->data || n < 2)
        return 0;
    double v0 = element(t, 0);
    for (int64_t i = 1; i < n; i++)
        if (element(t, i) != v0)
            return 0;
    *value = v0;
    return 1;
}

static char *shared_warning(struct facts *f, const struct onnx_tensor *t, int id)
{
    int n_param = 0, any_merged = 0;
    char roles[512] = "";
    size_t len = 0;
    for (int u = f->use_start[id]; u < f->use_start[id + 1]; u++) {
        struct use use;
        classify(f, t, f->use_node[u], f->use_slot[u], &use);
        if (use.kind != USE_PARAM)
            continue;
        any_merged |= use.merged;
        if (n_param++ < 4 && len < sizeof roles)
            len += (size_t)snprintf(roles + len, sizeof roles - len, "%s%s of '%s'", n_param > 1 ? ", " : "",
                                    use.role, f->g->nodes[f->use_node[u]].name);
    }
    if (n_param < 2 || !any_merged)
        return NULL;
    char equal[96] = "";
    double v;
    if (all_equal(t, &v))
        snprintf(equal, sizeof equal, " (its %lld elements are all %g)", (long long)onnx_tensor_numel(t), v);
    char *w = malloc(1024);
    if (w)
        snprintf(w, 1024, "'%s' fills %d parameter roles (%s%s): exporters merge initializers of equal "
                 "value%s, so training updates these roles as one tensor; give each its own initializer "
                 "to train them apart", t->name, n_param, roles, n_param > 4 ? ", ..." : "", equal);
    return w;
}

/* A tensor --trainable forces that no gradient can reach (every use is
 * cut: a QDQ model's float weight feeding QuantizeLinear): it trains in
 * name only and keeps its value, which the user should hear about. */
static char *unreached_warning(struct facts *f, const struct onnx_tensor *t, int id)
{
    struct use first = { 0 };
    for (int u = f->use_start[id]; u < f->use_start[id + 1]; u++) {
        struct use use;
        classify(f, t, f->use_node[u], f->use_slot[u], &use);
        if (use.kind != USE_NOGRAD)
            return NULL;
        if (!first.kind)
            first = use;
    }
    char *w = malloc(512);
    if (w)
        snprintf(w, 512, "'%s' is trainable by --trainable, but no gradient reaches it (%s): it keeps its value",
                 t->name, first.kind ? first.role : "no gradient path");
    return w;
}

/* One slice repeated along axis 0, not itself constant: a parameter the
 * exporter expanded to the batch and lifted (ViT's cls token as
 * cls_token.expand(B, -1, -1)); its copies would train apart. */
static char *expanded_warning(const struct onnx_tensor *t)
{
    int64_t n = onnx_tensor_numel(t), rows = t->rank >= 2 ? t->dims[0] : 0;
    if (rows < 2 || !t->data || n / rows < 2)
        return NULL;
    size_t slice = (size_t)(n / rows) * onnx_dtype_size(t->dtype);
    const char *bytes = t->data;
    for (int64_t r = 1; r < rows; r++)
        if (memcmp(bytes, bytes + (size_t)r * slice, slice))
            return NULL;
    struct onnx_tensor first = *t;
    first.rank = 1;
    first.dims[0] = n / rows;
    double v;
    if (all_equal(&first, &v))
        return NULL;
    char *w = malloc(512);
    if (w)
        snprintf(w, 512, "'%s' repeats one slice %lld times along axis 0: a parameter the exporter expanded "
                 "(a cls token's expand to the batch?) and lifted; its %lld copies train apart", t->name,
                 (long long)rows, (long long)rows);
    return w;
}

/* PyTorch buffers that reach the loss through differentiable ops but are
 * no parameters: rotary embeddings' frequencies and caches, and running
 * statistics of a BatchNorm the exporter decomposed. Recognised by the
 * names torch.onnx keeps (module path + attribute). */
static const char *buffer_name(const char *name)
{
    static const char *const suffixes[] = { "inv_freq", "cos_cached", "sin_cached", "running_mean", "running_var" };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n >= k && !strcmp(name + n - k, suffixes[i]))
            return suffixes[i];
    }
    return NULL;
}

static int initializer_index(const struct onnx_graph *g, const char *name)
{
    for (int i = 0; i < g->n_initializers; i++)
        if (!strcmp(g->initializers[i].name, name))
            return i;
    return -1;
}

static int folded_conv(const struct onnx_node *n)
{
    return !strcmp(n->op_type, "Conv") && !n->domain[0] && n->n_inputs >= 2
           && ((n->rewrites && strstr(n->rewrites, "FuseBatchNormIntoConv"))
               || !strncmp(n->inputs[1], "onnx::Conv_", 11));
}

/* The first trained initializer in slot `slot` of the nodes `match`
 * accepts, and how many such nodes there are. */
static int first_trained(const struct onnx_graph *g, const struct rt_param_decision *d,
                         int (*match)(const struct onnx_node *), int slot, int *count)
{
    int first = -1;
    *count = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        if (!match(&g->nodes[k]))
            continue;
        int i = initializer_index(g, g->nodes[k].inputs[slot]);
        if (i < 0 || !d[i].train)
            continue;
        ++*count;
        if (first < 0)
            first = i;
    }
    return first;
}

static void export_mode_warnings(const struct onnx_graph *g, struct rt_param_decision *d)
{
    char others[96];
    int n, i = first_trained(g, d, folded_conv, 1, &n);
    snprintf(others, sizeof others, " and %d other convolution weight%s", n - 1, n > 2 ? "s" : "");
    if (i >= 0 && !d[i].warning && (d[i].warning = malloc(640)))
        snprintf(d[i].warning, 640, "'%s'%s look%s like BatchNormalization folded into the convolution by an "
                 "eval-mode export: training trains the folded network, without its normalization; export "
                 "with training=torch.onnx.TrainingMode.TRAINING and do_constant_folding=False (dynamo: "
                 "optimize=False) to train the model as PyTorch does", g->initializers[i].name,
                 n > 1 ? others : "", n > 1 ? "" : "s");
}

void rt_params_free(struct rt_param_decision *d, int n)
{
    for (int i = 0; d && i < n; i++)
        free(d[i].warning);
    free(d);
}

enum dtrx_status rt_params_decide(const struct dtrx_session *s, const struct dtrx_train_options *o,
                                  struct rt_param_decision **out)
{
    const struct onnx_graph *g = s->model->graph;
    *out = NULL;
    struct facts f;
    enum dtrx_status st = facts_build(&f, g);
    struct rt_param_decision *d = st ? NULL : calloc((size_t)g->n_initializers + 1, sizeof *d);
    if (!st && !d)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int i = 0; !st && i < g->n_initializers; i++) {
        const struct onnx_tensor *t = &g->initializers[i];
        struct rt_param_decision *p = &d[i];
        int id = value_id(&f, t->name);
        int fl = rt_dtype_is_float(t->dtype);
        p->value = rt_names_get(&s->main_scope.names, t->name);
        p->uses = id >= 0 ? f.use_start[id + 1] - f.use_start[id] : 0;
        double found;
        if (o && rt_patterns_match(o->freeze, t->name)) {
            snprintf(p->reason, sizeof p->reason, "--freeze");
        } else if (!fl) {
            snprintf(p->reason, sizeof p->reason, "%s%s", onnx_dtype_name(t->dtype),
                     o && rt_patterns_match(o->trainable, t->name) ? " (--trainable needs a float type)" : "");
        } else if (!p->uses) {
            snprintf(p->reason, sizeof p->reason, "unused");
        } else if (o && rt_patterns_match(o->trainable, t->name)) {
            p->train = 1;
            snprintf(p->reason, sizeof p->reason, "--trainable");
            p->warning = unreached_warning(&f, t, id);
        } else if (buffer_name(t->name)) {
            snprintf(p->reason, sizeof p->reason, "buffer (named like PyTorch's %s)", buffer_name(t->name));
        } else {
            /* The first parameter role decides; else the first reason not to. */
            struct use best = { 0 };
            for (int u = f.use_start[id]; u < f.use_start[id + 1] && best.kind != USE_PARAM; u++) {
                struct use use;
                classify(&f, t, f.use_node[u], f.use_slot[u], &use);
                if (use.kind > best.kind)
                    best = use;
            }
            p->train = best.kind == USE_PARAM;
            snprintf(p->reason, sizeof p->reason, "%s", best.kind ? best.role : "no gradient path");
            /* Values are read only for tensors outside weight slots: a
             * pass over every weight would cost seconds per gigabyte. */
            if (p->train && !best.weight_slot && mask_value(t, &found)) {
                p->train = 0;
                snprintf(p->reason, sizeof p->reason, "mask (holds %g)", isnan(found) ? NAN : found);
            } else if (p->train && !best.weight_slot) {
                p->warning = expanded_warning(t);
            }
        }
        if (fl && p->uses > 1 && !p->warning)
            p->warning = shared_warning(&f, t, id);
    }
    facts_free(&f);
    if (st) {
        rt_params_free(d, g->n_initializers);
        return st;
    }
    export_mode_warnings(g, d);
    *out = d;
    return DTRX_OK;
}

enum dtrx_status dtrx_session_params(struct dtrx_session *s, const struct dtrx_train_options *o,
                                     const struct dtrx_param_info **out, int *n)
{
    const struct onnx_graph *g = s->model->graph;
    struct dtrx_train_options defaults;
    if (!o) {
        dtrx_train_options_init(&defaults);
        o = &defaults;
    }
    struct rt_param_decision *d;
    enum dtrx_status st = rt_params_decide(s, o, &d);
    if (st)
        return st;
    struct dtrx_param_info *info = calloc((size_t)g->n_initializers + 1, sizeof *info);
    if (!info) {
        rt_params_free(d, g->n_initializers);
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    }
    rt_params_free(s->param_decisions, s->n_param_decisions);
    free(s->param_info);
    s->param_decisions = d;
    s->n_param_decisions = g->n_initializers;
    s->param_info = info;
    for (int i = 0; i < g->n_initializers; i++) {
        const struct onnx_tensor *t = &g->initializers[i];
        info[i] = (struct dtrx_param_info){
            .name = t->name, .dtype = onnx_widening_file_dtype(s->widening, t), .rank = t->rank,
            .numel = onnx_tensor_numel(t),
            .trainable = d[i].train, .reason = d[i].reason, .warning = d[i].warning,
        };
        memcpy(info[i].dims, t->dims, sizeof info[i].dims);
    }
    *out = info;
    *n = g->n_initializers;
    return DTRX_OK;
}
