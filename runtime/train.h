/* runtime/train.h — the training state (train.c): parameters,
 * optimizer state, the targets, the loss, and the calls and values emitted
 * during the current step. */
#ifndef DTRX_RUNTIME_TRAIN_H
#define DTRX_RUNTIME_TRAIN_H

#include <stdint.h>
#include "runtime/dtrexec.h"

struct dtrx_session;
struct rt_call;

/* Training state: the parameters, their optimizer state, and the calls and
 * values emitted during the current step (freed when the step ends). */
struct rt_train {
    int active;
    struct dtrx_train_options opts;
    int n_params;
    int *params;                   /* value ids of trainable initializers */
    int *state;                    /* 2 optimizer-state value ids per parameter, -1 unused */
    int *first_use;                /* per value id present at train_begin: first tape entry reading it, -1 */
    int *param_of;                 /* per value id present at train_begin: its index in params, -1 */
    int n_first_use;
    uint8_t *updated;              /* per parameter: updated in this step's backward pass */
    size_t grad_bytes;             /* all parameters' gradients */
    int64_t step;
    int labels;                    /* value id of the targets, -1 until set or drawn */
    char loss_note[512];           /* the loss chosen and why (dtrx_session_loss_description) */
    int loss;                      /* value id of the last loss */
    int base_values;               /* values at or above this id belong to the step */
    int n_emitted, emitted_capacity;
    struct rt_call **emitted;
};

void rt_train_free(struct dtrx_session *s);

#endif
