/* ops/einsum.c — Einsum (opsets 12, 28).
 *
 * The equation ("bhid,bhjd->bhij", "...ii->...i", "i,i", ...) is split at
 * parse time into its terms; the ellipsis is resolved per call against the
 * input ranks (its dims right-aligned and broadcast, numpy style). Without
 * "->" the output is the ellipsis dims, then the letters that occur once,
 * in ASCII order, as numpy.einsum does. A label may repeat within a term
 * (a diagonal: its strides add up) and a dim of 1 broadcasts against the
 * label's size.
 *
 * Evaluation folds the operands left to right. Each step contracts the
 * running result with the next operand as one batched GEMM: labels in both
 * and still needed are batch axes, labels in both and no longer needed are
 * the K axis, the others M (left) and N (right); labels only one side has
 * and nothing needs are summed while that side is packed. An operand whose
 * memory already is [batch, M, K] or [batch, K, M] (or [batch, K, N] /
 * [batch, N, K]) is passed to the GEMM as it is, transposed or not, so the
 * attention patterns 'bhid,bhjd->bhij' and 'bhij,bhjd->bhid' run as one
 * batched sgemm straight into the output without a copy. One operand is a
 * single strided pass (transpose, diagonal, sum).
 *
 * float goes through nn_sgemm (ops/gemm.c) and double through cblas_dgemm;
 * float16/bfloat16 are computed in float; int32/int64 by plain loops that
 * wrap. Every step's split of work is fixed by the shapes, so reruns are
 * bit-identical.
 *
 * Gradient: for operand i, one Einsum of dy with the other operands back to
 * operand i's labels, written with explicit letters (ellipsis dims get
 * unused ones). A repeated label gets a fresh letter tied to the first by an
 * identity-matrix constant; a label only operand i has (it was summed) comes
 * back through a ones-vector constant; an axis that was broadcast from 1 is
 * summed back to 1 the same way. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "ops/einsum-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/nn-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

#define EIN_MAX_TERMS EINSUM_MAX_TERMS
#define EIN_LETTERS 52
#define EIN_MAXL EINSUM_MAXL             /* letters, then ellipsis dims */

static void einsum_params_free(void *pv)
{
    struct einsum_params *p = pv;
    if (!p)
        return;
    for (int i = 0; i < p->n_terms; i++)
        free(p->terms[i]);
    free(p->out);
    free(p);
}

static int letter_id(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    return -1;
}

static char id_letter(int id)
{
    return id < 26 ? (char)('A' + id) : (char)('a' + id - 26);
}

/* A term is letters with at most one "..." among them. */
static int term_ok(const char *t)
{
    const char *e = strstr(t, "...");
    if (e && strstr(e + 3, "."))
        return 0;
    for (const char *s = t; *s; s++) {
        if (e && s == e) {
            s += 2;
            continue;
        }
        if (letter_id(*s) < 0)
            return 0;
    }
    return 1;
}

static int einsum_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    const char *eq = onnx_node_attr_string(node, "equation", NULL);
    if (!eq)
        return shape_parse_error(err, err_size, node, "the equation attribute is required");
    struct einsum_params *p = calloc(1, sizeof *p);
    char *s = malloc(strlen(eq) + 1);
    if (!p || !s) {
        free(p);
        free(s);
        return shape_parse_error(err, err_size, node, "out of memory");
    }
    size_t k = 0;
    for (const char *c = eq; *c; c++)
        if (*c != ' ' && *c != '\t' && *c != '\n')
            s[k++] = *c;
    s[k] = 0;
    char *arrow = strstr(s, "->");
    if (arrow) {
        *arrow = 0;
        p->out = strdup(arrow + 2);
    }
    int bad = arrow && (!p->out || strstr(p->out, "->") || !term_ok(p->out));
    for (char *t = s; !bad;) {
        char *comma = strchr(t, ',');
        if (comma)
            *comma = 0;
        if (p->n_terms == EIN_MAX_TERMS || !term_ok(t) || !(p->terms[p->n_terms] = strdup(t)))
            bad = 1;
        else
            p->n_terms++;
        if (!comma)
            break;
        t = comma + 1;
    }
    if (!bad && p->out)
        for (const char *c = p->out; *c; c++)
            if (*c != '.' && strchr(c + 1, *c))
                bad = 2;
    free(s);
    if (bad) {
        einsum_params_free(p);
        return shape_parse_error(err, err_size, node,
                                 bad == 2 ? "equation '%s': a label repeats in the output"
                                          : "equation '%s' is not letters, commas, at most one '...' "
                                            "per term and at most one '->' (up to %d operands)",
                                 eq, EIN_MAX_TERMS);
    }
    *params = p;
    return 0;
}

