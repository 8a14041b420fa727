"""Gradient checks of the nn family (ops/conv.c, conv_transpose.c, gemm.c,
pool.c, batch_norm.c, layer_norm.c): Conv in 1-D/2-D/3-D with groups,
depthwise, strides, dilations, asymmetric pads and auto_pad; ConvTranspose
with strides, output_padding, groups and output_shape; Gemm in all four
transpose combinations with alpha/beta and every C broadcast; MatMul with
1-D operands and broadcast batches; MaxPool on inputs without ties (so the
argmax, and the gradient, is stable under the finite-difference steps);
AveragePool with and without padding in the count, ceil_mode;
GlobalAveragePool; BatchNormalization in training (gradcheck runs every
forward with env->training = 1, so the batch statistics are used
consistently) and LayerNormalization over various axes with broadcast
Scale/B; RMSNormalization (rms_norm.c) over various axes;
GroupNormalization 18 (Scale/B per group) and 21 (per channel) and
InstanceNormalization (group_norm.c); RotaryEmbedding (rotary.c: halves and
interleaved, partial rotation, 3-D input, with and without position_ids; the
caches are constants); Attention (attention.c): 3-D and 4-D, grouped-query,
scale, causal, bool and float masks (constants), past key/value with the
present outputs feeding the loss, softcap, sliding windows and
nonpad_kv_seqlen; CausalConvWithState (causal_conv.c) and LinearAttention
(linear_attention.c), each through its output and through its state, and
two decode steps chained through the state; FlexAttention (ai.onnx.preview,
made of ordinary calls by the runtime) with score_mod and prob_mod."""
import numpy as np
from onnx import helper

from gradutil import case_adder, graph_model, rand, single_op

CASES = []


case = case_adder(CASES)


def no_ties(*shape, gap=0.05):
    """Values that are pairwise at least `gap` apart (a shuffled ramp), so
    that a max never changes under +-eps steps."""
    n = int(np.prod(shape))
    v = (np.arange(n) - n / 2) * gap
    return np.random.default_rng(n).permutation(v).reshape(shape).astype(np.float32)


# ---- Conv ----------------------------------------------------------------------
def conv(name, x, w, b=None, **attrs):
    ins = [("x", x), ("w", w)] + ([("b", b)] if b is not None else [])
    case("conv_" + name, single_op("Conv", ins, attrs=attrs))


conv("1d", rand(2, 3, 7), rand(4, 3, 3), rand(4))
conv("1d_stride_pad", rand(1, 2, 9), rand(3, 2, 2), strides=[2], pads=[1, 0])
conv("2d_basic", rand(2, 3, 5, 5), rand(4, 3, 3, 3), rand(4))
conv("2d_pointwise", rand(2, 5, 4, 3), rand(6, 5, 1, 1), rand(6))
conv("2d_group2_stride2", rand(2, 4, 7, 6), rand(6, 2, 3, 3), rand(6), group=2, strides=[2, 2])
conv("2d_depthwise", rand(2, 4, 6, 6), rand(4, 1, 3, 3), rand(4), group=4, pads=[1, 1, 1, 1])
conv("2d_depthwise_mult", rand(1, 3, 5, 5), rand(6, 1, 3, 3), group=3)
conv("2d_dilation2", rand(1, 2, 8, 7), rand(3, 2, 3, 2), dilations=[2, 2], pads=[1, 0, 2, 1])
conv("2d_asym_pads", rand(2, 2, 5, 6), rand(3, 2, 3, 3), rand(3), pads=[0, 1, 2, 0])
conv("2d_same_upper", rand(1, 3, 6, 5), rand(2, 3, 3, 2), auto_pad="SAME_UPPER", strides=[2, 1])
conv("2d_same_lower", rand(1, 2, 5, 5), rand(2, 2, 2, 2), auto_pad="SAME_LOWER")
conv("2d_valid", rand(1, 2, 6, 6), rand(2, 2, 3, 3), auto_pad="VALID", strides=[2, 2])
conv("2d_big_blocked", rand(2, 16, 14, 14), rand(16, 16, 3, 3), rand(16), pads=[1, 1, 1, 1])
conv("3d", rand(1, 2, 4, 5, 4), rand(3, 2, 2, 3, 2), rand(3), pads=[0, 1, 0, 1, 0, 1])
conv("3d_group_stride", rand(1, 4, 5, 5, 5), rand(4, 2, 3, 3, 3), group=2, strides=[2, 2, 1])
# the same weights used by two convolutions: the weight gradients accumulate
case("conv_shared_weight", graph_model(
    [helper.make_node("Conv", ["x", "w"], ["h"], pads=[1, 1, 1, 1]),
     helper.make_node("Conv", ["h", "w"], ["y"], strides=[2, 2])],
    {"x": rand(1, 3, 6, 6), "w": rand(3, 3, 3, 3)}, ["y"]))

