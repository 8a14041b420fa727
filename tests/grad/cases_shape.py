"""Gradient checks of the shape and data-movement family: views, Transpose,
Concat/Split, Slice, Gather/GatherElements, Expand/Tile, Pad, Resize and
Dropout, over several shapes and attribute combinations each (negative
axes, steps, broadcasting, repeated indices so that scatter-adds
accumulate, padding modes, interpolation modes, training-mode masks)."""
import numpy as np
from onnx import helper

from gradutil import case_adder, graph_model, rand, single_op

I64 = np.int64
BIG = np.iinfo(np.int64).max


def i64(*v):
    return np.array(v, dtype=I64)


def idx(nested):
    """An index tensor of any rank from nested lists."""
    return np.array(nested, dtype=I64)


# Not differentiable (as in ONNX Runtime training and PyTorch).
NO_GRAD = ['sc', 'r']

CASES = []


case = case_adder(CASES)


# ---- views --------------------------------------------------------------------
case("reshape_infer_dim", single_op("Reshape", [("x", rand(2, 3, 4)), ("s", i64(4, -1))]))
case("reshape_copy_zero", single_op("Reshape", [("x", rand(2, 3, 4)), ("s", i64(0, 12))]))
case("flatten_axis2", single_op("Flatten", [("x", rand(2, 3, 2, 2))], attrs={"axis": 2}))
case("flatten_axis_neg", single_op("Flatten", [("x", rand(2, 3, 4))], attrs={"axis": -1}))
case("flatten_axis0", single_op("Flatten", [("x", rand(3, 4))], attrs={"axis": 0}))
case("squeeze_axes_neg", single_op("Squeeze", [("x", rand(2, 1, 3, 1)), ("a", i64(1, -1))]))
case("squeeze_all", single_op("Squeeze", [("x", rand(1, 3, 1, 2))]))
case("squeeze_attr_v11", single_op("Squeeze", [("x", rand(2, 1, 3))], opset=11, attrs={"axes": [1]}))
case("unsqueeze_axes_neg", single_op("Unsqueeze", [("x", rand(2, 3)), ("a", i64(0, -1))]))
case("unsqueeze_attr_v11", single_op("Unsqueeze", [("x", rand(3, 2))], opset=11, attrs={"axes": [1]}))
case("identity", single_op("Identity", [("x", rand(3, 4))]))
# A view in the middle of a chain: the gradient passes through two views.
case("reshape_then_transpose", graph_model(
    [helper.make_node("Reshape", ["x", "s"], ["r"]),
     helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0])],
    {"x": rand(2, 3, 2), "s": i64(3, 4)}, ["y"]))

# ---- Transpose ----------------------------------------------------------------
case("transpose_default", single_op("Transpose", [("x", rand(2, 3, 4))]))
case("transpose_perm_120", single_op("Transpose", [("x", rand(2, 3, 4))], attrs={"perm": [1, 2, 0]}))
case("transpose_4d", single_op("Transpose", [("x", rand(2, 3, 2, 3))], attrs={"perm": [0, 2, 1, 3]}))

# ---- Concat and Split -----------------------------------------------------------
case("concat_axis1_three", single_op("Concat", [("a", rand(2, 1, 3)), ("b", rand(2, 3, 3)), ("c", rand(2, 2, 3))],
                                     attrs={"axis": 1}))
case("concat_axis_neg", single_op("Concat", [("a", rand(3, 2)), ("b", rand(3, 4))], attrs={"axis": -1}))
case("concat_same_input_twice", graph_model(
    [helper.make_node("Concat", ["x", "x", "z"], ["y"], axis=0)], {"x": rand(2, 3), "z": rand(1, 3)}, ["y"]))
case("split_equal_axis0", single_op("Split", [("x", rand(4, 3))], n_outputs=2, output_index=1,
                                    attrs={"axis": 0}))
case("split_sizes_axis_neg", graph_model(
    [helper.make_node("Split", ["x", "sp"], ["a", "b", "c"], axis=-1),
     helper.make_node("Concat", ["c", "a"], ["y"], axis=-1)],     # b unused: its gradient is zeros
    {"x": rand(2, 3, 6), "sp": i64(1, 2, 3)}, ["y"]))
case("split_num_outputs_v18", graph_model(
    [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3),
     helper.make_node("Concat", ["c", "b", "a"], ["y"], axis=1)],
    {"x": rand(2, 7)}, ["y"], opset=18))
