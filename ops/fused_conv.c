/* ops/fused_conv.c — dtrexec:FusedConv, the convolution of an inference
 * graph after runtime/fuse.c has rewritten it: Conv, then optionally a folded
 * BatchNormalization, a residual Add and an activation, in one oneDNN
 * primitive. No gradient: training never sees it.
 *
 *   inputs  0 X, 1 W, 2 B (optional),
 *           3..6 BatchNormalization's scale, bias, mean, var (all or none),
 *           7 R, the residual added to the result (optional),
 *           8 a weight cache (optional, float32, op_fused_conv_cache_bytes())
 *   output  Y = act(conv(X, W * a) + (B - mean) * a + bias + R),
 *           a = scale / sqrt(var + epsilon) per output channel
 *   attributes: Conv's, epsilon, activation ("", "Relu", "LeakyRelu",
 *           "Clip"), alpha, beta, x_blocked, y_blocked, r_blocked
 *
 * Post-ops: the activation is an eltwise post-op and the residual a
 * binary-add post-op, on the blocked layouts, where oneDNN's jit kernels
 * read R in place. A residual makes the call take the blocked layouts when
 * its channels allow; otherwise (the plain layout, oneDNN's gemm
 * convolution) our own loop adds R and applies the activation after the
 * convolution: oneDNN 2.6's gemm convolution runs binary and sum post-ops
 * through reference code, 10-100x slower than the convolution itself
 * (ResNet-50's 56x56 1x1 conv3 with a sum post-op: 20-25 ms against 0.8).
 *
 * Layouts: X, Y and R may hold oneDNN's channel-blocked layout instead of
 * NCHW (x_blocked, ...): the fuse pass sets it on values that only fused
 * convolutions read, so that chains of convolutions skip the reorders to and
 * from NCHW around every call. A blocked tensor has the bytes of its NCHW
 * shape (channels are a multiple of the block).
 *
 * The weight cache: folding and reordering the weights into the primitive's
 * layout costs as much as a small convolution, so the first execution
 * writes the folded, reordered weights and bias into input 8 (persistent
 * memory the fuse pass allocates in the arena) behind a header holding the
 * layout; later executions read them when the layout still matches. Input 8
 * is thus written by the kernel, like BatchNormalization's running
 * statistics: the same bytes every time, from inputs that never change in an
 * inference session. Without a cache (or one too small) the kernel folds and
 * reorders into scratch on every call.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

enum {
    FC_IN_X = 0, FC_IN_W, FC_IN_B, FC_IN_SCALE, FC_IN_BN_BIAS, FC_IN_MEAN, FC_IN_VAR, FC_IN_R, FC_IN_CACHE,
    FC_N_IN,
};

#define FC_CACHE_MAGIC 0x31564e4f43444655ull   /* "UFDCONV1" */
#define FC_ALIGN 64

/* What the cache begins with: the layout of the weights that follow. */
struct fc_cache_header {
    uint64_t magic;
    uint64_t weight_bytes;
    dnnl_memory_desc_t md;
};

static size_t fc_round(size_t n, size_t to) { return (n + to - 1) / to * to; }

static size_t fc_header_bytes(void) { return fc_round(sizeof(struct fc_cache_header), FC_ALIGN); }

size_t op_fused_conv_cache_bytes(const struct tensor *w, int64_t group)
{
    if (w->rank < 3 || group < 1)
        return 0;
    int64_t o = w->dims[0], i = w->dims[1], k = 1;
    for (int d = 2; d < w->rank; d++)
        k *= w->dims[d];
    /* oneDNN's blocked weight layouts pad channels to their blocks (16 or
     * 64 wide); depthwise ones pad the groups only. */
    size_t floats;
    if (group == 1)
        floats = fc_round((size_t)o, 64) * fc_round((size_t)i, 64) * (size_t)k;
    else if (i == 1 && o == group)
        floats = fc_round((size_t)o, 64) * (size_t)k;
    else
        floats = (size_t)group * fc_round((size_t)(o / group), 64) * fc_round((size_t)i, 64) * (size_t)k;
    return fc_header_bytes() + floats * sizeof(float) + fc_round((size_t)o, 64) * sizeof(float);
}

/* ---- attributes and shapes ------------------------------------------------- */

