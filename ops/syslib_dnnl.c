/* ops/syslib_dnnl.c — forwarding definitions of the oneDNN functions ops/
 * calls (ops/syslib.h): primitives and memory descriptors (ops/dnnl.c),
 * convolution (conv.c, fused_conv.c), pooling (pool.c), layer normalization
 * (layer_norm.c) and dnnl_sgemm (gemm.c). A function ops/ starts calling is
 * added here, with its prototype from <oneapi/dnnl/dnnl.h>. */
#include <oneapi/dnnl/dnnl.h>

#include "ops/syslib-impl.h"

SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_dilated_convolution_backward_data_desc_init,
          (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *diff_src_desc,
           const dnnl_memory_desc_t *weights_desc, const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides,
           const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
          (conv_desc, alg_kind, diff_src_desc, weights_desc, diff_dst_desc, strides, dilates, padding_l, padding_r))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_dilated_convolution_backward_weights_desc_init,
          (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src_desc,
           const dnnl_memory_desc_t *diff_weights_desc, const dnnl_memory_desc_t *diff_bias_desc,
           const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates,
           const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
          (conv_desc, alg_kind, src_desc, diff_weights_desc, diff_bias_desc, diff_dst_desc, strides, dilates, padding_l,
           padding_r))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_dilated_convolution_forward_desc_init,
          (dnnl_convolution_desc_t * conv_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind,
           const dnnl_memory_desc_t *src_desc, const dnnl_memory_desc_t *weights_desc,
           const dnnl_memory_desc_t *bias_desc, const dnnl_memory_desc_t *dst_desc, const dnnl_dims_t strides,
           const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
          (conv_desc, prop_kind, alg_kind, src_desc, weights_desc, bias_desc, dst_desc, strides, dilates, padding_l,
           padding_r))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_engine_create,
          (dnnl_engine_t * engine, dnnl_engine_kind_t kind, size_t index), (engine, kind, index))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_layer_normalization_forward_desc_init,
          (dnnl_layer_normalization_desc_t * lnrm_desc, dnnl_prop_kind_t prop_kind, const dnnl_memory_desc_t *data_desc,
           const dnnl_memory_desc_t *stat_desc, float epsilon, unsigned flags),
          (lnrm_desc, prop_kind, data_desc, stat_desc, epsilon, flags))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_memory_create,
          (dnnl_memory_t * memory, const dnnl_memory_desc_t *memory_desc, dnnl_engine_t engine, void *handle),
          (memory, memory_desc, engine, handle))
SYSLIB_FN(SYSLIB_DNNL, int, dnnl_memory_desc_equal, (const dnnl_memory_desc_t *lhs, const dnnl_memory_desc_t *rhs),
          (lhs, rhs))
SYSLIB_FN(SYSLIB_DNNL, size_t, dnnl_memory_desc_get_size, (const dnnl_memory_desc_t *memory_desc), (memory_desc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_memory_desc_init_by_tag,
          (dnnl_memory_desc_t * memory_desc, int ndims, const dnnl_dims_t dims, dnnl_data_type_t data_type,
           dnnl_format_tag_t tag),
          (memory_desc, ndims, dims, data_type, tag))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_memory_destroy, (dnnl_memory_t memory), (memory))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_pooling_v2_forward_desc_init,
          (dnnl_pooling_v2_desc_t * pool_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind,
           const dnnl_memory_desc_t *src_desc, const dnnl_memory_desc_t *dst_desc, const dnnl_dims_t strides,
           const dnnl_dims_t kernel, const dnnl_dims_t dilation, const dnnl_dims_t padding_l,
           const dnnl_dims_t padding_r),
          (pool_desc, prop_kind, alg_kind, src_desc, dst_desc, strides, kernel, dilation, padding_l, padding_r))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_post_ops_append_binary,
          (dnnl_post_ops_t post_ops, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src1_desc),
          (post_ops, alg_kind, src1_desc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_post_ops_append_eltwise,
          (dnnl_post_ops_t post_ops, float scale, dnnl_alg_kind_t alg_kind, float alpha, float beta),
          (post_ops, scale, alg_kind, alpha, beta))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_post_ops_create, (dnnl_post_ops_t * post_ops), (post_ops))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_post_ops_destroy, (dnnl_post_ops_t post_ops), (post_ops))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_attr_clone,
          (dnnl_primitive_attr_t * attr, const_dnnl_primitive_attr_t existing_attr), (attr, existing_attr))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_attr_create, (dnnl_primitive_attr_t * attr), (attr))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_attr_destroy, (dnnl_primitive_attr_t attr), (attr))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_attr_set_post_ops,
          (dnnl_primitive_attr_t attr, const_dnnl_post_ops_t post_ops), (attr, post_ops))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_attr_set_scratchpad_mode,
          (dnnl_primitive_attr_t attr, dnnl_scratchpad_mode_t mode), (attr, mode))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_create,
          (dnnl_primitive_t * primitive, const_dnnl_primitive_desc_t primitive_desc), (primitive, primitive_desc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_desc_create,
          (dnnl_primitive_desc_t * primitive_desc, const_dnnl_op_desc_t op_desc, const_dnnl_primitive_attr_t attr,
           dnnl_engine_t engine, const_dnnl_primitive_desc_t hint_forward_primitive_desc),
          (primitive_desc, op_desc, attr, engine, hint_forward_primitive_desc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_desc_destroy, (dnnl_primitive_desc_t primitive_desc),
          (primitive_desc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_desc_query,
          (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index, void *result),
          (primitive_desc, what, index, result))
SYSLIB_FN(SYSLIB_DNNL, const dnnl_memory_desc_t *, dnnl_primitive_desc_query_md,
          (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index), (primitive_desc, what, index))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_destroy, (dnnl_primitive_t primitive), (primitive))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_execute,
          (const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs, const dnnl_exec_arg_t *args),
          (primitive, stream, nargs, args))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_primitive_get_primitive_desc,
          (const_dnnl_primitive_t primitive, const_dnnl_primitive_desc_t *primitive_desc), (primitive, primitive_desc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_reorder_primitive_desc_create,
          (dnnl_primitive_desc_t * reorder_primitive_desc, const dnnl_memory_desc_t *src_desc, dnnl_engine_t src_engine,
           const dnnl_memory_desc_t *dst_desc, dnnl_engine_t dst_engine, const_dnnl_primitive_attr_t attr),
          (reorder_primitive_desc, src_desc, src_engine, dst_desc, dst_engine, attr))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_sgemm,
          (char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha, const float *A,
           dnnl_dim_t lda, const float *B, dnnl_dim_t ldb, float beta, float *C, dnnl_dim_t ldc),
          (transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_stream_create,
          (dnnl_stream_t * stream, dnnl_engine_t engine, unsigned flags), (stream, engine, flags))
SYSLIB_FN(SYSLIB_DNNL, dnnl_status_t, dnnl_stream_wait, (dnnl_stream_t stream), (stream))
