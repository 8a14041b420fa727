/* ops/dnnl.c — the oneDNN side of the nn family: one CPU engine and stream,
 * and a small LRU cache of primitives keyed by the bytes of a caller-defined
 * key struct (op kind, shapes, window parameters).
 *
 * Why a cache of our own: creating a oneDNN primitive descriptor and primitive
 * costs tens to hundreds of microseconds (JIT code generation on a miss of
 * oneDNN's internal cache, descriptor matching on a hit), which on small
 * layers is more than the convolution itself. Repeated runs of a model (and
 * DTR recomputations) present the same shapes again, so each distinct shape is
 * built once.
 *
 * Primitives are built with a user-managed scratchpad, so the workspace of
 * every execution comes from the op_env's scratch allocator and counts
 * against the memory budget.
 *
 * The thread count is part of the key: oneDNN fixes a primitive's work split
 * when it is created, so a primitive is only reused at the thread count it
 * was built for (which also keeps results bit-identical per thread count).
 *
 * Calls are serialised by one mutex: a primitive must not be evicted from the
 * cache while it runs, and each oneDNN execution is itself parallel (OpenMP).
 */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"

#define DNNL_CACHE_SLOTS 256
#define DNNL_KEY_MAX 512

struct dnnl_slot {
    unsigned char key[DNNL_KEY_MAX];
    size_t key_len;
    int threads;                       /* OpenMP threads when built: oneDNN sizes
                                        * its work split at creation */
    dnnl_primitive_t prim;
    size_t scratch_bytes;
    uint64_t last_use;
};

static pthread_mutex_t dnnl_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t dnnl_eng;
static dnnl_stream_t dnnl_strm;
static struct dnnl_slot dnnl_cache[DNNL_CACHE_SLOTS];
static uint64_t dnnl_clock;

static int dnnl_setup_locked(const struct op_call *c)
{
    if (dnnl_strm)
        return 0;
    if (!dnnl_eng && dnnl_engine_create(&dnnl_eng, dnnl_cpu, 0) != dnnl_success)
        return op_error(c, "oneDNN: cannot create the CPU engine");
    if (dnnl_stream_create(&dnnl_strm, dnnl_eng, dnnl_stream_default_flags) != dnnl_success)
        return op_error(c, "oneDNN: cannot create a stream");
    return 0;
}

static struct dnnl_slot *dnnl_slot_find_locked(const struct op_call *c, const void *key,
                                               size_t key_len, nn_dnnl_build_fn build)
{
    struct dnnl_slot *victim = NULL;   /* an empty slot, else the least recently used */
    int threads = omp_get_max_threads();
    for (int i = 0; i < DNNL_CACHE_SLOTS; i++) {
        struct dnnl_slot *s = &dnnl_cache[i];
        if (s->prim && s->key_len == key_len && s->threads == threads
            && !memcmp(s->key, key, key_len)) {
            s->last_use = ++dnnl_clock;
            return s;
        }
        if (!s->prim) {
            if (!victim || victim->prim)
                victim = s;
        } else if (!victim || (victim->prim && s->last_use < victim->last_use)) {
            victim = s;
        }
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success
        || dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        op_error(c, "oneDNN: cannot create primitive attributes");
        return NULL;
    }
    dnnl_status_t st = build(key, dnnl_eng, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) {
        op_error(c, "oneDNN: no implementation for this shape (status %d)", (int)st);
        return NULL;
    }
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t scratch = smd ? dnnl_memory_desc_get_size(smd) : 0;
    st = dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        op_error(c, "oneDNN: cannot create the primitive (status %d)", (int)st);
        return NULL;
    }
    if (victim->prim)
        dnnl_primitive_destroy(victim->prim);
    memcpy(victim->key, key, key_len);
    victim->key_len = key_len;
    victim->threads = threads;
    victim->prim = prim;
    victim->scratch_bytes = scratch;
    victim->last_use = ++dnnl_clock;
    return victim;
}