static int fc_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    struct fused_conv_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (FusedConv): out of memory", node->name);
        return -1;
    }
    if (nn_window_attrs_parse(node, &p->conv.w, err, err_size))
        goto fail;
    p->conv.group = onnx_node_attr_int(node, "group", 1);
    if (p->conv.group < 1) {
        snprintf(err, err_size, "node '%s' (FusedConv): group = %lld must be >= 1", node->name,
                 (long long)p->conv.group);
        goto fail;
    }
    p->epsilon = onnx_node_attr_float(node, "epsilon", 1e-5f);
    p->alpha = onnx_node_attr_float(node, "alpha", 0.0f);
    p->beta = onnx_node_attr_float(node, "beta", 0.0f);
    const char *act = onnx_node_attr_string(node, "activation", "");
    static const char *const acts[] = { "", "Relu", "LeakyRelu", "Clip" };
    p->act = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(act, acts[i]))
            p->act = i;
    if (p->act < 0) {
        snprintf(err, err_size, "node '%s' (FusedConv): activation '%s' is not one of Relu, LeakyRelu, Clip",
                 node->name, act);
        goto fail;
    }
    p->x_blocked = onnx_node_attr_int(node, "x_blocked", 0) != 0;
    p->y_blocked = onnx_node_attr_int(node, "y_blocked", 0) != 0;
    p->r_blocked = onnx_node_attr_int(node, "r_blocked", 0) != 0;
    *params = p;
    return 0;
fail:
    free(p);
    return -1;
}

static const struct tensor *fc_in(const struct op_call *c, int i)
{
    return i < c->n_in ? c->in[i] : NULL;
}

/* The block of the channel-blocked layouts: what oneDNN's jit kernels use. */
static int fc_block(void)
{
    return __builtin_cpu_supports("avx512f") ? 16 : 8;
}

static int fc_geom(const struct op_call *c, struct nn_geom *g)
{
    const struct fused_conv_params *p = c->params;
    if (nn_conv_geom(c, g))
        return -1;
    char d[128], e[128];
    int n_bn = 0;
    for (int i = FC_IN_SCALE; i <= FC_IN_VAR; i++) {
        const struct tensor *t = fc_in(c, i);
        if (!t)
            continue;
        n_bn++;
        if (t->dtype != ONNX_DTYPE_FLOAT || tensor_numel(t) != g->m)
            return op_error(c, "BatchNormalization input %d %s must be float32 with %lld elements", i,
                            tensor_describe(t, d, sizeof d), (long long)g->m);
    }
    if (n_bn != 0 && n_bn != 4)
        return op_error(c, "the BatchNormalization inputs 3..6 come all together or not at all");
    int blk = fc_block();
    if ((p->x_blocked && g->c % blk) || ((p->y_blocked || p->r_blocked) && g->m % blk))
        return op_error(c, "blocked layouts need channels in multiples of %d, got %lld -> %lld", blk,
                        (long long)g->c, (long long)g->m);
    const struct tensor *r = fc_in(c, FC_IN_R);
    if (r) {
        int same = r->dtype == ONNX_DTYPE_FLOAT && r->rank == g->nsp + 2 && r->dims[0] == g->n && r->dims[1] == g->m;
        for (int i = 0; same && i < g->nsp; i++)
            same = r->dims[2 + i] == g->out[3 - g->nsp + i];
        if (!same)
            return op_error(c, "the residual %s must have the convolution's shape (X %s)",
                            tensor_describe(r, d, sizeof d), tensor_describe(c->in[0], e, sizeof e));
    }
    const struct tensor *cache = fc_in(c, FC_IN_CACHE);
    if (cache && (cache->dtype != ONNX_DTYPE_FLOAT || cache->rank != 1))
        return op_error(c, "the weight cache %s must be a 1-D float32 tensor", tensor_describe(cache, d, sizeof d));
    return 0;
}

