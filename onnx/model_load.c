/* onnx/model_load.c — ModelProto into struct onnx_model, validated.
 *
 * Order of work: the wire format is pre-checked (bounded nesting), protobuf-c
 * unpacks, then each graph is converted and checked: unique names (SSA),
 * every node input produced by a node, a graph input, an initializer or (in
 * a subgraph) an enclosing scope; every graph output produced; no cycles.
 * Nodes are then sorted topologically, keeping the file's order where it is
 * already valid. Name look-ups go through a hash map so large models load in
 * linear time.
 */
#define _XOPEN_SOURCE 700
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx-impl.h"

#define ONNX_IR_MIN 3
#define ONNX_IR_MAX 14
#define ONNX_OPSET_MIN 1
#define ONNX_OPSET_MAX 28

/* ---- string -> int hash map (keys are borrowed, not copied) ------------- */

struct name_map {
    const char **keys;
    int *vals;
    size_t cap;                    /* power of two */
    size_t count;
};

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void map_free(struct name_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int map_grow(struct name_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **keys = calloc(cap, sizeof *keys);
    int *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = name_hash(m->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

/* Index of the slot holding key, or -1. */
static long map_find(const struct name_map *m, const char *key)
{
    if (!m->cap)
        return -1;
    size_t j = name_hash(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0)
            return (long)j;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

static int map_get(const struct name_map *m, const char *key, int *val)
{
    long j = map_find(m, key);
    if (j < 0)
        return 0;
    if (val)
        *val = m->vals[j];
    return 1;
}

/* Inserts key -> val; returns 1 if inserted, 0 if already present (the old
 * value is left in *old), -1 on allocation failure. */
static int map_put(struct name_map *m, const char *key, int val, int *old)
{
    long j = map_find(m, key);
    if (j >= 0) {
        if (old)
            *old = m->vals[j];
        return 0;
    }
    if ((m->count + 1) * 2 > m->cap && map_grow(m) != 0)
        return -1;
    size_t k = name_hash(key) & (m->cap - 1);
    while (m->keys[k])
        k = (k + 1) & (m->cap - 1);
    m->keys[k] = key;
    m->vals[k] = val;
    m->count++;
    return 1;
}

/* ---- freeing -------------------------------------------------------------- */

static void graph_free(struct onnx_graph *g);

static void value_info_clear(struct onnx_value_info *v)
{
    free(v->name);
    for (int i = 0; i < ONNX_MAX_RANK; i++)
        free(v->dim_params[i]);
}

static void attr_clear(struct onnx_attr *a)
{
    free(a->name);
    free(a->s);
    if (a->t) {
        onnx_tensor_clear(a->t);
        free(a->t);
    }
    graph_free(a->g);
    free(a->floats);
    free(a->ints);
    if (a->strings)
        for (int i = 0; i < a->n; i++)
            free(a->strings[i]);
    free(a->strings);
    if (a->tensors)
        for (int i = 0; i < a->n; i++) {
            onnx_tensor_clear(a->tensors[i]);
            free(a->tensors[i]);
        }
    free(a->tensors);
    if (a->graphs)
        for (int i = 0; i < a->n; i++)
            graph_free(a->graphs[i]);
    free(a->graphs);
}

static void node_clear(struct onnx_node *n)
{
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->rewrites);
    if (n->inputs)
        for (int i = 0; i < n->n_inputs; i++)
            free(n->inputs[i]);
    free(n->inputs);
    if (n->outputs)
        for (int i = 0; i < n->n_outputs; i++)
            free(n->outputs[i]);
    free(n->outputs);
    if (n->attrs)
        for (int i = 0; i < n->n_attrs; i++)
            attr_clear(&n->attrs[i]);
    free(n->attrs);
}

static void graph_free(struct onnx_graph *g)
{
    if (!g)
        return;
    free(g->name);
    for (int i = 0; i < g->n_nodes; i++)
        node_clear(&g->nodes[i]);
    free(g->nodes);
    for (int i = 0; i < g->n_initializers; i++)
        onnx_tensor_clear(&g->initializers[i]);
    free(g->initializers);
    for (int i = 0; i < g->n_inputs; i++)
        value_info_clear(&g->inputs[i]);
    free(g->inputs);
    for (int i = 0; i < g->n_outputs; i++)
        value_info_clear(&g->outputs[i]);
    free(g->outputs);
    for (int i = 0; i < g->n_value_info; i++)
        value_info_clear(&g->value_info[i]);
    free(g->value_info);
    for (int i = 0; i < g->n_default_inputs; i++)
        value_info_clear(&g->default_inputs[i]);
    free(g->default_inputs);
    for (int i = 0; i < g->n_outer_refs; i++)
        free(g->outer_refs[i]);
    free(g->outer_refs);
    free(g);
}

void onnx_model_free(struct onnx_model *m)
{
    if (!m)
        return;
    free(m->producer_name);
    for (int i = 0; i < m->n_opsets; i++)
        free(m->opsets[i].domain);
    free(m->opsets);
    graph_free(m->graph);
    free(m->path);
    free(m);
}

/* ---- conversion ------------------------------------------------------------ */

struct load_ctx {
    const char *base_dir;
    const struct onnx_model *model;    /* for opset checks */
    char *err;
    size_t err_size;
    /* Subgraph depth of the innermost node that prefixed the message, -1
     * before any did: an error deep in nested subgraphs keeps the two
     * outermost levels and the innermost one (context_kept), not a chain
     * of every level. */
    int err_depth;
};

/* The subgraph levels whose node and subgraph names the message keeps. */
#define CONTEXT_OUTER_LEVELS 2

static int context_kept(struct load_ctx *c, int depth)
{
    if (c->err_depth < 0)
        c->err_depth = depth;
    return depth < CONTEXT_OUTER_LEVELS || depth == c->err_depth;
}

/* Names visible from a graph: its own values, then the enclosing graphs'. */
struct scope {
    const struct name_map *names;
    const struct scope *parent;
};

static int scope_has(const struct scope *s, const char *name)
{
    for (; s; s = s->parent)
        if (map_get(s->names, name, NULL))
            return 1;
    return 0;
}

static const char *domain_normalize(const char *d)
{
    if (!d || strcmp(d, "ai.onnx") == 0)
        return "";
    return d;
}

static int check_count(size_t n, const char *what, struct load_ctx *c)
{
    if (n > (size_t)INT_MAX / 2)
        return onnx_error(c->err, c->err_size, "too many %s (%zu)", what, n);
    return 0;
}

static int value_info_from_type(const Onnx__TypeProto *tp, struct onnx_value_info *v, struct load_ctx *c)
{
    v->kind = ONNX_VALUE_TENSOR;
    v->rank = -1;
    if (!tp)
        return 0;                  /* some subgraph inputs carry no type */
    const Onnx__TypeProto *inner = tp;
    /* Sequences and optionals record their innermost tensor's type, so that
     * Optional(Sequence(Tensor)) still names an element type and shape. */
    for (int hop = 0; hop < 8 && inner; hop++) {
        if (inner->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
            if (inner == tp)
                v->kind = ONNX_VALUE_SEQUENCE;
            inner = inner->sequence_type ? inner->sequence_type->elem_type : NULL;
        } else if (inner->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
            if (inner == tp)
                v->kind = ONNX_VALUE_OPTIONAL;
            inner = inner->optional_type ? inner->optional_type->elem_type : NULL;
        } else {
            break;
        }
    }
    if (!inner || inner->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !inner->tensor_type) {
        if (tp->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
            tp->value_case != ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE &&
            tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
            tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET)
            v->kind = ONNX_VALUE_OTHER;
        return 0;
    }
    const Onnx__TypeProto__Tensor *tt = inner->tensor_type;
    v->elem_type = tt->has_elem_type ? tt->elem_type : 0;
    if (!tt->shape)
        return 0;
    if (tt->shape->n_dim > ONNX_MAX_RANK)
        return onnx_error(c->err, c->err_size, "value '%s': rank %zu exceeds the maximum of %d", v->name,
                          tt->shape->n_dim, ONNX_MAX_RANK);
    v->rank = (int)tt->shape->n_dim;
    for (int i = 0; i < v->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        v->dims[i] = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value > ONNX_MAX_NUMEL)
                return onnx_error(c->err, c->err_size, "value '%s': dimension %d is absurd (%lld)", v->name,
                                  i, (long long)d->dim_value);
            /* Some exporters write -1 for "unknown"; it stays unknown here. */
            if (d->dim_value < -1)
                return onnx_error(c->err, c->err_size, "value '%s': dimension %d is %lld, not a valid size (expected >= 0, "
                                  "a name, or -1 for unknown)", v->name, i, (long long)d->dim_value);
            v->dims[i] = d->dim_value < 0 ? -1 : d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                   d->dim_param[0]) {
            v->dim_params[i] = strdup(d->dim_param);
            if (!v->dim_params[i])
                return onnx_error(c->err, c->err_size, "out of memory");
        }
    }
    return 0;
}

static int value_info_from_proto(const Onnx__ValueInfoProto *p, struct onnx_value_info *v,
                                 struct load_ctx *c)
{
    memset(v, 0, sizeof *v);
    v->name = onnx_strdup(p->name);
    if (!v->name)
        return onnx_error(c->err, c->err_size, "out of memory");
    return value_info_from_type(p->type, v, c);
}

static int graph_from_proto(Onnx__GraphProto *gp, const struct scope *outer, int depth,
                            struct load_ctx *c, struct onnx_graph **out);

static int tensor_new(Onnx__TensorProto *tp, struct onnx_tensor **out, struct load_ctx *c)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return onnx_error(c->err, c->err_size, "out of memory");
    if (onnx_tensor_from_proto(tp, c->base_dir, *out, c->err, c->err_size) != 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* When the file leaves the type unset (very old exporters), infer it from
 * whichever field holds a value. */
static int attr_infer_type(const Onnx__AttributeProto *p)
{
    if (p->has_type && p->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return (int)p->type;
    if (p->has_f) return ONNX_ATTR_FLOAT;
    if (p->has_i) return ONNX_ATTR_INT;
    if (p->has_s) return ONNX_ATTR_STRING;
    if (p->t) return ONNX_ATTR_TENSOR;
    if (p->g) return ONNX_ATTR_GRAPH;
    if (p->n_floats) return ONNX_ATTR_FLOATS;
    if (p->n_ints) return ONNX_ATTR_INTS;
    if (p->n_strings) return ONNX_ATTR_STRINGS;
    if (p->n_tensors) return ONNX_ATTR_TENSORS;
    if (p->n_graphs) return ONNX_ATTR_GRAPHS;
    return ONNX_ATTR_UNDEFINED;
}

static char *bytes_dup(const ProtobufCBinaryData *b, size_t *len)
{
    char *s = malloc(b->len + 1);
    if (!s)
        return NULL;
    if (b->len)
        memcpy(s, b->data, b->len);
    s[b->len] = 0;
    if (len)
        *len = b->len;
    return s;
}

static int attr_from_proto(Onnx__AttributeProto *p, struct onnx_attr *a, const struct scope *sc,
                           int depth, struct load_ctx *c)
{
    memset(a, 0, sizeof *a);
    a->name = onnx_strdup(p->name);
    if (!a->name)
        return onnx_error(c->err, c->err_size, "out of memory");
    if (!a->name[0])
        return onnx_error(c->err, c->err_size, "attribute without a name");
    a->type = attr_infer_type(p);
    switch (a->type) {
    case ONNX_ATTR_FLOAT:
        a->f = p->f;
        break;
    case ONNX_ATTR_INT:
        a->i = p->i;
        break;
    case ONNX_ATTR_STRING:
        if (!(a->s = bytes_dup(&p->s, &a->s_len)))
            return onnx_error(c->err, c->err_size, "out of memory");
        break;
    case ONNX_ATTR_TENSOR:
        if (!p->t)
            return onnx_error(c->err, c->err_size, "attribute '%s' is TENSOR but holds no tensor", a->name);
        if (tensor_new(p->t, &a->t, c) != 0)
            return onnx_error_prefix(c->err, c->err_size, "attribute '%s'", a->name);
        break;
    case ONNX_ATTR_GRAPH:
        if (!p->g)
            return onnx_error(c->err, c->err_size, "attribute '%s' is GRAPH but holds no graph", a->name);
        if (graph_from_proto(p->g, sc, depth + 1, c, &a->g) != 0) {
            if (!context_kept(c, depth))
                return -1;
            int elided = c->err_depth - CONTEXT_OUTER_LEVELS;
            if (depth == CONTEXT_OUTER_LEVELS - 1 && elided > 0)
                return onnx_error_prefix(c->err, c->err_size, "subgraph '%s' (then %d more nested subgraph%s)",
                                         a->name, elided, elided == 1 ? "" : "s");
            return onnx_error_prefix(c->err, c->err_size, "subgraph '%s'", a->name);
        }
        break;
    case ONNX_ATTR_FLOATS:
        if (check_count(p->n_floats, "floats", c) != 0)
            return -1;
        a->n = (int)p->n_floats;
        if (!(a->floats = malloc((a->n ? a->n : 1) * sizeof *a->floats)))
            return onnx_error(c->err, c->err_size, "out of memory");
        if (a->n)
            memcpy(a->floats, p->floats, a->n * sizeof *a->floats);
        break;
    case ONNX_ATTR_INTS:
        if (check_count(p->n_ints, "ints", c) != 0)
            return -1;
        a->n = (int)p->n_ints;
        if (!(a->ints = malloc((a->n ? a->n : 1) * sizeof *a->ints)))
            return onnx_error(c->err, c->err_size, "out of memory");
        if (a->n)
            memcpy(a->ints, p->ints, a->n * sizeof *a->ints);
        break;
    case ONNX_ATTR_STRINGS:
        if (check_count(p->n_strings, "strings", c) != 0)
            return -1;
        if (!(a->strings = calloc(p->n_strings ? p->n_strings : 1, sizeof *a->strings)))
            return onnx_error(c->err, c->err_size, "out of memory");
        for (size_t i = 0; i < p->n_strings; i++) {
            if (!(a->strings[i] = bytes_dup(&p->strings[i], NULL)))
                return onnx_error(c->err, c->err_size, "out of memory");
            a->n = (int)i + 1;
        }
        break;
    case ONNX_ATTR_TENSORS:
        if (check_count(p->n_tensors, "tensors", c) != 0)
            return -1;
        if (!(a->tensors = calloc(p->n_tensors ? p->n_tensors : 1, sizeof *a->tensors)))
            return onnx_error(c->err, c->err_size, "out of memory");
        for (size_t i = 0; i < p->n_tensors; i++) {
            if (tensor_new(p->tensors[i], &a->tensors[i], c) != 0)
                return onnx_error_prefix(c->err, c->err_size, "attribute '%s' tensor %zu", a->name, i);
            a->n = (int)i + 1;
        }
        break;
    case ONNX_ATTR_GRAPHS:
        if (check_count(p->n_graphs, "graphs", c) != 0)
            return -1;
        if (!(a->graphs = calloc(p->n_graphs ? p->n_graphs : 1, sizeof *a->graphs)))
            return onnx_error(c->err, c->err_size, "out of memory");
        for (size_t i = 0; i < p->n_graphs; i++) {
            if (graph_from_proto(p->graphs[i], sc, depth + 1, c, &a->graphs[i]) != 0)
                return onnx_error_prefix(c->err, c->err_size, "subgraph %zu of '%s'", i, a->name);
            a->n = (int)i + 1;
        }
        break;
    /* Kept as a typed marker without content: no operator in scope reads them. */
    case ONNX_ATTR_SPARSE_TENSOR:
    case ONNX_ATTR_TYPE_PROTO:
        break;
    case ONNX_ATTR_SPARSE_TENSORS:
        a->n = (int)(p->n_sparse_tensors > INT_MAX ? INT_MAX : p->n_sparse_tensors);
        break;
    case ONNX_ATTR_TYPE_PROTOS:
        a->n = (int)(p->n_type_protos > INT_MAX ? INT_MAX : p->n_type_protos);
        break;
    default:
        return onnx_error(c->err, c->err_size, "attribute '%s' has an unknown type (%d)", a->name, a->type);
    }
    return 0;
}

static char **strings_dup(char **src, size_t n, struct load_ctx *c)
{
    char **d = calloc(n ? n : 1, sizeof *d);
    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        d[i] = onnx_strdup(src[i]);
        if (!d[i]) {
            for (size_t j = 0; j < i; j++)
                free(d[j]);
            free(d);
            return NULL;
        }
    }
    return d;
}

static int opset_imported(const struct onnx_model *m, const char *domain)
{
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0)
            return 1;
    return 0;
}

/* NodeProto.metadata_props (field 9, IR 10) is newer than the system's
 * onnx.proto, so protobuf-c keeps it as an unknown field (its data starts
 * with the varint length): the rewriter's rule names are read from there
 * (a malformed entry is ignored, as metadata carries no semantics). */
#define NODE_METADATA_PROPS_FIELD 9

static int node_rewrites(const Onnx__NodeProto *p, struct onnx_node *n)
{
    for (unsigned i = 0; i < p->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *f = &p->base.unknown_fields[i];
        if (f->tag != NODE_METADATA_PROPS_FIELD || f->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
            continue;
        size_t skip = 0;
        while (skip < f->len && skip < 10 && f->data[skip] & 0x80)
            skip++;
        if (++skip > f->len)
            continue;
        Onnx__StringStringEntryProto *e = onnx__string_string_entry_proto__unpack(NULL, f->len - skip, f->data + skip);
        if (!e)
            continue;
        int hit = e->key && e->value && !strcmp(e->key, "pkg.onnxscript.rewriter.rule_name") && !n->rewrites;
        if (hit)
            n->rewrites = strdup(e->value);
        onnx__string_string_entry_proto__free_unpacked(e, NULL);
        if (hit && !n->rewrites)
            return -1;
    }
    return 0;
}

static int node_from_proto(Onnx__NodeProto *p, int index, struct onnx_node *n, const struct scope *sc,
                           int depth, struct load_ctx *c)
{
    if (!p->op_type || !p->op_type[0])
        return onnx_error(c->err, c->err_size, "node #%d ('%s') has no op_type", index,
                          p->name ? p->name : "");
    if (check_count(p->n_input, "node inputs", c) != 0 || check_count(p->n_output, "node outputs", c) != 0 ||
        check_count(p->n_attribute, "attributes", c) != 0)
        return -1;
    if (p->name && p->name[0]) {
        n->name = strdup(p->name);
    } else {
        size_t len = strlen(p->op_type) + 16;
        n->name = malloc(len);
        if (n->name)
            snprintf(n->name, len, "%s_%d", p->op_type, index);
    }
    n->op_type = strdup(p->op_type);
    n->domain = strdup(domain_normalize(p->domain));
    n->inputs = strings_dup(p->input, p->n_input, c);
    n->n_inputs = n->inputs ? (int)p->n_input : 0;
    n->outputs = strings_dup(p->output, p->n_output, c);
    n->n_outputs = n->outputs ? (int)p->n_output : 0;
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || node_rewrites(p, n) != 0)
        return onnx_error(c->err, c->err_size, "out of memory");
    if (!opset_imported(c->model, n->domain))
        return onnx_error(c->err, c->err_size, "node '%s' (%s): domain '%s' is not in the model's opset imports",
                          n->name, n->op_type, n->domain[0] ? n->domain : "ai.onnx");
    n->attrs = calloc(p->n_attribute ? p->n_attribute : 1, sizeof *n->attrs);
    if (!n->attrs)
        return onnx_error(c->err, c->err_size, "out of memory");
    for (size_t i = 0; i < p->n_attribute; i++) {
        n->n_attrs = (int)i + 1;
        if (attr_from_proto(p->attribute[i], &n->attrs[i], sc, depth, c) != 0)
            return context_kept(c, depth) ? onnx_error_prefix(c->err, c->err_size, "node '%s' (%s)", n->name, n->op_type)
                                          : -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(n->attrs[j].name, n->attrs[i].name) == 0)
                return onnx_error(c->err, c->err_size, "node '%s' (%s): attribute '%s' given twice", n->name,
                                  n->op_type, n->attrs[i].name);
    }
    return 0;
}

