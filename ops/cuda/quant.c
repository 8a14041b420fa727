/* ops/cuda/quant.c — the "quant" family's CUDA kernels: QuantizeLinear,
 * DequantizeLinear (per tensor, per axis, blocked) and DynamicQuantizeLinear
 * of ops/quant_linear.c, and the family's table, cuda_kernels_quant.
 *
 * The call's arguments are checked and resolved by the same function as on
 * the CPU (quant_args_init); the device then runs the CPU's per-element
 * arithmetic. DynamicQuantizeLinear needs its scale and zero point outputs
 * (they are where its element kernel reads them from). The integer
 * products (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv) have
 * no CUDA kernel: --device cuda reports that they run on the CPU only. */
#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/quant-kernels.h"

static int cuda_quant_run(struct op_call *c, int quantize)
{
    struct quant_args a;
    if (quant_args_init(c, quantize, &a))
        return -1;
    int64_t n = tensor_numel(c->in[0]);
    cudaStream_t s = cuda_ctx_of(c)->stream;
    CUDA_TRY(c, quantize ? cuda_quantize_launch(s, &a, n) : cuda_dequantize_launch(s, &a, n));
    return 0;
}

static int cuda_quantize_linear(struct op_call *c) { return cuda_quant_run(c, 1); }
static int cuda_dequantize_linear(struct op_call *c) { return cuda_quant_run(c, 0); }

static int cuda_dynamic_quantize_linear(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "x has dtype %s; DynamicQuantizeLinear takes float", onnx_dtype_name(x->dtype));
    if (c->n_out < 3 || !c->out[1] || !c->out[2])
        return op_error(c, "the CUDA kernel needs the y_scale and y_zero_point outputs");
    CUDA_TRY(c, cuda_dynamic_quantize_launch(cuda_ctx_of(c)->stream, tensor_numel(x), x->data, c->out[0]->data,
                                             c->out[1]->data, c->out[2]->data));
    return 0;
}

CUDA_KERNEL_TABLE(quant) = {
    { "", "QuantizeLinear", cuda_quantize_linear },
    { "", "DequantizeLinear", cuda_dequantize_linear },
    { "", "DynamicQuantizeLinear", cuda_dynamic_quantize_linear },
    { 0 },
};