# ---- Gemm ----------------------------------------------------------------------
M, K, N = 3, 4, 5
for ta in (0, 1):
    for tb in (0, 1):
        a = rand(K, M) if ta else rand(M, K)
        b = rand(N, K) if tb else rand(K, N)
        for cname, cshape in (("cN", (N,)), ("c1N", (1, N)), ("cMN", (M, N)), ("cscalar", ()),
                              ("cM1", (M, 1))):
            case(f"gemm_ta{ta}_tb{tb}_{cname}",
                 single_op("Gemm", [("a", a), ("b", b), ("c", rand(*cshape))],
                           attrs={"transA": ta, "transB": tb, "alpha": 0.7, "beta": 1.3}))
        case(f"gemm_ta{ta}_tb{tb}_noc", single_op("Gemm", [("a", a), ("b", b)],
                                                  attrs={"transA": ta, "transB": tb, "alpha": -1.5}))
case("gemm_beta1_default", single_op("Gemm", [("a", rand(2, 3)), ("b", rand(3, 4)), ("c", rand(4))]))

# ---- MatMul --------------------------------------------------------------------
for name, sa, sb in (
        ("2d", (3, 4), (4, 5)),
        ("1d_2d", (4,), (4, 3)),
        ("2d_1d", (3, 4), (4,)),
        ("1d_1d", (4,), (4,)),
        ("1d_3d", (4,), (2, 4, 3)),
        ("3d_1d", (2, 3, 4), (4,)),
        ("batched", (2, 3, 4), (2, 4, 5)),
        ("batch_shared_b", (2, 3, 3, 4), (4, 5)),
        ("batch_shared_a", (3, 4), (2, 4, 5)),
        ("batch_bcast", (2, 1, 3, 4), (3, 4, 2)),
        ("batch_bcast_both", (1, 3, 2, 4), (2, 1, 4, 3))):
    case("matmul_" + name, single_op("MatMul", [("a", rand(*sa)), ("b", rand(*sb))]))
for name, sa, sb in (("2d", (3, 4), (4, 5)), ("1d_2d", (4,), (4, 3)), ("batch_bcast", (2, 1, 3, 4), (3, 4, 2))):
    case("matmul_f64_" + name, single_op("MatMul", [("a", rand(*sa, dtype=np.float64)),
                                                    ("b", rand(*sb, dtype=np.float64))]))

# ---- MaxPool, AveragePool, GlobalAveragePool -------------------------------------
def pool(op, name, x, opset=17, **attrs):
    case(f"{op.lower()}_{name}", single_op(op, [("x", x)], attrs=attrs, opset=opset))