/* Appends name to the graph's outer references unless already there. */
static int outer_ref_add(struct onnx_graph *g, struct name_map *seen, const char *name, struct load_ctx *c)
{
    if (map_get(seen, name, NULL))
        return 0;
    char **refs = realloc(g->outer_refs, (g->n_outer_refs + 1) * sizeof *refs);
    if (!refs)
        return onnx_error(c->err, c->err_size, "out of memory");
    g->outer_refs = refs;
    if (!(refs[g->n_outer_refs] = strdup(name)))
        return onnx_error(c->err, c->err_size, "out of memory");
    g->n_outer_refs++;
    if (map_put(seen, refs[g->n_outer_refs - 1], 0, NULL) < 0)
        return onnx_error(c->err, c->err_size, "out of memory");
    return 0;
}

/* Calls fn for every name node n reads: its inputs, then the outer references
 * of its subgraphs (values an If/Loop/Scan body captures are dependencies of
 * the node just as its explicit inputs are). */
typedef int (*name_fn)(const char *name, void *arg);

static int node_each_read(const struct onnx_node *n, name_fn fn, void *arg)
{
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i][0] && fn(n->inputs[i], arg) != 0)
            return -1;
    for (int i = 0; i < n->n_attrs; i++) {
        const struct onnx_attr *a = &n->attrs[i];
        if (a->type == ONNX_ATTR_GRAPH && a->g)
            for (int k = 0; k < a->g->n_outer_refs; k++)
                if (fn(a->g->outer_refs[k], arg) != 0)
                    return -1;
        if (a->type == ONNX_ATTR_GRAPHS && a->graphs)
            for (int j = 0; j < a->n; j++)
                for (int k = 0; k < a->graphs[j]->n_outer_refs; k++)
                    if (fn(a->graphs[j]->outer_refs[k], arg) != 0)
                        return -1;
    }
    return 0;
}

