/* tests/test_ops_shape.c — the shape and data-movement operators, run
 * directly through the registry (parse, infer, kernel) on hand-made tensors.
 * Expected values come from straightforward reference loops in this file or
 * were computed offline with onnx.reference / onnxruntime (noted where so). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testutil.h"

/* ---- harness ------------------------------------------------------------- */

#define MAX_IO 8
#define MAX_ATTRS 8

static char g_err[512];

static void *scratch_alloc(void *ctx, size_t bytes) { (void)ctx; return malloc(bytes); }
static void scratch_free(void *ctx, void *p) { (void)ctx; free(p); }

/* A node under construction: attributes and names, then run. */
struct tnode {
    struct onnx_node node;
    struct onnx_attr attrs[MAX_ATTRS];
    char *in_names[MAX_IO], *out_names[MAX_IO];
    struct onnx_tensor attr_tensor;
};

static void tnode_init(struct tnode *t, const char *op, int n_in, int n_out)
{
    memset(t, 0, sizeof *t);
    static char empty[] = "", name[] = "x";
    t->node.name = (char *)"test_node";
    t->node.op_type = (char *)op;
    t->node.domain = empty;
    t->node.n_inputs = n_in;
    t->node.n_outputs = n_out;
    for (int i = 0; i < MAX_IO; i++)
        t->in_names[i] = t->out_names[i] = name;
    t->node.inputs = t->in_names;
    t->node.outputs = t->out_names;
    t->node.attrs = t->attrs;
}

static struct onnx_attr *tnode_attr(struct tnode *t, const char *name, int type)
{
    struct onnx_attr *a = &t->attrs[t->node.n_attrs++];
    a->name = (char *)name;
    a->type = type;
    return a;
}

static void attr_int(struct tnode *t, const char *name, int64_t v)
{
    tnode_attr(t, name, ONNX_ATTR_INT)->i = v;
}

static void attr_float(struct tnode *t, const char *name, float v)
{
    tnode_attr(t, name, ONNX_ATTR_FLOAT)->f = v;
}

static void attr_string(struct tnode *t, const char *name, const char *s)
{
    struct onnx_attr *a = tnode_attr(t, name, ONNX_ATTR_STRING);
    a->s = (char *)s;
    a->s_len = strlen(s);
}

static void attr_ints(struct tnode *t, const char *name, int64_t *v, int n)
{
    struct onnx_attr *a = tnode_attr(t, name, ONNX_ATTR_INTS);
    a->ints = v;
    a->n = n;
}

/* A tensor owning a copy of `data` (numel elements of dtype). */
static struct tensor *tt(int dtype, int rank, const int64_t *dims, const void *data)
{
    struct tensor *t = calloc(1, sizeof *t);
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    size_t bytes = tensor_size_bytes(t);
    t->data = calloc(1, bytes ? bytes : 1);
    if (data && bytes)
        memcpy(t->data, data, bytes);
    return t;
}

static struct tensor *ti64(int n, const int64_t *v)
{
    int64_t d = n;
    return tt(ONNX_DTYPE_INT64, 1, &d, v);
}

static struct tensor *tf32(int rank, const int64_t *dims, const float *v)
{
    return tt(ONNX_DTYPE_FLOAT, rank, dims, v);
}

static struct tensor *tscalar_f32(float v)
{
    return tt(ONNX_DTYPE_FLOAT, 0, NULL, &v);
}

static void tfree(struct tensor *t)
{
    if (t)
        free(t->data);
    free(t);
}

/* Runs the node at `opset`: 0 on success with out[] allocated (free with
 * tfree), -1 with the message in g_err. `training`/`seed` go to the env. */
static int run_env(struct tnode *tn, int opset, struct tensor **in, struct tensor **out,
                   int training, uint64_t seed)
{
    int version = 0;
    g_err[0] = 0;
    const struct op_def *d = op_registry_find("", tn->node.op_type, opset, &version);
    ck_assert_msg(d, "operator %s not registered at opset %d", tn->node.op_type, opset);
    void *params = NULL;
    if (d->parse && d->parse(&tn->node, version, &params, g_err, sizeof g_err))
        return -1;
    struct op_env env = { .scratch_alloc = scratch_alloc, .scratch_free = scratch_free,
                          .backend = &backend_cpu, .threads = 1, .seed = seed,
                          .training = training, .err = g_err, .err_size = sizeof g_err };
    for (int i = 0; i < tn->node.n_outputs; i++)
        out[i] = calloc(1, sizeof(struct tensor));
    struct op_call c = { .def = d, .version = version, .params = params,
                         .node_name = tn->node.name, .n_in = tn->node.n_inputs,
                         .in = (const struct tensor *const *)in, .n_out = tn->node.n_outputs,
                         .out = out, .env = &env };
    int rc = d->infer(&c);
    if (!rc) {
        for (int i = 0; i < c.n_out; i++) {
            size_t bytes = tensor_size_bytes(out[i]);
            if (d->alias && i == 0) {
                ck_assert_msg(bytes == tensor_size_bytes(in[0]),
                              "%s: a view must keep the byte size (%zu vs %zu)", d->name, bytes,
                              tensor_size_bytes(in[0]));
                out[i]->data = malloc(bytes ? bytes : 1);
                memcpy(out[i]->data, in[0]->data, bytes);
            } else {
                out[i]->data = malloc(bytes ? bytes : 1);
                memset(out[i]->data, 0xAB, bytes);  /* a kernel must write every byte */
            }
        }
        if (d->alias)
            ck_assert_msg(!d->kernel[BACKEND_CPU], "%s is a view and must have no kernel",
                          d->name);
        else
            rc = d->kernel[BACKEND_CPU](&c);
    }
    if (rc)
        for (int i = 0; i < c.n_out; i++) {
            tfree(out[i]);
            out[i] = NULL;
        }
    if (d->params_free)
        d->params_free(params);
    else
        free(params);
    return rc;
}

static int run(struct tnode *tn, int opset, struct tensor **in, struct tensor **out)
{
    return run_env(tn, opset, in, out, 0, 0);
}

