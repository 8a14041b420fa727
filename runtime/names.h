/* runtime/names.h — name -> index hash table used while building plans. */
#ifndef DTRX_RUNTIME_NAMES_H
#define DTRX_RUNTIME_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct rt_names {
    const char **keys;
    int *vals;
    size_t cap;
};

int rt_names_init(struct rt_names *m, int expected);
void rt_names_free(struct rt_names *m);
int rt_names_get(const struct rt_names *m, const char *name);   /* -1 if absent */
void rt_names_put(struct rt_names *m, const char *name, int value);

#endif