pool("MaxPool", "2d_k2s2", no_ties(2, 3, 6, 6), kernel_shape=[2, 2], strides=[2, 2])
pool("MaxPool", "2d_k3s2_pads", no_ties(1, 2, 7, 7), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool("MaxPool", "2d_overlap_asym", no_ties(1, 2, 6, 5), kernel_shape=[3, 2], pads=[0, 1, 2, 0])
pool("MaxPool", "2d_dilation", no_ties(1, 2, 7, 7), kernel_shape=[2, 2], dilations=[2, 2])
pool("MaxPool", "2d_ceil", no_ties(1, 2, 6, 6), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
pool("MaxPool", "2d_same_upper", no_ties(1, 2, 5, 5), kernel_shape=[2, 2], auto_pad="SAME_UPPER")
pool("MaxPool", "1d", no_ties(2, 2, 9), kernel_shape=[3], strides=[2])
pool("MaxPool", "3d", no_ties(1, 2, 4, 4, 4), kernel_shape=[2, 2, 2], strides=[2, 1, 2])
# the Indices output present (the float output is the last float one)
case("maxpool_with_indices", single_op("MaxPool", [("x", no_ties(1, 2, 5, 5))], n_outputs=2, output_index=0,
                                       attrs={"kernel_shape": [2, 2], "strides": [1, 2]}))
for cip in (0, 1):
    pool("AveragePool", f"2d_pads_cip{cip}", rand(2, 2, 5, 5), kernel_shape=[3, 3], pads=[1, 1, 1, 1],
         count_include_pad=cip)
    pool("AveragePool", f"2d_ceil_cip{cip}", rand(1, 2, 6, 7), kernel_shape=[3, 2], strides=[2, 2],
         pads=[1, 0, 0, 1], ceil_mode=1, count_include_pad=cip)
    pool("AveragePool", f"1d_cip{cip}", rand(1, 3, 8), kernel_shape=[3], strides=[2], pads=[2, 1],
         count_include_pad=cip)
    pool("AveragePool", f"3d_cip{cip}", rand(1, 1, 4, 5, 4), kernel_shape=[2, 3, 2], pads=[1, 1, 0, 0, 1, 1],
         count_include_pad=cip)
pool("AveragePool", "2d_k2s2", rand(2, 3, 4, 6), kernel_shape=[2, 2], strides=[2, 2])
pool("AveragePool", "2d_dilation_v19", rand(1, 2, 7, 7), opset=19, kernel_shape=[2, 2], dilations=[2, 2],
     pads=[1, 1, 0, 0])
pool("AveragePool", "2d_same_lower", rand(1, 2, 5, 6), kernel_shape=[3, 3], strides=[2, 2],
     auto_pad="SAME_LOWER")
case("globalaveragepool_2d", single_op("GlobalAveragePool", [("x", rand(2, 3, 4, 5))]))
case("globalaveragepool_1d", single_op("GlobalAveragePool", [("x", rand(2, 3, 7))]))
case("globalaveragepool_3d", single_op("GlobalAveragePool", [("x", rand(1, 2, 3, 2, 4))]))

# ---- BatchNormalization (training: batch statistics) -------------------------------
def bn(name, x, opset=15, n_outputs=1, **attrs):
    c = x.shape[1]
    ins = [("x", x), ("scale", rand(c, low=0.5, high=1.5)), ("b", rand(c)), ("mean", rand(c)),
           ("var", rand(c, low=0.5, high=1.5))]
    case("batchnorm_" + name, single_op("BatchNormalization", ins, n_outputs=n_outputs, output_index=0,
                                        opset=opset, attrs=attrs))


bn("2d_inference_export", rand(3, 4, 3, 3))
bn("2d_eps_momentum", rand(2, 3, 4, 2), epsilon=1e-3, momentum=0.7)
bn("1d", rand(4, 3, 5), opset=9)
bn("0d_spatial", rand(6, 4), opset=14)
bn("3d", rand(2, 2, 3, 2, 3))
bn("training_mode", rand(3, 2, 4, 4), n_outputs=3, training_mode=1)
bn("opset9_training_outputs", rand(2, 3, 3, 3), opset=9, n_outputs=5)
# a Conv -> BN -> Relu block, the ResNet pattern, with the running statistics
# (initializers) updated in place on every forward
case("conv_bn_relu", graph_model(
    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
     helper.make_node("Mul", ["n", "n"], ["y"])],
    {"x": rand(2, 3, 5, 5), "w": rand(4, 3, 3, 3), "s": rand(4, low=0.5, high=1.5), "b": rand(4),
     "m": rand(4), "v": rand(4, low=0.5, high=1.5)}, ["y"]))

# ---- LayerNormalization ---------------------------------------------------------------
def ln(name, x, axis, scale_shape, bias_shape=None, **attrs):
    ins = [("x", x), ("scale", rand(*scale_shape, low=0.5, high=1.5))]
    if bias_shape is not None:
        ins.append(("b", rand(*bias_shape)))
    case("layernorm_" + name, single_op("LayerNormalization", ins, n_outputs=1, attrs=dict(axis=axis, **attrs)))


ln("last", rand(3, 8), -1, (8,), (8,))
ln("last_nobias", rand(2, 3, 6), -1, (6,))
ln("axis1", rand(2, 3, 4), 1, (3, 4), (3, 4), epsilon=1e-3)
ln("axis0", rand(3, 5), 0, (3, 5), (5,))
ln("bcast_scale", rand(2, 3, 4), 1, (1, 4), (3, 1))
ln("rank4_axis2", rand(2, 2, 3, 4), 2, (3, 4), (4,))
ln("bert_like", rand(2, 4, 32), -1, (32,), (32,))
# Mean and InvStdDev outputs present: only Y (output 0) feeds the loss
case("layernorm_stat_outputs", single_op("LayerNormalization", [("x", rand(3, 5)), ("s", rand(5)), ("b", rand(5))],
                                         n_outputs=3, output_index=0))

# ---- ConvTranspose ----------------------------------------------------------------------
def convt(name, x, w, b=None, **attrs):
    ins = [("x", x), ("w", w)] + ([("b", b)] if b is not None else [])
    case("convtranspose_" + name, single_op("ConvTranspose", ins, attrs=attrs))


convt("1d", rand(2, 3, 5), rand(3, 2, 3), rand(2))
convt("2d_basic", rand(1, 2, 4, 4), rand(2, 3, 3, 3), rand(3))
convt("2d_stride2", rand(2, 2, 3, 4), rand(2, 2, 3, 3), strides=[2, 2])
convt("2d_stride2_outpad", rand(1, 2, 3, 3), rand(2, 2, 3, 3), rand(2), strides=[2, 2], output_padding=[1, 0])
convt("2d_pads", rand(1, 3, 4, 4), rand(3, 2, 3, 2), strides=[2, 1], pads=[1, 0, 0, 1])
convt("2d_group2", rand(1, 4, 3, 3), rand(4, 3, 2, 2), rand(6), group=2, strides=[2, 2])
convt("2d_depthwise", rand(1, 3, 4, 4), rand(3, 1, 3, 3), group=3, pads=[1, 1, 1, 1])
convt("2d_dilation", rand(1, 2, 3, 3), rand(2, 2, 2, 2), dilations=[2, 2])
convt("2d_output_shape", rand(1, 2, 3, 3), rand(2, 2, 3, 3), rand(2), strides=[2, 2], output_shape=[8, 8])
convt("2d_same_upper", rand(1, 2, 3, 3), rand(2, 2, 3, 3), strides=[2, 2], auto_pad="SAME_UPPER")
convt("3d", rand(1, 2, 2, 3, 2), rand(2, 2, 2, 2, 2), rand(2), strides=[1, 2, 2])


# ---- RMSNormalization --------------------------------------------------------------------
def rms(name, x, axis, scale_shape, **attrs):
    ins = [("x", x), ("scale", rand(*scale_shape, low=0.5, high=1.5))]
    case("rmsnorm_" + name, single_op("RMSNormalization", ins, opset=23, attrs=dict(axis=axis, **attrs)))


rms("last", rand(3, 8), -1, (8,))
rms("axis1", rand(2, 3, 4), 1, (3, 4), epsilon=1e-3)
rms("axis0", rand(3, 5), 0, (3, 5))
rms("bcast_scale", rand(2, 3, 4), 1, (1, 4))
rms("llama_like", rand(2, 4, 32), -1, (32,))


# ---- GroupNormalization, InstanceNormalization ----------------------------------------------
def gn(name, x, groups, per_channel, opset, **attrs):
    n = x.shape[1] if per_channel else groups
    ins = [("x", x), ("scale", rand(n, low=0.5, high=1.5)), ("bias", rand(n))]
    case("groupnorm_" + name, single_op("GroupNormalization", ins, opset=opset,
                                        attrs=dict(num_groups=groups, **attrs)))


gn("21_g2", rand(2, 4, 3, 3), 2, True, 21)
gn("21_g1_1d", rand(3, 6, 5), 1, True, 21, epsilon=1e-3)
gn("21_per_channel_groups", rand(2, 3, 4), 3, True, 21)
gn("18_per_group", rand(2, 6, 2, 3), 3, False, 18)
gn("21_3d", rand(1, 4, 2, 3, 2), 2, True, 21)
# opset 18 with per-channel Scale/B, as exporters wrote before 21 fixed the spec
gn("18_per_channel_legacy", rand(2, 4, 3), 2, True, 18)
case("instancenorm_2d", single_op("InstanceNormalization", [("x", rand(2, 3, 4, 3)), ("s", rand(3, low=0.5, high=1.5)),
                                                           ("b", rand(3))], opset=22))
case("instancenorm_1d_opset17", single_op("InstanceNormalization", [("x", rand(3, 2, 5)), ("s", rand(2, low=0.5, high=1.5)),
                                                                  ("b", rand(2))], opset=17, attrs=dict(epsilon=1e-3)))


# ---- RotaryEmbedding ----------------------------------------------------------------------
def rope_caches(rows, half):
    ang = np.outer(np.arange(rows), 1.0 / (10000 ** (np.arange(half) / half))).astype(np.float32)
    return np.cos(ang), np.sin(ang)


def rope(name, x, half, pos=None, batch_seq=None, **attrs):
    if pos is not None:
        cos, sin = rope_caches(12, half)
    else:
        cos, sin = rope_caches(batch_seq[0] * batch_seq[1], half)
        cos, sin = cos.reshape(*batch_seq, half), sin.reshape(*batch_seq, half)
    ins = [("x", x), ("cos", cos), ("sin", sin)] + ([("pos", pos)] if pos is not None else [])
    case("rotary_" + name, single_op("RotaryEmbedding", ins, opset=23, attrs=attrs), no_grad=["cos", "sin"])


POS = np.array([[0, 3, 5], [7, 1, 11]], dtype=np.int64)
rope("4d", rand(2, 2, 3, 8), 4, POS)
rope("4d_interleaved", rand(2, 2, 3, 8), 4, POS, interleaved=1)
rope("4d_partial", rand(2, 2, 3, 8), 2, POS, rotary_embedding_dim=4)
rope("3d_interleaved_partial", rand(2, 3, 12), 1, POS, num_heads=2, interleaved=1, rotary_embedding_dim=2)
rope("3d_no_position_ids", rand(2, 3, 8), 2, batch_seq=(2, 3), num_heads=2)


# ---- Attention ----------------------------------------------------------------------------
def attention(name, inputs, n_outputs=1, opset=23, no_grad=(), **attrs):
    ins = [(k, v) for k, v in inputs]
    model = single_op("Attention", ins, n_outputs=n_outputs, opset=opset, attrs=attrs)
    case("attention_" + name, model, no_grad=list(no_grad))


def qkv4(b, hq, hkv, sq, skv, d, dv=None):
    return [("q", rand(b, hq, sq, d)), ("k", rand(b, hkv, skv, d)), ("v", rand(b, hkv, skv, dv or d))]


attention("4d", qkv4(2, 2, 2, 3, 4, 4))
attention("4d_scaled_dv", qkv4(1, 2, 2, 3, 3, 4, 5), scale=0.7)
attention("4d_gqa_causal", qkv4(2, 4, 2, 4, 4, 3), is_causal=1)
attention("3d_gqa", [("q", rand(2, 3, 8)), ("k", rand(2, 4, 4)), ("v", rand(2, 4, 6))], q_num_heads=4, kv_num_heads=2)
attention("3d_causal_cross", [("q", rand(1, 3, 6)), ("k", rand(1, 5, 6)), ("v", rand(1, 5, 6))], q_num_heads=2,
          kv_num_heads=2, is_causal=1)
attention("bool_mask", qkv4(2, 2, 1, 3, 4, 4) + [("m", np.array([[1, 0, 1, 1], [1, 1, 0, 1], [0, 0, 1, 1]], bool))])
attention("float_mask_bcast", qkv4(2, 2, 2, 3, 4, 4) + [("m", rand(2, 1, 3, 4))], no_grad=["m"])
attention("short_mask_causal", qkv4(1, 2, 2, 3, 5, 4) + [("m", rand(2, 3, 4))], is_causal=1, no_grad=["m"])
attention("softcap", qkv4(1, 2, 2, 3, 4, 4), softcap=0.8, scale=2.0)
# past key/value, with the present outputs feeding the loss as well as Y
# (sum of squares of each, so no output's gradient is uniform)
case("attention_past_present", graph_model(
    [helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "prk", "prv"], is_causal=1)]
    + [helper.make_node("Mul", [t, t], [t + "2"]) for t in ("y", "prk", "prv")]
    + [helper.make_node("ReduceSum", [t + "2"], [t + "s"], keepdims=0) for t in ("y", "prk", "prv")]
    + [helper.make_node("Sum", ["ys", "prks", "prvs"], ["loss"])],
    {"q": rand(1, 4, 2, 3), "k": rand(1, 2, 2, 3), "v": rand(1, 2, 2, 3), "pk": rand(1, 2, 3, 3),
     "pv": rand(1, 2, 3, 3)}, ["loss"], opset=23))
