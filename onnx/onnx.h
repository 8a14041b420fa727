/* onnx — ONNX files in, plain C structs out.
 *
 * Loads ModelProto (embedded and external data) and TensorProto / .npy files
 * into the structs below and writes TensorProto and ModelProto back. This is
 * the only module that sees protobuf-c types; it knows nothing of operators,
 * kernels, memory budgets or DTR. Every loader validates what it reads (names,
 * shapes, sizes, indices, graph acyclicity) and reports a message naming the
 * file, node or tensor at fault instead of crashing.
 *
 * Errors: functions return 0 on success, -1 on failure with a message written
 * into the caller's buffer `err` (always NUL-terminated, may be NULL).
 */
#ifndef DTRX_ONNX_H
#define DTRX_ONNX_H

#include <stddef.h>
#include <stdint.h>

#define ONNX_MAX_RANK 8
/* If/Loop/Scan bodies nested deeper than this are refused (no unbounded recursion). */
#define ONNX_MAX_SUBGRAPH_DEPTH 64

/* TensorProto.DataType values, kept numerically identical to ONNX. */
enum onnx_dtype {
    ONNX_DTYPE_UNDEFINED = 0,
    ONNX_DTYPE_FLOAT = 1,
    ONNX_DTYPE_UINT8 = 2,
    ONNX_DTYPE_INT8 = 3,
    ONNX_DTYPE_UINT16 = 4,
    ONNX_DTYPE_INT16 = 5,
    ONNX_DTYPE_INT32 = 6,
    ONNX_DTYPE_INT64 = 7,
    ONNX_DTYPE_STRING = 8,
    ONNX_DTYPE_BOOL = 9,
    ONNX_DTYPE_FLOAT16 = 10,
    ONNX_DTYPE_DOUBLE = 11,
    ONNX_DTYPE_UINT32 = 12,
    ONNX_DTYPE_UINT64 = 13,
    ONNX_DTYPE_COMPLEX64 = 14,
    ONNX_DTYPE_COMPLEX128 = 15,
    ONNX_DTYPE_BFLOAT16 = 16,
};

/* Bytes per element of the types we hold in memory (a STRING element is a
 * struct onnx_string handle); 0 for the rest. */
size_t onnx_dtype_size(int dtype);
const char *onnx_dtype_name(int dtype);

/* One element of a STRING tensor: a fixed-size handle to `len` bytes of
 * UTF-8 (not NUL-terminated; may hold NULs) that live elsewhere. Handles sit
 * in a tensor's ordinary element storage, so layout operators move them like
 * any 16-byte element; whoever made the tensor owns the bytes (a loaded
 * onnx_tensor: the same block as its handles, see below). */
struct onnx_string {
    const char *data;              /* NULL allowed when len is 0 */
    size_t len;
};

/* A decoded tensor: dense, row-major, native little-endian element data. */
struct onnx_tensor {
    char *name;
    int dtype;                     /* enum onnx_dtype */
    int rank;
    int64_t dims[ONNX_MAX_RANK];
    /* numel * onnx_dtype_size(dtype) bytes, owned. STRING tensors: the
     * numel handles, followed in the same allocation by the bytes they point
     * to (so one free() releases both; copy the handles only while the
     * tensor lives). size_bytes counts the handles. */
    void *data;
    size_t size_bytes;
};

int64_t onnx_tensor_numel(const struct onnx_tensor *t);

/* Type of a graph input, output or value_info entry. */
enum onnx_value_kind {
    ONNX_VALUE_TENSOR = 0,
    ONNX_VALUE_SEQUENCE = 1,
    ONNX_VALUE_OPTIONAL = 2,
    ONNX_VALUE_OTHER = 3,
};

struct onnx_value_info {
    char *name;
    int kind;                      /* enum onnx_value_kind */
    int elem_type;                 /* enum onnx_dtype; for sequence/optional the inner tensor's */
    int rank;                      /* -1 when the shape is unknown */
    int64_t dims[ONNX_MAX_RANK];   /* -1 where the dimension is symbolic or unknown */
    char *dim_params[ONNX_MAX_RANK]; /* symbolic names (NULL when fixed or anonymous) */
};

