/* ops/registry.c — the operator table, keyed by (domain, name, since-version).
 * Adding an operator: define its op_def in its own file and add one line here,
 * in its family's section. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define OPS_LIST(X) \
    /* elementwise, comparison, reduction, softmax family */ \
    X(op_add) \
    X(op_sub) \
    X(op_mul) \
    X(op_div) \
    X(op_pow) \
    X(op_max) \
    X(op_min) \
    X(op_sum) \
    X(op_sqrt) \
    X(op_exp) \
    X(op_log) \
    X(op_neg) \
    X(op_abs) \
    X(op_reciprocal) \
    X(op_relu) \
    X(op_leaky_relu) \
    X(op_sigmoid) \
    X(op_tanh) \
    X(op_gelu) \
    X(op_erf) \
    X(op_clip) \
    X(op_not) \
    X(op_sin) \
    X(op_cos) \
    X(op_sign) \
    X(op_floor) \
    X(op_ceil) \
    X(op_round) \
    X(op_isnan) \
    X(op_isinf) \
    X(op_hardsigmoid) \
    X(op_hardswish) \
    X(op_softplus) \
    X(op_elu) \
    X(op_selu) \
    X(op_celu) \
    X(op_mish) \
    X(op_swish) \
    X(op_swiglu) \
    X(op_prelu) \
    X(op_mod) \
    X(op_and) \
    X(op_or) \
    X(op_xor) \
    X(op_equal) \
    X(op_less) \
    X(op_greater) \
    X(op_less_or_equal) \
    X(op_greater_or_equal) \
    X(op_where) \
    X(op_cast) \
    X(op_cast_like) \
    X(op_softmax) \
    X(op_log_softmax) \
    X(op_reduce_sum) \
    X(op_reduce_mean) \
    X(op_reduce_max) \
    X(op_reduce_min) \
    X(op_reduce_prod) \
    X(op_reduce_l1) \
    X(op_reduce_l2) \
    X(op_reduce_sum_square) \
    X(op_reduce_log_sum) \
    X(op_reduce_log_sum_exp) \
    /* one-input math of ops/unary_trig.c */ \
    X(op_tan) \
    X(op_asin) \
    X(op_acos) \
    X(op_atan) \
    X(op_sinh) \
    X(op_cosh) \
    X(op_asinh) \
    X(op_acosh) \
    X(op_atanh) \
    X(op_softsign) \
    X(op_thresholded_relu) \
    X(op_shrink) \
    X(op_unary_math_grad) \
    /* bitwise operators of ops/bitwise.c */ \
    X(op_bitwise_and) \
    X(op_bitwise_or) \
    X(op_bitwise_xor) \
    X(op_bitwise_not) \
    X(op_bitshift) \
    X(op_bitcast) \
    /* Mean and GlobalMaxPool of ops/mean_max.c */ \
    X(op_mean) \
    X(op_global_max_pool) \
    /* DepthToSpace, SpaceToDepth of ops/depth_space.c */ \
    X(op_depth_to_space) \
    X(op_space_to_depth) \
    /* ai.onnx.ml's Binarizer, ArrayFeatureExtractor, TreeEnsemble and LabelEncoder of ops/ml.c */ \
    X(op_binarizer) \
    X(op_array_feature_extractor) \
    X(op_tree_ensemble) \
    X(op_label_encoder) \
    /* ImageDecoder of ops/image_decoder.c */ \
    X(op_image_decoder) \
    /* strings: ops/string.c, ops/regex.c */ \
    X(op_string_normalizer) \
    X(op_string_concat) \
    X(op_string_split) \
    X(op_regex_full_match) \
    /* EyeLike, NonZero of ops/eye_nonzero.c */ \
    X(op_eye_like) \
    X(op_nonzero) \
    /* Hardmax, LpNormalization, CumProd of ops/along_axis.c */ \
    X(op_hardmax) \
    X(op_lp_normalization) \
    X(op_lp_normalization_grad) \
    X(op_cumprod) \
    X(op_cumprod_grad) \
    /* Compress, ReverseSequence of ops/select_axis.c */ \
    X(op_compress) \
    X(op_reverse_sequence) \
    /* LRN, MeanVarianceNormalization of ops/local_norm.c */ \
    X(op_lrn) \
    X(op_lrn_grad) \
    X(op_mean_variance_normalization) \
    X(op_mean_variance_normalization_grad) \
    /* Det of ops/det.c */ \
    X(op_det) \
    X(op_det_grad) \
    /* Upsample of ops/upsample.c */ \
    X(op_upsample) \
    /* DFT, STFT of ops/signal.c; windows, MelWeightMatrix of ops/signal_window.c */ \
    X(op_dft) \
    X(op_stft) \
    X(op_dft_grad) \
    X(op_hann_window) \
    X(op_hamming_window) \
    X(op_blackman_window) \
    X(op_mel_weight_matrix) \
    /* AffineGrid of ops/affine_grid.c */ \
    X(op_affine_grid) \
    X(op_affine_grid_grad) \
    /* GridSample of ops/grid_sample.c */ \
    X(op_grid_sample) \
    X(op_grid_sample_grad) \
    /* quantization of ops/quant_linear.c and ops/quant_matmul.c */ \
    X(op_quantize_linear) \
    X(op_dequantize_linear) \
    X(op_dynamic_quantize_linear) \
    X(op_matmul_integer) \
    X(op_qlinear_matmul) \
    X(op_conv_integer) \
    X(op_qlinear_conv) \
    /* vision and data-dependent: ops/center_crop_pad.c, tensor_scatter.c, roi_align.c, \
     * deform_conv.c, nms.c, unique.c */ \
    X(op_center_crop_pad) \
    X(op_tensor_scatter) \
    X(op_tensor_scatter_grad) \
    X(op_roi_align) \
    X(op_roi_align_grad) \
    X(op_deform_conv) \
    X(op_deform_conv_grad) \
    X(op_non_max_suppression) \
    X(op_unique) \
    /* nn: conv, pool, normalization, gemm/matmul */ \
    X(op_conv) \
    X(op_conv_transpose) \
    X(op_fused_conv) \
    X(op_gemm) \
    X(op_matmul) \
    X(op_einsum) \
    X(op_max_pool) \
    X(op_lp_pool) \
    X(op_max_unpool) \
    X(op_col2im) \
    X(op_average_pool) \
    X(op_global_average_pool) \
    X(op_batch_normalization) \
    X(op_layer_normalization) \
    X(op_rms_normalization) \
    X(op_group_normalization) \
    X(op_instance_normalization) \
    X(op_rotary_embedding) \
    X(op_attention) \
    X(op_causal_conv_with_state) \
    X(op_linear_attention) \
    /* shape and data movement */ \
    X(op_reshape) \
    X(op_flatten) \
    X(op_squeeze) \
    X(op_unsqueeze) \
    X(op_identity) \
    X(op_transpose) \
    X(op_concat) \
    X(op_split) \
    X(op_slice) \
    X(op_gather) \
    X(op_gather_elements) \
    X(op_gather_nd) \
    X(op_scatter_nd) \
    X(op_scatter_elements) \
    X(op_scatter) \
    X(op_expand) \
    X(op_tile) \
    X(op_range) \
    X(op_shape) \
    X(op_size) \
    X(op_constant) \
    X(op_constant_of_shape) \
    X(op_pad) \
    X(op_resize) \
    X(op_dropout) \
    X(op_bernoulli) \
    X(op_random_uniform_like) \
    X(op_cumsum) \
    X(op_trilu) \
    X(op_arg_max) \
    X(op_arg_min) \
    X(op_topk) \
    X(op_onehot) \
    X(op_tfidf_vectorizer) \
    /* recurrent and losses */ \
    X(op_lstm) \
    X(op_gru) \
    X(op_rnn) \
    X(op_softmax_cross_entropy_loss) \
    X(op_negative_log_likelihood_loss) \
    /* gradients: rnn */ \
    X(op_lstm_grad) \
    X(op_gru_grad) \
    X(op_rnn_grad) \
    /* gradients: loss */ \
    X(op_softmax_cross_entropy_loss_grad) \
    X(op_negative_log_likelihood_loss_grad) \
    /* gradients: shape */ \
    X(op_slice_grad) \
    X(op_gather_grad) \
    X(op_gather_elements_grad) \
    X(op_gather_nd_grad) \
    X(op_scatter_grad) \
    X(op_pad_grad) \
    X(op_resize_grad) \
    X(op_dropout_grad) \
    /* gradients: nn */ \
    X(op_conv_grad_data) \
    X(op_conv_grad_weight) \
    X(op_matmul_trans) \
    X(op_max_pool_grad) \
    X(op_lp_pool_grad) \
    X(op_max_unpool_grad) \
    X(op_col2im_grad) \
    X(op_average_pool_grad) \
    X(op_batch_norm_grad) \
    X(op_layer_norm_grad) \
    X(op_rms_norm_grad) \
    X(op_group_norm_grad) \
    X(op_attention_grad) \
    X(op_causal_conv_with_state_grad) \
    X(op_linear_attention_grad) \
    /* gradients: math */ \
    X(op_relu_grad) \
    X(op_leaky_relu_grad) \
    X(op_sigmoid_grad) \
    X(op_tanh_grad) \
    X(op_sqrt_grad) \
    X(op_reciprocal_grad) \
    X(op_abs_grad) \
    X(op_erf_grad) \
    X(op_gelu_grad) \
    X(op_clip_grad) \
    X(op_hardsigmoid_grad) \
    X(op_hardswish_grad) \
    X(op_softplus_grad) \
    X(op_elu_grad) \
    X(op_selu_grad) \
    X(op_celu_grad) \
    X(op_mish_grad) \
    X(op_swish_grad) \
    X(op_prelu_grad) \
    X(op_mod_grad) \
    X(op_div_grad) \
    X(op_pow_grad) \
    X(op_max_min_grad) \
    X(op_softmax_grad) \
    X(op_log_softmax_grad) \
    X(op_reduce_select_grad) \
    X(op_reduce_ext_grad) \
    /* training: optimizer steps (domain dtrexec) */ \
    X(op_sgd_update) \
    X(op_momentum_update) \
    X(op_adam_update) \
    /* inference-time optimizer steps (domain ai.onnx.preview.training) */ \
    X(op_preview_adam) \
    X(op_preview_adagrad) \
    X(op_preview_momentum) \
    /* executed by the runtime: control flow, sequences, optionals */ \
    X(op_if) \
    X(op_flex_attention) \
    X(op_loop) \
    X(op_scan) \
    X(op_sequence_empty) \
    X(op_sequence_construct) \
    X(op_sequence_insert) \
    X(op_sequence_at) \
    X(op_sequence_erase) \
    X(op_sequence_length) \
    X(op_split_to_sequence) \
    X(op_concat_from_sequence) \
    X(op_sequence_map) \
    X(op_optional) \
    X(op_optional_has_element) \
    X(op_optional_get_element)