attention("3d_past_mask", [("q", rand(1, 2, 8)), ("k", rand(1, 2, 8)), ("v", rand(1, 2, 8)), ("m", rand(1, 5)),
                           ("pk", rand(1, 2, 3, 4)), ("pv", rand(1, 2, 3, 4))], q_num_heads=2, kv_num_heads=2,
          no_grad=["m"])
attention("window_25", qkv4(1, 2, 2, 5, 5, 3), opset=25, left_window_size=2, right_window_size=1)
attention("nonpad_causal_24", qkv4(2, 2, 2, 2, 5, 3) + [("", None), ("", None), ("", None),
                                                        ("n", np.array([4, 2], np.int64))], opset=24, is_causal=1)
# a fully masked query row (key 0 never visible, query 0 attends only it): its output and gradient are zero
attention("fully_masked_row", qkv4(1, 1, 1, 3, 3, 2) + [("m", np.array([False, True, True]))], is_causal=1)


def sq_loss(outputs):
    """Nodes summing the squares of each output into "loss" (no output's
    gradient is uniform)."""
    nodes = [helper.make_node("Mul", [t, t], [t + "2"]) for t in outputs]
    nodes += [helper.make_node("ReduceSum", [t + "2"], [t + "s"], keepdims=0) for t in outputs]
    return nodes + [helper.make_node("Sum", [t + "s" for t in outputs], ["loss"])]


