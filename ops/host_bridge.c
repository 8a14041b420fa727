/* ops/host_bridge.c — a device kernel that runs an operator's CPU kernel on
 * host copies: the inputs are copied to host buffers through the call's
 * backend, the CPU kernel runs on them, and the outputs are copied back.
 *
 * For rare operators whose work is small or sequential (the preview
 * training optimizers, TfIdfVectorizer, Bernoulli, RandomUniformLike):
 * --device cuda then runs them and gives the CPU's results bit for bit, as
 * a recomputation must. It knows nothing of CUDA, only struct backend. The
 * host buffers are host memory, outside the budget, like the runtime's
 * host copies of host_inputs. Inputs flagged in the op's host_inputs are
 * host copies already (runtime/device.c swaps them in) and pass as they are. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define BRIDGE_MAX_IO 256

int op_host_bridge(struct op_call *c)
{
    const struct backend *b = c->env ? c->env->backend : NULL;
    int (*cpu)(struct op_call *) = c->def->kernel[BACKEND_CPU];
    if (!b || !cpu)
        return op_error(c, "no host kernel to run on the host");
    if (b->kind == BACKEND_CPU)
        return cpu(c);
    if (c->n_in > BRIDGE_MAX_IO || c->n_out > BRIDGE_MAX_IO)
        return op_error(c, "%d inputs and %d outputs are too many to run on the host", c->n_in, c->n_out);
    struct tensor in[BRIDGE_MAX_IO], out[BRIDGE_MAX_IO];
    const struct tensor *in_ptr[BRIDGE_MAX_IO];
    struct tensor *out_ptr[BRIDGE_MAX_IO];
    int rc = 0;
    if (b->synchronize && b->synchronize(b->ctx))
        rc = op_error(c, "%s: synchronize failed before the host copy", b->name);
    int n_in = 0, n_out = 0;
    for (; !rc && n_in < c->n_in; n_in++) {
        const struct tensor *t = c->in[n_in];
        in_ptr[n_in] = t;
        if (!t || (n_in < 32 && (c->def->host_inputs >> n_in & 1)))
            continue;
        size_t bytes = tensor_size_bytes(t);
        in[n_in] = *t;
        if (!(in[n_in].data = malloc(bytes ? bytes : 1))) {
            rc = op_error(c, "out of host memory for a host copy of input %d (%zu bytes)", n_in, bytes);
            break;
        }
        in_ptr[n_in] = &in[n_in];
        if (bytes && b->copy_to_host(b->ctx, in[n_in].data, t->data, bytes)) {
            n_in++;
            rc = op_error(c, "%s: copying input %d to the host failed", b->name, n_in - 1);
            break;
        }
    }
    for (; !rc && n_out < c->n_out; n_out++) {
        struct tensor *t = c->out[n_out];
        out_ptr[n_out] = NULL;
        if (!t)
            continue;
        size_t bytes = tensor_size_bytes(t);
        out[n_out] = *t;
        if (!(out[n_out].data = calloc(1, bytes ? bytes : 1))) {
            rc = op_error(c, "out of host memory for output %d (%zu bytes)", n_out, bytes);
            break;
        }
        out_ptr[n_out] = &out[n_out];
    }
    if (!rc) {
        struct op_call host = *c;
        host.in = in_ptr;
        host.out = out_ptr;
        rc = cpu(&host);
    }
    for (int k = 0; !rc && k < c->n_out; k++) {
        size_t bytes = out_ptr[k] ? tensor_size_bytes(out_ptr[k]) : 0;
        if (bytes && b->copy_to_device(b->ctx, c->out[k]->data, out[k].data, bytes))
            rc = op_error(c, "%s: copying output %d to the device failed", b->name, k);
    }
    for (int k = 0; k < n_in; k++)
        if (in_ptr[k] == &in[k])
            free(in[k].data);
    for (int k = 0; k < n_out; k++)
        if (out_ptr[k])
            free(out[k].data);
    return rc;
}