/* ---- the plan: labels, sizes, output ------------------------------------------------ */

struct ein_plan {
    int n_in, ell;                           /* operands, ellipsis dims */
    int rank[EIN_MAX_TERMS];
    int lab[EIN_MAX_TERMS][TENSOR_MAX_RANK]; /* label of each operand axis */
    int n_out, out[EIN_MAXL];
    int64_t size[EIN_MAXL];
    int used[EIN_MAXL];
};

/* Labels of `term` for an operand of `rank` axes whose ellipsis covers the
 * last `e` of the plan's ellipsis dims; count, or -1 when they do not fit. */
static int term_labels(const char *term, int rank, int ell, int *lab)
{
    const char *e = strstr(term, "...");
    int letters = (int)strlen(term) - (e ? 3 : 0);
    if (e ? letters > rank : letters != rank)
        return -1;
    int ne = rank - letters, k = 0;
    for (const char *s = term; *s; s++) {
        if (e && s == e) {
            for (int j = 0; j < ne; j++)
                lab[k++] = EIN_LETTERS + ell - ne + j;
            s += 2;
            continue;
        }
        lab[k++] = letter_id(*s);
    }
    return k;
}

static int einsum_plan(const struct op_call *c, struct ein_plan *pl)
{
    const struct einsum_params *p = c->params;
    memset(pl, 0, sizeof *pl);
    if (c->n_in != p->n_terms)
        return op_error(c, "the equation has %d operand terms but the node has %d inputs",
                        p->n_terms, c->n_in);
    pl->n_in = c->n_in;
    for (int i = 0; i < c->n_in; i++) {
        const char *t = p->terms[i];
        int letters = (int)strlen(t) - (strstr(t, "...") ? 3 : 0);
        if (strstr(t, "...") && c->in[i]->rank - letters > pl->ell)
            pl->ell = c->in[i]->rank - letters;
    }
    for (int l = 0; l < EIN_MAXL; l++)
        pl->size[l] = 1;
    int count[EIN_MAXL] = { 0 };
    for (int i = 0; i < c->n_in; i++) {
        const struct tensor *x = c->in[i];
        pl->rank[i] = x->rank;
        if (term_labels(p->terms[i], x->rank, pl->ell, pl->lab[i]) < 0)
            return op_error(c, "input %d has rank %d, which term '%s' does not fit", i, x->rank,
                            p->terms[i]);
        for (int a = 0; a < x->rank; a++) {
            int l = pl->lab[i][a];
            int64_t d = x->dims[a];
            if (!pl->used[l] || pl->size[l] == 1)
                pl->size[l] = pl->used[l] && d == 1 ? pl->size[l] : d;
            else if (d != 1 && d != pl->size[l])
                return op_error(c, "label '%c' of input %d has extent %lld, elsewhere %lld",
                                l < EIN_LETTERS ? id_letter(l) : '.', i, (long long)d,
                                (long long)pl->size[l]);
            pl->used[l] = 1;
            count[l]++;
        }
        /* A repeated label within one operand is a diagonal: equal extents. */
        for (int a = 0; a < x->rank; a++)
            for (int b = a + 1; b < x->rank; b++)
                if (pl->lab[i][a] == pl->lab[i][b] && x->dims[a] != x->dims[b])
                    return op_error(c, "label '%c' repeats in input %d with extents %lld and %lld",
                                    id_letter(pl->lab[i][a]), i, (long long)x->dims[a],
                                    (long long)x->dims[b]);
    }
    if (p->out) {
        const char *e = strstr(p->out, "...");
        if (e && !pl->ell && !strstr(p->terms[0], "...")) {
            int any = 0;
            for (int i = 0; i < p->n_terms; i++)
                any |= strstr(p->terms[i], "...") != NULL;
            if (!any)
                return op_error(c, "the output has '...' but no input does");
        }
        for (const char *s = p->out; *s; s++) {
            if (e && s == e) {
                for (int j = 0; j < pl->ell; j++)
                    pl->out[pl->n_out++] = EIN_LETTERS + j;
                s += 2;
                continue;
            }
            int l = letter_id(*s);
            if (!pl->used[l])
                return op_error(c, "output label '%c' appears in no input", *s);
            pl->out[pl->n_out++] = l;
        }
    } else {
        for (int j = 0; j < pl->ell; j++)
            pl->out[pl->n_out++] = EIN_LETTERS + j;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1)
                pl->out[pl->n_out++] = l;
    }
    if (pl->n_out > TENSOR_MAX_RANK)
        return op_error(c, "output rank %d exceeds the maximum %d", pl->n_out, TENSOR_MAX_RANK);
    return 0;
}