# ---- CausalConvWithState (27) ----------------------------------------------------------------
def causal_conv(name, b, c, length, k, bias=True, past=True, **attrs):
    ins = {"x": rand(b, c, length), "w": rand(c, 1, k)}
    names = ["x", "w", "bias" if bias else "", "past" if past else ""]
    if bias:
        ins["bias"] = rand(c)
    if past:
        ins["past"] = rand(b, c, k - 1)
    while not names[-1]:
        names.pop()
    case("causal_conv_" + name, graph_model(
        [helper.make_node("CausalConvWithState", names, ["y", "state"], **attrs)] + sq_loss(["y", "state"]),
        ins, ["loss"], opset=27))


causal_conv("basic", 2, 3, 5, 3, bias=False, past=False)
causal_conv("bias_past", 2, 3, 5, 3)
causal_conv("silu", 1, 4, 6, 4, activation="silu")
causal_conv("swish_short", 2, 2, 2, 4, activation="swish")
causal_conv("k1", 2, 3, 4, 1, past=False)
case("causal_conv_output_only", single_op("CausalConvWithState", [("x", rand(2, 3, 4)), ("w", rand(3, 1, 2)),
                                                                  ("bias", rand(3))], opset=27))
# a prefill and a decode step chained through the state
case("causal_conv_chained", graph_model(
    [helper.make_node("CausalConvWithState", ["x", "w", "bias"], ["y1", "s1"], activation="silu"),
     helper.make_node("CausalConvWithState", ["x2", "w", "bias", "s1"], ["y2", "s2"], activation="silu")]
    + sq_loss(["y1", "y2"]),
    {"x": rand(1, 3, 4), "x2": rand(1, 3, 1), "w": rand(3, 1, 3), "bias": rand(3)}, ["loss"], opset=27))