case("split_attr_v11_middle", single_op("Split", [("x", rand(5, 2))], n_outputs=3, output_index=1, opset=11,
                                        attrs={"axis": 0, "split": [1, 3, 1]}))

# ---- Slice ----------------------------------------------------------------------
case("slice_basic", single_op("Slice", [("x", rand(4, 5)), ("s", i64(1, 0)), ("e", i64(3, 4))]))
case("slice_steps_neg_axes", single_op("Slice", [("x", rand(3, 6, 5)), ("s", i64(0, 4)), ("e", i64(BIG, -6)),
                                                 ("a", i64(-1, 1)), ("st", i64(2, -2))]))
case("slice_neg_step_full", single_op("Slice", [("x", rand(2, 5)), ("s", i64(-1)), ("e", i64(-BIG)),
                                                ("a", i64(1)), ("st", i64(-1))]))
case("slice_clamped_ends", single_op("Slice", [("x", rand(4, 3)), ("s", i64(-10)), ("e", i64(100)),
                                               ("a", i64(0)), ("st", i64(3))]))
case("slice_attr_v9", single_op("Slice", [("x", rand(3, 4, 2))], opset=9,
                                attrs={"starts": [1, -3], "ends": [3, 4], "axes": [0, 1]}))

# ---- Gather and GatherElements --------------------------------------------------------
# Repeated indices: the scatter-add must accumulate every use.
case("gather_embedding_repeats", single_op("Gather", [("w", rand(5, 3)), ("i", idx([[0, 2], [2, 2], [4, 0]]))]))
case("gather_axis1_negative_idx", single_op("Gather", [("x", rand(2, 4, 3)), ("i", i64(-1, 1, 1))],
                                            attrs={"axis": 1}))
case("gather_axis_neg_scalar_idx", single_op("Gather", [("x", rand(3, 4)), ("i", np.array(2, dtype=I64))],
                                             attrs={"axis": -1}))
case("gather_int32_idx", single_op("Gather", [("x", rand(4, 2)), ("i", np.array([3, 3, 0], dtype=np.int32))]))
case("gather_elements_axis0", single_op("GatherElements", [("x", rand(3, 4)), ("i", idx([[0, 2, 2, 1], [2, 2, 0, 0]]))]))
case("gather_elements_axis_neg", single_op("GatherElements", [("x", rand(2, 3, 4)),
                                                              ("i", idx([[[3, 3], [0, 1], [-1, 3]],
                                                                         [[1, 1], [2, 0], [0, 0]]]))],
                                           attrs={"axis": -1}))
case("gather_elements_axis1", single_op("GatherElements", [("x", rand(3, 3)), ("i", idx([[1, 1], [0, 2], [2, 2]]))],
                                        attrs={"axis": 1}))

# ---- Expand and Tile -----------------------------------------------------------------
case("expand_rank_up", single_op("Expand", [("x", rand(3, 1)), ("s", i64(2, 3, 4))]))
case("expand_scalar_like", single_op("Expand", [("x", rand(1)), ("s", i64(3))]))
case("expand_bidirectional", single_op("Expand", [("x", rand(2, 1, 3)), ("s", i64(4, 1))]))
case("expand_noop", single_op("Expand", [("x", rand(2, 3)), ("s", i64(1, 3))]))
case("tile_2d", single_op("Tile", [("x", rand(2, 3)), ("r", i64(2, 1))]))
case("tile_3d", single_op("Tile", [("x", rand(2, 3, 2)), ("r", i64(1, 3, 2))]))
case("tile_rank5_all_axes", single_op("Tile", [("x", rand(1, 2, 1, 2, 1)), ("r", i64(2, 2, 2, 2, 2))]))
case("tile_ones", single_op("Tile", [("x", rand(2, 2)), ("r", i64(1, 1))]))

# ---- Pad -----------------------------------------------------------------------
case("pad_constant", single_op("Pad", [("x", rand(2, 3)), ("p", i64(1, 0, 2, 1))]))
case("pad_constant_crop", single_op("Pad", [("x", rand(3, 4)), ("p", i64(1, -1, -2, 2))]))
case("pad_constant_value", single_op("Pad", [("x", rand(2, 3)), ("p", i64(0, 2, 1, 1)),
                                             ("v", np.array(0.5, dtype=np.float32))]))