static int ein_dtype_ok(int dt)
{
    return dt == ONNX_DTYPE_FLOAT || dt == ONNX_DTYPE_DOUBLE || dt == ONNX_DTYPE_FLOAT16 ||
           dt == ONNX_DTYPE_BFLOAT16 || dt == ONNX_DTYPE_INT32 || dt == ONNX_DTYPE_INT64;
}

static int einsum_infer(struct op_call *c)
{
    struct ein_plan pl;
    if (c->n_in < 1)
        return op_error(c, "needs at least one input");
    for (int i = 0; i < c->n_in; i++) {
        if (!ein_dtype_ok(c->in[i]->dtype))
            return ew_dtype_error(c, "an input", c->in[i]->dtype,
                                  "float, double, float16, bfloat16, int32, int64");
        if (c->in[i]->dtype != c->in[0]->dtype)
            return op_error(c, "input %d is %s, input 0 %s: they must match", i,
                            onnx_dtype_name(c->in[i]->dtype), onnx_dtype_name(c->in[0]->dtype));
    }
    if (einsum_plan(c, &pl))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = pl.n_out;
    for (int a = 0; a < pl.n_out; a++)
        y->dims[a] = pl.size[pl.out[a]];
    return 0;
}

/* ---- operands as strided views over labels -------------------------------------------- */

/* Distinct labels with their strides (a repeated label's strides added, a
 * broadcast axis stride 0); data in the compute dtype. */
struct ein_view {
    int n;
    int lab[EIN_MAXL];
    int64_t str[EIN_MAXL];
    const void *data;
};

static void view_of(const struct ein_plan *pl, int i, const struct tensor *x, const void *data,
                    struct ein_view *v)
{
    int64_t st[TENSOR_MAX_RANK];
    shape_strides(x, st);
    v->n = 0;
    v->data = data;
    for (int a = 0; a < x->rank; a++) {
        int l = pl->lab[i][a], k;
        int64_t s = x->dims[a] == 1 ? 0 : st[a];
        for (k = 0; k < v->n && v->lab[k] != l; k++)
            ;
        if (k == v->n) {
            v->lab[v->n] = l;
            v->str[v->n++] = s;
        } else {
            v->str[k] += s;
        }
    }
}

static int view_has(const struct ein_view *v, int l, int64_t *stride)
{
    for (int k = 0; k < v->n; k++)
        if (v->lab[k] == l) {
            if (stride)
                *stride = v->str[k];
            return 1;
        }
    if (stride)
        *stride = 0;
    return 0;
}

/* dst (contiguous over `out`) = src summed over `sum`, in the compute type. */
#define EIN_PACK_DEF(T, ACC, SFX)                                                        \
    static void ein_pack_##SFX(const T *src, T *dst, const struct einsum_loop *out,          \
                               const struct einsum_loop *sum)                                \
    {                                                                                     \
        int64_t n_out = 1, n_sum = 1;                                                     \
        for (int a = 0; a < out->n; a++)                                                  \
            n_out *= out->dim[a];                                                         \
        for (int a = 0; a < sum->n; a++)                                                  \
            n_sum *= sum->dim[a];                                                         \
        _Pragma("omp parallel for schedule(static) if (n_out * n_sum >= EW_PARALLEL_MIN)") \
        for (int64_t o = 0; o < n_out; o++) {                                             \
            int64_t r = o, base = 0;                                                      \
            for (int a = out->n - 1; a >= 0; a--) {                                       \
                int64_t q = r / out->dim[a];                                              \
                base += (r - q * out->dim[a]) * out->str[a];                              \
                r = q;                                                                    \
            }                                                                             \
            if (sum->n == 0) {                                                            \
                dst[o] = src[base];                                                       \
                continue;                                                                 \
            }                                                                             \
            ACC acc = 0;                                                                  \
            int64_t idx[EIN_MAXL] = { 0 }, off = base;                                    \
            for (int64_t s = 0; s < n_sum; s++) {                                         \
                acc = (ACC)(acc + (ACC)src[off]);                                         \
                for (int a = sum->n - 1; a >= 0; a--) {                                   \
                    off += sum->str[a];                                                   \
                    if (++idx[a] < sum->dim[a])                                           \
                        break;                                                            \
                    off -= sum->str[a] * sum->dim[a];                                     \
                    idx[a] = 0;                                                           \
                }                                                                         \
            }                                                                             \
            dst[o] = (T)acc;                                                              \
        }                                                                                 \
    }