struct read_check {
    const struct onnx_node *node;
    const struct name_map *defined;
    const struct scope *outer;
    struct onnx_graph *g;
    struct name_map *outer_seen;
    struct load_ctx *c;
};

static int read_check_fn(const char *name, void *arg)
{
    struct read_check *r = arg;
    if (map_get(r->defined, name, NULL))
        return 0;
    if (r->outer && scope_has(r->outer, name))
        return outer_ref_add(r->g, r->outer_seen, name, r->c);
    return onnx_error(r->c->err, r->c->err_size,
                      "node '%s' (%s): input '%s' is not produced by any node, graph input or initializer",
                      r->node->name, r->node->op_type, name);
}

/* Depth-first topological sort with an explicit stack (no recursion on long
 * chains). Visiting nodes in file order and emitting each after its producers
 * keeps the file's order whenever it is already topological. */
struct topo {
    const struct onnx_graph *g;
    const struct name_map *producer;   /* value -> node index (>= 0) */
    int *color;                        /* 0 new, 1 on the stack, 2 done */
    int *stack;
    int top;
    int pending;                       /* node found while scanning reads */
    int cycle_from;
};

static int topo_read_fn(const char *name, void *arg)
{
    struct topo *t = arg;
    int p;
    if (t->pending >= 0 || !map_get(t->producer, name, &p) || p < 0)
        return 0;
    if (t->color[p] == 1) {
        t->cycle_from = p;
        return -1;
    }
    if (t->color[p] == 0)
        t->pending = p;
    return 0;
}

