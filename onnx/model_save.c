/* onnx/model_save.c — struct onnx_model back into a ModelProto file.
 *
 * The protobuf-c message tree is built over our own strings and tensor data
 * (nothing is copied); every struct allocated for it is recorded in a pool
 * and freed in one go after packing. Initializers are written as raw_data.
 */
#define _XOPEN_SOURCE 700
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx-impl.h"

#ifndef DTRX_VERSION
#define DTRX_VERSION "unknown"
#endif

struct pool {
    void **ptrs;
    size_t n, cap;
    int failed;
};

static void *pool_alloc(struct pool *p, size_t count, size_t size)
{
    if (p->failed)
        return NULL;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        void **ptrs = realloc(p->ptrs, cap * sizeof *ptrs);
        if (!ptrs) {
            p->failed = 1;
            return NULL;
        }
        p->ptrs = ptrs;
        p->cap = cap;
    }
    void *m = calloc(count ? count : 1, size);
    if (!m) {
        p->failed = 1;
        return NULL;
    }
    p->ptrs[p->n++] = m;
    return m;
}

static void pool_free(struct pool *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->ptrs[i]);
    free(p->ptrs);
}

struct save_ctx {
    struct pool pool;
    char *err;
    size_t err_size;
};

static Onnx__TensorProto *tensor_to_proto(struct save_ctx *s, const struct onnx_tensor *t)
{
    Onnx__TensorProto *tp = pool_alloc(&s->pool, 1, sizeof *tp);
    if (!tp)
        return NULL;
    onnx__tensor_proto__init(tp);
    if (onnx_dtype_size(t->dtype) == 0) {
        onnx_error(s->err, s->err_size, "tensor '%s': cannot save data type %s", t->name ? t->name : "",
                   onnx_dtype_name(t->dtype));
        s->pool.failed = 1;
        return NULL;
    }
    tp->n_dims = (size_t)t->rank;
    tp->dims = (int64_t *)t->dims;
    tp->has_data_type = 1;
    tp->data_type = t->dtype;
    tp->name = (char *)(t->name ? t->name : "");
    if (t->dtype == ONNX_DTYPE_STRING) {
        /* string_data, one entry per element, over the handles' own bytes */
        int64_t n = onnx_tensor_numel(t);
        const struct onnx_string *h = t->data;
        if (n && !(tp->string_data = pool_alloc(&s->pool, n, sizeof *tp->string_data)))
            return NULL;
        tp->n_string_data = (size_t)n;
        for (int64_t i = 0; i < n; i++)
            tp->string_data[i] = (ProtobufCBinaryData){ .len = h[i].len, .data = (uint8_t *)h[i].data };
        return tp;
    }
    tp->has_raw_data = 1;
    tp->raw_data.len = (size_t)onnx_tensor_numel(t) * onnx_dtype_size(t->dtype);
    tp->raw_data.data = (uint8_t *)t->data;
    return tp;
}