EIN_PACK_DEF(float, double, f32)
EIN_PACK_DEF(double, double, f64)
EIN_PACK_DEF(int32_t, uint32_t, i32)
EIN_PACK_DEF(int64_t, uint64_t, i64)

static int ein_pack_cpu(struct op_call *c, int dt, const void *src, void *dst, const struct einsum_loop *out,
                        const struct einsum_loop *sum)
{
    (void)c;
    switch (dt) {
    case ONNX_DTYPE_FLOAT: ein_pack_f32(src, dst, out, sum); break;
    case ONNX_DTYPE_DOUBLE: ein_pack_f64(src, dst, out, sum); break;
    case ONNX_DTYPE_INT32: ein_pack_i32(src, dst, out, sum); break;
    default: ein_pack_i64(src, dst, out, sum); break;
    }
    return 0;
}

#define EIN_IGEMM_DEF(T, W, SFX)                                                          \
    static void ein_igemm_##SFX(int64_t batch, int64_t m, int64_t n, int64_t k,           \
                                const T *a, int ta, const T *b, int tb, T *cm)            \
    {                                                                                     \
        _Pragma("omp parallel for schedule(static) if (batch * m * n * k >= EW_PARALLEL_MIN)") \
        for (int64_t bm = 0; bm < batch * m; bm++) {                                      \
            int64_t bi = bm / m, i = bm % m;                                              \
            const T *ab = a + bi * m * k, *bb = b + bi * k * n;                           \
            for (int64_t j = 0; j < n; j++) {                                             \
                W s = 0;                                                                  \
                for (int64_t q = 0; q < k; q++)                                           \
                    s += (W)(ta ? ab[q * m + i] : ab[i * k + q]) *                        \
                         (W)(tb ? bb[j * k + q] : bb[q * n + j]);                         \
                cm[bm * n + j] = (T)s;                                                    \
            }                                                                             \
        }                                                                                 \
    }
EIN_IGEMM_DEF(int32_t, uint32_t, i32)
EIN_IGEMM_DEF(int64_t, uint64_t, i64)

/* C[b] (m x n, contiguous) = op(A[b]) op(B[b]) for every batch b. */
static int ein_gemm_cpu(struct op_call *c, int dt, int64_t batch, int64_t m, int64_t n, int64_t k,
                        const void *a, int ta, const void *b, int tb, void *cm)
{
    (void)c;
    for (int64_t bi = 0; bi < batch && dt == ONNX_DTYPE_FLOAT; bi++)
        nn_sgemm(ta, tb, m, n, k, 1.0f, (const float *)a + bi * m * k, ta ? m : k,
                 (const float *)b + bi * k * n, tb ? k : n, 0.0f, (float *)cm + bi * m * n, n);
    if (dt == ONNX_DTYPE_DOUBLE) {
        for (int64_t bi = 0; bi < batch; bi++) {
            double *cd = (double *)cm + bi * m * n;
            if (k == 0) {
                memset(cd, 0, sizeof(double) * (size_t)(m * n));
                continue;
            }
            if (m > 0 && n > 0)
                cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                            (blasint)m, (blasint)n, (blasint)k, 1.0, (const double *)a + bi * m * k,
                            (blasint)(ta ? m : k), (const double *)b + bi * k * n, (blasint)(tb ? k : n),
                            0.0, cd, (blasint)n);
        }
    } else if (dt == ONNX_DTYPE_INT32) {
        ein_igemm_i32(batch, m, n, k, a, ta, b, tb, cm);
    } else if (dt == ONNX_DTYPE_INT64) {
        ein_igemm_i64(batch, m, n, k, a, ta, b, tb, cm);
    }
    return 0;
}

static const struct einsum_backend ein_cpu = { .pack = ein_pack_cpu, .gemm = ein_gemm_cpu };

/* ---- the evaluation ---------------------------------------------------------------------- */