static int graph_sort(struct onnx_graph *g, const struct name_map *producer, struct load_ctx *c)
{
    int n = g->n_nodes;
    if (n == 0)
        return 0;
    struct topo t = {.g = g, .producer = producer, .cycle_from = -1};
    t.color = calloc(n, sizeof *t.color);
    t.stack = malloc(n * sizeof *t.stack);
    int *order = malloc(n * sizeof *order);
    struct onnx_node *sorted = malloc(n * sizeof *sorted);
    int n_order = 0, rc = 0, in_order = 1;
    if (!t.color || !t.stack || !order || !sorted) {
        rc = onnx_error(c->err, c->err_size, "out of memory");
        goto done;
    }
    for (int s = 0; s < n && rc == 0; s++) {
        if (t.color[s])
            continue;
        t.color[s] = 1;
        t.stack[t.top++] = s;
        while (t.top > 0) {
            int v = t.stack[t.top - 1];
            /* Rescanning v's reads after each child finishes is quadratic only
             * in one node's fan-in, which is small. */
            t.pending = -1;
            if (node_each_read(&g->nodes[v], topo_read_fn, &t) != 0) {
                const struct onnx_node *a = &g->nodes[v], *b = &g->nodes[t.cycle_from];
                if (a == b)
                    rc = onnx_error(c->err, c->err_size, "graph has a cycle: node '%s' (%s) reads its own output",
                                    a->name, a->op_type);
                else
                    rc = onnx_error(c->err, c->err_size,
                                    "graph has a cycle: node '%s' (%s) and node '%s' (%s) depend on each other",
                                    a->name, a->op_type, b->name, b->op_type);
                break;
            }
            if (t.pending >= 0) {
                t.color[t.pending] = 1;
                t.stack[t.top++] = t.pending;
                continue;
            }
            t.color[v] = 2;
            t.top--;
            if (v != n_order)
                in_order = 0;
            order[n_order++] = v;
        }
    }
    if (rc == 0 && !in_order) {
        for (int i = 0; i < n; i++)
            sorted[i] = g->nodes[order[i]];
        memcpy(g->nodes, sorted, n * sizeof *sorted);
    }
done:
    free(t.color);
    free(t.stack);
    free(order);
    free(sorted);
    return rc;
}

