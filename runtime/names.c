/* runtime/names.c — value look-up by name while a plan is built: an
 * open-addressing hash table from name to value index. */
#include <stdlib.h>
#include <string.h>

#include "runtime/names.h"

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

int rt_names_init(struct rt_names *m, int expected)
{
    size_t cap = 16;
    while (cap < (size_t)expected * 2)
        cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    return m->keys && m->vals ? 0 : -1;
}

void rt_names_free(struct rt_names *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

int rt_names_get(const struct rt_names *m, const char *name)
{
    for (size_t i = hash_name(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return -1;
        if (!strcmp(m->keys[i], name))
            return m->vals[i];
    }
}

/* The key is borrowed: it must outlive the table. Callers size the table for
 * every name they will insert, so it never fills. */
void rt_names_put(struct rt_names *m, const char *name, int value)
{
    size_t i = hash_name(name) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], name))
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = name;
    m->vals[i] = value;
}