# ---- LinearAttention (27) ----------------------------------------------------------------------
def lin_att(name, b, t, hq, hkv, dk, dv, rule, past=True, decay_per_key=True, beta_shared=False, **attrs):
    ins = {"q": rand(b, t, hq * dk), "k": rand(b, t, hkv * dk) * 0.5, "v": rand(b, t, hkv * dv)}
    names = ["q", "k", "v", "", "", ""]
    if past:
        ins["past"] = rand(b, hkv, dk, dv)
        names[3] = "past"
    if rule in ("gated", "gated_delta"):
        ins["decay"] = rand(b, t, hkv * dk if decay_per_key else hkv, low=-1.0, high=-0.05)
        names[4] = "decay"
    if rule in ("delta", "gated_delta"):
        ins["beta"] = rand(b, t, 1 if beta_shared else hkv, low=0.2, high=0.9)
        names[5] = "beta"
    while not names[-1]:
        names.pop()
    case("linear_attention_" + name, graph_model(
        [helper.make_node("LinearAttention", names, ["y", "state"], q_num_heads=hq, kv_num_heads=hkv,
                          update_rule=rule, **attrs)] + sq_loss(["y", "state"]),
        ins, ["loss"], opset=27))


lin_att("linear", 2, 3, 2, 2, 3, 2, "linear", past=False)
lin_att("linear_past_scale", 1, 3, 2, 2, 2, 3, "linear", scale=0.6)
lin_att("gated_per_key", 1, 4, 2, 2, 3, 2, "gated")
lin_att("gated_per_head", 2, 3, 2, 2, 2, 2, "gated", decay_per_key=False)
lin_att("delta", 1, 4, 2, 2, 3, 3, "delta")
lin_att("delta_beta_shared", 2, 3, 2, 2, 2, 2, "delta", beta_shared=True, past=False)
lin_att("gated_delta_gqa", 1, 3, 4, 2, 3, 2, "gated_delta")
lin_att("gated_delta_mqa_head_decay", 2, 2, 2, 1, 2, 3, "gated_delta", decay_per_key=False, beta_shared=True)
case("linear_attention_output_only", single_op("LinearAttention", [
    ("q", rand(1, 3, 4)), ("k", rand(1, 3, 4)), ("v", rand(1, 3, 4)), ("", None),
    ("decay", rand(1, 3, 2, low=-1.0, high=-0.1)), ("beta", rand(1, 3, 2, low=0.2, high=0.9))],
    attrs=dict(q_num_heads=2, kv_num_heads=2), opset=27))