static int graph_from_proto(Onnx__GraphProto *gp, const struct scope *outer, int depth,
                            struct load_ctx *c, struct onnx_graph **out)
{
    *out = NULL;
    if (depth > ONNX_MAX_SUBGRAPH_DEPTH)
        return onnx_error(c->err, c->err_size, "subgraphs nested deeper than %d levels", ONNX_MAX_SUBGRAPH_DEPTH);
    if (check_count(gp->n_node, "nodes", c) != 0 || check_count(gp->n_initializer, "initializers", c) != 0 ||
        check_count(gp->n_input, "graph inputs", c) != 0 || check_count(gp->n_output, "graph outputs", c) != 0 ||
        check_count(gp->n_value_info, "value_info entries", c) != 0)
        return -1;
    struct onnx_graph *g = calloc(1, sizeof *g);
    /* defined: every value this graph defines -> producing node index, or -1
     * for graph inputs and initializers. */
    struct name_map inits = {0}, defined = {0}, outer_seen = {0}, producer = {0};
    int rc = -1;
    if (!g || !(g->name = onnx_strdup(gp->name)))
        goto oom;
    const char *gname = g->name[0] ? g->name : "(unnamed)";

    if (gp->n_sparse_initializer) {
        onnx_error(c->err, c->err_size, "graph '%s': sparse initializer '%s' is not supported", gname,
                   gp->sparse_initializer[0]->values && gp->sparse_initializer[0]->values->name
                       ? gp->sparse_initializer[0]->values->name : "");
        goto fail;
    }

