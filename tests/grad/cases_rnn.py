"""Gradient cases for LSTM, GRU and RNN (ops/rnn.c): every direction,
sequence_lens, initial states, peepholes, clip, input_forget,
linear_before_reset, both layouts, Sigmoid/Tanh/Relu and a few other
activations, and the loss on each of Y, Y_h, Y_c. Sizes: seq 3, batch 2,
input 3, hidden 4. W, R, B, initial states and P are initializers, so
gradcheck checks dX, dW, dR, dB, dinitial_h, dinitial_c and dP."""
import numpy as np
from onnx import helper, numpy_helper

from gradutil import graph_model, rand, single_op

SEQ, BATCH, INPUT, HIDDEN = 3, 2, 3, 4
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
N_OUT = {"LSTM": 3, "GRU": 2, "RNN": 2}


def rnn_case(name, op, direction="forward", layout=0, lens=None, init_h=False, init_c=False,
             peep=False, bias=True, out=0, opset=17, scale=1.0, **attrs):
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x = rand(BATCH, SEQ, INPUT) if layout else rand(SEQ, BATCH, INPUT)
    state = (BATCH, dirs, HIDDEN) if layout else (dirs, BATCH, HIDDEN)
    inputs = [
        ("X", x),
        ("W", rand(dirs, g * HIDDEN, INPUT) * scale),
        ("R", rand(dirs, g * HIDDEN, HIDDEN) * scale),
        ("B", rand(dirs, 2 * g * HIDDEN) * 0.5 if bias else None),
        ("sequence_lens", None if lens is None else np.array(lens, dtype=np.int32)),
        ("initial_h", rand(*state) if init_h else None),
    ]
    if op == "LSTM":
        inputs += [("initial_c", rand(*state) if init_c else None),
                   ("P", rand(dirs, 3 * HIDDEN) if peep else None)]
    # Trailing omitted inputs are dropped, as an exporter would write them.
    while inputs[-1][1] is None:
        inputs.pop()
    attrs = dict(attrs, hidden_size=HIDDEN, direction=direction)
    if layout:
        attrs["layout"] = layout
    n_out = max(out + 1, N_OUT[op])
    # The tensors are small: check every element, not a sample.
    return {"name": name, "args": ["--max-elems", "256"],
            "model": single_op(op, inputs, n_outputs=n_out, opset=opset, attrs=attrs, output_index=out)}


CASES = []
for op in ("LSTM", "GRU", "RNN"):
    o = op.lower()
    for out in range(N_OUT[op]):
        CASES.append(rnn_case(f"{o}_out{out}", op, out=out, init_h=True, init_c=True))
    CASES += [
        rnn_case(f"{o}_minimal", op, bias=False),
        rnn_case(f"{o}_reverse", op, direction="reverse", init_h=True, init_c=True),
        rnn_case(f"{o}_reverse_yh", op, direction="reverse", init_h=True, out=1),
        rnn_case(f"{o}_bidir", op, direction="bidirectional", init_h=True, init_c=True),
        rnn_case(f"{o}_bidir_yh", op, direction="bidirectional", init_h=True, init_c=True, out=1),
        rnn_case(f"{o}_lens", op, lens=[3, 2], init_h=True, init_c=True),
        rnn_case(f"{o}_lens_yh", op, lens=[2, 3], init_h=True, init_c=True, out=1),
        rnn_case(f"{o}_lens_zero", op, lens=[0, 2], init_h=True, init_c=True, out=1),
        rnn_case(f"{o}_lens_bidir", op, direction="bidirectional", lens=[1, 3], init_h=True, init_c=True),
        rnn_case(f"{o}_lens_bidir_yh", op, direction="bidirectional", lens=[2, 1], init_h=True, out=1),
        rnn_case(f"{o}_layout1", op, layout=1, init_h=True, init_c=True),
        rnn_case(f"{o}_layout1_bidir_lens", op, layout=1, direction="bidirectional", lens=[2, 3],
                 init_h=True, init_c=True),
        rnn_case(f"{o}_layout1_yh", op, layout=1, direction="reverse", lens=[3, 1], init_h=True, out=1),
        rnn_case(f"{o}_clip", op, clip=0.7, scale=2.0, init_h=True, init_c=True),
        rnn_case(f"{o}_opset13", op, opset=13, init_h=True),
    ]

