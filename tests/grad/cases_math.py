"""Gradient checks of the elementwise, comparison, cast, softmax and
reduction family (ops/binary.c, unary.c, compare.c, cast.c, softmax.c,
reduce.c): several shapes per op, numpy broadcasting both ways and rank 0,
attribute combinations, float64 paths, and inputs kept away from the kinks
of Relu/Abs/Clip/Max so that finite differences are meaningful."""
import numpy as np
from onnx import helper

from gradutil import away_from, case_adder, graph_model, rand, single_op

I64 = np.int64
F64 = np.float64


def i64(*v):
    return np.array(v, dtype=I64)


# Not differentiable (as in ONNX Runtime training and PyTorch).
NO_GRAD = ['lo', 'hi']

CASES = []


case = case_adder(CASES)


# shapes for binary ops: same, broadcast one way, the other way, both ways, rank 0
BIN_SHAPES = [
    ("same", (2, 3), (2, 3)),
    ("bcast_b", (2, 3, 4), (3, 1)),
    ("bcast_a", (4,), (2, 3, 4)),
    ("bcast_both", (2, 1, 4), (3, 1)),
    ("scalar_b", (2, 3), ()),
    ("scalar_a", (), (3, 2)),
    ("scalars", (), ()),
]

# ---- Add, Sub, Mul -------------------------------------------------------------
for op in ("Add", "Sub", "Mul"):
    for tag, sa, sb in BIN_SHAPES:
        case(f"{op.lower()}_{tag}", single_op(op, [("a", rand(*sa)), ("b", rand(*sb))]))
    case(f"{op.lower()}_f64", single_op(op, [("a", rand(2, 3, dtype=F64)), ("b", rand(3, dtype=F64))]))
    # both inputs the same tensor: the two gradients accumulate
    case(f"{op.lower()}_same_input", graph_model(
        [helper.make_node(op, ["a", "a"], ["y"])], {"a": rand(3, 2)}, ["y"]))

# ---- ReduceSum, ReduceMean -----------------------------------------------------
for op, opset_in in (("ReduceSum", 13), ("ReduceMean", 18)):
    t = op.lower()
    for kd in (0, 1):
        case(f"{t}_all_kd{kd}", single_op(op, [("x", rand(2, 3, 4))], opset=opset_in, attrs={"keepdims": kd}))
        case(f"{t}_axis1_kd{kd}", single_op(op, [("x", rand(2, 3, 4)), ("a", i64(1))], opset=opset_in,
                                            attrs={"keepdims": kd}))
        case(f"{t}_axes_neg_kd{kd}", single_op(op, [("x", rand(2, 3, 4, 2)), ("a", i64(-1, 1))],
                                               opset=opset_in, attrs={"keepdims": kd}))
        case(f"{t}_attr_v11_kd{kd}", single_op(op, [("x", rand(3, 2, 4))], opset=11,
                                               attrs={"keepdims": kd, "axes": [0, 2]}))
    case(f"{t}_noop_empty", single_op(op, [("x", rand(2, 3)), ("a", np.zeros(0, I64))], opset=opset_in,
                                       attrs={"noop_with_empty_axes": 1}))
    case(f"{t}_empty_axes_all", single_op(op, [("x", rand(2, 3)), ("a", np.zeros(0, I64))], opset=opset_in,
                                          attrs={"keepdims": 0}))
    case(f"{t}_rank0", single_op(op, [("x", rand())], opset=opset_in))
    case(f"{t}_dim1_axis", single_op(op, [("x", rand(2, 1, 3)), ("a", i64(1))], opset=opset_in,
                                      attrs={"keepdims": 0}))
    case(f"{t}_f64", single_op(op, [("x", rand(3, 4, dtype=F64)), ("a", i64(0))], opset=opset_in))

# the runtime's MSE loss graph, spelled out
case("mse_graph", graph_model(
    [helper.make_node("Sub", ["y", "t"], ["d"]),
     helper.make_node("Mul", ["d", "d"], ["s"]),
     helper.make_node("ReduceMean", ["s"], ["l"], keepdims=0)],
    {"y": rand(3, 4), "t": rand(3, 4)}, ["l"]))


