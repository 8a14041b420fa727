/* ops/syslib-impl.h — the forwarding definitions of ops/syslib_*.c: each
 * defines a library function under its own name (the prototype is the
 * library header's, which the definition must match), resolves the real one
 * on the first call and caches it. */
#ifndef DTRX_OPS_SYSLIB_IMPL_H
#define DTRX_OPS_SYSLIB_IMPL_H

#include <stdlib.h>

#include "ops/syslib.h"

#define SYSLIB_RESOLVE(lib, type, name)                                                                                \
    static type cached_;                                                                                               \
    type f = __atomic_load_n(&cached_, __ATOMIC_ACQUIRE);                                                              \
    if (!f) {                                                                                                          \
        f = (type)syslib_symbol(lib, #name);                                                                           \
        __atomic_store_n(&cached_, f, __ATOMIC_RELEASE);                                                               \
    }

/* A function returning `ret`. */
#define SYSLIB_FN(lib, ret, name, params, args)                                                                        \
    ret name params                                                                                                    \
    {                                                                                                                  \
        typedef ret(*fn_type) params;                                                                                  \
        SYSLIB_RESOLVE(lib, fn_type, name)                                                                             \
        return f args;                                                                                                 \
    }

/* A function returning nothing. */
#define SYSLIB_FN_VOID(lib, name, params, args)                                                                        \
    void name params                                                                                                   \
    {                                                                                                                  \
        typedef void(*fn_type) params;                                                                                 \
        SYSLIB_RESOLVE(lib, fn_type, name)                                                                             \
        f args;                                                                                                        \
    }

/* A function that does not return (it longjmps). */
#define SYSLIB_FN_NORETURN(lib, name, params, args)                                                                    \
    void name params                                                                                                   \
    {                                                                                                                  \
        typedef void(*fn_type) params;                                                                                 \
        SYSLIB_RESOLVE(lib, fn_type, name)                                                                             \
        f args;                                                                                                        \
        abort();                                                                                                       \
    }

#endif