enum onnx_attr_type {
    ONNX_ATTR_UNDEFINED = 0,
    ONNX_ATTR_FLOAT = 1,
    ONNX_ATTR_INT = 2,
    ONNX_ATTR_STRING = 3,
    ONNX_ATTR_TENSOR = 4,
    ONNX_ATTR_GRAPH = 5,
    ONNX_ATTR_FLOATS = 6,
    ONNX_ATTR_INTS = 7,
    ONNX_ATTR_STRINGS = 8,
    ONNX_ATTR_TENSORS = 9,
    ONNX_ATTR_GRAPHS = 10,
    ONNX_ATTR_SPARSE_TENSOR = 11,
    ONNX_ATTR_SPARSE_TENSORS = 12,
    ONNX_ATTR_TYPE_PROTO = 13,
    ONNX_ATTR_TYPE_PROTOS = 14,
};

struct onnx_graph;

/* SPARSE_TENSOR(S) and TYPE_PROTO(S) attributes are kept as a type (and
 * count) without content: no operator in scope reads them. */
struct onnx_attr {
    char *name;
    int type;                      /* enum onnx_attr_type */
    float f;
    int64_t i;
    char *s;                       /* NUL-terminated copy of the bytes */
    size_t s_len;
    struct onnx_tensor *t;
    struct onnx_graph *g;
    int n;                         /* element count of the list kinds below */
    float *floats;
    int64_t *ints;
    char **strings;
    struct onnx_tensor **tensors;
    struct onnx_graph **graphs;
};

struct onnx_node {
    char *name;                    /* never NULL; "<op_type>_<index>" when the file has none */
    char *op_type;
    char *domain;                  /* "" for ai.onnx */
    int n_inputs;
    char **inputs;                 /* "" marks an omitted optional input */
    int n_outputs;
    char **outputs;                /* "" marks an omitted optional output */
    int n_attrs;
    struct onnx_attr *attrs;
    /* The rewrite rules the exporter's optimizer applied to make this node
     * (the dynamo exporter's "pkg.onnxscript.rewriter.rule_name" metadata,
     * e.g. "FuseBatchNormIntoConv"); NULL when the file records none. */
    char *rewrites;
};

struct onnx_graph {
    char *name;
    int n_nodes;
    struct onnx_node *nodes;       /* in topological order after loading */
    int n_initializers;
    struct onnx_tensor *initializers;
    int n_inputs;                  /* graph inputs that are not initializers */
    struct onnx_value_info *inputs;
    int n_outputs;
    struct onnx_value_info *outputs;
    int n_value_info;
    struct onnx_value_info *value_info;
    /* Graph inputs that also have an initializer of the same name: the
     * initializer is an overridable default (a caller may feed the input).
     * They are not in `inputs`; IR 3 files list every initializer here. */
    int n_default_inputs;
    struct onnx_value_info *default_inputs;
    /* Names this graph (or a graph nested in it) reads from enclosing scopes
     * without defining them: the implicit inputs of an If/Loop/Scan node.
     * Always 0 for the main graph. */
    int n_outer_refs;
    char **outer_refs;
};

struct onnx_opset {
    char *domain;                  /* "" for ai.onnx ("ai.onnx" is normalised to "") */
    int64_t version;
};

struct onnx_model {
    int64_t ir_version;
    char *producer_name;
    int n_opsets;
    struct onnx_opset *opsets;
    struct onnx_graph *graph;
    char *path;                    /* the file it was loaded from */
};

/* Loading; the returned objects are owned by the caller and freed with the
 * matching _free. Subgraph attributes are loaded recursively (If/Loop/Scan).
 * Accepts IR versions 3..14 and ai.onnx opsets 1..28 (an operator resolves only to a version dtrexec implements); every node's domain must
 * be imported. Nodes come out topologically sorted (an If/Loop/Scan node
 * after the producers of the outer values its bodies read); unnamed nodes
 * are named "<op_type>_<index in the file>". External data is resolved
 * relative to the model's directory (base_dir for _buffer; NULL forbids it)
 * and may not leave it. Messages start with the path (onnx_model_load). */