# ---- unary ---------------------------------------------------------------------
UNARY = [
    # op, input maker, attrs, opset
    ("Sqrt", lambda *s, dtype=np.float32: rand(*s, low=0.3, high=2.0, dtype=dtype), {}, 13),
    ("Exp", rand, {}, 13),
    ("Log", lambda *s, dtype=np.float32: rand(*s, low=0.3, high=2.0, dtype=dtype), {}, 13),
    ("Neg", rand, {}, 13),
    ("Abs", lambda *s, dtype=np.float32: away_from(rand(*s, dtype=dtype), [0]), {}, 13),
    ("Reciprocal", lambda *s, dtype=np.float32: away_from(rand(*s, low=-2, high=2, dtype=dtype), [0], 0.4),
     {}, 13),
    ("Relu", lambda *s, dtype=np.float32: away_from(rand(*s, dtype=dtype), [0]), {}, 14),
    ("Sigmoid", lambda *s, dtype=np.float32: rand(*s, low=-3, high=3, dtype=dtype), {}, 13),
    ("Tanh", lambda *s, dtype=np.float32: rand(*s, low=-2, high=2, dtype=dtype), {}, 13),
    ("Erf", lambda *s, dtype=np.float32: rand(*s, low=-2, high=2, dtype=dtype), {}, 13),
]
for op, mk, attrs, opset in UNARY:
    t = op.lower()
    case(f"{t}_2d", single_op(op, [("x", mk(3, 4))], attrs=attrs, opset=opset))
    case(f"{t}_3d", single_op(op, [("x", mk(2, 3, 2))], attrs=attrs, opset=opset))
    case(f"{t}_rank0", single_op(op, [("x", mk())], attrs=attrs, opset=opset))
    case(f"{t}_f64", single_op(op, [("x", mk(2, 5, dtype=F64))], attrs=attrs, opset=opset))
case("relu_v7", single_op("Relu", [("x", away_from(rand(4, 3), [0]))], opset=7))

for alpha in (0.01, 0.3, -0.5):
    case(f"leakyrelu_alpha{alpha}", single_op("LeakyRelu", [("x", away_from(rand(3, 4), [0]))],
                                             attrs={"alpha": alpha}, opset=16))
case("leakyrelu_default_f64", single_op("LeakyRelu", [("x", away_from(rand(2, 3, dtype=F64), [0]))]))

for approx in ("none", "tanh"):
    case(f"gelu_{approx}", single_op("Gelu", [("x", rand(3, 4, low=-3, high=3))],
                                     attrs={"approximate": approx}, opset=20))
    case(f"gelu_{approx}_f64_rank0", single_op("Gelu", [("x", np.array(-0.7, F64))],
                                               attrs={"approximate": approx}, opset=20))
    case(f"gelu_{approx}_f64", single_op("Gelu", [("x", rand(2, 6, low=-4, high=4, dtype=F64))],
                                         attrs={"approximate": approx}, opset=20))

# Clip: bounds as inputs (opset 11+, either one omitted) and as attributes (6)
CX = away_from(rand(3, 5, low=-2, high=2), [-0.5, 0.8])
case("clip_both", single_op("Clip", [("x", CX), ("lo", np.array(-0.5, np.float32)), ("hi", np.array(0.8, np.float32))],
                            opset=13))
case("clip_min_only", single_op("Clip", [("x", CX), ("lo", np.array(-0.5, np.float32))], opset=13))
case("clip_max_only", single_op("Clip", [("x", CX), ("lo", None), ("hi", np.array(0.8, np.float32))], opset=13))
case("clip_none", single_op("Clip", [("x", CX)], opset=13))
case("clip_attrs_v7", single_op("Clip", [("x", CX)], opset=7, attrs={"min": -0.5, "max": 0.8}))
case("clip_f64", single_op("Clip", [("x", CX.astype(F64)), ("lo", np.array(-0.5, F64)), ("hi", np.array(0.8, F64))],
                           opset=12))


# ---- Div, Pow ------------------------------------------------------------------
def nonzero(*s, dtype=np.float32):
    return away_from(rand(*s, low=-2, high=2, dtype=dtype), [0], 0.5)


for tag, sa, sb in BIN_SHAPES:
    case(f"div_{tag}", single_op("Div", [("a", rand(*sa)), ("b", nonzero(*sb))]))
    case(f"pow_{tag}", single_op("Pow", [("a", rand(*sa, low=0.5, high=2.0)), ("b", rand(*sb, low=-1.5, high=2.5))],
                                 opset=15))
case("div_f64", single_op("Div", [("a", rand(3, 2, dtype=F64)), ("b", nonzero(2, dtype=F64))]))
case("div_same_input", graph_model([helper.make_node("Div", ["a", "a"], ["y"])], {"a": nonzero(2, 3)}, ["y"]))
case("pow_f64", single_op("Pow", [("a", rand(2, 3, low=0.5, high=2, dtype=F64)), ("b", rand(3, dtype=F64))]))
# integer exponents (not differentiated), negative bases allowed
case("pow_int_exp", single_op("Pow", [("a", rand(2, 3, low=-2, high=2)), ("b", np.array([2, 3, -1], np.int64))],
                              opset=15))
case("pow_int32_exp_scalar", single_op("Pow", [("a", nonzero(3, 2)), ("b", np.array(3, np.int32))], opset=13))
# a double exponent of a float base: its gradient is cast back to double
case("pow_mixed_f64_exp", single_op("Pow", [("a", rand(2, 2, low=0.5, high=2)), ("b", rand(2, low=0.5, high=2, dtype=F64))],
                                    opset=15))