static int fc_infer(struct op_call *c)
{
    struct nn_geom g;
    if (fc_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
    y->rank = (int)g.nsp + 2;
    y->dims[0] = g.n;
    y->dims[1] = g.m;
    for (int i = 0; i < g.nsp; i++)
        y->dims[2 + i] = g.out[3 - g.nsp + i];
    return 0;
}

static struct op_cost fc_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *w = c->in[FC_IN_W], *y = c->out[0];
    const struct fused_conv_params *p = c->params;
    if (y && w->rank >= 2) {
        double per = 2.0 * nn_weight_taps(w) + (fc_in(c, FC_IN_R) ? 1.0 : 0.0) + (p->act ? 1.0 : 0.0);
        cost.flops = per * (double)tensor_numel(y);
    }
    return cost;
}

/* ---- oneDNN primitives ----------------------------------------------------- */

enum fc_kind {
    FC_CONV = 1,
    FC_REORDER_SRC,                    /* X as given -> the primitive's source */
    FC_REORDER_RES,                    /* R as given -> the primitive's destination layout */
    FC_REORDER_DST,                    /* the primitive's destination -> Y as given */
    FC_REORDER_WEI,                    /* folded OIHW weights -> the primitive's */
};

/* Everything a primitive depends on; bytes compared by the cache in dnnl.c. */
struct fc_key {
    int32_t kind;                      /* enum fc_kind */
    int32_t has_bias, has_res, act;
    float alpha, beta;
    int32_t x_blocked, y_blocked, r_blocked;
    int32_t blocked;                   /* the primitive runs on blocked layouts */
    int32_t block;
    int32_t pad_;
    struct nn_geom g;
};

static dnnl_format_tag_t fc_blocked_tag(int nsp, int block)
{
    static const dnnl_format_tag_t b16[4] = { 0, dnnl_nCw16c, dnnl_nChw16c, dnnl_nCdhw16c };
    static const dnnl_format_tag_t b8[4] = { 0, dnnl_nCw8c, dnnl_nChw8c, dnnl_nCdhw8c };
    return block == 16 ? b16[nsp] : b8[nsp];
}

/* The same dims in another layout. */
static void fc_md_retag(const dnnl_memory_desc_t *plain, dnnl_format_tag_t tag, dnnl_memory_desc_t *out)
{
    dnnl_memory_desc_init_by_tag(out, plain->ndims, plain->dims, dnnl_f32, tag);
}

/* The descriptors of X, Y and R as the tensors hold them. */
static void fc_user_mds(const struct fc_key *k, dnnl_memory_desc_t *x, dnnl_memory_desc_t *y,
                        dnnl_memory_desc_t *r, dnnl_memory_desc_t *w_plain)
{
    dnnl_memory_desc_t bia;
    nn_conv_dnnl_mds(&k->g, 0, 0, x, w_plain, &bia, y);
    *r = *y;
    dnnl_format_tag_t blk = fc_blocked_tag((int)k->g.nsp, k->block);
    if (k->x_blocked)
        fc_md_retag(x, blk, x);
    if (k->r_blocked)
        fc_md_retag(r, blk, r);
    if (k->y_blocked)
        fc_md_retag(y, blk, y);
}

static dnnl_status_t fc_conv_pd(const struct fc_key *k, dnnl_engine_t eng, const_dnnl_primitive_attr_t attr,
                                dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t src, wei, bia, dst, ux, uy, ur, wp;
    fc_user_mds(k, &ux, &uy, &ur, &wp);
    nn_conv_dnnl_mds(&k->g, k->has_bias, k->blocked, &src, &wei, &bia, &dst);
    if (k->blocked) {
        /* A blocked input is read as it is; the destination's layout is
         * fixed where it is blocked or where a residual must share it, and
         * then the source's too where its channels allow: left to oneDNN,
         * a source may take another layout (nhwc for depthwise), and mixed
         * layouts fall to its reference kernel (MobileNetV2's depthwise
         * convolutions: 10 ms against 0.1). */
        dnnl_format_tag_t blk = fc_blocked_tag((int)k->g.nsp, k->block);
        if (k->y_blocked || k->has_res) {
            fc_md_retag(&uy, blk, &dst);
            if (k->g.c % k->block == 0)
                fc_md_retag(&ux, blk, &src);
        }
        if (k->x_blocked)
            src = ux;
    }
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = nn_conv_dnnl_fwd_desc(&k->g, &src, &wei, k->has_bias ? &bia : NULL, &dst, &cd);
    if (st != dnnl_success)
        return st;
    dnnl_primitive_attr_t a = NULL;
    dnnl_post_ops_t po = NULL;
    st = attr ? dnnl_primitive_attr_clone(&a, attr) : dnnl_primitive_attr_create(&a);
    if (st != dnnl_success || (st = dnnl_post_ops_create(&po)) != dnnl_success)
        goto out;
    if (k->has_res)
        st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &dst);
    if (st == dnnl_success && k->act == FUSED_CONV_ACT_RELU)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    else if (st == dnnl_success && k->act == FUSED_CONV_ACT_LEAKY_RELU)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, k->alpha, 0.0f);
    else if (st == dnnl_success && k->act == FUSED_CONV_ACT_CLIP)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, k->alpha, k->beta);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(a, po);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(pd, &cd, a, eng, NULL);
