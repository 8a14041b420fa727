/* runtime/finite.c — finding where a training step's values stopped being
 * finite. After a non-finite loss (train.c, diverged) the step runs again
 * with its call hook installed (rt_finite_watch), and rt_call_exec hands
 * every call here: the
 * first call with a NaN or infinite output is described, with any input
 * that was already non-finite (a weight, an input, targets). Values are
 * read through the budget's DTR bridge or the device's host view, so it
 * works under a budget and on CUDA; nothing is checked otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/budget.h"
#include "runtime/device.h"
#include "runtime/finite.h"
#include "runtime/memory.h"
#include "runtime/params.h"
#include "runtime/session.h"

/* Index of the first NaN or infinity in `n` elements of type `dtype`, -1. */
static int64_t first_nonfinite(int dtype, const void *data, int64_t n, double *value)
{
    for (int64_t i = 0; i < n; i++) {
        double v = 0;
        if (dtype == ONNX_DTYPE_FLOAT) {
            v = ((const float *)data)[i];
        } else if (dtype == ONNX_DTYPE_DOUBLE) {
            v = ((const double *)data)[i];
        } else {
            /* float16 and bfloat16: all exponent bits set */
            uint16_t h = ((const uint16_t *)data)[i];
            int bad = dtype == ONNX_DTYPE_FLOAT16 ? (h & 0x7c00) == 0x7c00 : (h & 0x7f80) == 0x7f80;
            int mantissa = dtype == ONNX_DTYPE_FLOAT16 ? (h & 0x3ff) : (h & 0x7f);
            v = !bad ? 0 : mantissa ? NAN : (h >> 15 ? -INFINITY : INFINITY);
        }
        if (!isfinite(v)) {
            *value = v;
            return i;
        }
    }
    return -1;
}

double rt_unsigned_nan(double v) { return isnan(v) ? NAN : v; }

/* Where value v first holds a non-finite element (-1: nowhere, or not a
 * float tensor that can be read). */
static int64_t value_nonfinite(struct dtrx_session *s, struct rt_value *v, double *value)
{
    if (v->list.container || !rt_dtype_is_float(v->t.dtype) || !s->memory->live(s, v))
        return -1;
    size_t bytes = tensor_size_bytes(&v->t);
    if (!bytes)
        return -1;
    int64_t at = -1;
    if (rt_budget_active(s)) {
        void *host = malloc(bytes);
        if (host && !s->memory->read(s, v, host))
            at = first_nonfinite(v->t.dtype, host, tensor_numel(&v->t), value);
        free(host);
    } else if (v->t.data) {
        const void *host = rt_host_view(s, v->t.data, bytes);
        if (host)
            at = first_nonfinite(v->t.dtype, host, tensor_numel(&v->t), value);
    }
    return at;
}

static void check_finite(struct dtrx_session *s, const struct rt_call *c)
{
    if (s->nonfinite[0])
        return;
    for (int i = 0; i < c->n_out; i++) {
        double bad;
        int64_t at = c->out[i] >= 0 ? value_nonfinite(s, s->values[c->out[i]], &bad) : -1;
        if (at < 0)
            continue;
        struct rt_value *y = s->values[c->out[i]];
        char a[128], b[128];
        size_t len = (size_t)snprintf(s->nonfinite, sizeof s->nonfinite,
                                      "the first non-finite value is output '%s' %s (%g at flat index %lld) of "
                                      "node '%s' (%s) in the %s pass", y->name, tensor_describe(&y->t, a, sizeof a),
                                      rt_unsigned_nan(bad), (long long)at, c->name, c->def->name, s->taping ? "forward" : "backward");
        /* Values no checked call made: weights, inputs, targets. */
        for (int k = 0; k < c->n_in && len < sizeof s->nonfinite; k++) {
            double v;
            struct rt_value *x = c->in[k] >= 0 ? s->values[c->in[k]] : NULL;
            int64_t xat = x ? value_nonfinite(s, x, &v) : -1;
            if (xat >= 0) {
                snprintf(s->nonfinite + len, sizeof s->nonfinite - len, ", whose input '%s' %s already holds %g "
                         "(at %lld)%s", x->name, tensor_describe(&x->t, b, sizeof b), rt_unsigned_nan(v), (long long)xat,
                         x->kind == RT_VALUE_INITIALIZER ? ": an initializer (loaded so, or made so by an update)" :
                         x->kind == RT_VALUE_INPUT ? ": a graph input" : "");
                return;
            }
        }
        if (len < sizeof s->nonfinite)
            snprintf(s->nonfinite + len, sizeof s->nonfinite - len, ", from finite inputs");
        return;
    }
}

static const struct rt_call_hook finite_hook = { .after = check_finite };

void rt_finite_watch(struct dtrx_session *s, int on)
{
    s->hooks[RT_HOOK_FINITE] = on ? &finite_hook : NULL;
}
