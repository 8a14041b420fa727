/* runtime/fuse.h — the inference graph optimization (fuse.c). */
#ifndef DTRX_RUNTIME_FUSE_H
#define DTRX_RUNTIME_FUSE_H

#include "runtime/dtrexec.h"

struct dtrx_session;

/* The inference graph optimization (fuse.c): applies it before a run when
 * the session's options ask for it and it has not been applied yet; whether
 * it was (a fused session must not train). */
enum dtrx_status rt_fuse_inference(struct dtrx_session *s);
int rt_fuse_applied(const struct dtrx_session *s);

/* The training graph rewrite (fuse.c): the TorchScript exporter's decomposed
 * GELU (Div sqrt 2, Erf, Add 1, Mul x, Mul 0.5) becomes one Gelu call, whose
 * gradient saves x alone, and a Dropout of Constant ratio 0 whose mask
 * nobody reads becomes an Identity (a view, no copy to save). Applied before a training forward pass on the host
 * while no tape and no plan exist; a no-op once applied. How many calls it
 * calls of op ("Gelu", "Identity") it made (tests). */
enum dtrx_status rt_fuse_train(struct dtrx_session *s);
int rt_fuse_train_count(const struct dtrx_session *s, const char *op);

#endif