# activations: Sigmoid / Tanh / Relu in each slot, and a few with parameters
CASES += [
    rnn_case("lstm_acts_relu", "LSTM", activations=["Sigmoid", "Relu", "Tanh"], init_h=True),
    rnn_case("lstm_acts_mixed", "LSTM", activations=["Sigmoid", "Tanh", "Relu"], init_c=True),
    rnn_case("lstm_acts_bidir", "LSTM", direction="bidirectional",
             activations=["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Relu", "Sigmoid"],
             activation_alpha=[0.3], activation_beta=[0.4], init_h=True),
    rnn_case("lstm_acts_scaled", "LSTM", activations=["Sigmoid", "ScaledTanh", "Softsign"],
             activation_alpha=[1.5], activation_beta=[0.7]),
    rnn_case("gru_acts_relu", "GRU", activations=["Sigmoid", "Relu"], init_h=True),
    rnn_case("gru_acts_tanh", "GRU", activations=["Tanh", "Sigmoid"], init_h=True),
    rnn_case("gru_acts_bidir", "GRU", direction="bidirectional",
             activations=["Sigmoid", "Tanh", "Sigmoid", "LeakyRelu"], activation_alpha=[0.2], init_h=True),
    rnn_case("rnn_relu", "RNN", activations=["Relu"], init_h=True),
    rnn_case("rnn_sigmoid", "RNN", activations=["Sigmoid"], init_h=True),
    rnn_case("rnn_elu_bidir", "RNN", direction="bidirectional", activations=["Elu", "Softplus"],
             activation_alpha=[0.8], init_h=True),
    rnn_case("rnn_affine", "RNN", activations=["Affine"], activation_alpha=[0.5], activation_beta=[0.1]),
]

# LSTM: peepholes and the coupled input/forget gate
CASES += [
    rnn_case("lstm_peep", "LSTM", peep=True, init_h=True, init_c=True),
    rnn_case("lstm_peep_yc", "LSTM", peep=True, init_h=True, init_c=True, out=2),
    rnn_case("lstm_peep_bidir_lens", "LSTM", direction="bidirectional", lens=[3, 1], peep=True,
             init_h=True, init_c=True),
    rnn_case("lstm_peep_clip", "LSTM", peep=True, clip=0.8, scale=2.0, init_h=True, init_c=True),
    rnn_case("lstm_input_forget", "LSTM", input_forget=1, init_h=True, init_c=True),
    rnn_case("lstm_input_forget_peep_yc", "LSTM", input_forget=1, peep=True, init_c=True, out=2),
    rnn_case("lstm_lens_zero_yc", "LSTM", lens=[2, 0], init_h=True, init_c=True, out=2),
    rnn_case("lstm_layout1_yc", "LSTM", layout=1, direction="bidirectional", lens=[1, 3], peep=True,
             init_h=True, init_c=True, out=2),
]

# GRU: linear_before_reset in every direction
CASES += [
    rnn_case("gru_lbr", "GRU", linear_before_reset=1, init_h=True),
    rnn_case("gru_lbr_yh", "GRU", linear_before_reset=1, init_h=True, out=1),
    rnn_case("gru_lbr_reverse", "GRU", linear_before_reset=1, direction="reverse", init_h=True),
    rnn_case("gru_lbr_bidir_lens", "GRU", linear_before_reset=1, direction="bidirectional", lens=[3, 2],
             init_h=True),
    rnn_case("gru_lbr_clip", "GRU", linear_before_reset=1, clip=0.7, scale=2.0, init_h=True),
    rnn_case("gru_lbr_layout1", "GRU", linear_before_reset=1, layout=1, lens=[1, 3], init_h=True, out=1),
]

