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

#endif
