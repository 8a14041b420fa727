/* runtime/control.c — control flow and list values, executed by the runtime:
 * the dispatch to the executors of control_loop.c, control_seq.c and
 * control_flex.c, which share control_util.c.
 *
 * If, Loop and Scan run by instantiating their subgraph each time it runs:
 * every node becomes an ordinary call (rt_call_build in a scope whose parent
 * is the enclosing graph), its outputs new values, and the calls run through
 * rt_run_call like the main graph's. Training's tape therefore records the
 * calls that actually ran — the branch taken, every iteration — and neither
 * the backward pass nor DTR needs anything special: a value made inside an
 * iteration is recomputed, after the loop has ended, by replaying that
 * iteration's call.
 *
 * Results reach a control node's outputs through Identity calls (views);
 * loop-carried values pass from one iteration to the next as they are; scan
 * inputs are sliced with Gather and scan outputs stacked with Unsqueeze and
 * Concat. Every such call is recorded and differentiable.
 *
 * Sequences and optionals are lists of values (rt_value.list), each element
 * held once while the list lives; their operators only rearrange lists, and
 * the tensors inside move through Identity, Split and Concat calls.
 * SequenceMap instantiates its body once per element, as Loop does.
 *
 * FlexAttention (ai.onnx.preview) is made of ordinary calls in the same way
 * — Mul by sqrt(scale), the grouped-query expansion of K and V, the two
 * products as Einsum, Softmax, Cast to and from the softmax precision — with its
 * score_mod and prob_mod subgraphs instantiated between them, so that it
 * trains, recomputes and runs on every backend its parts run on.
 *
 * Reference counting: every value made here is held once by this file while
 * it is needed (rt_value_hold) and let go with rt_value_unhold.
 */
#include <string.h>

#include "runtime/call.h"
#include "runtime/control.h"
#include "runtime/control_util.h"
#include "runtime/session.h"
#include "runtime/status.h"

static enum dtrx_status exec_identity(struct dtrx_session *s, struct rt_call *c)
{
    return rt_ctl_assign(s, c, c->in[0], c->out[0]);
}

static const struct rt_ctl_op identity_ops[] = { { "Identity", exec_identity } };

static const struct {
    const struct rt_ctl_op *ops;
    const int *n;
} families[] = {
    { rt_ctl_loop_ops, &rt_ctl_loop_n_ops },
    { rt_ctl_seq_ops, &rt_ctl_seq_n_ops },
    { rt_ctl_flex_ops, &rt_ctl_flex_n_ops },
};

static const struct rt_ctl_op *find(const char *name)
{
    if (!strcmp(name, identity_ops[0].op))
        return &identity_ops[0];
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int i = 0; i < *families[f].n; i++)
            if (!strcmp(name, families[f].ops[i].op))
                return &families[f].ops[i];
    return NULL;
}

enum dtrx_status rt_control_exec(struct dtrx_session *s, struct rt_call *c)
{
    const struct rt_ctl_op *op = find(c->def->name);
    if (!op)
        return rt_fail(DTRX_ERR_INTERNAL, "node '%s': the runtime does not execute %s", c->name, c->def->name);
    if (!c->node && c->def->runtime)
        return rt_fail(DTRX_ERR_INTERNAL, "'%s': %s needs its model node", c->name, c->def->name);
    return op->exec(s, c);
}