# A missing hidden_size attribute (taken from R) must survive into the gradient op.
_no_hidden = rnn_case("gru_no_hidden_size", "GRU", direction="reverse", lens=[2, 3], init_h=True)
for _a in _no_hidden["model"].graph.node[0].attribute:
    if _a.name == "hidden_size":
        _no_hidden["model"].graph.node[0].attribute.remove(_a)
        break
CASES.append(_no_hidden)


def all_outputs_case(name, op, direction="forward", lens=None, peep=False, layout=0, **attrs):
    """Y, Y_h (and Y_c) flattened and concatenated: the gradient op gets dY,
    dY_h and dY_c in one call."""
    single = rnn_case(name, op, direction=direction, lens=lens, peep=peep, layout=layout, init_h=True,
                      init_c=True, **attrs)["model"]
    node = single.graph.node[0]
    outs = list(node.output)[:N_OUT[op]]
    del node.output[:]
    node.output.extend(outs)
    inits = {i.name: numpy_helper.to_array(i) for i in single.graph.initializer}
    inits["flat_shape"] = np.array([-1], dtype=np.int64)
    nodes = [node]
    for o in outs:
        nodes.append(helper.make_node("Reshape", [o, "flat_shape"], [o + "_flat"]))
    nodes.append(helper.make_node("Concat", [o + "_flat" for o in outs], ["all"], axis=0))
    return {"name": name, "args": ["--max-elems", "256"], "model": graph_model(nodes, inits, ["all"])}


def stacked_case(name, op, **attrs):
    """Two layers: the first layer's Y (dirs squeezed by a Reshape) is the
    second's X, so dX reaches an intermediate and the first layer's weights."""
    g = GATES[op]
    inits = {"X": rand(SEQ, BATCH, INPUT), "shape": np.array([SEQ, BATCH, HIDDEN], dtype=np.int64)}
    for k, fan_in in ((1, INPUT), (2, HIDDEN)):
        inits[f"W{k}"] = rand(1, g * HIDDEN, fan_in)
        inits[f"R{k}"] = rand(1, g * HIDDEN, HIDDEN)
        inits[f"B{k}"] = rand(1, 2 * g * HIDDEN) * 0.5
    nodes = [
        helper.make_node(op, ["X", "W1", "R1", "B1"], ["Y1"], hidden_size=HIDDEN, **attrs),
        helper.make_node("Reshape", ["Y1", "shape"], ["X2"]),
        helper.make_node(op, ["X2", "W2", "R2", "B2"], ["Y2"], hidden_size=HIDDEN, **attrs),
    ]
    return {"name": name, "args": ["--max-elems", "256"], "model": graph_model(nodes, inits, ["Y2"])}


CASES += [
    all_outputs_case("lstm_all_outputs", "LSTM", peep=True),
    all_outputs_case("lstm_all_outputs_bidir_lens", "LSTM", direction="bidirectional", lens=[3, 1], peep=True),
    all_outputs_case("lstm_all_outputs_layout1", "LSTM", layout=1, direction="reverse", lens=[2, 0]),
    all_outputs_case("gru_all_outputs", "GRU", direction="bidirectional", lens=[2, 3]),
    all_outputs_case("gru_all_outputs_lbr", "GRU", direction="reverse", linear_before_reset=1, lens=[1, 3]),
    all_outputs_case("rnn_all_outputs", "RNN", direction="bidirectional", layout=1, lens=[3, 2]),
    stacked_case("lstm_stacked", "LSTM"),
    stacked_case("gru_stacked", "GRU", linear_before_reset=1),
    stacked_case("rnn_stacked", "RNN", direction="reverse"),
]