out:
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(a);
    return st;
}

static dnnl_status_t fc_build(const void *key, dnnl_engine_t eng, const_dnnl_primitive_attr_t attr,
                              dnnl_primitive_desc_t *pd)
{
    const struct fc_key *k = key;
    if (k->kind == FC_CONV)
        return fc_conv_pd(k, eng, attr, pd);
    struct fc_key ck = *k;
    ck.kind = FC_CONV;
    dnnl_primitive_desc_t cpd;
    dnnl_status_t st = fc_conv_pd(&ck, eng, NULL, &cpd);
    if (st != dnnl_success)
        return st;
    dnnl_memory_desc_t ux, uy, ur, wp;
    fc_user_mds(k, &ux, &uy, &ur, &wp);
    const dnnl_memory_desc_t *from = NULL, *to = NULL;
    switch (k->kind) {
    case FC_REORDER_SRC:
        from = &ux, to = dnnl_primitive_desc_query_md(cpd, dnnl_query_src_md, 0);
        break;
    case FC_REORDER_RES:
        from = &ur, to = dnnl_primitive_desc_query_md(cpd, dnnl_query_dst_md, 0);
        break;
    case FC_REORDER_DST:
        from = dnnl_primitive_desc_query_md(cpd, dnnl_query_dst_md, 0), to = &uy;
        break;
    default:
        from = &wp, to = dnnl_primitive_desc_query_md(cpd, dnnl_query_weights_md, 0);
        break;
    }
    st = dnnl_reorder_primitive_desc_create(pd, from, eng, to, eng, attr);
    dnnl_primitive_desc_destroy(cpd);
    return st;
}

static int fc_reorder(const struct op_call *c, const struct fc_key *conv, int kind,
                      const dnnl_memory_desc_t *from, const void *src, const dnnl_memory_desc_t *to, void *dst)
{
    struct fc_key k = *conv;
    k.kind = kind;
    struct nn_dnnl_arg a[2] = { { DNNL_ARG_FROM, from, (void *)src }, { DNNL_ARG_TO, to, dst } };
    return nn_dnnl_run(c, &k, sizeof k, fc_build, 2, a);
}

/* ---- weights: folding and the cache ----------------------------------------- */

/* W * a and (B - mean) * a + bias in OIHW order, a = scale / sqrt(var + eps)
 * (the arithmetic of BatchNormalization's own inference kernel). */
static void fc_fold(const struct op_call *c, const struct nn_geom *g, float *w, float *b)
{
    const struct fused_conv_params *p = c->params;
    const struct tensor *wt = c->in[FC_IN_W], *bt = fc_in(c, FC_IN_B);
    const float *w0 = wt->data, *b0 = bt ? bt->data : NULL;
    int64_t per = tensor_numel(wt) / g->m;
    if (!fc_in(c, FC_IN_SCALE)) {
        memcpy(w, w0, sizeof(float) * (size_t)tensor_numel(wt));
        for (int64_t o = 0; o < g->m; o++)
            b[o] = b0 ? b0[o] : 0.0f;
        return;
    }
    const float *scale = c->in[FC_IN_SCALE]->data, *bias = c->in[FC_IN_BN_BIAS]->data;
    const float *mean = c->in[FC_IN_MEAN]->data, *var = c->in[FC_IN_VAR]->data;
    for (int64_t o = 0; o < g->m; o++) {
        float a = scale[o] / sqrtf(var[o] + p->epsilon);
        for (int64_t i = 0; i < per; i++)
            w[o * per + i] = w0[o * per + i] * a;
        b[o] = ((b0 ? b0[o] : 0.0f) - mean[o]) * a + bias[o];
    }
}