static void check_dims(const struct tensor *t, int rank, const int64_t *dims)
{
    ck_assert_msg(t->rank == rank, "expected rank %d, got %d", rank, t->rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(t->dims[i] == dims[i], "dim %d: expected %lld, got %lld", i,
                      (long long)dims[i], (long long)t->dims[i]);
}

static void check_f32(const struct tensor *t, const float *expect, int64_t n, double tol)
{
    ck_assert_int_eq(t->dtype, ONNX_DTYPE_FLOAT);
    ck_assert_msg(tensor_numel(t) == n, "expected %lld elements, got %lld", (long long)n,
                  (long long)tensor_numel(t));
    for (int64_t i = 0; i < n; i++) {
        float got = ((const float *)t->data)[i];
        ck_assert_msg(fabs(got - expect[i]) <= tol * (1 + fabs(expect[i])),
                      "expected %.7g, got %.7g at index %lld", expect[i], got, (long long)i);
    }
}

static void check_i64(const struct tensor *t, const int64_t *expect, int64_t n)
{
    ck_assert_int_eq(t->dtype, ONNX_DTYPE_INT64);
    ck_assert_msg(tensor_numel(t) == n, "expected %lld elements, got %lld", (long long)n,
                  (long long)tensor_numel(t));
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(((const int64_t *)t->data)[i] == expect[i],
                      "expected %lld, got %lld at index %lld", (long long)expect[i],
                      (long long)((const int64_t *)t->data)[i], (long long)i);
}

static void check_error(const char *needle)
{
    ck_assert_msg(strstr(g_err, needle), "error '%s' does not mention '%s'", g_err, needle);
}

/* Deterministic test data: element i of a float tensor. */
static float val(int64_t i) { return (float)((i * 37) % 101) - 50.0f + 0.25f * (float)(i % 3); }

static struct tensor *tf32_seq(int rank, const int64_t *dims)
{
    struct tensor *t = tf32(rank, dims, NULL);
    for (int64_t i = 0; i < tensor_numel(t); i++)
        ((float *)t->data)[i] = val(i);
    return t;
}

/* Flat index -> coordinates (row-major). */
static void unravel(int64_t i, int rank, const int64_t *dims, int64_t *coord)
{
    for (int k = rank - 1; k >= 0; k--) {
        coord[k] = dims[k] ? i % dims[k] : 0;
        i = dims[k] ? i / dims[k] : 0;
    }
}

static int64_t ravel(int rank, const int64_t *dims, const int64_t *coord)
{
    int64_t i = 0;
    for (int k = 0; k < rank; k++)
        i = i * dims[k] + coord[k];
    return i;
}

/* ---- views --------------------------------------------------------------- */

START_TEST(test_reshape)
{
    struct tnode tn;
    int64_t xd[3] = { 2, 3, 4 };
    struct tensor *x = tf32_seq(3, xd), *out[1];
    int64_t s1[] = { 0, -1, 2 };
    struct tensor *in[2] = { x, ti64(3, s1) };
    tnode_init(&tn, "Reshape", 2, 1);
    ck_assert_int_eq(run(&tn, 25, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 6, 2 });
    ck_assert_int_eq(out[0]->dtype, ONNX_DTYPE_FLOAT);
    tfree(out[0]);
    tfree(in[1]);

    /* Two -1s, a count mismatch, and allowzero with a 0 that can't match. */
    int64_t s2[] = { -1, -1 }, s3[] = { 5, 5 }, s4[] = { 0, 12 };
    in[1] = ti64(2, s2);
    ck_assert_int_eq(run(&tn, 25, in, out), -1);
    check_error("more than one -1");
    tfree(in[1]);
    in[1] = ti64(2, s3);
    ck_assert_int_eq(run(&tn, 25, in, out), -1);
    check_error("25 elements");
    tfree(in[1]);
    in[1] = ti64(2, s4);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);  /* 0 copies dim 0: [2, 12] */
    check_dims(out[0], 2, (int64_t[]){ 2, 12 });
    tfree(out[0]);
    attr_int(&tn, "allowzero", 1);  /* now 0 means 0: [0, 12] cannot hold 24 */
    ck_assert_int_eq(run(&tn, 14, in, out), -1);
    check_error("0 elements");
    tfree(in[1]);

    /* allowzero on an empty tensor: [0, 3, 4] -> [3, 4, 0]. */
    int64_t ed[3] = { 0, 3, 4 }, s5[] = { 3, 4, 0 };
    struct tensor *e = tf32(3, ed, NULL);
    struct tensor *in2[2] = { e, ti64(3, s5) };
    ck_assert_int_eq(run(&tn, 14, in2, out), 0);
    check_dims(out[0], 3, s5);
    tfree(out[0]);
    tfree(in2[1]);
    tfree(e);
    tfree(x);
}
END_TEST

START_TEST(test_flatten_squeeze_unsqueeze)
{
    struct tnode tn;
    int64_t xd[4] = { 2, 1, 4, 1 };
    struct tensor *x = tf32_seq(4, xd), *out[1];
    struct tensor *in[2] = { x, NULL };
    tnode_init(&tn, "Flatten", 1, 1);
    attr_int(&tn, "axis", -2);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 2, 4 });
    tfree(out[0]);
    ck_assert_int_eq(run(&tn, 9, in, out), -1);  /* negative axis only from 11 */
    check_error("negative");

    /* Squeeze without axes drops every unit dim; with axes only those. */
    tnode_init(&tn, "Squeeze", 1, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 2, 4 });
    tfree(out[0]);
    int64_t ax[] = { -1 };
    tnode_init(&tn, "Squeeze", 2, 1);
    in[1] = ti64(1, ax);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 1, 4 });
    tfree(out[0]);
    ax[0] = 0;
    tfree(in[1]);
    in[1] = ti64(1, ax);
    ck_assert_int_eq(run(&tn, 13, in, out), -1);
    check_error("size 2");
    tfree(in[1]);
    in[1] = tt(ONNX_DTYPE_INT64, 1, (int64_t[]){ 0 }, NULL);  /* empty axes = all unit dims */
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 2, 4 });
    tfree(out[0]);
    tfree(in[1]);
    in[1] = NULL;

    /* Squeeze-11 takes axes as an attribute. */
    int64_t ax_attr[] = { 1, 3 };
    tnode_init(&tn, "Squeeze", 1, 1);
    attr_ints(&tn, "axes", ax_attr, 2);
    ck_assert_int_eq(run(&tn, 11, in, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 2, 4 });
    tfree(out[0]);

    /* Unsqueeze: unsorted and negative axes refer to the output rank. */
    int64_t uax[] = { 5, -6, 2 };
    tnode_init(&tn, "Unsqueeze", 2, 1);
    in[1] = ti64(3, uax);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 7, (int64_t[]){ 2, 1, 1, 1, 4, 1, 1 });
    tfree(out[0]);
    int64_t dup[] = { 1, -6 };  /* output rank 6: -6 is axis 0 */
    tfree(in[1]);
    in[1] = ti64(2, dup);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    tfree(out[0]);
    int64_t dup2[] = { 1, -5 };
    tfree(in[1]);
    in[1] = ti64(2, dup2);
    ck_assert_int_eq(run(&tn, 13, in, out), -1);
    check_error("twice");
    tfree(in[1]);
    in[1] = NULL;
    int64_t uattr[] = { 0 };
    tnode_init(&tn, "Unsqueeze", 1, 1);
    attr_ints(&tn, "axes", uattr, 1);
    ck_assert_int_eq(run(&tn, 11, in, out), 0);
    check_dims(out[0], 5, (int64_t[]){ 1, 2, 1, 4, 1 });
    tfree(out[0]);

    tnode_init(&tn, "Identity", 1, 1);
    ck_assert_int_eq(run(&tn, 25, in, out), 0);
    check_dims(out[0], 4, xd);
    tfree(out[0]);
    tfree(x);
}
END_TEST