struct ein_run {
    struct op_call *c;
    const struct einsum_backend *be;
    const struct ein_plan *pl;
    int dt;                                /* compute dtype */
    size_t es;
    void *bufs[4 * EIN_MAX_TERMS + 4];
    int n_bufs;
};

static void *run_alloc(struct ein_run *r, int64_t elems)
{
    size_t bytes = r->es * (size_t)(elems > 0 ? elems : 1);
    void *p = r->c->env && r->c->env->scratch_alloc ? r->c->env->scratch_alloc(r->c->env->ctx, bytes) : NULL;
    if (!p) {
        op_error(r->c, "no scratch memory for %zu bytes of einsum intermediates", bytes);
        return NULL;
    }
    r->bufs[r->n_bufs++] = p;
    return p;
}

/* Is v, over the label order ord[0..n), exactly contiguous row-major? */
static int view_contiguous(const struct ein_run *r, const struct ein_view *v, const int *ord, int n)
{
    if (v->n != n)
        return 0;
    int64_t s = 1;
    for (int a = n - 1; a >= 0; a--) {
        int64_t st;
        int64_t d = r->pl->size[ord[a]];
        if (!view_has(v, ord[a], &st) || (d != 1 && st != s))
            return 0;
        s *= d;
    }
    return 1;
}

/* v packed over ord[0..n) (contiguous), every other label summed. */
static const void *view_pack(struct ein_run *r, const struct ein_view *v, const int *ord, int n)
{
    struct einsum_loop out = { 0 }, sum = { 0 };
    int64_t elems = 1;
    for (int a = 0; a < n; a++) {
        out.dim[out.n] = r->pl->size[ord[a]];
        view_has(v, ord[a], &out.str[out.n]);
        elems *= out.dim[out.n++];
    }
    for (int k = 0; k < v->n; k++) {
        int in_ord = 0;
        for (int a = 0; a < n; a++)
            in_ord |= ord[a] == v->lab[k];
        if (!in_ord) {
            sum.dim[sum.n] = r->pl->size[v->lab[k]];
            sum.str[sum.n++] = v->str[k];
        }
    }
    void *dst = run_alloc(r, elems);
    if (dst && r->be->pack(r->c, r->dt, v->data, dst, &out, &sum))
        return NULL;
    return dst;
}

/* Contracts a with b, keeping the labels with need[l] set; the result
 * (labels batch, M, N in that order) goes to `dst` when given, else to a new
 * buffer. 0, or -1 after a message. */
static int contract(struct ein_run *r, const struct ein_view *a, const struct ein_view *b,
                    const int *need, void *dst, struct ein_view *res)
{
    int bat[EIN_MAXL], mm[EIN_MAXL], nn[EIN_MAXL], kk[EIN_MAXL], nb = 0, nm = 0, nn_ = 0, nk = 0;
    int64_t B = 1, M = 1, N = 1, K = 1;
    const int64_t *size = r->pl->size;
    for (int i = 0; i < a->n; i++) {
        int l = a->lab[i], inb = view_has(b, l, NULL);
        if (inb && need[l])
            bat[nb++] = l, B *= size[l];
        else if (inb)
            kk[nk++] = l, K *= size[l];
        else if (need[l])
            mm[nm++] = l, M *= size[l];
    }
    for (int i = 0; i < b->n; i++) {
        int l = b->lab[i];
        if (!view_has(a, l, NULL) && need[l])
            nn[nn_++] = l, N *= size[l];
    }
    int ord[EIN_MAXL];
    const void *pa, *pb;
    int ta = 0, tb = 0;
    /* A as [batch, M, K], or [batch, K, M] read transposed. */
    memcpy(ord, bat, sizeof(int) * nb);
    memcpy(ord + nb, mm, sizeof(int) * nm);
    memcpy(ord + nb + nm, kk, sizeof(int) * nk);
    if (view_contiguous(r, a, ord, nb + nm + nk)) {
        pa = a->data;
    } else {
        memcpy(ord + nb, kk, sizeof(int) * nk);
        memcpy(ord + nb + nk, mm, sizeof(int) * nm);
        if (view_contiguous(r, a, ord, nb + nm + nk)) {
            pa = a->data;
            ta = 1;
        } else {
            memcpy(ord + nb, mm, sizeof(int) * nm);
            memcpy(ord + nb + nm, kk, sizeof(int) * nk);
            if (!(pa = view_pack(r, a, ord, nb + nm + nk)))
                return -1;
        }
    }
    memcpy(ord, bat, sizeof(int) * nb);
    memcpy(ord + nb, kk, sizeof(int) * nk);
    memcpy(ord + nb + nk, nn, sizeof(int) * nn_);
    if (view_contiguous(r, b, ord, nb + nk + nn_)) {
        pb = b->data;
    } else {
        memcpy(ord + nb, nn, sizeof(int) * nn_);
        memcpy(ord + nb + nn_, kk, sizeof(int) * nk);
        if (view_contiguous(r, b, ord, nb + nk + nn_)) {
            pb = b->data;
            tb = 1;
        } else {
            memcpy(ord + nb, kk, sizeof(int) * nk);
            memcpy(ord + nb + nk, nn, sizeof(int) * nn_);
            if (!(pb = view_pack(r, b, ord, nb + nk + nn_)))
                return -1;
        }
    }
    void *out = dst ? dst : run_alloc(r, B * M * N);
    if (!out)
        return -1;
    if (B * M * N > 0 && r->be->gemm(r->c, r->dt, B, M, N, K, pa, ta, pb, tb, out))
        return -1;
    /* The result's labels and contiguous strides (broadcast extents of 1 kept as 0). */
    res->n = 0;
    res->data = out;
    int all[EIN_MAXL];
    memcpy(all, bat, sizeof(int) * nb);
    memcpy(all + nb, mm, sizeof(int) * nm);
    memcpy(all + nb + nm, nn, sizeof(int) * nn_);
    int64_t s = 1;
    for (int i = nb + nm + nn_ - 1; i >= 0; i--) {
        res->lab[i] = all[i];
        res->str[i] = size[all[i]] == 1 ? 0 : s;
        s *= size[all[i]];
    }
    res->n = nb + nm + nn_;
    return 0;
}

