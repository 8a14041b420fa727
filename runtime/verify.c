/* runtime/verify.c — recomputations checked bit for bit (runtime/verify.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/budget.h"
#include "runtime/device.h"
#include "runtime/hooks.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/verify.h"

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; b && i < n; i++)   /* NULL: a host copy could not be had */
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_value(struct dtrx_session *s, const struct rt_value *v, const void *data)
{
    size_t n = tensor_size_bytes(&v->t);
    return hash_bytes(rt_host_view(s, data, n), n);
}

/* The slot of DTR tensor st, growing the table; NULL without host memory.
 * Hashes are kept per tensor, not per storage: a call writing its output
 * over a dying input (forward_in_place) leaves one storage holding two
 * tensors' bytes in turn, and a recomputation of the input must match the
 * input's first bytes. */
static uint64_t *slot(struct rt_verify *vf, dtr_tensor st)
{
    if (st >= vf->capacity) {
        uint32_t cap = vf->capacity ? vf->capacity : 1024;
        while (cap <= st)
            cap *= 2;
        uint64_t *h = realloc(vf->hash, sizeof *h * cap);
        if (!h)
            return NULL;
        memset(h + vf->capacity, 0, sizeof *h * (cap - vf->capacity));
        vf->hash = h;
        vf->capacity = cap;
    }
    return &vf->hash[st];
}

static enum dtrx_status check_inputs(struct dtrx_session *s, const struct rt_call *c)
{
    /* Inputs computed in this step must still hold their bytes (persistent
     * inputs may change in place: running statistics). */
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i] < 0 || s->values[c->in[i]]->mem.storage || (c->in_place && i == 0))
            continue;   /* an in-place call's input 0 is its output now */
        struct rt_value *v = s->values[c->in[i]];
        dtr_tensor st = v->mem.dt;
        if (st < s->verify.capacity && s->verify.hash[st] && s->verify.hash[st] != hash_value(s, v, v->t.data))
            return rt_fail(DTRX_ERR_INTERNAL, "input '%s' of node '%s' no longer holds the bytes it was computed with",
                           v->name, c->name);
    }
    return DTRX_OK;
}

static enum dtrx_status verify_computed(struct dtrx_session *s, const struct rt_call *c, int recomputed)
{
    enum dtrx_status st = check_inputs(s, c);
    if (st)
        return st;
    for (int i = 0; i < c->n_out; i++) {
        if (c->out[i] < 0)
            continue;   /* views too: they are checked as inputs by their own hash */
        struct rt_value *v = s->values[c->out[i]];
        uint64_t *h = slot(&s->verify, v->mem.dt);
        if (!h)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        uint64_t now = hash_value(s, v, v->t.data);
        if (!recomputed) {
            *h = now;
        } else if (*h != now) {
            s->verify.failures++;
            return rt_fail(DTRX_ERR_INTERNAL,
                           "recomputing '%s' (output %d of node '%s', %s) gave different bytes than its first "
                           "execution: the kernel is not deterministic",
                           v->name, i, c->name, c->def->name);
        }
    }
    return DTRX_OK;
}

static const struct rt_call_hook verify_hook = { .computed = verify_computed };

void rt_verify_begin(struct dtrx_session *s)
{
    s->hooks[RT_HOOK_VERIFY] = s->verify.on ? &verify_hook : NULL;
}

void rt_verify_end(struct dtrx_session *s)
{
    s->hooks[RT_HOOK_VERIFY] = NULL;
    if (s->verify.hash)
        memset(s->verify.hash, 0, sizeof *s->verify.hash * s->verify.capacity);
}

void rt_verify_free(struct dtrx_session *s)
{
    rt_verify_end(s);
    free(s->verify.hash);
    s->verify.hash = NULL;
    s->verify.capacity = 0;
}

enum dtrx_status rt_verify_constant(struct dtrx_session *s, const struct rt_value *v)
{
    if (!s->verify.on)
        return DTRX_OK;
    uint64_t *h = slot(&s->verify, v->mem.dt);
    if (!h)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    *h = hash_value(s, v, v->mem.storage->data);
    return DTRX_OK;
}