    g->initializers = calloc(gp->n_initializer ? gp->n_initializer : 1, sizeof *g->initializers);
    if (!g->initializers)
        goto oom;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        if (onnx_tensor_from_proto(gp->initializer[i], c->base_dir, &g->initializers[i], c->err, c->err_size) != 0) {
            onnx_error_prefix(c->err, c->err_size, "initializer #%zu", i);
            goto fail;
        }
        g->n_initializers = (int)i + 1;
        const char *name = g->initializers[i].name;
        if (!name[0]) {
            onnx_error(c->err, c->err_size, "graph '%s': initializer #%zu has no name", gname, i);
            goto fail;
        }
        int r = map_put(&inits, name, (int)i, NULL);
        if (r < 0)
            goto oom;
        if (r == 0) {
            onnx_error(c->err, c->err_size, "graph '%s': duplicate initializer name '%s'", gname, name);
            goto fail;
        }
        if (map_put(&defined, name, -1, NULL) < 0)
            goto oom;
    }

    g->inputs = calloc(gp->n_input ? gp->n_input : 1, sizeof *g->inputs);
    g->default_inputs = calloc(gp->n_input ? gp->n_input : 1, sizeof *g->default_inputs);
    if (!g->inputs || !g->default_inputs)
        goto oom;
    {
        struct name_map seen_inputs = {0};
        for (size_t i = 0; i < gp->n_input; i++) {
            const char *name = gp->input[i]->name ? gp->input[i]->name : "";
            int is_default = map_get(&inits, name, NULL);
            struct onnx_value_info *v = is_default ? &g->default_inputs[g->n_default_inputs++]
                                                   : &g->inputs[g->n_inputs++];
            if (value_info_from_proto(gp->input[i], v, c) != 0) {
                map_free(&seen_inputs);
                onnx_error_prefix(c->err, c->err_size, "graph '%s' input #%zu", gname, i);
                goto fail;
            }
            if (!name[0]) {
                map_free(&seen_inputs);
                onnx_error(c->err, c->err_size, "graph '%s': input #%zu has no name", gname, i);
                goto fail;
            }
            int r = map_put(&seen_inputs, v->name, 0, NULL);
            if (r == 0) {
                map_free(&seen_inputs);
                onnx_error(c->err, c->err_size, "graph '%s': input '%s' is declared twice", gname, name);
                goto fail;
            }
            if (r < 0 || (!is_default && map_put(&defined, v->name, -1, NULL) < 0)) {
                map_free(&seen_inputs);
                goto oom;
            }
        }
        map_free(&seen_inputs);
    }

    /* Every node output before converting any node, so subgraphs can see all
     * of this graph's values whatever the node order in the file. */
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; k < np->n_output; k++) {
            const char *o = np->output[k];
            if (!o || !o[0])
                continue;
            int old;
            int r = map_put(&defined, o, (int)i, &old);
            if (r < 0)
                goto oom;
            if (r == 0) {
                const char *pn = np->name && np->name[0] ? np->name : np->op_type ? np->op_type : "";
                if (old < 0)
                    onnx_error(c->err, c->err_size,
                               "graph '%s': value '%s' is produced twice: node #%zu ('%s') redefines a graph input or initializer",
                               gname, o, i, pn);
                else
                    onnx_error(c->err, c->err_size,
                               "graph '%s': value '%s' is produced twice: by node #%d ('%s') and node #%zu ('%s')",
                               gname, o, old, gp->node[old]->name ? gp->node[old]->name : "", i, pn);
                goto fail;
            }
        }
    }

    struct scope sc = {.names = &defined, .parent = outer};
    g->nodes = calloc(gp->n_node ? gp->n_node : 1, sizeof *g->nodes);
    if (!g->nodes)
        goto oom;
    for (size_t i = 0; i < gp->n_node; i++) {
        g->n_nodes = (int)i + 1;
        if (node_from_proto(gp->node[i], (int)i, &g->nodes[i], &sc, depth, c) != 0)
            goto fail;
    }

    /* Inputs are checked after every node exists, and the producer map is
     * rebuilt on the converted nodes' own strings for the sort. */
    for (int i = 0; i < g->n_nodes; i++) {
        struct read_check rchk = {.node = &g->nodes[i], .defined = &defined, .outer = outer, .g = g,
                                  .outer_seen = &outer_seen, .c = c};
        if (node_each_read(&g->nodes[i], read_check_fn, &rchk) != 0) {
            if (g->name[0] || depth)
                onnx_error_prefix(c->err, c->err_size, "graph '%s'", gname);
            goto fail;
        }
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k][0] && map_put(&producer, g->nodes[i].outputs[k], i, NULL) < 0)
                goto oom;
    }

    g->outputs = calloc(gp->n_output ? gp->n_output : 1, sizeof *g->outputs);
    if (!g->outputs)
        goto oom;
    if (depth == 0 && gp->n_output == 0) {
        onnx_error(c->err, c->err_size, "graph '%s' declares no outputs", gname);
        goto fail;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        g->n_outputs = (int)i + 1;
        if (value_info_from_proto(gp->output[i], &g->outputs[i], c) != 0) {
            onnx_error_prefix(c->err, c->err_size, "graph '%s' output #%zu", gname, i);
            goto fail;
        }
        const char *name = g->outputs[i].name;
        if (!name[0]) {
            onnx_error(c->err, c->err_size, "graph '%s': output #%zu has no name", gname, i);
            goto fail;
        }
        if (map_get(&defined, name, NULL))
            continue;
        if (outer && scope_has(outer, name)) {
            if (outer_ref_add(g, &outer_seen, name, c) != 0)
                goto fail;
            continue;
        }
        onnx_error(c->err, c->err_size,
                   "graph '%s': output '%s' is missing: no node, input or initializer produces it", gname, name);
        goto fail;
    }

    g->value_info = calloc(gp->n_value_info ? gp->n_value_info : 1, sizeof *g->value_info);
    if (!g->value_info)
        goto oom;
    for (size_t i = 0; i < gp->n_value_info; i++) {
        g->n_value_info = (int)i + 1;
        if (value_info_from_proto(gp->value_info[i], &g->value_info[i], c) != 0) {
            onnx_error_prefix(c->err, c->err_size, "graph '%s' value_info", gname);
            goto fail;
        }
    }

    if (graph_sort(g, &producer, c) != 0) {
        if (g->name[0] || depth)
            onnx_error_prefix(c->err, c->err_size, "graph '%s'", gname);
        goto fail;
    }
    *out = g;
    rc = 0;
    goto done;