static Onnx__ValueInfoProto *value_info_to_proto(struct save_ctx *s, const char *name, int kind,
                                                 int elem_type, int rank, const int64_t *dims,
                                                 char *const *dim_params)
{
    Onnx__ValueInfoProto *v = pool_alloc(&s->pool, 1, sizeof *v);
    Onnx__TypeProto *tp = pool_alloc(&s->pool, 1, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = pool_alloc(&s->pool, 1, sizeof *tt);
    if (!v || !tp || !tt)
        return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    v->name = (char *)name;
    v->type = tp;
    tt->has_elem_type = elem_type != 0;
    tt->elem_type = elem_type;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = pool_alloc(&s->pool, 1, sizeof *sh);
        Onnx__TensorShapeProto__Dimension **dp = pool_alloc(&s->pool, rank, sizeof *dp);
        if (!sh || !dp)
            return NULL;
        onnx__tensor_shape_proto__init(sh);
        for (int i = 0; i < rank; i++) {
            dp[i] = pool_alloc(&s->pool, 1, sizeof **dp);
            if (!dp[i])
                return NULL;
            onnx__tensor_shape_proto__dimension__init(dp[i]);
            if (dims[i] >= 0) {
                dp[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dp[i]->dim_value = dims[i];
            } else if (dim_params && dim_params[i]) {
                dp[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dp[i]->dim_param = dim_params[i];
            }
        }
        sh->n_dim = (size_t)rank;
        sh->dim = dp;
        tt->shape = sh;
    }
    /* Sequence and optional types wrap the recorded tensor type again. */
    if (kind == ONNX_VALUE_SEQUENCE || kind == ONNX_VALUE_OPTIONAL) {
        Onnx__TypeProto *inner = pool_alloc(&s->pool, 1, sizeof *inner);
        if (!inner)
            return NULL;
        onnx__type_proto__init(inner);
        inner->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        inner->tensor_type = tt;
        if (kind == ONNX_VALUE_SEQUENCE) {
            Onnx__TypeProto__Sequence *sq = pool_alloc(&s->pool, 1, sizeof *sq);
            if (!sq)
                return NULL;
            onnx__type_proto__sequence__init(sq);
            sq->elem_type = inner;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
            tp->sequence_type = sq;
        } else {
            Onnx__TypeProto__Optional *op = pool_alloc(&s->pool, 1, sizeof *op);
            if (!op)
                return NULL;
            onnx__type_proto__optional__init(op);
            op->elem_type = inner;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
            tp->optional_type = op;
        }
    } else if (kind == ONNX_VALUE_TENSOR) {
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp->tensor_type = tt;
    }
    return v;
}

static Onnx__ValueInfoProto *vi_to_proto(struct save_ctx *s, const struct onnx_value_info *v)
{
    return value_info_to_proto(s, v->name, v->kind, v->elem_type, v->rank, v->dims, v->dim_params);
}

static Onnx__GraphProto *graph_to_proto(struct save_ctx *s, const struct onnx_graph *g, int all_inits_as_inputs);

static int attr_to_proto(struct save_ctx *s, const struct onnx_attr *a, Onnx__AttributeProto *p)
{
    onnx__attribute_proto__init(p);
    p->name = a->name;
    p->has_type = 1;
    p->type = (Onnx__AttributeProto__AttributeType)a->type;
    switch (a->type) {
    case ONNX_ATTR_FLOAT: p->has_f = 1; p->f = a->f; break;
    case ONNX_ATTR_INT: p->has_i = 1; p->i = a->i; break;
    case ONNX_ATTR_STRING:
        p->has_s = 1;
        p->s.data = (uint8_t *)a->s;
        p->s.len = a->s_len;
        break;
    case ONNX_ATTR_TENSOR:
        if (!(p->t = tensor_to_proto(s, a->t)))
            return -1;
        break;
    case ONNX_ATTR_GRAPH:
        if (!(p->g = graph_to_proto(s, a->g, 0)))
            return -1;
        break;
    case ONNX_ATTR_FLOATS: p->n_floats = (size_t)a->n; p->floats = a->floats; break;
    case ONNX_ATTR_INTS: p->n_ints = (size_t)a->n; p->ints = a->ints; break;
    case ONNX_ATTR_STRINGS:
        p->n_strings = (size_t)a->n;
        if (!(p->strings = pool_alloc(&s->pool, a->n, sizeof *p->strings)))
            return -1;
        for (int i = 0; i < a->n; i++) {
            p->strings[i].data = (uint8_t *)a->strings[i];
            p->strings[i].len = strlen(a->strings[i]);
        }
        break;
    case ONNX_ATTR_TENSORS:
        p->n_tensors = (size_t)a->n;
        if (!(p->tensors = pool_alloc(&s->pool, a->n, sizeof *p->tensors)))
            return -1;
        for (int i = 0; i < a->n; i++)
            if (!(p->tensors[i] = tensor_to_proto(s, a->tensors[i])))
                return -1;
        break;
    case ONNX_ATTR_GRAPHS:
        p->n_graphs = (size_t)a->n;
        if (!(p->graphs = pool_alloc(&s->pool, a->n, sizeof *p->graphs)))
            return -1;
        for (int i = 0; i < a->n; i++)
            if (!(p->graphs[i] = graph_to_proto(s, a->graphs[i], 0)))
                return -1;
        break;
    default:
        /* Sparse tensors and type protos are not kept by the loader. */
        onnx_error(s->err, s->err_size, "attribute '%s': cannot save attributes of type %d", a->name, a->type);
        s->pool.failed = 1;
        return -1;
    }
    return 0;
}

static Onnx__GraphProto *graph_to_proto(struct save_ctx *s, const struct onnx_graph *g, int all_inits_as_inputs)
{
    Onnx__GraphProto *gp = pool_alloc(&s->pool, 1, sizeof *gp);
    if (!gp)
        return NULL;
    onnx__graph_proto__init(gp);
    gp->name = g->name;

    gp->n_node = (size_t)g->n_nodes;
    if (!(gp->node = pool_alloc(&s->pool, g->n_nodes, sizeof *gp->node)))
        return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct onnx_node *n = &g->nodes[i];
        Onnx__NodeProto *np = pool_alloc(&s->pool, 1, sizeof *np);
        if (!np)
            return NULL;
        onnx__node_proto__init(np);
        np->name = n->name;
        np->op_type = n->op_type;
        np->domain = n->domain;
        np->n_input = (size_t)n->n_inputs;
        np->input = n->inputs;
        np->n_output = (size_t)n->n_outputs;
        np->output = n->outputs;
        np->n_attribute = (size_t)n->n_attrs;
        if (!(np->attribute = pool_alloc(&s->pool, n->n_attrs, sizeof *np->attribute)))
            return NULL;
        for (int k = 0; k < n->n_attrs; k++) {
            if (!(np->attribute[k] = pool_alloc(&s->pool, 1, sizeof **np->attribute)))
                return NULL;
            if (attr_to_proto(s, &n->attrs[k], np->attribute[k]) != 0) {
                onnx_error_prefix(s->err, s->err_size, "node '%s'", n->name);
                return NULL;
            }
        }
        gp->node[i] = np;
    }

    gp->n_initializer = (size_t)g->n_initializers;
    if (!(gp->initializer = pool_alloc(&s->pool, g->n_initializers, sizeof *gp->initializer)))
        return NULL;
    for (int i = 0; i < g->n_initializers; i++)
        if (!(gp->initializer[i] = tensor_to_proto(s, &g->initializers[i])))
            return NULL;

    /* IR 3 requires every initializer to be a graph input too; later IRs
     * list only the overridable ones. */
    size_t n_in = (size_t)g->n_inputs + (all_inits_as_inputs ? (size_t)g->n_initializers : (size_t)g->n_default_inputs);
    if (!(gp->input = pool_alloc(&s->pool, n_in, sizeof *gp->input)))
        return NULL;
    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[gp->n_input++] = vi_to_proto(s, &g->inputs[i])))
            return NULL;
    if (all_inits_as_inputs) {
        for (int i = 0; i < g->n_initializers; i++) {
            const struct onnx_tensor *t = &g->initializers[i];
            if (!(gp->input[gp->n_input++] =
                      value_info_to_proto(s, t->name, ONNX_VALUE_TENSOR, t->dtype, t->rank, t->dims, NULL)))
                return NULL;
        }
    } else {
        for (int i = 0; i < g->n_default_inputs; i++)
            if (!(gp->input[gp->n_input++] = vi_to_proto(s, &g->default_inputs[i])))
                return NULL;
    }

    gp->n_output = (size_t)g->n_outputs;
    if (!(gp->output = pool_alloc(&s->pool, g->n_outputs, sizeof *gp->output)))
        return NULL;
    for (int i = 0; i < g->n_outputs; i++)
        if (!(gp->output[i] = vi_to_proto(s, &g->outputs[i])))
            return NULL;

    gp->n_value_info = (size_t)g->n_value_info;
    if (!(gp->value_info = pool_alloc(&s->pool, g->n_value_info, sizeof *gp->value_info)))
        return NULL;
    for (int i = 0; i < g->n_value_info; i++)
        if (!(gp->value_info[i] = vi_to_proto(s, &g->value_info[i])))
            return NULL;
    return gp;
}