int onnx_model_load(const char *path, struct onnx_model **out, char *err, size_t err_size);
int onnx_model_load_buffer(const void *buf, size_t len, const char *base_dir,
                           struct onnx_model **out, char *err, size_t err_size);
void onnx_model_free(struct onnx_model *m);

/* Writes `m` as a ModelProto, initializers embedded as raw_data. */
int onnx_model_save(const struct onnx_model *m, const char *path, char *err, size_t err_size);

/* float16/bfloat16 models computed in float32 (onnx/half.c): every half
 * value of the model and its subgraphs becomes float (initializers and
 * tensor attributes converted; element types of inputs, outputs and
 * value_info, Cast's `to` and generators' `dtype` set to FLOAT). *out is
 * the record of what changed, NULL when nothing did. */
struct onnx_widening;
int onnx_model_widen_half(struct onnx_model *m, struct onnx_widening **out, char *err, size_t err_size);
/* The element type tensor t has in the file (FLOAT16 or BFLOAT16 where it
 * was widened, else its own). */
int onnx_widening_file_dtype(const struct onnx_widening *w, const struct onnx_tensor *t);
void onnx_widening_free(struct onnx_widening *w);
/* Saves `m` in its own types: the widened tensors rounded to their half
 * type (nearest even), the element types as in the file. `m` in memory is
 * left widened. w NULL: onnx_model_save. */
int onnx_model_save_narrowed(struct onnx_model *m, const struct onnx_widening *w, const char *path, char *err,
                             size_t err_size);
/* One float16 (dtype FLOAT16) or bfloat16 (BFLOAT16) value to float, and
 * back with rounding to nearest even (overflow to infinity, NaN kept). */
float onnx_half_to_float(uint16_t h, int dtype);
uint16_t onnx_float_to_half(float f, int dtype);

/* Opset of `domain` ("" or "ai.onnx" for the default domain); 0 if not imported. */
int64_t onnx_model_opset(const struct onnx_model *m, const char *domain);

/* A tensor from a TensorProto .pb or a NumPy .npy file (chosen by content:
 * .npy v1-v3, little-endian, C order; its name is ""). External data in a .pb
 * is read relative to the file's directory. The result is written into *out
 * (fields owned by it; free with onnx_tensor_clear). STRING tensors come
 * from string_data (.pb only); float8, int4 and the other sub-byte formats
 * are refused. onnx_tensor_save writes STRING tensors as string_data. */
int onnx_tensor_load(const char *path, struct onnx_tensor *out, char *err, size_t err_size);
int onnx_tensor_save(const struct onnx_tensor *t, const char *path, char *err, size_t err_size);
void onnx_tensor_clear(struct onnx_tensor *t);

/* A test-data value: a tensor, or a sequence or optional of values (the
 * SequenceProto / OptionalProto files of the node tests). An optional holds
 * 0 or 1 element. */
struct onnx_value {
    int kind;                      /* enum onnx_value_kind */
    struct onnx_tensor tensor;     /* ONNX_VALUE_TENSOR */
    int n_elems;
    struct onnx_value *elems;
};

/* Reads a .pb of the given kind (a tensor also from .npy). */
int onnx_value_load(const char *path, int kind, struct onnx_value *out, char *err, size_t err_size);
void onnx_value_clear(struct onnx_value *v);

/* Attribute look-up on a node: NULL / the default when absent or of another
 * kind. An INT attribute read as float (and FLOAT as int) converts; a single
 * INT/FLOAT read as a list gives one element. */
const struct onnx_attr *onnx_node_attr(const struct onnx_node *n, const char *name);
int64_t onnx_node_attr_int(const struct onnx_node *n, const char *name, int64_t dflt);
float onnx_node_attr_float(const struct onnx_node *n, const char *name, float dflt);
const char *onnx_node_attr_string(const struct onnx_node *n, const char *name, const char *dflt);
/* Copies up to `max` ints into out; returns the count, or -1 if the attribute
 * is absent, or -2 if it holds more than `max`. */
int onnx_node_attr_ints(const struct onnx_node *n, const char *name, int64_t *out, int max);
int onnx_node_attr_floats(const struct onnx_node *n, const char *name, float *out, int max);

#endif
