/* runtime/interp.h — the interpreter (interp.c): one forward pass
 * over the model's calls, and the step statistics. */
#ifndef DTRX_RUNTIME_INTERP_H
#define DTRX_RUNTIME_INTERP_H

#include "runtime/dtrexec.h"

struct dtrx_session;

/* Runs the model's calls once; with `training`, values the backward pass
 * reads stay alive (interp.c). */
enum dtrx_status rt_forward(struct dtrx_session *s, int training);
enum dtrx_status rt_record_step(struct dtrx_session *s, double seconds, double loss);

#endif