# prefill, then a decode step from its state
case("linear_attention_chained", graph_model(
    [helper.make_node("LinearAttention", ["q", "k", "v", "", "g", "b"], ["y1", "s1"], q_num_heads=2, kv_num_heads=1),
     helper.make_node("LinearAttention", ["q2", "k2", "v2", "s1", "g2", "b2"], ["y2", "s2"], q_num_heads=2,
                      kv_num_heads=1)] + sq_loss(["y1", "y2"]),
    {"q": rand(1, 3, 4), "k": rand(1, 3, 2), "v": rand(1, 3, 3), "g": rand(1, 3, 2, low=-1.0, high=-0.1),
     "b": rand(1, 3, 1, low=0.2, high=0.9), "q2": rand(1, 1, 4), "k2": rand(1, 1, 2), "v2": rand(1, 1, 3),
     "g2": rand(1, 1, 2, low=-1.0, high=-0.1), "b2": rand(1, 1, 1, low=0.2, high=0.9)}, ["loss"], opset=27))


# ---- FlexAttention (ai.onnx.preview 1) ----------------------------------------------------------
def flex_model(ins, score_mod=None, prob_mod=None, **attrs):
    if score_mod is not None:
        attrs["score_mod"] = score_mod
    if prob_mod is not None:
        attrs["prob_mod"] = prob_mod
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", **attrs)
    graph = helper.make_graph([node], "flex", [], [helper.make_tensor_value_info("y", 1, None)],
                              initializer=[helper.make_tensor(n, 1, a.shape, a.flatten().tolist())
                                           for n, a in ins.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                    helper.make_opsetid("ai.onnx.preview", 1)])
    model.ir_version = 10
    return model