/* The folded weights in the primitive's layout `want` and the folded bias:
 * from the cache when it holds them, else made (into the cache when it is
 * large enough, else into *scratch, which the caller frees). */
static int fc_weights(const struct op_call *c, const struct fc_key *key, const dnnl_memory_desc_t *want,
                      const float **w_out, const float **b_out, void **scratch)
{
    const struct tensor *ct = fc_in(c, FC_IN_CACHE);
    size_t wbytes = dnnl_memory_desc_get_size(want), woff = fc_header_bytes();
    size_t need = woff + fc_round(wbytes, FC_ALIGN) + sizeof(float) * (size_t)key->g.m;
    char *cache = ct && tensor_size_bytes(ct) >= need ? ct->data : NULL;
    struct fc_cache_header *h = (struct fc_cache_header *)cache;
    if (h && h->magic == FC_CACHE_MAGIC && h->weight_bytes == wbytes && dnnl_memory_desc_equal(&h->md, want)) {
        *w_out = (const float *)(cache + woff);
        *b_out = (const float *)(cache + woff + fc_round(wbytes, FC_ALIGN));
        return 0;
    }
    const struct tensor *wt = c->in[FC_IN_W];
    size_t plain_bytes = tensor_size_bytes(wt);
    /* scratch: the folded plain weights, then (without a cache) the
     * reordered weights and the bias */
    size_t total = fc_round(plain_bytes, FC_ALIGN) + (cache ? 0 : need);
    char *buf = nn_scratch_alloc(c, total);
    if (!buf)
        return op_error(c, "cannot get %zu bytes of scratch for the folded weights", total);
    *scratch = buf;
    char *dst = cache ? cache : buf + fc_round(plain_bytes, FC_ALIGN);
    float *wf = (float *)buf, *bf = (float *)(dst + woff + fc_round(wbytes, FC_ALIGN));
    if (cache)
        h->magic = 0;                  /* invalid until complete */
    fc_fold(c, &key->g, wf, bf);
    dnnl_memory_desc_t ux, uy, ur, wp;
    fc_user_mds(key, &ux, &uy, &ur, &wp);
    if (dnnl_memory_desc_equal(&wp, want))
        memcpy(dst + woff, wf, wbytes);
    else if (fc_reorder(c, key, FC_REORDER_WEI, &wp, wf, want, dst + woff))
        return -1;
    if (cache) {
        h->weight_bytes = wbytes;
        h->md = *want;
        h->magic = FC_CACHE_MAGIC;
    }
    *w_out = (const float *)(dst + woff);
    *b_out = bf;
    return 0;
}

/* ---- the kernel ------------------------------------------------------------- */

static float fc_act(int act, float alpha, float beta, float v)
{
    switch (act) {
    case FUSED_CONV_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case FUSED_CONV_ACT_LEAKY_RELU: return v > 0.0f ? v : alpha * v;
    case FUSED_CONV_ACT_CLIP: return v < alpha ? alpha : v > beta ? beta : v;
    default: return v;
    }
}

/* y = act(y + r) on the plain layout (see the header comment for why). */
static void fc_residual_plain(const struct fused_conv_params *p, float *y, const float *r, int64_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++)
        y[i] = fc_act(p->act, p->alpha, p->beta, y[i] + r[i]);
}