/* ---- transpose and the strided copy ---------------------------------------- */

static void transpose_case(int dtype, int rank, const int64_t *dims, const int64_t *perm)
{
    struct tnode tn;
    tnode_init(&tn, "Transpose", 1, 1);
    int64_t p[TENSOR_MAX_RANK];
    memcpy(p, perm, sizeof(int64_t) * (size_t)rank);
    attr_ints(&tn, "perm", p, rank);
    struct tensor *x = tt(dtype, rank, dims, NULL), *out[1];
    size_t es = onnx_dtype_size(dtype);
    int64_t n = tensor_numel(x);
    for (int64_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++)
            ((unsigned char *)x->data)[(size_t)i * es + b] = (unsigned char)(i * 7 + b * 13 + i / 251);
    struct tensor *in[1] = { x };
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    int64_t odims[TENSOR_MAX_RANK], oc[TENSOR_MAX_RANK], ic[TENSOR_MAX_RANK];
    for (int k = 0; k < rank; k++)
        odims[k] = dims[perm[k]];
    check_dims(out[0], rank, odims);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, rank, odims, oc);
        for (int k = 0; k < rank; k++)
            ic[perm[k]] = oc[k];
        int64_t j = ravel(rank, dims, ic);
        ck_assert_msg(!memcmp((char *)out[0]->data + (size_t)i * es, (char *)x->data + (size_t)j * es, es),
                      "transpose: output %lld differs from input %lld (esize %zu)", (long long)i,
                      (long long)j, es);
    }
    tfree(out[0]);
    tfree(x);
}

START_TEST(test_transpose)
{
    /* Every permutation of a 3-D tensor, several element sizes. */
    int64_t d3[] = { 3, 5, 7 };
    int64_t perms[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
    int dtypes[] = { ONNX_DTYPE_FLOAT, ONNX_DTYPE_DOUBLE, ONNX_DTYPE_UINT8, ONNX_DTYPE_INT16,
                     ONNX_DTYPE_COMPLEX128 };
    for (int t = 0; t < 5; t++)
        for (int p = 0; p < 6; p++)
            transpose_case(dtypes[t], 3, d3, perms[p]);
    /* Blocked path: last two axes swapped, sizes not multiples of the tile,
     * and big enough to go parallel. */
    int64_t big[] = { 3, 67, 45 }, bp[] = { 0, 2, 1 };
    transpose_case(ONNX_DTYPE_FLOAT, 3, big, bp);
    int64_t big2[] = { 300, 1000 }, bp2[] = { 1, 0 };
    transpose_case(ONNX_DTYPE_FLOAT, 2, big2, bp2);
    int64_t d5[] = { 2, 3, 1, 4, 5 }, p5[] = { 4, 2, 0, 3, 1 };
    transpose_case(ONNX_DTYPE_INT64, 5, d5, p5);

    /* Default perm reverses; a bad perm is refused. */
    struct tnode tn;
    tnode_init(&tn, "Transpose", 1, 1);
    struct tensor *x = tf32_seq(3, d3), *out[1], *in[1] = { x };
    ck_assert_int_eq(run(&tn, 25, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 7, 5, 3 });
    tfree(out[0]);
    int64_t bad[] = { 0, 0, 1 };
    attr_ints(&tn, "perm", bad, 3);
    ck_assert_int_eq(run(&tn, 25, in, out), -1);
    check_error("permutation");
    tfree(x);
}
END_TEST

/* ---- concat and split ----------------------------------------------------- */

START_TEST(test_concat_split)
{
    struct tnode tn;
    int64_t a_d[] = { 2, 3, 2 }, b_d[] = { 2, 1, 2 }, c_d[] = { 2, 0, 2 };
    struct tensor *a = tf32_seq(3, a_d), *b = tf32(3, b_d, (float[]){ 100, 101, 102, 103 });
    struct tensor *e = tf32(3, c_d, NULL), *out[4];
    struct tensor *in[3] = { a, e, b };
    tnode_init(&tn, "Concat", 3, 1);
    attr_int(&tn, "axis", -2);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 4, 2 });
    float expect[16];
    for (int i = 0, k = 0; i < 2; i++) {
        for (int j = 0; j < 6; j++)
            expect[k++] = val(i * 6 + j);
        expect[k++] = 100 + 2 * i;
        expect[k++] = 101 + 2 * i;
    }
    check_f32(out[0], expect, 16, 0);
    struct tensor *cat = out[0];

    /* Split it back with the split input (opset 13). */
    int64_t sp[] = { 3, 0, 1 };
    struct tensor *sin[2] = { cat, ti64(3, sp) };
    tnode_init(&tn, "Split", 2, 3);
    attr_int(&tn, "axis", 1);
    ck_assert_int_eq(run(&tn, 13, sin, out), 0);
    check_dims(out[0], 3, a_d);
    check_dims(out[1], 3, c_d);
    check_dims(out[2], 3, b_d);
    ck_assert(!memcmp(out[0]->data, a->data, tensor_size_bytes(a)));
    ck_assert(!memcmp(out[2]->data, b->data, tensor_size_bytes(b)));
    for (int i = 0; i < 3; i++)
        tfree(out[i]);
    /* A split that does not sum to the axis is refused. */
    int64_t bad[] = { 3, 0, 2 };
    tfree(sin[1]);
    sin[1] = ti64(3, bad);
    ck_assert_int_eq(run(&tn, 13, sin, out), -1);
    check_error("sums to 5");
    tfree(sin[1]);

    /* Split-11: the split attribute. */
    int64_t sattr[] = { 1, 3 };
    tnode_init(&tn, "Split", 1, 2);
    attr_int(&tn, "axis", 1);
    attr_ints(&tn, "split", sattr, 2);
    ck_assert_int_eq(run(&tn, 11, sin, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 1, 2 });
    check_dims(out[1], 3, (int64_t[]){ 2, 3, 2 });
    ck_assert(((float *)out[1]->data)[3] == val(5) && ((float *)out[1]->data)[4] == 100);
    tfree(out[0]);
    tfree(out[1]);

    /* Split-18 num_outputs: 7 -> 2, 2, 2, 1; equal parts must divide before 18. */
    int64_t d7 = 7;
    struct tensor *x7 = tf32_seq(1, &d7), *in7[1] = { x7 };
    tnode_init(&tn, "Split", 1, 4);
    attr_int(&tn, "num_outputs", 4);
    ck_assert_int_eq(run(&tn, 18, in7, out), 0);
    int64_t lens[] = { 2, 2, 2, 1 };
    for (int i = 0; i < 4; i++) {
        check_dims(out[i], 1, &lens[i]);
        ck_assert(((float *)out[i]->data)[0] == val(2 * i));
        tfree(out[i]);
    }
    tnode_init(&tn, "Split", 1, 3);
    ck_assert_int_eq(run(&tn, 13, in7, out), -1);
    check_error("equal parts");
    tfree(x7);
    tfree(cat);
    tfree(a);
    tfree(b);
    tfree(e);
}
END_TEST