def mod_graph(nodes, inits=None):
    return helper.make_graph(nodes, "mod", [helper.make_tensor_value_info("s", 1, None)],
                             [helper.make_tensor_value_info("o", 1, None)],
                             initializer=[helper.make_tensor(n, 1, a.shape, a.flatten().tolist())
                                          for n, a in (inits or {}).items()])


def flex(name, b, hq, hkv, lq, lk, e, ev, **attrs):
    ins = {"q": rand(b, hq, lq, e), "k": rand(b, hkv, lk, e), "v": rand(b, hkv, lk, ev)}
    case("flexattention_" + name, flex_model(ins, **attrs))


flex("plain", 2, 2, 2, 3, 4, 3, 3)
flex("gqa_scale", 1, 4, 2, 3, 3, 2, 4, scale=0.5)
# soft cap: 2 tanh(s / 2), with the subgraph's own constant
flex("soft_cap", 1, 2, 2, 3, 4, 3, 2, score_mod=mod_graph(
    [helper.make_node("Div", ["s", "c"], ["t"]), helper.make_node("Tanh", ["t"], ["u"]),
     helper.make_node("Mul", ["u", "c"], ["o"])], {"c": np.array(2.0, np.float32)}))
# a relative bias read from the enclosing graph (trained through the subgraph)
case("flexattention_outer_bias", flex_model(
    {"q": rand(1, 2, 3, 2), "k": rand(1, 2, 3, 2), "v": rand(1, 2, 3, 2), "bias": rand(3, 3)},
    score_mod=mod_graph([helper.make_node("Add", ["s", "bias"], ["o"])])))
flex("prob_mod", 1, 2, 1, 2, 3, 2, 2, prob_mod=mod_graph([helper.make_node("Mul", ["s", "s"], ["o"])]))
