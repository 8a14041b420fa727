"""Gradient checks of the elementwise, comparison, cast, softmax and
reduction family (ops/binary.c, unary.c, compare.c, cast.c, softmax.c,
reduce.c): several shapes per op, numpy broadcasting both ways and rank 0,
attribute combinations, float64 paths, and inputs kept away from the kinks
of Relu/Abs/Clip/Max so that finite differences are meaningful."""
import numpy as np
from onnx import helper

from gradutil import graph_model, rand, single_op

I64 = np.int64
F64 = np.float64


def i64(*v):
    return np.array(v, dtype=I64)


CASES = []


def case(name, model, args=None):
    c = {"name": name, "model": model}
    if args:
        c["args"] = args
    CASES.append(c)


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