case("pad_reflect", single_op("Pad", [("x", rand(3, 4)), ("p", i64(2, 1, 1, 3))], attrs={"mode": "reflect"}))
case("pad_edge_3d", single_op("Pad", [("x", rand(2, 2, 3)), ("p", i64(0, 2, 1, 1, 0, 2))], attrs={"mode": "edge"}))
case("pad_wrap_v19", single_op("Pad", [("x", rand(2, 3)), ("p", i64(1, 4, 0, 2))], attrs={"mode": "wrap"}, opset=19))
case("pad_axes_v18", single_op("Pad", [("x", rand(2, 3, 2)), ("p", i64(1, 2)), ("v", None), ("a", i64(-2))],
                               opset=18))
case("pad_reflect_crop", single_op("Pad", [("x", rand(2, 5)), ("p", i64(0, 2, 0, -1))], attrs={"mode": "reflect"}))
case("pad_attr_v2", single_op("Pad", [("x", rand(2, 2))], opset=7, attrs={"pads": [1, 0, 0, 1], "value": 1.5}))

# ---- Resize ------------------------------------------------------------------------
def resize(x, sizes=None, scales=None, opset=13, **attrs):
    inputs = [("x", x), ("roi", None), ("sc", scales), ("sz", sizes)]
    return single_op("Resize", inputs, opset=opset, attrs=attrs)