#define OP_DECLARE(sym) extern const struct op_def sym;
#define OP_ENTRY(sym) &sym,
OPS_LIST(OP_DECLARE)

static const struct op_def *const registry[] = { OPS_LIST(OP_ENTRY) NULL };

const struct op_def *op_registry_at(int index)
{
    if (index < 0 || index >= (int)(sizeof registry / sizeof registry[0]))
        return NULL;
    return registry[index];
}

/* The registry's indices sorted by (name, domain, index) once, for a binary
 * search: the backward pass looks operators up by name for every call it
 * emits. Equal names keep registry order, as the linear scan had it. */
#define REGISTRY_SIZE (sizeof registry / sizeof registry[0] - 1)
static int sorted[REGISTRY_SIZE];
static pthread_once_t sorted_once = PTHREAD_ONCE_INIT;

static int def_cmp(const char *name, const char *domain, const struct op_def *d)
{
    int c = strcmp(name, d->name);
    return c ? c : strcmp(domain, d->domain);
}

static int sorted_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int c = def_cmp(registry[x]->name, registry[x]->domain, registry[y]);
    return c ? c : (x > y) - (x < y);
}

static void sort_registry(void)
{
    for (size_t i = 0; i < REGISTRY_SIZE; i++)
        sorted[i] = (int)i;
    qsort(sorted, REGISTRY_SIZE, sizeof sorted[0], sorted_cmp);
}

const struct op_def *op_registry_find(const char *domain, const char *name,
                                      int64_t opset, int *version)
{
    if (!domain || !strcmp(domain, "ai.onnx"))
        domain = "";
    pthread_once(&sorted_once, sort_registry);
    size_t lo = 0, hi = REGISTRY_SIZE;   /* the first entry not below (name, domain) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (def_cmp(name, domain, registry[sorted[mid]]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct op_def *best = NULL;
    int best_version = 0;
    for (size_t i = lo; i < REGISTRY_SIZE && !def_cmp(name, domain, registry[sorted[i]]); i++) {
        const struct op_def *d = registry[sorted[i]];
        for (int v = 0; v < OP_MAX_VERSIONS && d->since[v]; v++)
            if (d->since[v] <= opset && d->since[v] > best_version) {
                best = d;
                best_version = d->since[v];
            }
    }
    if (best && version)
        *version = best_version;
    return best;
}