oom:
    onnx_error(c->err, c->err_size, "out of memory");
fail:
    graph_free(g);
done:
    map_free(&inits);
    map_free(&defined);
    map_free(&outer_seen);
    map_free(&producer);
    return rc;
}

static int opsets_from_proto(const Onnx__ModelProto *mp, struct onnx_model *m, struct load_ctx *c)
{
    if (check_count(mp->n_opset_import, "opset imports", c) != 0)
        return -1;
    m->opsets = calloc(mp->n_opset_import ? mp->n_opset_import : 1, sizeof *m->opsets);
    if (!m->opsets)
        return onnx_error(c->err, c->err_size, "out of memory");
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
        const char *d = domain_normalize(op->domain);
        if (opset_imported(m, d))
            return onnx_error(c->err, c->err_size, "opset for domain '%s' imported twice",
                              d[0] ? d : "ai.onnx");
        if (!(m->opsets[i].domain = strdup(d)))
            return onnx_error(c->err, c->err_size, "out of memory");
        m->opsets[i].version = op->has_version ? op->version : 0;
        m->n_opsets = (int)i + 1;
        if (!d[0] && (m->opsets[i].version < ONNX_OPSET_MIN || m->opsets[i].version > ONNX_OPSET_MAX))
            return onnx_error(c->err, c->err_size, "unsupported ai.onnx opset %lld (supported: %d..%d)",
                              (long long)m->opsets[i].version, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
    }
    return 0;
}

