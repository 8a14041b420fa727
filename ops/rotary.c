/* ops/rotary.c — RotaryEmbedding (opset 23), float32: rotary positional
 * embeddings (RoPE). X is [B, H, S, D] or [B, S, H * D] (num_heads given);
 * the first rotary_embedding_dim (default D) values of every head are taken
 * as pairs — halves (x[i], x[i + rd/2]) or, interleaved, (x[2i], x[2i+1]) —
 * and each pair is rotated by the angle whose cosine and sine are
 * cos_cache/sin_cache at the token's position:
 *   (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2);
 * the rest of the head passes through. With position_ids [B, S] the caches
 * are [max_position + 1, rd/2] tables indexed by them; without, the caches
 * are [B, S, rd/2].
 *
 * Gradient: the rotation is orthogonal, so dX is dY rotated back — the same
 * operator on dY with the sine negated (Neg, then RotaryEmbedding). The
 * caches are treated as constants (no gradient): they are tables computed
 * from positions, not trained.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ops/nn-impl.h"
#include "ops/attn-params.h"

static int rope_parse(const struct onnx_node *node, int version, void **params,
                      char *err, size_t err_size)
{
    (void)version;
    struct rotary_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (RotaryEmbedding): out of memory", node->name);
        return -1;
    }
    p->interleaved = onnx_node_attr_int(node, "interleaved", 0) != 0;
    p->rotary_dim = onnx_node_attr_int(node, "rotary_embedding_dim", 0);
    p->num_heads = onnx_node_attr_int(node, "num_heads", 0);
    if (p->rotary_dim < 0 || p->num_heads < 0) {
        snprintf(err, err_size, "node '%s' (RotaryEmbedding): rotary_embedding_dim %lld and "
                 "num_heads %lld must not be negative", node->name, (long long)p->rotary_dim,
                 (long long)p->num_heads);
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

int nn_rope_dims(const struct op_call *c, struct nn_rope_dims *g)
{
    const struct rotary_params *p = c->params;
    const struct tensor *x = c->in[0], *cs = c->in[1], *sn = c->in[2];
    const struct tensor *pos = c->n_in > 3 ? c->in[3] : NULL;
    char d1[128], d2[128];
    if (x->dtype != ONNX_DTYPE_FLOAT || cs->dtype != ONNX_DTYPE_FLOAT || sn->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, got X %s, cos_cache %s, sin_cache %s",
                        onnx_dtype_name(x->dtype), onnx_dtype_name(cs->dtype), onnx_dtype_name(sn->dtype));
    if (x->rank == 4) {
        g->b = x->dims[0];
        g->h = x->dims[1];
        g->s = x->dims[2];
        g->d = x->dims[3];
        g->sh = g->s * g->d;
        g->ss = g->d;
        g->sb = g->h * g->sh;
    } else if (x->rank == 3) {
        if (p->num_heads <= 0)
            return op_error(c, "num_heads must be given for a 3-D input %s",
                            tensor_describe(x, d1, sizeof d1));
        if (x->dims[2] % p->num_heads)
            return op_error(c, "hidden size %lld is not a multiple of num_heads %lld",
                            (long long)x->dims[2], (long long)p->num_heads);
        g->b = x->dims[0];
        g->s = x->dims[1];
        g->h = p->num_heads;
        g->d = x->dims[2] / g->h;
        g->sh = g->d;
        g->ss = x->dims[2];
        g->sb = g->s * g->ss;
    } else {
        return op_error(c, "X must be 3-D or 4-D, got %s", tensor_describe(x, d1, sizeof d1));
    }
    g->rd = p->rotary_dim ? p->rotary_dim : g->d;
    if (g->rd > g->d || g->rd % 2)
        return op_error(c, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                        (long long)g->rd, (long long)g->d);
    if (!tensor_same_shape(cs, sn))
        return op_error(c, "cos_cache %s and sin_cache %s differ in shape",
                        tensor_describe(cs, d1, sizeof d1), tensor_describe(sn, d2, sizeof d2));
    int want_rank = pos ? 2 : 3;
    int ok = cs->rank == want_rank && cs->dims[want_rank - 1] == g->rd / 2;
    if (ok && !pos)
        ok = cs->dims[0] == g->b && cs->dims[1] == g->s;
    if (!ok)
        return op_error(c, "cos_cache %s must be %s with rotary_embedding_dim / 2 = %lld columns",
                        tensor_describe(cs, d1, sizeof d1), pos ? "[max_position + 1, rd/2]"
                        : "[batch, sequence, rd/2] (no position_ids)", (long long)(g->rd / 2));
    if (pos) {
        if (pos->dtype != ONNX_DTYPE_INT64 || pos->rank != 2 || pos->dims[0] != g->b
            || pos->dims[1] != g->s)
            return op_error(c, "position_ids must be int64 [%lld, %lld], got %s", (long long)g->b,
                            (long long)g->s, tensor_describe(pos, d1, sizeof d1));
    }
    return 0;
}

static int rope_infer(struct op_call *c)
{
    struct nn_rope_dims g;
    if (nn_rope_dims(c, &g))
        return -1;
    *c->out[0] = *c->in[0];
    c->out[0]->data = NULL;
    return 0;
}

static struct op_cost rope_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 3.0 * (double)tensor_numel(c->in[0]);
    return cost;
}

static int rope_cpu(struct op_call *c)
{
    const struct rotary_params *p = c->params;
    struct nn_rope_dims g;
    if (nn_rope_dims(c, &g))
        return -1;
    const struct tensor *pt = c->n_in > 3 ? c->in[3] : NULL;
    const int64_t *pos = pt ? pt->data : NULL;
    const int64_t npos = c->in[1]->dims[0], half = g.rd / 2;
    if (pos)
        for (int64_t i = 0; i < g.b * g.s; i++)
            if (pos[i] < 0 || pos[i] >= npos)
                return op_error(c, "position_ids[%lld] = %lld is outside the caches' %lld rows",
                                (long long)i, (long long)pos[i], (long long)npos);
    const float *x = c->in[0]->data, *cc = c->in[1]->data, *sc = c->in[2]->data;
    float *y = c->out[0]->data;
    const int64_t rows = g.b * g.s * g.h;
    /* step between the two values of a pair, and between pairs */
    const int64_t pair = p->interleaved ? 1 : half, step = p->interleaved ? 2 : 1;
