/* runtime/plan.h — the model's graph turned into values and calls
 * (plan.c), and subgraphs' nodes into calls in a scope. */
#ifndef DTRX_RUNTIME_PLAN_H
#define DTRX_RUNTIME_PLAN_H

#include "onnx/onnx.h"
#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;
struct rt_scope;

/* Builds values and calls from the model's graph. */
enum dtrx_status rt_plan_build(struct dtrx_session *s);
/* Builds the call of node `n` in `scope`: inputs resolved there (control
 * nodes also read their subgraphs' outer names), outputs made new values
 * named in scope. `dynamic` calls (subgraph instances) hold each input once
 * (remaining++) where plan calls count consumers. */
enum dtrx_status rt_call_build(struct dtrx_session *s, struct rt_scope *scope, const struct onnx_node *n,
                               struct rt_call *c, int dynamic);
/* The value id `name` has in scope or a parent of it, -1 if none. */
int rt_scope_lookup(const struct rt_scope *scope, const char *name);
/* The value of a subgraph's initializer, -1 if unknown. */
int rt_subgraph_initializer(const struct dtrx_session *s, const struct onnx_tensor *init);

#endif