int onnx_model_load_buffer(const void *buf, size_t len, const char *base_dir, struct onnx_model **out,
                           char *err, size_t err_size)
{
    *out = NULL;
    if (!buf && len)
        return onnx_error(err, err_size, "no buffer");
    if (len == 0)
        return onnx_error(err, err_size, "empty file: not an ONNX model");
    if (onnx_proto_check(buf, len, &onnx__model_proto__descriptor, err, err_size) != 0)
        return onnx_error_prefix(err, err_size, "not a valid ONNX model");
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    if (!mp)
        return onnx_error(err, err_size, "not a valid ONNX model: protobuf decoding failed (corrupt or truncated file)");
    struct onnx_model *m = calloc(1, sizeof *m);
    struct load_ctx c = {.base_dir = base_dir, .model = m, .err = err, .err_size = err_size, .err_depth = -1};
    if (!m) {
        onnx_error(err, err_size, "out of memory");
        goto fail;
    }
    if (!mp->has_ir_version || mp->ir_version < ONNX_IR_MIN || mp->ir_version > ONNX_IR_MAX) {
        onnx_error(err, err_size, "unsupported ir_version %lld (supported: %d..%d)",
                   mp->has_ir_version ? (long long)mp->ir_version : 0LL, ONNX_IR_MIN, ONNX_IR_MAX);
        goto fail;
    }
    m->ir_version = mp->ir_version;
    if (!(m->producer_name = onnx_strdup(mp->producer_name)))
        goto oom;
    if (opsets_from_proto(mp, m, &c) != 0)
        goto fail;
    if (!mp->graph) {
        onnx_error(err, err_size, "model has no graph");
        goto fail;
    }
    if (graph_from_proto(mp->graph, NULL, 0, &c, &m->graph) != 0)
        goto fail;
    onnx__model_proto__free_unpacked(mp, NULL);
    *out = m;
    return 0;
oom:
    onnx_error(err, err_size, "out of memory");
fail:
    onnx__model_proto__free_unpacked(mp, NULL);
    onnx_model_free(m);
    return -1;
}

int onnx_model_load(const char *path, struct onnx_model **out, char *err, size_t err_size)
{
    *out = NULL;
    struct onnx_file_view v;
    if (onnx_file_map(path, &v, err, err_size) != 0)
        return -1;
    char *dir = onnx_dirname(path);
    if (!dir) {
        onnx_file_unmap(&v);
        return onnx_error(err, err_size, "%s: out of memory", path);
    }
    int rc = onnx_model_load_buffer(v.data, v.len, dir, out, err, err_size);
    onnx_file_unmap(&v);
    free(dir);
    if (rc != 0)
        return onnx_error_prefix(err, err_size, "%s", path);
    if (!((*out)->path = strdup(path))) {
        onnx_model_free(*out);
        *out = NULL;
        return onnx_error(err, err_size, "%s: out of memory", path);
    }
    return 0;
}

int64_t onnx_model_opset(const struct onnx_model *m, const char *domain)
{
    if (!m)
        return 0;
    const char *d = domain_normalize(domain);
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, d) == 0)
            return m->opsets[i].version;
    return 0;
}
