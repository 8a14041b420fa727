/* runtime/params.h — which initializers train (params.c; the rule is
 * in its header comment), and which inputs of an operator a gradient flows
 * into. */
#ifndef DTRX_RUNTIME_PARAMS_H
#define DTRX_RUNTIME_PARAMS_H

#include "runtime/dtrexec.h"

struct dtrx_session;

/* Which initializers train (params.c; the rule is in its header comment). */
int rt_dtype_is_float(int dtype);
/* 0 when no gradient flows into input i of (domain, op): Where's condition,
 * Shape's input, Floor's, ... */
int rt_input_differentiable(const char *domain, const char *op, int i);
/* The same for input i of call c, from the table once per call (the
 * forward and backward passes ask it for every input of every call). */
struct rt_call;
int rt_call_input_differentiable(struct rt_call *c, int i);
/* 1 when `name` matches one of the comma-separated fnmatch patterns. */
int rt_patterns_match(const char *patterns, const char *name);
struct rt_param_decision {
    int value;                     /* its value id, -1 if none */
    int uses;                      /* node inputs (and subgraph references) reading it */
    int train;
    char reason[160];
    char *warning;                 /* heap, or NULL */
};
/* One decision per main-graph initializer, in the graph's order; *out is
 * freed with rt_params_free. */
enum dtrx_status rt_params_decide(const struct dtrx_session *s, const struct dtrx_train_options *o,
                                  struct rt_param_decision **out);
void rt_params_free(struct rt_param_decision *d, int n);

#endif