/* ---- slice ------------------------------------------------------------------ */

/* Reference slice of a [6, 7] tensor along both axes. */
static void slice_check(int64_t s0, int64_t e0, int64_t st0, int64_t s1, int64_t e1, int64_t st1,
                        const int64_t *expect_dims)
{
    struct tnode tn;
    int64_t xd[] = { 6, 7 };
    struct tensor *x = tf32_seq(2, xd), *out[1];
    int64_t starts[] = { s1, s0 }, ends[] = { e1, e0 }, axes[] = { -1, 0 }, steps[] = { st1, st0 };
    struct tensor *in[5] = { x, ti64(2, starts), ti64(2, ends), ti64(2, axes), ti64(2, steps) };
    tnode_init(&tn, "Slice", 5, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 2, expect_dims);
    /* Walk the reference indices the slow way. */
    int64_t k = 0;
    for (int64_t i = 0; i < expect_dims[0]; i++)
        for (int64_t j = 0; j < expect_dims[1]; j++, k++) {
            int64_t r = 0, c = 0, a0 = s0 < 0 ? s0 + 6 : s0, a1 = s1 < 0 ? s1 + 7 : s1;
            a0 = st0 > 0 ? (a0 < 0 ? 0 : a0 > 6 ? 6 : a0) : (a0 < 0 ? 0 : a0 > 5 ? 5 : a0);
            a1 = st1 > 0 ? (a1 < 0 ? 0 : a1 > 7 ? 7 : a1) : (a1 < 0 ? 0 : a1 > 6 ? 6 : a1);
            r = a0 + i * st0;
            c = a1 + j * st1;
            ck_assert_msg(r >= 0 && r < 6 && c >= 0 && c < 7, "reference index out of range");
            ck_assert_msg(((float *)out[0]->data)[k] == val(r * 7 + c),
                          "slice: output %lld expected x[%lld,%lld]", (long long)k, (long long)r,
                          (long long)c);
        }
    tfree(out[0]);
    for (int i = 0; i < 5; i++)
        tfree(in[i]);
}

START_TEST(test_slice)
{
    slice_check(1, 5, 2, 0, 7, 1, (int64_t[]){ 2, 7 });
    slice_check(-1, -100, -2, 6, 0, -1, (int64_t[]){ 3, 6 });          /* negative steps */
    slice_check(INT64_MAX, INT64_MIN, -1, 2, INT64_MAX, 3, (int64_t[]){ 6, 2 }); /* clamped */
    slice_check(10, 20, 1, 1, 2, 1, (int64_t[]){ 0, 1 });             /* start past the end */
    slice_check(0, 6, INT64_MAX, -3, -1, 1, (int64_t[]){ 1, 2 });      /* huge step */

    /* Omitted axes and steps; Slice-1 attributes. */
    struct tnode tn;
    int64_t xd[] = { 4, 5, 3 };
    struct tensor *x = tf32_seq(3, xd), *out[1];
    int64_t st[] = { 1, -2 }, en[] = { 3, 100 };
    struct tensor *in[3] = { x, ti64(2, st), ti64(2, en) };
    tnode_init(&tn, "Slice", 3, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 2, 3 });
    ck_assert(((float *)out[0]->data)[0] == val(1 * 15 + 3 * 3));
    tfree(out[0]);
    tnode_init(&tn, "Slice", 1, 1);
    attr_ints(&tn, "starts", st, 2);
    attr_ints(&tn, "ends", en, 2);
    ck_assert_int_eq(run(&tn, 9, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 2, 3 });
    ck_assert(((float *)out[0]->data)[11] == val(2 * 15 + 4 * 3 + 2));
    tfree(out[0]);
    tfree(in[1]);
    tfree(in[2]);
    tfree(x);
}
END_TEST

/* ---- gather ----------------------------------------------------------------- */