/* Whether contract(a, b) would lay its result out in the output's label
 * order (batch, M, N as contract() orders them). */
static int contract_order_matches(const struct ein_plan *pl, const struct ein_view *a,
                                  const struct ein_view *b, const int *need)
{
    int ord[EIN_MAXL], n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a->n; i++) {
            int l = a->lab[i], inb = view_has(b, l, NULL);
            if (need[l] && (pass == 0 ? inb : !inb))
                ord[n++] = l;
        }
    for (int i = 0; i < b->n; i++)
        if (!view_has(a, b->lab[i], NULL) && need[b->lab[i]])
            ord[n++] = b->lab[i];
    if (n != pl->n_out)
        return 0;
    for (int i = 0; i < n; i++)
        if (ord[i] != pl->out[i])
            return 0;
    return 1;
}

int einsum_eval(struct op_call *c, const struct einsum_backend *be, int dtype, const void *const *data,
                void *final)
{
    struct ein_plan pl;
    if (einsum_plan(c, &pl))
        return -1;
    struct ein_run r = { .c = c, .be = be, .pl = &pl, .dt = dtype };
    r.es = onnx_dtype_size(dtype);
    int rc = -1;
    struct ein_view cur, nxt;
    view_of(&pl, 0, c->in[0], data[0], &cur);
    for (int i = 1; i < c->n_in; i++) {
        int need[EIN_MAXL] = { 0 };
        for (int a = 0; a < pl.n_out; a++)
            need[pl.out[a]] = 1;
        for (int j = i + 1; j < c->n_in; j++)
            for (int a = 0; a < pl.rank[j]; a++)
                need[pl.lab[j][a]] = 1;
        view_of(&pl, i, c->in[i], data[i], &nxt);
        /* The last step writes straight into the output when its label
         * order is the output's (the common attention patterns). */
        void *dst = NULL;
        if (i == c->n_in - 1 && contract_order_matches(&pl, &cur, &nxt, need))
            dst = final;
        if (contract(&r, &cur, &nxt, need, dst, &cur))
            goto done;
    }
    if (cur.data != final) {
        struct einsum_loop out = { 0 }, sum = { 0 };
        for (int a = 0; a < pl.n_out; a++) {
            out.dim[out.n] = pl.size[pl.out[a]];
            view_has(&cur, pl.out[a], &out.str[out.n]);
            out.n++;
        }
        for (int k = 0; k < cur.n; k++) {
            int in_out = 0;
            for (int a = 0; a < pl.n_out; a++)
                in_out |= pl.out[a] == cur.lab[k];
            if (!in_out) {
                sum.dim[sum.n] = pl.size[cur.lab[k]];
                sum.str[sum.n++] = cur.str[k];
            }
        }
        if (be->pack(c, dtype, cur.data, final, &out, &sum))
            goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < r.n_bufs; i++)
        c->env->scratch_free(c->env->ctx, r.bufs[i]);
    return rc;
}

