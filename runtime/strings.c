/* runtime/strings.c — the session's string heap.
 *
 * STRING tensors hold struct onnx_string handles in ordinary (arena) tensor
 * memory; the bytes those handles point to live outside the arena and the
 * budget: in the model (initializers, attributes) or here. Every string a
 * kernel makes (env->string_intern) and every string a caller binds as an
 * input is interned: one copy per distinct content, kept until the session
 * ends, so that
 *  - handles stay valid however long a value lives, is copied to a device
 *    and back, or is evicted (DTR can drop a string tensor's handles and
 *    recompute them: the replay yields the very same pointers, bit for bit,
 *    as --verify-remat checks), and
 *  - repeated runs over the same strings do not grow the heap.
 * Strings are never trainable: only float tensors are parameters. */
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/strings.h"

#define HEAP_CHUNK (64 * 1024)

struct heap_chunk {
    struct heap_chunk *next;
    size_t used, size;
    char bytes[];
};

struct heap_slot {
    const char *data;              /* NULL: empty slot */
    size_t len;
    uint64_t hash;
};

struct rt_string_heap {
    struct heap_chunk *chunks;
    struct heap_slot *slots;
    size_t n_slots, n_used;        /* n_slots a power of two, at most half full */
};

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;    /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
    return h;
}

static int heap_grow(struct rt_string_heap *h)
{
    size_t n = h->n_slots ? h->n_slots * 2 : 256;
    struct heap_slot *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < h->n_slots; i++) {
        const struct heap_slot *o = &h->slots[i];
        if (!o->data)
            continue;
        size_t k = o->hash & (n - 1);
        while (slots[k].data)
            k = (k + 1) & (n - 1);
        slots[k] = *o;
    }
    free(h->slots);
    h->slots = slots;
    h->n_slots = n;
    return 0;
}

static char *heap_copy(struct rt_string_heap *h, const char *bytes, size_t len)
{
    struct heap_chunk *c = h->chunks;
    if (!c || c->size - c->used < len) {
        size_t size = len > HEAP_CHUNK ? len : HEAP_CHUNK;
        if (!(c = malloc(sizeof *c + size)))
            return NULL;
        c->size = size;
        c->used = 0;
        /* a large string gets a chunk of its own behind the current one */
        if (len > HEAP_CHUNK && h->chunks) {
            c->next = h->chunks->next;
            h->chunks->next = c;
        } else {
            c->next = h->chunks;
            h->chunks = c;
        }
    }
    char *p = c->bytes + c->used;
    memcpy(p, bytes, len);
    c->used += len;
    return p;
}

/* The op_env hook: a stable session-owned pointer to a copy of the bytes,
 * the same pointer for the same contents; NULL when out of host memory. */
static const char *string_intern(void *ctx, const char *bytes, size_t len)
{
    struct dtrx_session *s = ctx;
    static const char empty[1] = "";
    if (!len)
        return empty;
    struct rt_string_heap *h = s->strings;
    if (!h && !(h = s->strings = calloc(1, sizeof *h)))
        return NULL;
    if (2 * (h->n_used + 1) > h->n_slots && heap_grow(h))
        return NULL;
    uint64_t hash = hash_bytes(bytes, len);
    size_t k = hash & (h->n_slots - 1);
    for (; h->slots[k].data; k = (k + 1) & (h->n_slots - 1))
        if (h->slots[k].hash == hash && h->slots[k].len == len && !memcmp(h->slots[k].data, bytes, len))
            return h->slots[k].data;
    char *p = heap_copy(h, bytes, len);
    if (!p)
        return NULL;
    h->slots[k] = (struct heap_slot){ .data = p, .len = len, .hash = hash };
    h->n_used++;
    return p;
}

void rt_strings_init(struct dtrx_session *s)
{
    s->env.string_intern = string_intern;
}

enum dtrx_status rt_strings_stable(struct dtrx_session *s, int dtype, const void *data, int64_t n,
                                   void **copy)
{
    *copy = NULL;
    if (dtype != ONNX_DTYPE_STRING)
        return DTRX_OK;
    const struct onnx_string *src = data;
    struct onnx_string *dst = malloc((size_t)(n > 0 ? n : 1) * sizeof *dst);
    if (!dst)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory for %lld strings", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        if (src[i].len && !src[i].data) {
            free(dst);
            return rt_fail(DTRX_ERR_INPUT, "string element %lld has %zu bytes but no data", (long long)i,
                           src[i].len);
        }
        dst[i] = (struct onnx_string){ .data = string_intern(s, src[i].data, src[i].len), .len = src[i].len };
        if (!dst[i].data) {
            free(dst);
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory for the string heap");
        }
    }
    *copy = dst;
    return DTRX_OK;
}

void rt_strings_free(struct dtrx_session *s)
{
    struct rt_string_heap *h = s->strings;
    if (!h)
        return;
    while (h->chunks) {
        struct heap_chunk *next = h->chunks->next;
        free(h->chunks);
        h->chunks = next;
    }
    free(h->slots);
    free(h);
    s->strings = NULL;
}
