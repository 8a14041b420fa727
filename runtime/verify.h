/* runtime/verify.h — `--verify-remat` as a call hook (RT_HOOK_VERIFY,
 * verify.c). Under a budget, every call output's bytes are hashed when first
 * computed and compared each time DTR recomputes them; a recomputation that
 * differs by a single bit, or an input that no longer holds the bytes it was
 * computed with, stops the run naming the operator (exit 3). The DTR memory
 * (budget.c) reports each execution of a kernel, first or recomputed,
 * through rt_call_computed (exec.c), which runs the hooks' `computed`. */
#ifndef DTRX_RUNTIME_VERIFY_H
#define DTRX_RUNTIME_VERIFY_H

#include <stdint.h>

#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_value;

struct rt_verify {
    int on;                        /* the session asked for it (opts.verify_remat) */
    uint64_t *hash;                /* per DTR tensor: hash of its first computation, 0 for none */
    uint32_t capacity;
    long long failures;            /* recomputations that differed */
};

/* Installs the hook for a DTR instance's run or step when the session asked
 * for verification; rt_verify_end forgets the hashes and removes it. */
void rt_verify_begin(struct dtrx_session *s);
void rt_verify_end(struct dtrx_session *s);
void rt_verify_free(struct dtrx_session *s);
/* Hashes a persistent value just made a constant of the DTR instance (views
 * of it are checked against these bytes). */
enum dtrx_status rt_verify_constant(struct dtrx_session *s, const struct rt_value *v);

#endif
