/* ops/transpose.c — Transpose (opset 1, 13, 21, 23, 24, 25): y = x permuted
 * by `perm` (default: reversed axes). Also home of shape_copy_strided, the
 * strided copy every data-movement kernel of the family goes through. */
#include <stdlib.h>
#include <string.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

/* Copies n elements of `esize` bytes from a strided source to a contiguous
 * destination; fixed-size memcpy compiles to plain loads and stores. */
static void copy_elems(char *dst, const char *src, int64_t n, int64_t stride, size_t esize)
{
    int64_t sb = stride * (int64_t)esize;
    switch (esize) {
    case 1:
        for (int64_t i = 0; i < n; i++)
            dst[i] = src[i * sb];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + 2 * i, src + i * sb, 2);
        break;
    case 4:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + 4 * i, src + i * sb, 4);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + 8 * i, src + i * sb, 8);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + (size_t)i * esize, src + i * sb, esize);
        break;
    }
}

#define TRANSPOSE_TILE 32

/* out[i][j] = in[i + j * s] for an I x J block: the two innermost axes are
 * swapped, so reads are contiguous along i and writes along j. Tiles keep both
 * the 32 source columns and the 32 destination rows in cache. */
static void transpose_tile(char *dst, const char *src, int64_t I, int64_t J, int64_t s,
                           int64_t i0, size_t esize)
{
    int64_t i1 = i0 + TRANSPOSE_TILE < I ? i0 + TRANSPOSE_TILE : I;
    for (int64_t j0 = 0; j0 < J; j0 += TRANSPOSE_TILE) {
        int64_t j1 = j0 + TRANSPOSE_TILE < J ? j0 + TRANSPOSE_TILE : J;
        for (int64_t i = i0; i < i1; i++)
            copy_elems(dst + (size_t)(i * J + j0) * esize, src + (size_t)(i + j0 * s) * esize,
                       j1 - j0, s, esize);
    }
}

void shape_copy_strided(void *dst, const void *src, size_t esize, int rank,
                        const int64_t *dims_in, const int64_t *strides_in)
{
    int64_t dims[SHAPE_COPY_MAX_RANK], st[SHAPE_COPY_MAX_RANK];
    int64_t total = 1;
    int r = 0;
    for (int i = 0; i < rank; i++)
        total *= dims_in[i];
    if (total == 0)
        return;
    /* Unit axes carry no movement; an axis whose stride steps exactly over
     * the next one's extent continues it, so the two are one axis. */
    for (int i = 0; i < rank; i++) {
        if (dims_in[i] == 1)
            continue;
        if (r > 0 && st[r - 1] == strides_in[i] * dims_in[i]) {
            dims[r - 1] *= dims_in[i];
            st[r - 1] = strides_in[i];
            continue;
        }
        dims[r] = dims_in[i];
        st[r] = strides_in[i];
        r++;
    }
    char *d = dst;
    const char *s = src;
    if (r == 0) {
        memcpy(d, s, esize);
        return;
    }
    int par = (double)total * (double)esize > SHAPE_PARALLEL_BYTES;

    if (r >= 2 && st[r - 2] == 1 && st[r - 1] != 1 && st[r - 1] != 0) {
        int64_t I = dims[r - 2], J = dims[r - 1], sj = st[r - 1];
        int64_t batches = total / (I * J);
        int64_t tiles = (I + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE;
        #pragma omp parallel for schedule(static) if(par)
        for (int64_t w = 0; w < batches * tiles; w++) {
            int64_t b = w / tiles, rem = b, off = 0;
            for (int k = r - 3; k >= 0; k--) {
                int64_t q = rem / dims[k];
                off += (rem - q * dims[k]) * st[k];
                rem = q;
            }
            transpose_tile(d + (size_t)(b * I * J) * esize, s + off * (int64_t)esize, I, J, sj,
                           (w % tiles) * TRANSPOSE_TILE, esize);
        }
        return;
    }

    int64_t inner = dims[r - 1], inner_stride = st[r - 1];
    int64_t rows = total / inner;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, off = 0;
        for (int k = r - 2; k >= 0; k--) {
            int64_t q = rem / dims[k];
            off += (rem - q * dims[k]) * st[k];
            rem = q;
        }
        char *dp = d + (size_t)(row * inner) * esize;
        const char *sp = s + off * (int64_t)esize;
        if (inner_stride == 1)
            memcpy(dp, sp, (size_t)inner * esize);
        else
            copy_elems(dp, sp, inner, inner_stride, esize);
    }
}

/* ---- Transpose ---------------------------------------------------------- */

static int transpose_parse(const struct onnx_node *node, int version, void **params,
                           char *err, size_t err_size)
{
    struct transpose_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->n_perm = onnx_node_attr_ints(node, "perm", p->perm, TENSOR_MAX_RANK);
    if (p->n_perm == -2) {
        free(p);
        return shape_parse_error(err, err_size, node, "perm has more than %d axes",
                                 TENSOR_MAX_RANK);
    }
    *params = p;
    return 0;
}

/* The permutation for this input, validated: perm[i] = input axis of output axis i. */
int transpose_perm(const struct op_call *c, int *perm)
{
    const struct transpose_params *p = c->params;
    int rank = c->in[0]->rank;
    if (!p || p->n_perm < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return 0;
    }
    if (p->n_perm != rank)
        return op_error(c, "perm has %d axes but the input has rank %d", p->n_perm, rank);
    int seen[TENSOR_MAX_RANK] = { 0 };
    for (int i = 0; i < rank; i++) {
        int a = op_axis(p->perm[i], rank);
        if (a < 0 || seen[a])
            return op_error(c, "perm is not a permutation of 0..%d (entry %d is %lld)", rank - 1,
                            i, (long long)p->perm[i]);
        seen[a] = 1;
        perm[i] = a;
    }
    return 0;
}

static int transpose_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int perm[TENSOR_MAX_RANK];
    if (transpose_perm(c, perm))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        y->dims[i] = x->dims[perm[i]];
    return 0;
}

static int transpose_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int perm[TENSOR_MAX_RANK];
    if (transpose_perm(c, perm))
        return -1;
    int64_t xs[TENSOR_MAX_RANK], dims[TENSOR_MAX_RANK], st[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    for (int i = 0; i < x->rank; i++) {
        dims[i] = x->dims[perm[i]];
        st[i] = xs[perm[i]];
    }
    shape_copy_strided(c->out[0]->data, x->data, onnx_dtype_size(x->dtype), x->rank, dims, st);
    return 0;
}

/* dx = dy transposed by the inverse permutation. */
static int transpose_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    int perm[TENSOR_MAX_RANK];
    if (transpose_perm(g->fwd, perm))
        return shape_grad_fwd_error(g);
    int rank = g->fwd->in[0]->rank;
    int64_t inv[TENSOR_MAX_RANK];
    for (int i = 0; i < rank; i++)
        inv[perm[i]] = i;
    struct onnx_attr attr = shape_attr_ints("perm", rank, inv);
    int dx;
    if (g->emit(g, "Transpose", &attr, 1, 1, &g->dy[0], 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_transpose = {
    .domain = "", .name = "Transpose",
    .since = { 1, 13, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = transpose_parse,
    .infer = transpose_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = transpose_cpu },
    .grad = transpose_grad,
};
