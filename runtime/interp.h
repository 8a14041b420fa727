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
/* A budgeted training step has copied its graph outputs to the host (where
 * dtrx_session_get_output reads them) and taken its loss from them: the
 * step no longer keeps them; they go once the backward pass is done with
 * them, like any value, rather than being held (and, once a parameter is
 * updated inside the backward pass, frozen) to the end of the step. Not
 * while a schedule or the graph recorder follows the step. */
void rt_release_copied_outputs(struct dtrx_session *s);

#endif