#pragma omp parallel for schedule(static) if (rows * g.d > 65536)
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r % g.h, s = (r / g.h) % g.s, b = r / (g.h * g.s);
        const float *xr = x + b * g.sb + s * g.ss + h * g.sh;
        float *yr = y + b * g.sb + s * g.ss + h * g.sh;
        int64_t row = pos ? pos[b * g.s + s] : b * g.s + s;
        const float *cr = cc + row * half, *sr = sc + row * half;
        for (int64_t i = 0; i < half; i++) {
            float x1 = xr[i * step], x2 = xr[i * step + pair];
            yr[i * step] = cr[i] * x1 - sr[i] * x2;
            yr[i * step + pair] = sr[i] * x1 + cr[i] * x2;
        }
        for (int64_t i = g.rd; i < g.d; i++)
            yr[i] = xr[i];
    }
    return 0;
}

static int rope_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    const struct rotary_params *p = g->fwd->params;
    struct onnx_attr at[3] = {
        { .name = "interleaved", .type = ONNX_ATTR_INT, .i = p->interleaved },
        { .name = "rotary_embedding_dim", .type = ONNX_ATTR_INT, .i = p->rotary_dim },
        { .name = "num_heads", .type = ONNX_ATTR_INT, .i = p->num_heads },
    };
    int neg_sin;
    if (g->emit(g, "Neg", NULL, 0, 1, &g->in[2], 1, &neg_sin))
        return -1;
    int has_pos = g->fwd->n_in > 3 && g->fwd->in[3];
    int in[4] = { g->dy[0], g->in[1], neg_sin, has_pos ? g->in[3] : -1 }, dx;
    if (g->emit(g, "RotaryEmbedding", at, 3, has_pos ? 4 : 3, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_rotary_embedding = {
    .domain = "", .name = "RotaryEmbedding", .since = { 23 },
    .min_in = 3, .max_in = 4, .min_out = 1, .max_out = 1,
    .parse = rope_parse, .infer = rope_infer, .cost = rope_cost,
    .kernel = { [BACKEND_CPU] = rope_cpu },
    .grad = rope_grad,
    .grad_saves_in = (1u << 1) | (1u << 2) | (1u << 3),
};
