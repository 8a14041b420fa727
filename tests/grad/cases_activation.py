"""Gradient checks of the activations and elementwise math beside
ops/unary.c (ops/activation.c, unary_math.c, mod.c): HardSigmoid,
HardSwish, Softplus, Elu, Selu, Celu, Mish, Swish, SwiGLU, PRelu (X and the
broadcast slope), Sin, Cos, Mod (both fmod modes, broadcasting both ways),
and the zero gradients of Sign, Floor, Ceil and Round (PyTorch's zeros_like;
finite differences are 0 away from the jumps). Inputs stay away from the
kinks (HardSigmoid's and HardSwish's corners, 0 for the exponential units,
the jumps of Floor/Ceil/Round/Sign and of Mod's quotient) so that finite
differences are meaningful. A table of its own, not cases_math.py, so that
it runs as its own CTest case (grad/activation)."""
import numpy as np
from onnx import helper

from gradutil import away_from, case_adder, graph_model, rand, single_op

F64 = np.float64

CASES = []


case = case_adder(CASES)


def wide(*s, dtype=np.float32, kinks=(0,)):
    return away_from(rand(*s, low=-4, high=4, dtype=dtype), kinks, 0.1)


# op, input maker, attrs, opset (the loader takes opsets 7..25: opset 7
# models resolve HardSigmoid, Elu, Selu to their version 6, Softplus to 1)
UNARY = [
    ("HardSigmoid", lambda *s, dtype=np.float32: wide(*s, dtype=dtype, kinks=(-2.5, 2.5)), {}, 7),
    ("HardSwish", lambda *s, dtype=np.float32: wide(*s, dtype=dtype, kinks=(-3, 3)), {}, 14),
    ("Softplus", wide, {}, 7),
    ("Elu", wide, {}, 7),
    ("Selu", wide, {}, 7),
    ("Celu", wide, {}, 12),
    ("Mish", wide, {}, 18),
    ("Swish", wide, {}, 24),
    ("Sin", wide, {}, 7),
    ("Cos", wide, {}, 7),
]
for op, mk, attrs, opset in UNARY:
    t = op.lower()
    case(f"{t}_2d", single_op(op, [("x", mk(3, 4))], attrs=attrs, opset=opset))
    case(f"{t}_3d", single_op(op, [("x", mk(2, 3, 2))], attrs=attrs, opset=opset))
    case(f"{t}_rank0", single_op(op, [("x", mk())], attrs=attrs, opset=opset))
    case(f"{t}_f64", single_op(op, [("x", mk(2, 5, dtype=F64))], attrs=attrs, opset=opset))
# the newest versions, and attributes away from their defaults
case("hardsigmoid_v22_attrs", single_op("HardSigmoid", [("x", wide(3, 4, kinks=(-1.5, 1.0)))],
                                        attrs={"alpha": 0.4, "beta": 0.6}, opset=22))
case("hardswish_v22", single_op("HardSwish", [("x", wide(2, 6, kinks=(-3, 3)))], opset=22))
for alpha in (0.5, 2.0):
    case(f"elu_alpha{alpha}", single_op("Elu", [("x", wide(3, 4))], attrs={"alpha": alpha}, opset=22))
    case(f"celu_alpha{alpha}", single_op("Celu", [("x", wide(3, 4))], attrs={"alpha": alpha}, opset=12))
    case(f"swish_alpha{alpha}", single_op("Swish", [("x", wide(3, 4))], attrs={"alpha": alpha}, opset=24))
case("selu_attrs_f64", single_op("Selu", [("x", wide(2, 3, dtype=F64))], attrs={"alpha": 1.5, "gamma": 0.7},
                                 opset=22))
case("softplus_v22_f64", single_op("Softplus", [("x", wide(4, dtype=F64))], opset=22))
case("mish_v22", single_op("Mish", [("x", wide(5, 2))], opset=22))
case("sin_v22_f64", single_op("Sin", [("x", wide(3, dtype=F64))], opset=22))
case("cos_v22", single_op("Cos", [("x", wide(3, 2))], opset=22))