START_TEST(test_gather)
{
    struct tnode tn;
    int64_t xd[] = { 3, 4 }, id[] = { 2, 2 };
    struct tensor *x = tf32_seq(2, xd), *out[1];
    int64_t idx[] = { 0, -1, 3, 1 };
    struct tensor *in[2] = { x, tt(ONNX_DTYPE_INT64, 2, id, idx) };
    tnode_init(&tn, "Gather", 2, 1);
    attr_int(&tn, "axis", 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 3, 2, 2 });
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 4; j++) {
            int64_t col = idx[j] < 0 ? idx[j] + 4 : idx[j];
            ck_assert(((float *)out[0]->data)[r * 4 + j] == val(r * 4 + col));
        }
    tfree(out[0]);
    /* int32 indices along axis 0. */
    int32_t idx32[] = { 2, 0 };
    int64_t n2 = 2;
    struct tensor *in32[2] = { x, tt(ONNX_DTYPE_INT32, 1, &n2, idx32) };
    tnode_init(&tn, "Gather", 2, 1);
    ck_assert_int_eq(run(&tn, 11, in32, out), 0);
    ck_assert(((float *)out[0]->data)[0] == val(8) && ((float *)out[0]->data)[4] == val(0));
    tfree(out[0]);
    tfree(in32[1]);
    /* Out of range: a clear error, no read. */
    ((int64_t *)in[1]->data)[2] = 4;
    tnode_init(&tn, "Gather", 2, 1);
    attr_int(&tn, "axis", 1);
    ck_assert_int_eq(run(&tn, 13, in, out), -1);
    check_error("index 4 at position 2 is out of range");
    ((int64_t *)in[1]->data)[2] = -5;
    ck_assert_int_eq(run(&tn, 13, in, out), -1);
    check_error("index -5");
    tfree(in[1]);

    /* GatherElements along axis 0 and 1, negative indices, smaller indices tensor. */
    int64_t ed[] = { 2, 3 };
    int64_t eidx[] = { 2, -1, 0, 1, 0, -3 };
    struct tensor *ein[2] = { x, tt(ONNX_DTYPE_INT64, 2, ed, eidx) };
    tnode_init(&tn, "GatherElements", 2, 1);
    attr_int(&tn, "axis", 0);
    ck_assert_int_eq(run(&tn, 13, ein, out), 0);
    check_dims(out[0], 2, ed);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            int64_t r = eidx[i * 3 + j] < 0 ? eidx[i * 3 + j] + 3 : eidx[i * 3 + j];
            ck_assert(((float *)out[0]->data)[i * 3 + j] == val(r * 4 + j));
        }
    tfree(out[0]);
    tnode_init(&tn, "GatherElements", 2, 1);
    attr_int(&tn, "axis", -1);
    ck_assert_int_eq(run(&tn, 13, ein, out), 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            int64_t col = eidx[i * 3 + j] < 0 ? eidx[i * 3 + j] + 4 : eidx[i * 3 + j];
            ck_assert(((float *)out[0]->data)[i * 3 + j] == val(i * 4 + col));
        }
    tfree(out[0]);
    ((int64_t *)ein[1]->data)[5] = 7;
    ck_assert_int_eq(run(&tn, 13, ein, out), -1);
    check_error("index 7 at position 5");
    tfree(ein[1]);
    tfree(x);
}
END_TEST

/* ---- expand, tile, range -------------------------------------------------------- */

START_TEST(test_expand_tile)
{
    struct tnode tn;
    int64_t xd[] = { 3, 1 };
    struct tensor *x = tf32_seq(2, xd), *out[1];
    int64_t shape[] = { 2, 1, 4 };
    struct tensor *in[2] = { x, ti64(3, shape) };
    tnode_init(&tn, "Expand", 2, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 3, (int64_t[]){ 2, 3, 4 });
    for (int64_t i = 0; i < 24; i++)
        ck_assert(((float *)out[0]->data)[i] == val((i / 4) % 3));
    tfree(out[0]);
    int64_t bad[] = { 2, 4 };
    tfree(in[1]);
    in[1] = ti64(2, bad);
    ck_assert_int_eq(run(&tn, 13, in, out), -1);
    check_error("broadcast");
    tfree(in[1]);

    /* Tile [3, 1] by [2, 5] and a uint8 [2, 3] by [3, 2]. */
    int64_t rep[] = { 2, 5 };
    in[1] = ti64(2, rep);
    tnode_init(&tn, "Tile", 2, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 6, 5 });
    for (int64_t i = 0; i < 30; i++)
        ck_assert(((float *)out[0]->data)[i] == val((i / 5) % 3));
    tfree(out[0]);
    tfree(in[1]);
    int64_t ud[] = { 2, 3 }, rep2[] = { 3, 2 };
    uint8_t u[] = { 1, 2, 3, 4, 5, 6 };
    struct tensor *uin[2] = { tt(ONNX_DTYPE_UINT8, 2, ud, u), ti64(2, rep2) };
    ck_assert_int_eq(run(&tn, 6, uin, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 6, 6 });
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            ck_assert(((uint8_t *)out[0]->data)[i * 6 + j] == u[(i % 2) * 3 + j % 3]);
    tfree(out[0]);
    tfree(uin[0]);
    tfree(uin[1]);
    tfree(x);
}
END_TEST

START_TEST(test_range)
{
    struct tnode tn;
    struct tensor *out[1];
    tnode_init(&tn, "Range", 3, 1);
    int64_t s = 10, l = -3, d = -4;
    struct tensor *in[3] = { tt(ONNX_DTYPE_INT64, 0, NULL, &s), tt(ONNX_DTYPE_INT64, 0, NULL, &l),
                             tt(ONNX_DTYPE_INT64, 0, NULL, &d) };
    ck_assert_int_eq(run(&tn, 11, in, out), 0);
    check_i64(out[0], (int64_t[]){ 10, 6, 2, -2 }, 4);
    tfree(out[0]);
    for (int i = 0; i < 3; i++)
        tfree(in[i]);
    struct tensor *fin[3] = { tscalar_f32(1.0f), tscalar_f32(2.0f), tscalar_f32(0.3f) };
    ck_assert_int_eq(run(&tn, 11, fin, out), 0);
    check_f32(out[0], (float[]){ 1.0f, 1.3f, 1.6f, 1.9f }, 4, 1e-6);
    tfree(out[0]);
    ((float *)fin[2]->data)[0] = 0;
    ck_assert_int_eq(run(&tn, 11, fin, out), -1);
    for (int i = 0; i < 3; i++)
        tfree(fin[i]);
}
END_TEST

/* ---- shape, size, constants -------------------------------------------------------- */