case("pow_v7", single_op("Pow", [("a", rand(3, low=0.5, high=2)), ("b", rand(3))], opset=7))

# ---- Max, Min, Sum (variadic) ----------------------------------------------------
def distinct(*shapes, dtype=np.float32):
    """Arrays whose broadcast elements differ by at least 0.1 pairwise."""
    vals = np.linspace(-2, 2, num=int(sum(np.prod(s) for s in shapes)) + 1)
    perm = np.random.default_rng(len(shapes) * 7 + 1).permutation(vals)
    out, k = [], 0
    for s in shapes:
        n = int(np.prod(s))
        out.append(perm[k:k + n].reshape(s).astype(dtype))
        k += n
    return out


VAR_SHAPES = [
    ("one", [(3, 4)]),
    ("two_same", [(3, 4), (3, 4)]),
    ("two_bcast", [(2, 3, 4), (3, 1)]),
    ("three_bcast", [(4,), (2, 1, 4), (3, 1)]),
    ("scalar", [(2, 3), ()]),
]
for op in ("Max", "Min", "Sum"):
    for tag, shapes in VAR_SHAPES:
        xs = distinct(*shapes)
        case(f"{op.lower()}_{tag}", single_op(op, [(f"x{i}", x) for i, x in enumerate(xs)], opset=13))
    xs = distinct((2, 3), (3,), dtype=F64)
    case(f"{op.lower()}_f64", single_op(op, [("x0", xs[0]), ("x1", xs[1])], opset=8))
# Ties go to the first input: with both inputs the same tensor the gradient
# is still dy once, which is the derivative of max(a, a) = a.
for op in ("Max", "Min"):
    case(f"{op.lower()}_tie_same_input", graph_model(
        [helper.make_node(op, ["a", "a"], ["y"])], {"a": rand(3, 4)}, ["y"]))
    case(f"{op.lower()}_tie_identity", graph_model(
        [helper.make_node("Identity", ["a"], ["b"]), helper.make_node(op, ["b", "a", "b"], ["y"])],
        {"a": rand(2, 3)}, ["y"]))

# ---- Where, Cast, CastLike -----------------------------------------------------
COND = np.array([[True, False, True], [False, False, True]])
case("where_same", single_op("Where", [("c", COND), ("x", rand(2, 3)), ("y", rand(2, 3))], opset=16))
case("where_bcast", single_op("Where", [("c", COND[:, None, :]), ("x", rand(3, 1)), ("y", rand(3))], opset=16))
case("where_scalar_branch", single_op("Where", [("c", COND), ("x", rand()), ("y", rand(2, 1, dtype=np.float32))],
                                      opset=9))
case("where_f64", single_op("Where", [("c", COND[0]), ("x", rand(2, 3, dtype=F64)), ("y", rand(3, dtype=F64))]))
case("cast_f32_to_f64", single_op("Cast", [("x", rand(3, 4))], attrs={"to": 11}, opset=13))
case("cast_f64_to_f32", single_op("Cast", [("x", rand(3, 4, dtype=F64))], attrs={"to": 1}, opset=19))
case("cast_f32_to_f32", single_op("Cast", [("x", rand(2, 2))], attrs={"to": 1}, opset=9))
case("castlike_f32_to_f64", graph_model(
    [helper.make_node("CastLike", ["x", "t"], ["c"]), helper.make_node("Mul", ["c", "w"], ["y"])],
    {"x": rand(3, 2), "t": np.zeros(1, F64), "w": rand(3, 2, dtype=F64)}, ["y"], opset=15))
# a float -> int64 -> float round trip passes no gradient; a float branch beside it does
case("cast_int_blocks", graph_model(
    [helper.make_node("Cast", ["x"], ["i"], to=7), helper.make_node("Cast", ["i"], ["f"], to=1),
     helper.make_node("Mul", ["f", "x"], ["y"])],
    {"x": away_from(rand(2, 3, low=0.5, high=2.5), [1, 2], 0.1)}, ["y"], opset=13))


# ---- Softmax, LogSoftmax --------------------------------------------------------
for op in ("Softmax", "LogSoftmax"):
    t = op.lower()
    for opset in (11, 13):
        for axis in (None, 0, 1, -1, -2):
            attrs = {} if axis is None else {"axis": axis}
            tag = "default" if axis is None else f"axis{axis}".replace("-", "neg")
            case(f"{t}_v{opset}_{tag}", single_op(op, [("x", rand(2, 3, 4, low=-2, high=2))], attrs=attrs,
                                                  opset=opset))
    case(f"{t}_v13_1d", single_op(op, [("x", rand(5, low=-2, high=2))], opset=13))
    case(f"{t}_v13_wide_cols", single_op(op, [("x", rand(3, 2, 70, low=-2, high=2))], attrs={"axis": 1}, opset=13),
         ["--max-elems", "200"])
    case(f"{t}_v11_f64", single_op(op, [("x", rand(2, 3, 2, low=-2, high=2, dtype=F64))], attrs={"axis": 1},
                                   opset=11))
    case(f"{t}_v13_f64", single_op(op, [("x", rand(2, 3, 2, low=-2, high=2, dtype=F64))], attrs={"axis": 0},
                                   opset=13))