# ---- PRelu: the slope broadcasts into X and gets its gradient summed back ----
PRELU_SHAPES = [
    ("same", (2, 3), (2, 3)),
    ("channel", (2, 3, 4, 2), (3, 1, 1)),
    ("last", (2, 3, 4), (4,)),
    ("scalar", (3, 4), ()),
    ("one", (2, 5), (1,)),
]
for tag, sx, ss in PRELU_SHAPES:
    case(f"prelu_{tag}", single_op("PRelu", [("x", wide(*sx)), ("s", rand(*ss, low=-0.5, high=1.5))], opset=16))
case("prelu_f64_v9", single_op("PRelu", [("x", wide(3, 2, dtype=F64)), ("s", rand(2, low=0.1, high=0.9, dtype=F64))],
                               opset=9))
case("prelu_v7", single_op("PRelu", [("x", wide(2, 4)), ("s", rand(4, low=0.1, high=0.5))], opset=7))


# ---- Mod: dA = dy, dB = -dy * floor(A / B) (fmod=0) or trunc(A / B) (fmod=1) ----
def mod_inputs(sa, sb, dtype=np.float32):
    """A and B with |B| in [0.5, 2] and every A / B at least 0.05 from an
    integer, so that the rounded quotient is constant around each point
    (redrawn from the seeded generator until it is)."""
    for _ in range(1000):
        b = rand(*sb, low=0.5, high=2.0, dtype=dtype) * np.where(rand(*sb) < 0, -1, 1).astype(dtype)
        a = rand(*sa, low=-5, high=5, dtype=dtype)
        q = np.asarray(a, F64) / np.asarray(b, F64)
        if (np.abs(q - np.round(q)) >= 0.05).all():
            return a, b
    raise AssertionError("no Mod inputs off the quotient's jumps")


MOD_SHAPES = [
    ("same", (2, 3), (2, 3)),
    ("bcast_b", (2, 3, 4), (4,)),
    ("bcast_a", (3, 1), (3, 4)),
    ("scalar_b", (3, 2), ()),
]
for fmod in (0, 1):
    for tag, sa, sb in MOD_SHAPES:
        a, b = mod_inputs(sa, sb)
        case(f"mod_fmod{fmod}_{tag}", single_op("Mod", [("a", a), ("b", b)], attrs={"fmod": fmod}, opset=13))
    a, b = mod_inputs((3, 4), (3, 4), dtype=F64)
    case(f"mod_fmod{fmod}_f64", single_op("Mod", [("a", a), ("b", b)], attrs={"fmod": fmod}, opset=13))

# ---- SwiGLU (28): dA = SwishGrad(dy * B, A), dB = dy * Swish(A) ----
case("swiglu_2d", single_op("SwiGLU", [("a", wide(3, 4)), ("b", rand(3, 4))], opset=28))
case("swiglu_3d_alpha", single_op("SwiGLU", [("a", wide(2, 3, 4)), ("b", rand(2, 3, 4))], attrs={"alpha": 1.702},
                                  opset=28))
case("swiglu_f64", single_op("SwiGLU", [("a", wide(2, 5, dtype=F64)), ("b", rand(2, 5, dtype=F64))],
                             attrs={"alpha": 0.5}, opset=28))
# A and B from one tensor: the gradients of both halves add up in x
case("swiglu_split", graph_model(
    [helper.make_node("Split", ["x"], ["a", "b"], axis=-1, num_outputs=2),
     helper.make_node("SwiGLU", ["a", "b"], ["y"])], {"x": wide(3, 8)}, ["y"], opset=28))

# ---- zero gradients: the parameter still trains through a float branch beside it ----
for op, opset in (("Sign", 13), ("Floor", 13), ("Ceil", 13), ("Round", 22)):
    t = op.lower()
    x = away_from(rand(3, 4, low=-3, high=3), [-2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5], 0.1)
    case(f"{t}_zero_grad", graph_model(
        [helper.make_node(op, ["x"], ["r"]), helper.make_node("Mul", ["r", "x"], ["y"])],
        {"x": x}, ["y"], opset=opset))
    case(f"{t}_alone", single_op(op, [("x", x)], opset=opset))