int onnx_model_save(const struct onnx_model *m, const char *path, char *err, size_t err_size)
{
    if (!m || !m->graph)
        return onnx_error(err, err_size, "%s: no model to save", path);
    struct save_ctx s = {.err = err, .err_size = err_size};
    if (err && err_size)
        err[0] = 0;
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    mp.has_ir_version = 1;
    mp.ir_version = m->ir_version;
    mp.producer_name = m->producer_name && m->producer_name[0] ? m->producer_name : "dtrexec";
    mp.producer_version = "dtrexec " DTRX_VERSION;
    mp.n_opset_import = (size_t)m->n_opsets;
    mp.opset_import = pool_alloc(&s.pool, m->n_opsets, sizeof *mp.opset_import);
    for (int i = 0; mp.opset_import && i < m->n_opsets; i++) {
        Onnx__OperatorSetIdProto *op = pool_alloc(&s.pool, 1, sizeof *op);
        if (!op)
            break;
        onnx__operator_set_id_proto__init(op);
        op->domain = m->opsets[i].domain;
        op->has_version = 1;
        op->version = m->opsets[i].version;
        mp.opset_import[i] = op;
    }
    if (!s.pool.failed)
        mp.graph = graph_to_proto(&s, m->graph, m->ir_version < 4);
    int rc = -1;
    if (!mp.graph || s.pool.failed) {
        if (!err || !err[0])
            onnx_error(err, err_size, "out of memory");
        onnx_error_prefix(err, err_size, "%s", path);
        goto done;
    }
    size_t n = onnx__model_proto__get_packed_size(&mp);
    if (n > (size_t)INT32_MAX) {
        onnx_error(err, err_size, "%s: model is %zu bytes, over the 2 GiB protobuf limit", path, n);
        goto done;
    }
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        onnx_error(err, err_size, "%s: out of memory", path);
        goto done;
    }
    onnx__model_proto__pack(&mp, buf);
    rc = onnx_file_write(path, buf, n, err, err_size);
    free(buf);
done:
    pool_free(&s.pool);
    return rc;
}
