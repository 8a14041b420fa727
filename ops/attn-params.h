/* ops/attn-params.h — the parsed attributes of the normalization and attention operators of issue 13: what their
 * op_def.parse produces and their kernels read, on the host (ops/group_norm.c, rotary.c, attention.c, causal_conv.c, linear_attention.c, control.c (FlexAttention))
 * and on the device (ops/cuda/norm.c, attn.c, misc_seq.c). Not for use outside ops/. */
#ifndef DTRX_OPS_ATTN_PARAMS_H
#define DTRX_OPS_ATTN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* ops/group_norm.c: GroupNormalization, InstanceNormalization (num_groups 0:
 * one group per channel) and GroupNormGrad */
struct group_norm_params {
    int64_t num_groups;
    float epsilon;
    int scale_per_group;               /* GroupNormalization-18: Scale/B of shape [G] */
};

/* ops/rotary.c */
struct rotary_params {
    int interleaved;
    int64_t rotary_dim;                /* 0: the head size */
    int64_t num_heads;                 /* 0: absent (4-D input) */
};

/* ops/attention.c: Attention and AttentionGrad */
struct attention_params {
    float scale;                       /* 0: 1 / sqrt(head size) */
    float softcap;                     /* 0: none */
    int is_causal;
    int64_t q_num_heads, kv_num_heads; /* 0: absent (4-D inputs) */
    int qk_mode;                       /* qk_matmul_output_mode 0..3 */
    int64_t left_window, right_window; /* -1: unbounded (Attention-25) */
};

/* ops/causal_conv.c: CausalConvWithState and its gradient kernel */
struct causal_conv_params {
    int silu;                          /* activation "silu" or "swish" */
};

/* ops/linear_attention.c: LinearAttention and its gradient kernel */
struct linear_attention_params {
    int gated, delta;                  /* update_rule: linear 0 0 ... gated_delta 1 1 */
    int64_t q_num_heads, kv_num_heads;
    float scale;                       /* 0: 1 / sqrt(dk) */
};

/* ops/control.c: FlexAttention (executed by runtime/control.c) */
struct flex_attention_params {
    int has_scale;
    float scale;                       /* when has_scale; else 1 / sqrt(head size) */
    int softmax_precision;             /* an onnx dtype; 0: absent */
};

#endif