/* float16 and bfloat16 run the float path on converted copies. */
static int einsum_cpu(struct op_call *c)
{
    struct tensor *y = c->out[0];
    int dt = y->dtype, half = dt == ONNX_DTYPE_FLOAT16 || dt == ONNX_DTYPE_BFLOAT16;
    if (!half) {
        const void *data[EIN_MAX_TERMS];
        for (int i = 0; i < c->n_in; i++)
            data[i] = c->in[i]->data;
        return einsum_eval(c, &ein_cpu, dt, data, y->data);
    }
    float *bufs[EIN_MAX_TERMS + 1] = { 0 };
    const void *data[EIN_MAX_TERMS] = { 0 };
    int rc = -1, n_bufs = 0;
    for (int i = 0; i <= c->n_in; i++) {
        int64_t n = i < c->n_in ? tensor_numel(c->in[i]) : tensor_numel(y);
        size_t bytes = sizeof(float) * (size_t)(n ? n : 1);
        bufs[i] = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes) : NULL;
        if (!bufs[i]) {
            op_error(c, "no scratch memory for %zu bytes of float copies", bytes);
            goto done;
        }
        n_bufs = i + 1;
        if (i < c->n_in) {
            const uint16_t *h = c->in[i]->data;
            for (int64_t j = 0; j < n; j++)
                bufs[i][j] = dt == ONNX_DTYPE_FLOAT16 ? ew_f16_to_f32(h[j]) : ew_bf16_to_f32(h[j]);
            data[i] = bufs[i];
        }
    }
    if (einsum_eval(c, &ein_cpu, ONNX_DTYPE_FLOAT, data, bufs[c->n_in]))
        goto done;
    {
        int64_t n = tensor_numel(y);
        uint16_t *h = y->data;
        for (int64_t j = 0; j < n; j++)
            h[j] = dt == ONNX_DTYPE_FLOAT16 ? ew_f32_to_f16(bufs[c->n_in][j]) : ew_f32_to_bf16(bufs[c->n_in][j]);
    }
    rc = 0;
done:
    for (int i = 0; i < n_bufs; i++)
        c->env->scratch_free(c->env->ctx, bufs[i]);
    return rc;
}

static struct op_cost einsum_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    struct ein_plan pl;
    if (einsum_plan(c, &pl))
        return cost;
    /* Every label's extent multiplied: the work of the one loop nest over all
     * labels, which the GEMMs do without the summed-away repeats. */
    double work = 1;
    for (int l = 0; l < EIN_MAXL; l++)
        if (pl.used[l])
            work *= (double)pl.size[l];
    cost.flops = 2 * work;
    return cost;
}

/* ---- gradient ----------------------------------------------------------------------------- */

/* A constant of x's dtype: ones of shape [n], or the n x n identity. */
static int ein_const(struct grad_ctx *g, int dtype, int64_t n, int eye)
{
    struct tensor t = { .dtype = dtype, .rank = eye ? 2 : 1, .dims = { n, n } };
    size_t es = onnx_dtype_size(dtype), count = (size_t)(eye ? n * n : n);
    t.data = calloc(count ? count : 1, es);
    if (!t.data)
        return grad_error(g, "out of host memory for an einsum gradient constant");
    for (int64_t i = 0; i < n; i++) {
        size_t at = (size_t)(eye ? i * n + i : i);
        switch (dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)t.data)[at] = 1.0f; break;
        case ONNX_DTYPE_DOUBLE: ((double *)t.data)[at] = 1.0; break;
        case ONNX_DTYPE_FLOAT16: ((uint16_t *)t.data)[at] = 0x3c00; break;
        case ONNX_DTYPE_BFLOAT16: ((uint16_t *)t.data)[at] = 0x3f80; break;
        case ONNX_DTYPE_INT32: ((int32_t *)t.data)[at] = 1; break;
        default: ((int64_t *)t.data)[at] = 1; break;
        }
    }
    int h = g->constant(g, &t);
    free(t.data);
    return h;
}