START_TEST(test_shape_size_constant)
{
    struct tnode tn;
    int64_t xd[] = { 3, 4, 5 };
    struct tensor *x = tf32(3, xd, NULL), *out[1], *in[1] = { x };
    tnode_init(&tn, "Shape", 1, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    check_i64(out[0], xd, 3);
    tfree(out[0]);
    attr_int(&tn, "start", -2);
    attr_int(&tn, "end", 100);
    ck_assert_int_eq(run(&tn, 15, in, out), 0);
    check_i64(out[0], (int64_t[]){ 4, 5 }, 2);
    tfree(out[0]);
    tnode_init(&tn, "Shape", 1, 1);
    attr_int(&tn, "start", 2);
    attr_int(&tn, "end", 1);
    ck_assert_int_eq(run(&tn, 15, in, out), 0);
    ck_assert_int_eq(out[0]->dims[0], 0);
    tfree(out[0]);
    tnode_init(&tn, "Size", 1, 1);
    ck_assert_int_eq(run(&tn, 13, in, out), 0);
    ck_assert_int_eq(out[0]->rank, 0);
    check_i64(out[0], (int64_t[]){ 60 }, 1);
    tfree(out[0]);
    tfree(x);

    /* Constant: value_ints, value_float, a tensor value; strings refused. */
    int64_t vi[] = { 4, -2, 9 };
    tnode_init(&tn, "Constant", 0, 1);
    attr_ints(&tn, "value_ints", vi, 3);
    ck_assert_int_eq(run(&tn, 13, NULL, out), 0);
    check_i64(out[0], vi, 3);
    tfree(out[0]);
    tnode_init(&tn, "Constant", 0, 1);
    attr_float(&tn, "value_float", 2.5f);
    ck_assert_int_eq(run(&tn, 12, NULL, out), 0);
    ck_assert_int_eq(out[0]->rank, 0);
    check_f32(out[0], (float[]){ 2.5f }, 1, 0);
    tfree(out[0]);
    tnode_init(&tn, "Constant", 0, 1);
    double dv[] = { 1.5, -2 };
    tn.attr_tensor = (struct onnx_tensor){ .dtype = ONNX_DTYPE_DOUBLE, .rank = 2,
                                           .dims = { 2, 1 }, .data = dv, .size_bytes = sizeof dv };
    tnode_attr(&tn, "value", ONNX_ATTR_TENSOR)->t = &tn.attr_tensor;
    ck_assert_int_eq(run(&tn, 25, NULL, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 2, 1 });
    ck_assert(((double *)out[0]->data)[1] == -2);
    tfree(out[0]);
    tnode_init(&tn, "Constant", 0, 1);
    attr_string(&tn, "value_string", "hello");
    ck_assert_int_eq(run(&tn, 13, NULL, out), -1);
    check_error("value_string");
    check_error("unsupported");
    tnode_init(&tn, "Constant", 0, 1);
    ck_assert_int_eq(run(&tn, 13, NULL, out), -1);
    check_error("no value");

    /* ConstantOfShape: default float 0, an int32 value, an empty shape = scalar. */
    int64_t shp[] = { 2, 3 };
    struct tensor *sin[1] = { ti64(2, shp) };
    tnode_init(&tn, "ConstantOfShape", 1, 1);
    ck_assert_int_eq(run(&tn, 9, sin, out), 0);
    check_f32(out[0], (float[]){ 0, 0, 0, 0, 0, 0 }, 6, 0);
    tfree(out[0]);
    int32_t seven = 7;
    int64_t one = 1;
    tn.attr_tensor = (struct onnx_tensor){ .dtype = ONNX_DTYPE_INT32, .rank = 1, .dims = { 1 },
                                           .data = &seven, .size_bytes = 4 };
    tnode_attr(&tn, "value", ONNX_ATTR_TENSOR)->t = &tn.attr_tensor;
    ck_assert_int_eq(run(&tn, 20, sin, out), 0);
    ck_assert_int_eq(out[0]->dtype, ONNX_DTYPE_INT32);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(((int32_t *)out[0]->data)[i], 7);
    tfree(out[0]);
    tfree(sin[0]);
    sin[0] = tt(ONNX_DTYPE_INT64, 1, (int64_t[]){ 0 }, NULL);
    ck_assert_int_eq(run(&tn, 20, sin, out), 0);
    ck_assert_int_eq(out[0]->rank, 0);
    ck_assert_int_eq(((int32_t *)out[0]->data)[0], 7);
    tfree(out[0]);
    tfree(sin[0]);
    (void)one;
}
END_TEST

/* ---- pad ------------------------------------------------------------------------ */

START_TEST(test_pad)
{
    /* Expected values: onnx.reference (numpy.pad) on x = 1..12 as [3, 4],
     * pads [2, 3, 1, 5]; reflect/wrap wider than the axis reflect/wrap again. */
    static const int32_t reflect[] = { 12, 11, 10, 9, 10, 11, 12, 11, 10, 9, 10, 11, 8, 7, 6, 5, 6, 7, 8, 7, 6, 5, 6, 7, 4, 3, 2, 1, 2, 3, 4, 3, 2, 1, 2, 3, 8, 7, 6, 5, 6, 7, 8, 7, 6, 5, 6, 7, 12, 11, 10, 9, 10, 11, 12, 11, 10, 9, 10, 11, 8, 7, 6, 5, 6, 7, 8, 7, 6, 5, 6, 7 };
    static const int32_t edge[] = { 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 7, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 10, 11, 12, 12, 12, 12, 12, 12, 9, 9, 9, 9, 10, 11, 12, 12, 12, 12, 12, 12 };
    static const int32_t wrap[] = { 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8, 5, 10, 11, 12, 9, 10, 11, 12, 9, 10, 11, 12, 9, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8, 5, 10, 11, 12, 9, 10, 11, 12, 9, 10, 11, 12, 9, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1 };
    const char *modes[] = { "reflect", "edge", "wrap" };
    const int32_t *expect[] = { reflect, edge, wrap };
    int32_t xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = i + 1;
    int64_t xd[] = { 3, 4 }, pads[] = { 2, 3, 1, 5 };
    struct tensor *x = tt(ONNX_DTYPE_INT32, 2, xd, xv), *out[1];
    struct tensor *in[4] = { x, ti64(4, pads), NULL, NULL };
    struct tnode tn;
    for (int m = 0; m < 3; m++) {
        tnode_init(&tn, "Pad", 2, 1);
        attr_string(&tn, "mode", modes[m]);
        ck_assert_int_eq(run(&tn, 19, in, out), 0);
        check_dims(out[0], 2, (int64_t[]){ 6, 12 });
        for (int i = 0; i < 72; i++)
            ck_assert_msg(((int32_t *)out[0]->data)[i] == expect[m][i],
                          "pad %s: expected %d, got %d at index %d", modes[m], expect[m][i],
                          ((int32_t *)out[0]->data)[i], i);
        tfree(out[0]);
    }
    tnode_init(&tn, "Pad", 2, 1);
    attr_string(&tn, "mode", "wrap");
    ck_assert_int_eq(run(&tn, 18, in, out), -1);  /* wrap only from 19 */
    check_error("wrap");
    tfree(in[1]);

    /* Negative pads crop; constant_value; onnxruntime gives
     * [[9.5, 5, 6], [9.5, 9, 10]] for pads [-1, 1, 0, -2]. */
    float xf[12];
    for (int i = 0; i < 12; i++)
        xf[i] = (float)(i + 1);
    struct tensor *xfl = tf32(2, xd, xf);
    int64_t npads[] = { -1, 1, 0, -2 };
    struct tensor *fin[4] = { xfl, ti64(4, npads), tscalar_f32(9.5f), NULL };
    tnode_init(&tn, "Pad", 3, 1);
    ck_assert_int_eq(run(&tn, 13, fin, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 2, 3 });
    check_f32(out[0], (float[]){ 9.5f, 5, 6, 9.5f, 9, 10 }, 6, 0);
    tfree(out[0]);
    tfree(fin[1]);

    /* Axes input (18): pad only the last axis by (1, 2). */
    int64_t apads[] = { 1, 2 }, axes[] = { -1 };
    fin[1] = ti64(2, apads);
    fin[3] = ti64(1, axes);
    tnode_init(&tn, "Pad", 4, 1);
    ck_assert_int_eq(run(&tn, 18, fin, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 3, 7 });
    check_f32(out[0], (float[]){ 9.5f, 1, 2, 3, 4, 9.5f, 9.5f, 9.5f, 5, 6, 7, 8, 9.5f, 9.5f,
                                 9.5f, 9, 10, 11, 12, 9.5f, 9.5f }, 21, 0);
    tfree(out[0]);
    tfree(fin[1]);
    tfree(fin[2]);
    tfree(fin[3]);

    /* Pad-2: pads and value attributes. */
    int64_t p2[] = { 0, 1, 0, 0 };
    struct tensor *in2[1] = { xfl };
    tnode_init(&tn, "Pad", 1, 1);
    attr_ints(&tn, "pads", p2, 4);
    attr_float(&tn, "value", -1.5f);
    ck_assert_int_eq(run(&tn, 2, in2, out), 0);
    check_dims(out[0], 2, (int64_t[]){ 3, 5 });
    check_f32(out[0], (float[]){ -1.5f, 1, 2, 3, 4, -1.5f, 5, 6, 7, 8, -1.5f, 9, 10, 11, 12 }, 15, 0);
    tfree(out[0]);
    tfree(xfl);
    tfree(x);
}
END_TEST

/* ---- resize ------------------------------------------------------------------------ */

static struct tensor *resize_run(const char *mode, const char *coord, const char *nearest,
                                 int opset, struct tensor *x, struct tensor *scales,
                                 struct tensor *sizes)
{
    struct tnode tn;
    struct tensor *out[1];
    if (opset < 11) {
        tnode_init(&tn, "Resize", 2, 1);
        struct tensor *in[2] = { x, scales };
        attr_string(&tn, "mode", mode);
        ck_assert_msg(run(&tn, opset, in, out) == 0, "resize failed: %s", g_err);
        return out[0];
    }
    tnode_init(&tn, "Resize", 4, 1);
    attr_string(&tn, "mode", mode);
    if (coord)
        attr_string(&tn, "coordinate_transformation_mode", coord);
    if (nearest)
        attr_string(&tn, "nearest_mode", nearest);
    struct tensor *in[4] = { x, NULL, scales, sizes };
    ck_assert_msg(run(&tn, opset, in, out) == 0, "resize failed: %s", g_err);
    return out[0];
}

START_TEST(test_resize)
{
    /* Expected values from onnx.reference (opset 19) and onnxruntime (opset 10). */
    float x44v[16];
    for (int i = 0; i < 16; i++)
        x44v[i] = (float)(i + 1);
    int64_t d44[] = { 1, 1, 4, 4 }, d22[] = { 1, 1, 2, 2 }, d4 = 4;
    struct tensor *x44 = tf32(4, d44, x44v);
    struct tensor *x22 = tf32(4, d22, (float[]){ 1, 2, 3, 4 });

    int64_t sz[] = { 1, 1, 3, 5 };
    struct tensor *sizes = ti64(4, sz);
    struct tensor *y = resize_run("linear", NULL, NULL, 19, x44, NULL, sizes);
    check_dims(y, 4, sz);
    check_f32(y, (float[]){ 1.666667f, 2.366667f, 3.166667f, 3.966667f, 4.666667f, 7, 7.7f, 8.5f, 9.3f, 10, 12.33333f, 13.03333f, 13.83333f, 14.63333f, 15.33333f }, 15, 1e-5);
    tfree(y);
    tfree(sizes);

    struct tensor *sc = tt(ONNX_DTYPE_FLOAT, 1, &d4, (float[]){ 1, 1, 1.5f, 0.75f });
    y = resize_run("nearest", "asymmetric", "round_prefer_ceil", 19, x44, sc, NULL);
    check_dims(y, 4, (int64_t[]){ 1, 1, 6, 3 });
    check_f32(y, (float[]){ 1, 2, 4, 5, 6, 8, 5, 6, 8, 9, 10, 12, 13, 14, 16, 13, 14, 16 }, 18, 0);
    tfree(y);
    tfree(sc);

    /* Trilinear (three resized axes), align_corners. */
    int64_t d3[] = { 1, 2, 3, 4 };
    float x3v[24];
    for (int i = 0; i < 24; i++)
        x3v[i] = powf((float)i, 1.5f);
    struct tensor *x3 = tf32(4, d3, x3v);
    sc = tt(ONNX_DTYPE_FLOAT, 1, &d4, (float[]){ 1, 2, 1.5f, 0.5f });
    y = resize_run("linear", "align_corners", NULL, 19, x3, sc, NULL);
    check_dims(y, 4, (int64_t[]){ 1, 4, 4, 2 });
    check_f32(y, (float[]){ 0, 5.196153f, 4.571429f, 12.80993f, 10.08963f, 21.08635f, 18.44815f, 31.3507f, 13.85641f, 22.82902f, 21.17656f, 32.61427f, 29.27131f, 42.97273f, 39.68989f, 55.05088f, 27.71281f, 40.46188f, 37.78168f, 52.4186f, 48.45299f, 64.85912f, 60.93163f, 78.75107f, 41.56922f, 58.09475f, 54.38681f, 72.22294f, 67.63467f, 86.74551f, 82.17337f, 102.4513f }, 32, 1e-5);
    tfree(y);
    tfree(sc);
    tfree(x3);

    /* Opset 10: asymmetric, floor when enlarging, ceil when shrinking (onnxruntime). */
    sc = tt(ONNX_DTYPE_FLOAT, 1, &d4, (float[]){ 1, 1, 2, 3 });
    y = resize_run("nearest", NULL, NULL, 10, x22, sc, NULL);
    check_f32(y, (float[]){ 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4 }, 24, 0);
    tfree(y);
    ((float *)sc->data)[2] = ((float *)sc->data)[3] = 0.6f;
    y = resize_run("nearest", NULL, NULL, 10, x44, sc, NULL);
    check_f32(y, (float[]){ 1, 3, 9, 11 }, 4, 0);
    tfree(y);
    ((float *)sc->data)[3] = 1.5f;
    y = resize_run("linear", NULL, NULL, 10, x44, sc, NULL);
    check_f32(y, (float[]){ 1, 1.666667f, 2.333333f, 3, 3.666667f, 4, 7.666667f, 8.333333f, 9, 9.666666f, 10.33333f, 10.66667f }, 12, 1e-5);
    tfree(y);
    tfree(sc);

    /* Modes the spec does not define are refused by name, and so is
     * antialias with nearest (the spec allows it for linear and cubic). */
    struct tnode tn;
    struct tensor *out[1];
    const char *bad_attr[][2] = { { "mode", "lanczos" },
                                  { "coordinate_transformation_mode", "tf_half_pixel_for_nn" },
                                  { "keep_aspect_ratio_policy", "fill" } };
    for (int i = 0; i < 3; i++) {
        tnode_init(&tn, "Resize", 4, 1);
        attr_string(&tn, bad_attr[i][0], bad_attr[i][1]);
        struct tensor *in[4] = { x44, NULL, NULL, NULL };
        ck_assert_int_eq(run(&tn, 19, in, out), -1);
        check_error("unsupported");
        check_error(bad_attr[i][1]);
    }
    tnode_init(&tn, "Resize", 4, 1);
    attr_int(&tn, "antialias", 1);
    struct tensor *in[4] = { x44, NULL, NULL, NULL };
    ck_assert_int_eq(run(&tn, 19, in, out), -1);
    check_error("antialias");
    tfree(x44);
    tfree(x22);
}
END_TEST

/* ---- dropout ------------------------------------------------------------------------- */

START_TEST(test_dropout)
{
    struct tnode tn;
    int64_t xd[] = { 100, 100 };
    struct tensor *x = tf32_seq(2, xd), *out[2], *again[2];
    uint8_t yes = 1;
    struct tensor *in[3] = { x, tscalar_f32(0.3f), tt(ONNX_DTYPE_BOOL, 0, NULL, &yes) };

    /* Inference: identity, mask all true. */
    tnode_init(&tn, "Dropout", 1, 2);
    ck_assert_int_eq(run(&tn, 22, in, out), 0);
    ck_assert(!memcmp(out[0]->data, x->data, tensor_size_bytes(x)));
    ck_assert_int_eq(out[1]->dtype, ONNX_DTYPE_BOOL);
    for (int i = 0; i < 10000; i++)
        ck_assert(((uint8_t *)out[1]->data)[i] == 1);
    tfree(out[0]);
    tfree(out[1]);

    /* Training mode with ratio 0.3: a counter-based mask that a recomputation
     * with the same seed reproduces exactly, another seed does not. */
    tnode_init(&tn, "Dropout", 3, 2);
    ck_assert_int_eq(run_env(&tn, 22, in, out, 0, 1234), 0);
    ck_assert_int_eq(run_env(&tn, 22, in, again, 0, 1234), 0);
    ck_assert(!memcmp(out[0]->data, again[0]->data, tensor_size_bytes(x)));
    ck_assert(!memcmp(out[1]->data, again[1]->data, 10000));
    int dropped = 0;
    for (int i = 0; i < 10000; i++) {
        int keep = ((uint8_t *)out[1]->data)[i];
        float y = ((float *)out[0]->data)[i];
        dropped += !keep;
        ck_assert_msg(keep ? fabsf(y - val(i) / 0.7f) <= 1e-5f * (1 + fabsf(y)) : y == 0,
                      "dropout: element %d keep=%d y=%g x=%g", i, keep, y, val(i));
    }
    ck_assert_msg(dropped > 2700 && dropped < 3300, "dropped %d of 10000 at ratio 0.3", dropped);
    tfree(again[0]);
    tfree(again[1]);
    ck_assert_int_eq(run_env(&tn, 22, in, again, 0, 1235), 0);
    ck_assert(memcmp(out[1]->data, again[1]->data, 10000));
    for (int i = 0; i < 2; i++) {
        tfree(out[i]);
        tfree(again[i]);
    }

    /* Opset 7: ratio attribute, training from the env, mask in the input's type. */
    tnode_init(&tn, "Dropout", 1, 2);
    attr_float(&tn, "ratio", 0.5f);
    ck_assert_int_eq(run_env(&tn, 7, in, out, 1, 99), 0);
    ck_assert_int_eq(out[1]->dtype, ONNX_DTYPE_FLOAT);
    dropped = 0;
    for (int i = 0; i < 10000; i++)
        dropped += ((float *)out[1]->data)[i] == 0;
    ck_assert_msg(dropped > 4700 && dropped < 5300, "dropped %d of 10000 at ratio 0.5", dropped);
    tfree(out[0]);
    tfree(out[1]);
    for (int i = 0; i < 3; i++)
        tfree(in[i]);
}
END_TEST

static Suite *ops_shape_suite(void)
{
    Suite *s = suite_create("ops_shape");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_reshape);
    tcase_add_test(tc, test_flatten_squeeze_unsqueeze);
    tcase_add_test(tc, test_transpose);
    tcase_add_test(tc, test_concat_split);
    tcase_add_test(tc, test_slice);
    tcase_add_test(tc, test_gather);
    tcase_add_test(tc, test_expand_tile);
    tcase_add_test(tc, test_range);
    tcase_add_test(tc, test_shape_size_constant);
    tcase_add_test(tc, test_pad);
    tcase_add_test(tc, test_resize);
    tcase_add_test(tc, test_dropout);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ops_shape_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