# ---- ReduceMax, ReduceMin -------------------------------------------------------
def spread(*shape, dtype=np.float32):
    """Distinct values at least 0.1 apart, so that the arg-max is stable."""
    n = int(np.prod(shape))
    v = np.random.default_rng(n + 11).permutation(np.linspace(-2, 2, n)).reshape(shape).astype(dtype)
    return v


for op in ("ReduceMax", "ReduceMin"):
    t = op.lower()
    for kd in (0, 1):
        case(f"{t}_all_kd{kd}", single_op(op, [("x", spread(2, 3, 4))], opset=18, attrs={"keepdims": kd}))
        case(f"{t}_axis1_kd{kd}", single_op(op, [("x", spread(2, 3, 4)), ("a", i64(1))], opset=18,
                                            attrs={"keepdims": kd}))
        case(f"{t}_axes_neg_kd{kd}", single_op(op, [("x", spread(2, 3, 2, 2)), ("a", i64(-1, 0))], opset=18,
                                               attrs={"keepdims": kd}))
        case(f"{t}_attr_v13_kd{kd}", single_op(op, [("x", spread(3, 2, 4))], opset=13,
                                               attrs={"keepdims": kd, "axes": [2]}))
    case(f"{t}_noop_empty", single_op(op, [("x", spread(2, 3)), ("a", np.zeros(0, I64))], opset=18,
                                       attrs={"noop_with_empty_axes": 1}))
    case(f"{t}_rank0", single_op(op, [("x", rand())], opset=18))
    case(f"{t}_f64", single_op(op, [("x", spread(3, 4, dtype=F64)), ("a", i64(0))], opset=18))
    # exact ties: x = concat(a, a) along the reduced axis; the first copy gets
    # dy, and through the graph both copies are a, so the total is still right
    case(f"{t}_tie_first", graph_model(
        [helper.make_node("Concat", ["a", "a"], ["x"], axis=1),
         helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=0)],
        {"a": spread(2, 3)}, ["y"], opset=13))


# ---- ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp
# (ops/reduce_ext.c). L1 needs x away from 0 (its kink); LogSum a positive
# sum; Prod is checked with a zero and with two zeros in one group as well.
def positive(*shape, dtype=np.float32):
    return rand(*shape, low=0.3, high=1.5, dtype=dtype)


def signed_away(*shape, dtype=np.float32):
    x = rand(*shape, low=0.2, high=1.2, dtype=dtype)
    return x * np.where(rand(*shape) > 0, 1, -1).astype(dtype)


EXT_REDUCE = [("ReduceProd", signed_away), ("ReduceL1", signed_away), ("ReduceL2", rand),
              ("ReduceSumSquare", rand), ("ReduceLogSum", positive), ("ReduceLogSumExp", rand)]
for op, mk in EXT_REDUCE:
    t = op.lower()
    for kd in (0, 1):
        case(f"{t}_all_kd{kd}", single_op(op, [("x", mk(2, 3, 2))], opset=18, attrs={"keepdims": kd}))
        case(f"{t}_axes_neg_kd{kd}", single_op(op, [("x", mk(2, 3, 2, 2)), ("a", i64(-1, 1))], opset=18,
                                               attrs={"keepdims": kd}))
    case(f"{t}_axis0", single_op(op, [("x", mk(3, 4)), ("a", i64(0))], opset=18))
    case(f"{t}_attr_v13", single_op(op, [("x", mk(3, 2, 4))], opset=13, attrs={"keepdims": 0, "axes": [0, 2]}))
    case(f"{t}_attr_v11", single_op(op, [("x", mk(2, 4))], opset=11, attrs={"axes": [1]}))
    case(f"{t}_noop_empty", single_op(op, [("x", mk(2, 3)), ("a", np.zeros(0, I64))], opset=18,
                                       attrs={"noop_with_empty_axes": 1}))
    case(f"{t}_f64", single_op(op, [("x", mk(3, 4, dtype=F64)), ("a", i64(1))], opset=18))
ZP = signed_away(3, 4)
ZP[0, 1] = 0.0
ZP[2, 0] = ZP[2, 3] = 0.0
case("reduceprod_zeros", single_op("ReduceProd", [("x", ZP), ("a", i64(1))], opset=18))
