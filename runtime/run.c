/* runtime/run.c — one call of a forward pass, of the main graph or of a
 * subgraph instance: executed through rt_call_exec (or, for the runtime's
 * own control-flow and list operators, through s->run_runtime_op, which the
 * session points at control.c's rt_control_exec — control flow runs its
 * subgraphs' calls through rt_run_call again, so the call goes through a
 * pointer rather than a cycle between the files); when training it is
 * recorded on the tape with the values its gradient reads held, and inputs
 * no longer needed are released. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/exec.h"
#include "runtime/params.h"
#include "runtime/run.h"
#include "runtime/memory.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

enum dtrx_status rt_tape_push(struct dtrx_session *s, struct rt_call *c)
{
    if (s->n_tape == s->tape_capacity) {
        int cap = s->tape_capacity ? s->tape_capacity * 2 : 256;
        struct rt_call **grown = realloc(s->tape, sizeof *grown * (size_t)cap);
        if (!grown)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory recording the tape");
        s->tape = grown;
        s->tape_capacity = cap;
    }
    /* The first call reading a parameter: its gradient is final once the
     * backward pass has passed it (train.c, pin_final_grads). */
    for (int i = 0; s->train.first_use && i < c->n_in; i++)
        if (c->in[i] >= 0 && c->in[i] < s->train.n_first_use && s->train.first_use[c->in[i]] < 0)
            s->train.first_use[c->in[i]] = s->n_tape;
    s->tape[s->n_tape++] = c;
    return DTRX_OK;
}

/* In training, a call computed from a parameter will be differentiated: its
 * saved inputs and outputs are held (one extra count each) until its
 * gradient has been emitted — only those its gradient will read: Mul's dA
 * reads B and dB reads A, Div's dA reads B alone, so an activation scaled
 * by a constant (attention scores times 1/sqrt(d)) is not kept for a
 * gradient nobody wants. */
static void hold_saved(struct dtrx_session *s, struct rt_call *c)
{
    int from_param = 0, differentiated = 0;
    uint32_t need = 0;
    c->held_in = c->held_out = 0;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0 && s->values[c->in[i]]->train.requires_grad &&
            rt_call_input_differentiable(c, i)) {
            from_param = 1;
            need |= i < 32 ? 1u << i : 0;
        }
    /* No gradient flows through integers or bools: Shape(x) and what is
     * made of it (ConstantOfShape, masks) are constants of the step. */
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0) {
            struct rt_value *y = s->values[c->out[i]];
            y->train.requires_grad = from_param && !y->list.container && rt_dtype_is_float(y->t.dtype);
            differentiated |= y->train.requires_grad;
        }
    if (!differentiated)
        return;
    uint32_t saves_in = c->def->grad_saves_in;
    if (!c->def->domain[0] && !strcmp(c->def->name, "Mul"))
        saves_in &= (need & 2u ? 1u : 0) | (need & 1u ? 2u : 0);
    else if (!c->def->domain[0] && !strcmp(c->def->name, "Div"))
        saves_in &= 2u | (need & 2u ? 1u : 0);
    c->held_in = saves_in;
    c->held_out = c->def->grad_saves_out;
    for (int i = 0; i < c->n_in && i < 32; i++)
        if (c->in[i] >= 0 && (saves_in >> i & 1))
            s->values[c->in[i]]->use.remaining++;
    for (int i = 0; i < c->n_out && i < 32; i++)
        if (c->out[i] >= 0 && (c->def->grad_saves_out >> i & 1))
            s->values[c->out[i]]->use.remaining++;
}

/* A model call writes output 0 over input 0 (def->in_place: Relu, Add, ...)
 * when that input dies here: this call is its only consumer, nothing keeps
 * it for a gradient (hold_saved counts those in use.remaining), it is no
 * graph output, and its buffer holds it alone (memory.reusable). Under DTR
 * the input may then be recomputed only to recompute this call's output,
 * which writes over it again, so nothing reads stale bytes. Not with a
 * static plan or the export recorder (their graphs count one buffer per
 * value), nor on a device, nor in a subgraph's calls. Shapes are checked after inference
 * (rt_call_in_place_check). */
static int forward_in_place(const struct dtrx_session *s, const struct rt_call *c)
{
    int main_graph = c >= s->calls && c < s->calls + s->n_calls;   /* not a subgraph's instance */
    if (!main_graph || !c->def->in_place || c->n_in < 1 || c->n_out < 1 || c->in[0] < 0 || c->out[0] < 0 ||
        s->plan || s->recorder || !rt_device_on_host(s))
        return 0;
    const struct rt_value *a = s->values[c->in[0]];
    if (a->kind != RT_VALUE_INTERMEDIATE || a->use.kept || a->use.consumers != 1 || a->use.remaining != 1 ||
        a->list.container)
        return 0;
    if (s->taping && (c->def->grad_saves_in & 1))
        return 0;
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] == c->in[0])
            return 0;
    return s->memory->reusable(s, a);
}

enum dtrx_status rt_run_call(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st;
    int container_in = c->n_in > 0 && c->in[0] >= 0 && s->values[c->in[0]]->list.container;
    if (c->def->runtime || (container_in && !strcmp(c->def->name, "Identity"))) {
        st = s->run_runtime_op(s, c);
    } else {
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i] >= 0 && s->values[c->in[i]]->list.container)
                return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): input '%s' is a %s, not a tensor", c->name,
                               c->def->name, s->values[c->in[i]]->name,
                               s->values[c->in[i]]->list.container == RT_SEQUENCE ? "sequence" : "optional");
        c->in_place = (uint8_t)forward_in_place(s, c);
        st = rt_call_exec(s, c);
        if (!st && s->taping) {
            hold_saved(s, c);
            st = rt_tape_push(s, c);
        }
    }
    if (st)
        return st;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0)
            rt_value_unhold(s, c->in[i]);
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0)
            rt_value_drop_if_unused(s, s->values[c->out[i]]);
    return DTRX_OK;
}