case("resize_nearest_up2_asym", resize(rand(1, 1, 2, 3), sizes=i64(1, 1, 4, 6), mode="nearest",
                                       coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
case("resize_nearest_down", resize(rand(1, 2, 5, 4), sizes=i64(1, 2, 3, 2), mode="nearest"))
case("resize_linear_half_pixel", resize(rand(2, 2, 3, 3), sizes=i64(2, 2, 5, 4), mode="linear"))
case("resize_linear_align_corners", resize(rand(1, 1, 4, 5), sizes=i64(1, 1, 3, 7), mode="linear",
                                           coordinate_transformation_mode="align_corners"))
case("resize_linear_1d_pytorch", resize(rand(3, 4), sizes=i64(3, 7), mode="linear",
                                        coordinate_transformation_mode="pytorch_half_pixel"))
case("resize_linear_scales", resize(rand(1, 1, 3, 2), scales=np.array([1, 1, 2.5, 1.5], np.float32), mode="linear"))
case("resize_trilinear", resize(rand(1, 2, 3, 2, 2), sizes=i64(1, 2, 4, 3, 3), mode="linear"))
case("resize_nearest_ceil_axes_v18", single_op("Resize", [("x", rand(2, 3, 4)), ("roi", None), ("sc", None),
                                                          ("sz", i64(5, 3))],
                                               opset=18, attrs={"mode": "nearest", "nearest_mode": "ceil",
                                                                "axes": [-1, 1]}))
# The separable path (ops/resize_general.c): cubic, antialias, exclude_outside,
# tf_crop_and_resize (roi "r", a constant) and keep_aspect_ratio_policy.
def resize18(x, sizes=None, scales=None, roi=None, **attrs):
    return single_op("Resize", [("x", x), ("r", roi), ("sc", scales), ("sz", sizes)], opset=19, attrs=attrs)


case("resize_cubic_up", resize18(rand(1, 2, 3, 4), sizes=i64(1, 2, 5, 7), mode="cubic"))
case("resize_cubic_down_exclude", resize18(rand(1, 1, 6, 5), sizes=i64(1, 1, 4, 3), mode="cubic",
                                           exclude_outside=1, cubic_coeff_a=-0.5))
case("resize_cubic_antialias_down", resize18(rand(1, 1, 8, 7), sizes=i64(1, 1, 3, 3), mode="cubic", antialias=1))
case("resize_linear_antialias_down", resize18(rand(2, 1, 7, 9), scales=np.array([1, 1, 0.5, 0.4], np.float32),
                                              mode="linear", antialias=1))
case("resize_tf_crop_linear", resize18(rand(1, 1, 5, 6), sizes=i64(1, 1, 4, 4),
                                       roi=np.array([0, 0, -0.1, 0.2, 1, 1, 0.7, 1.2], np.float32), mode="linear",
                                       coordinate_transformation_mode="tf_crop_and_resize",
                                       extrapolation_value=2.0))
case("resize_cubic_not_larger_axes", resize18(rand(2, 5, 4), sizes=i64(3, 6), mode="cubic", axes=[2, 1],
                                              keep_aspect_ratio_policy="not_larger"))

# ---- Dropout ------------------------------------------------------------------------
# gradcheck runs every forward in training mode, so ratio > 0 draws masks;
# the finite differences see the same mask (same seed), which the gradient
# must reproduce without the mask output.
case("dropout_train_ratio", single_op("Dropout", [("x", rand(4, 5)), ("r", np.array(0.3, np.float32))], opset=13))
case("dropout_train_mask_output", single_op("Dropout", [("x", rand(3, 7)), ("r", np.array(0.6, np.float64))],
                                            n_outputs=2, opset=13, output_index=0))
case("dropout_train_seed_attr", single_op("Dropout", [("x", rand(5, 4))], opset=13, attrs={"seed": 42}))
case("dropout_inference_mode", single_op("Dropout", [("x", rand(3, 4)), ("r", np.array(0.5, np.float32)),
                                                     ("t", np.array(False))], opset=13))
case("dropout_v7_ratio_attr", single_op("Dropout", [("x", rand(4, 4))], opset=7, attrs={"ratio": 0.4}))
case("dropout_two_nodes", graph_model(
    [helper.make_node("Dropout", ["x"], ["d1"], name="drop1"),
     helper.make_node("Dropout", ["d1"], ["y"], name="drop2")],
    {"x": rand(6, 6)}, ["y"], opset=13))

# ---- float64: the double paths of the gradient kernels ---------------------------
F64 = {"dtype": np.float64}
case("f64_gather_repeats", single_op("Gather", [("w", rand(4, 3, **F64)), ("i", idx([1, 1, 3, 1]))]))
case("f64_gather_elements", single_op("GatherElements", [("x", rand(2, 3, **F64)), ("i", idx([[2, 2, 0], [1, 1, 1]]))],
                                      attrs={"axis": 1}))
case("f64_slice_step", single_op("Slice", [("x", rand(5, 4, **F64)), ("s", i64(4)), ("e", i64(0)),
                                           ("a", i64(0)), ("st", i64(-2))]))
case("f64_pad_reflect", single_op("Pad", [("x", rand(3, 3, **F64)), ("p", i64(1, 2, 2, 0))], attrs={"mode": "reflect"}))
case("f64_resize_linear", resize(rand(1, 1, 2, 3, **F64), sizes=i64(1, 1, 5, 4), mode="linear"))
case("f64_dropout_train", single_op("Dropout", [("x", rand(4, 6, **F64)), ("r", np.array(0.25, np.float64))],
                                    opset=13))
# Opset 10 Resize: scales input, asymmetric mapping, Upsample's rounding.
case("resize_v10_nearest_scales", single_op("Resize", [("x", rand(1, 1, 2, 3)),
                                                       ("sc", np.array([1, 1, 2, 1.5], np.float32))],
                                            opset=10, attrs={"mode": "nearest"}))

# ---- GatherND, ScatterND, ScatterElements (ops/scatter_gather_nd.c, scatter_elements.c)
# Repeated index tuples so that GatherNDGrad accumulates; scatters with
# duplicate destinations under every reduction (none: the last writer gets
# dy; mul: the other writers' product; max/min: the selected element, with
# values far apart so that the selection is stable under the step).
case("gathernd_tuples_repeat", single_op("GatherND", [("x", rand(3, 4, 2)), ("i", idx([[0, 1], [2, 3], [0, 1]]))],
                                         opset=13))
case("gathernd_full_index", single_op("GatherND", [("x", rand(3, 4)), ("i", idx([[[1, -1]], [[2, 0]]]))], opset=13))
case("gathernd_batch_dims1", single_op("GatherND", [("x", rand(2, 3, 4)), ("i", idx([[[1], [1]], [[0], [2]]]))],
                                       opset=13, attrs={"batch_dims": 1}))
case("gathernd_f64", single_op("GatherND", [("x", rand(4, 3, **F64)), ("i", idx([[3], [3], [0]]))], opset=13))


def far_apart(*shape, dtype=np.float32):
    n = int(np.prod(shape))
    return (np.random.default_rng(n).permutation(n).reshape(shape) * 0.3 - 0.2 * n).astype(dtype)


for red in ("none", "add", "mul", "max", "min"):
    case(f"scatternd_dup_{red}", single_op("ScatterND", [("x", far_apart(4, 3)), ("i", idx([[1], [3], [1]])),
                                                         ("u", far_apart(3, 3) + 0.1)],
                                           opset=18, attrs={"reduction": red}))
    case(f"scatter_elements_dup_{red}", single_op(
        "ScatterElements", [("x", far_apart(3, 4)), ("i", idx([[0, 2, 2, 1], [2, 2, 0, 1]])),
                            ("u", far_apart(2, 4) + 0.1)], opset=18, attrs={"axis": 0, "reduction": red}))
case("scatternd_elementwise_idx", single_op("ScatterND", [("x", rand(2, 3)), ("i", idx([[0, 2], [1, -1]])),
                                                          ("u", rand(2))], opset=13))
case("scatter_elements_axis_neg", single_op("ScatterElements", [("x", rand(2, 4)), ("i", idx([[3, -1], [0, 1]])),
                                                                ("u", rand(2, 2))], opset=13, attrs={"axis": -1}))
case("scatter_v9", single_op("Scatter", [("x", rand(3, 2)), ("i", idx([[1, 0], [2, 2]])), ("u", rand(2, 2))],
                             opset=9, attrs={"axis": 0}))
case("scatternd_mul_zero_f64", single_op("ScatterND", [("x", rand(3, 2, **F64)), ("i", idx([[0], [0], [2]])),
                                                       ("u", np.array([[0.0, 1.5], [0.7, 0.0], [2.0, -1.0]]))],
                                         opset=18, attrs={"reduction": "mul"}))

# ---- CumSum, Trilu (ops/cumsum_trilu.c) -------------------------------------------
for excl in (0, 1):
    for rev in (0, 1):
        case(f"cumsum_e{excl}_r{rev}", single_op("CumSum", [("x", rand(3, 4, 2)), ("a", np.array(1, I64))],
                                                 opset=14, attrs={"exclusive": excl, "reverse": rev}))
case("cumsum_axis_neg_int32", single_op("CumSum", [("x", rand(2, 5)), ("a", np.array(-1, np.int32))], opset=11))
case("cumsum_f64", single_op("CumSum", [("x", rand(4, 3, **F64)), ("a", np.array(0, I64))], opset=14))
for upper in (0, 1):
    for k in (-1, 0, 2):
        case(f"trilu_u{upper}_k{k}".replace("-", "m"),
             single_op("Trilu", [("x", rand(2, 3, 4)), ("k", np.array(k, I64))], opset=14, attrs={"upper": upper}))
case("trilu_default_no_k", single_op("Trilu", [("x", rand(4, 3))], opset=14))
case("trilu_f64", single_op("Trilu", [("x", rand(3, 3, **F64))], opset=14, attrs={"upper": 0}))

# ---- TopK (ops/topk.c): the values' gradient; distinct values so the ----------
# selection does not change under the step.
case("topk_last_axis", single_op("TopK", [("x", far_apart(3, 5)), ("k", i64(2))], n_outputs=2, output_index=0,
                                 opset=11))
case("topk_axis0_smallest", single_op("TopK", [("x", far_apart(4, 3)), ("k", i64(3))], n_outputs=2,
                                      output_index=0, opset=11, attrs={"axis": 0, "largest": 0}))
case("topk_v1", single_op("TopK", [("x", far_apart(2, 4))], n_outputs=2, output_index=0, opset=9, attrs={"k": 3}))
case("topk_f64", single_op("TopK", [("x", far_apart(2, 6, dtype=np.float64)), ("k", i64(4))], n_outputs=2,
                           output_index=0, opset=11))

# ---- Einsum (ops/einsum.c): every operand's gradient is itself an Einsum ------
for eq, shapes in [("bhid,bhjd->bhij", [(1, 2, 3, 2), (1, 2, 4, 2)]),
                   ("bhij,bhjd->bhid", [(1, 2, 3, 4), (1, 2, 4, 2)]),
                   ("ij,jk", [(2, 3), (3, 2)]),
                   ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
                   ("...ii->...i", [(2, 3, 3)]),
                   ("ii", [(3, 3)]),
                   ("iij,jk->ik", [(2, 2, 3), (3, 2)]),
                   ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
                   ("bid,d->bi", [(2, 3, 4), (4,)]),
                   ("ij,ij->i", [(3, 4), (1, 4)]),
                   ("ijk->", [(2, 3, 2)]),
                   ("i,j->ij", [(3,), (2,)])]:
    name = "einsum_" + "".join(ch if ch.isalnum() else "_" for ch in eq)
    case(name, single_op("Einsum", [(f"x{i}", rand(*s)) for i, s in enumerate(shapes)], opset=12,
                         attrs={"equation": eq}))
case("einsum_f64_bmm", single_op("Einsum", [("a", rand(2, 2, 3, **F64)), ("b", rand(2, 3, 2, **F64))], opset=12,
                                 attrs={"equation": "bij,bjk->bik"}))