int nn_dnnl_run(const struct op_call *c, const void *key, size_t key_len,
                nn_dnnl_build_fn build, int nargs, const struct nn_dnnl_arg *args)
{
    if (key_len > DNNL_KEY_MAX || nargs > 15)
        return op_error(c, "oneDNN: internal key of %zu bytes or %d arguments too large",
                        key_len, nargs);
    pthread_mutex_lock(&dnnl_lock);
    int rc = -1;
    dnnl_memory_t mems[16] = { 0 };
    dnnl_exec_arg_t exec[16];
    void *scratch = NULL;
    int n = 0;
    if (dnnl_setup_locked(c))
        goto out;
    struct dnnl_slot *s = dnnl_slot_find_locked(c, key, key_len, build);
    if (!s)
        goto out;
    const_dnnl_primitive_desc_t pd;
    dnnl_primitive_get_primitive_desc(s->prim, &pd);
    for (; n < nargs; n++) {
        const dnnl_memory_desc_t *md = args[n].md;
        if (!md)
            md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, args[n].arg);
        if (dnnl_memory_create(&mems[n], md, dnnl_eng, args[n].data) != dnnl_success) {
            op_error(c, "oneDNN: cannot wrap argument %d", args[n].arg);
            goto out;
        }
        exec[n].arg = args[n].arg;
        exec[n].memory = mems[n];
    }
    if (s->scratch_bytes) {
        scratch = nn_scratch_alloc(c, s->scratch_bytes);
        if (!scratch) {
            op_error(c, "cannot get %zu bytes of oneDNN scratchpad", s->scratch_bytes);
            goto out;
        }
        const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (dnnl_memory_create(&mems[n], smd, dnnl_eng, scratch) != dnnl_success) {
            op_error(c, "oneDNN: cannot wrap the scratchpad");
            goto out;
        }
        exec[n].arg = DNNL_ARG_SCRATCHPAD;
        exec[n].memory = mems[n];
        n++;
    }
    if (dnnl_primitive_execute(s->prim, dnnl_strm, n, exec) != dnnl_success
        || dnnl_stream_wait(dnnl_strm) != dnnl_success) {
        op_error(c, "oneDNN: execution failed");
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < 16; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    nn_scratch_free(c, scratch);
    pthread_mutex_unlock(&dnnl_lock);
    return rc;
}

/* The cached primitive for key, built if new, with the cache lock held for
 * the caller to release; NULL, unlocked, after an error. */
static struct dnnl_slot *slot_locked(const struct op_call *c, const void *key, size_t key_len, nn_dnnl_build_fn build)
{
    if (key_len > DNNL_KEY_MAX) {
        op_error(c, "oneDNN: internal key of %zu bytes too large", key_len);
        return NULL;
    }
    pthread_mutex_lock(&dnnl_lock);
    struct dnnl_slot *s = dnnl_setup_locked(c) ? NULL : dnnl_slot_find_locked(c, key, key_len, build);
    if (!s)
        pthread_mutex_unlock(&dnnl_lock);
    return s;
}

int nn_dnnl_arg_md(const struct op_call *c, const void *key, size_t key_len,
                   nn_dnnl_build_fn build, int arg, dnnl_memory_desc_t *md)
{
    struct dnnl_slot *s = slot_locked(c, key, key_len, build);
    if (!s)
        return -1;
    const_dnnl_primitive_desc_t pd;
    dnnl_primitive_get_primitive_desc(s->prim, &pd);
    const dnnl_memory_desc_t *q = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (q)
        *md = *q;
    else
        op_error(c, "oneDNN: the primitive has no argument %d", arg);
    pthread_mutex_unlock(&dnnl_lock);
    return q ? 0 : -1;
}

const char *nn_dnnl_impl_name(const void *key, size_t key_len)
{
    const char *name = "?";
    int threads = omp_get_max_threads();
    pthread_mutex_lock(&dnnl_lock);
    for (int i = 0; i < DNNL_CACHE_SLOTS; i++) {
        struct dnnl_slot *s = &dnnl_cache[i];
        if (s->prim && s->key_len == key_len && s->threads == threads
            && !memcmp(s->key, key, key_len)) {
            const_dnnl_primitive_desc_t pd;
            dnnl_primitive_get_primitive_desc(s->prim, &pd);
            const char *str = NULL;
            if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &str) == dnnl_success && str)
                name = str;
        }
    }
    pthread_mutex_unlock(&dnnl_lock);
    return name;
}

int nn_dnnl_scratch_bytes(const struct op_call *c, const void *key, size_t key_len, nn_dnnl_build_fn build,
                          size_t *bytes)
{
    struct dnnl_slot *s = slot_locked(c, key, key_len, build);
    if (!s)
        return -1;
    *bytes = s->scratch_bytes;
    pthread_mutex_unlock(&dnnl_lock);
    return 0;
}