static int fc_cpu(struct op_call *c)
{
    const struct fused_conv_params *p = c->params;
    struct nn_geom g;
    if (fc_geom(c, &g))
        return -1;
    const struct tensor *r = fc_in(c, FC_IN_R);
    struct fc_key key;
    memset(&key, 0, sizeof key);
    key.kind = FC_CONV;
    key.block = fc_block();
    key.has_bias = fc_in(c, FC_IN_B) || fc_in(c, FC_IN_SCALE);
    key.x_blocked = p->x_blocked;
    key.y_blocked = p->y_blocked;
    key.r_blocked = p->r_blocked;
    key.blocked = p->x_blocked || p->y_blocked || p->r_blocked || nn_conv_use_blocked(&g)
                  || (r && g.m % key.block == 0);
    /* a residual on the plain layout is added by our own loop, and the
     * activation after it */
    int plain_res = r && !key.blocked;
    key.has_res = r && key.blocked;
    key.act = plain_res ? FUSED_CONV_ACT_NONE : p->act;
    key.alpha = plain_res ? 0.0f : p->alpha;
    key.beta = plain_res ? 0.0f : p->beta;
    key.g = g;

    dnnl_memory_desc_t want_w, want_src, want_dst, ux, uy, ur, wp;
    if (nn_dnnl_arg_md(c, &key, sizeof key, fc_build, DNNL_ARG_WEIGHTS, &want_w)
        || nn_dnnl_arg_md(c, &key, sizeof key, fc_build, DNNL_ARG_SRC, &want_src)
        || nn_dnnl_arg_md(c, &key, sizeof key, fc_build, DNNL_ARG_DST, &want_dst))
        return -1;
    fc_user_mds(&key, &ux, &uy, &ur, &wp);
    int reorder_src = !dnnl_memory_desc_equal(&ux, &want_src);
    int reorder_dst = !dnnl_memory_desc_equal(&uy, &want_dst);
    int reorder_res = key.has_res && !dnnl_memory_desc_equal(&ur, &want_dst);

    void *wscratch = NULL;
    const float *w = NULL, *b = NULL;
    if (fc_weights(c, &key, &want_w, &w, &b, &wscratch))
        return -1;
    size_t src_bytes = reorder_src ? fc_round(dnnl_memory_desc_get_size(&want_src), FC_ALIGN) : 0;
    size_t dst_bytes = reorder_dst ? fc_round(dnnl_memory_desc_get_size(&want_dst), FC_ALIGN) : 0;
    size_t res_bytes = reorder_res ? fc_round(dnnl_memory_desc_get_size(&want_dst), FC_ALIGN) : 0;
    char *buf = NULL;
    if (src_bytes + dst_bytes + res_bytes && !(buf = nn_scratch_alloc(c, src_bytes + dst_bytes + res_bytes))) {
        nn_scratch_free(c, wscratch);
        return op_error(c, "cannot get %zu bytes of scratch for oneDNN's layouts", src_bytes + dst_bytes + res_bytes);
    }
    void *x = c->in[FC_IN_X]->data, *y = c->out[0]->data;
    void *src = reorder_src ? buf : x, *dst = reorder_dst ? buf + src_bytes : y;
    void *res = key.has_res ? r->data : NULL;
    int rc = 0;
    if (reorder_src)
        rc = fc_reorder(c, &key, FC_REORDER_SRC, &ux, x, &want_src, src);
    if (!rc && reorder_res) {
        void *tmp = buf + src_bytes + dst_bytes;
        rc = fc_reorder(c, &key, FC_REORDER_RES, &ur, res, &want_dst, tmp);
        res = tmp;
    }
    if (!rc) {
        dnnl_memory_desc_t s_, w_, bia, d_;
        nn_conv_dnnl_mds(&g, 1, 0, &s_, &w_, &bia, &d_);
        struct nn_dnnl_arg args[5] = {
            { DNNL_ARG_SRC, &want_src, src }, { DNNL_ARG_WEIGHTS, &want_w, (void *)w },
            { DNNL_ARG_DST, &want_dst, dst }, { DNNL_ARG_BIAS, &bia, (void *)b },
            { DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, &want_dst, res },
        };
        int n = 3;
        if (key.has_bias)
            n++;
        else
            args[3] = args[4];
        if (key.has_res)
            n++;
        rc = nn_dnnl_run(c, &key, sizeof key, fc_build, n, args);
    }
    if (!rc && reorder_dst)
        rc = fc_reorder(c, &key, FC_REORDER_DST, &want_dst, dst, &uy, y);
    if (!rc && plain_res)
        fc_residual_plain(p, y, r->data, tensor_numel(c->out[0]));
    nn_scratch_free(c, buf);
    nn_scratch_free(c, wscratch);
    return rc;
}

const struct op_def op_fused_conv = {
    .domain = "dtrexec", .name = "FusedConv", .since = { 1 },
    .min_in = 2, .max_in = FC_N_IN, .min_out = 1, .max_out = 1,
    .parse = fc_parse, .infer = fc_infer, .cost = fc_cost,
    .kernel = { [BACKEND_CPU] = fc_cpu },
};