static int einsum_grad(struct grad_ctx *g)
{
    const struct op_call *c = g->fwd;
    struct ein_plan pl;
    if (g->dy[0] < 0)
        return 0;
    if (einsum_plan(c, &pl))
        return shape_grad_fwd_error(g);
    int dtype = c->in[0]->dtype;
    /* Explicit letters for every label: ellipsis dims take unused letters. */
    char letter[EIN_MAXL + 2 * TENSOR_MAX_RANK];
    int taken[EIN_LETTERS] = { 0 }, next_free = 0;
    for (int l = 0; l < EIN_LETTERS; l++) {
        letter[l] = id_letter(l);
        taken[l] = pl.used[l];
    }
#define EIN_FRESH(dst)                                                                   \
    do {                                                                                 \
        while (next_free < EIN_LETTERS && taken[next_free])                              \
            next_free++;                                                                 \
        if (next_free == EIN_LETTERS)                                                    \
            return grad_error(g, "the einsum gradient needs more than 52 distinct labels"); \
        taken[next_free] = 1;                                                            \
        (dst) = id_letter(next_free);                                                    \
    } while (0)
    for (int j = 0; j < pl.ell; j++)
        EIN_FRESH(letter[EIN_LETTERS + j]);
    for (int i = 0; i < c->n_in; i++) {
        if (!g->need_dx[i])
            continue;
        const struct tensor *x = c->in[i];
        char eq[8 * EIN_MAXL + 4 * EIN_MAX_TERMS], target[TENSOR_MAX_RANK + 1];
        int ins[EIN_MAX_TERMS + 3 * TENSOR_MAX_RANK], n_ins = 0;
        size_t k = 0;
        /* dy, then the other operands as they were. */
        for (int a = 0; a < pl.n_out; a++)
            eq[k++] = letter[pl.out[a]];
        ins[n_ins++] = g->dy[0];
        for (int j = 0; j < c->n_in; j++) {
            if (j == i)
                continue;
            eq[k++] = ',';
            for (int a = 0; a < pl.rank[j]; a++)
                eq[k++] = letter[pl.lab[j][a]];
            ins[n_ins++] = g->in[j];
        }
        /* The target labels; fresh ones for repeats and broadcast axes. */
        for (int a = 0; a < x->rank; a++) {
            int l = pl.lab[i][a], repeat = 0;
            for (int b = 0; b < a; b++)
                repeat |= pl.lab[i][b] == l;
            char t = letter[l];
            if (x->dims[a] == 1 && pl.size[l] != 1) {
                EIN_FRESH(t);
                eq[k++] = ',';
                eq[k++] = t;
                if ((ins[n_ins++] = ein_const(g, dtype, 1, 0)) < 0)
                    return -1;
            } else if (repeat) {
                EIN_FRESH(t);
                eq[k++] = ',';
                eq[k++] = letter[l];
                eq[k++] = t;
                if ((ins[n_ins++] = ein_const(g, dtype, pl.size[l], 1)) < 0)
                    return -1;
            }
            target[a] = t;
        }
        target[x->rank] = 0;
        /* Labels only this operand had (summed in the forward pass) come back
         * through ones. */
        for (int a = 0; a < x->rank; a++) {
            eq[k] = 0;
            if (strchr(eq, target[a]))
                continue;
            int l = pl.lab[i][a];
            eq[k++] = ',';
            eq[k++] = target[a];
            if ((ins[n_ins++] = ein_const(g, dtype, pl.size[l], 0)) < 0)
                return -1;
        }
        eq[k++] = '-';
        eq[k++] = '>';
        memcpy(eq + k, target, (size_t)x->rank + 1);
        struct onnx_attr attr = { .name = "equation", .type = ONNX_ATTR_STRING, .s = eq,
                                  .s_len = strlen(eq) };
        int dx;
        if (g->emit(g, "Einsum", &attr, 1, n_ins, ins, 1, &dx) || g->add_dx(g, i, dx))
            return -1;
    }
#undef EIN_FRESH
    return 0;
}

const struct op_def op_einsum = {
    .domain = "", .name = "Einsum",
    .since = { 12, 28 },
    .min_in = 1, .max_in = EIN_MAX_TERMS, .min_out = 1, .max_out = 1,
    .parse = einsum_parse,
    .params_free = einsum_params_free,
    .infer = einsum_infer,
    .cost = einsum_cost,
    .kernel = { [BACKEND_CPU] = einsum_cpu },
    .grad = einsum_grad,
    .grad_saves_in = 0xffffffffu,
};
