"""Helpers for gradient-check case tables: one-node ONNX models with seeded
random float inputs given as initializers (so gradcheck checks them all)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(1234)


def rand(*shape, low=-1.0, high=1.0, dtype=np.float32):
    return _rng.uniform(low, high, size=shape).astype(dtype)


def single_op(op, inputs, n_outputs=1, opset=17, domain="", attrs=None, output_index=None):
    """inputs: list of (name, ndarray or None for an omitted optional input).
    Float arrays become initializers (trainable, checked); integer arrays become
    initializers too (constants, never differentiated). The model's outputs are
    all n_outputs outputs, or only output_index when given (the loss uses the last
    float output)."""
    names, inits = [], []
    for name, value in inputs:
        if value is None:
            names.append("")
            continue
        names.append(name)
        inits.append(numpy_helper.from_array(np.asarray(value), name))
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    keep = [output_index] if output_index is not None else range(n_outputs)
    graph = helper.make_graph([node], f"{op}_case", [],
                              [helper.make_tensor_value_info(outs[i], TensorProto.UNDEFINED, None) for i in keep],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def graph_model(nodes, inits, outputs, opset=17):
    """A small multi-node model: nodes made with onnx.helper.make_node,
    inits a dict name -> ndarray, outputs a list of output names."""
    graph = helper.make_graph(nodes, "case", [],
                              [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def away_from(x, points, gap=0.05):
    """x with every element within gap of one of points (kinks, thresholds,
    jumps) moved gap away from it, on its own side, so that finite
    differences are meaningful."""
    x = x.copy()
    for p in points:
        near = np.abs(x - p) < gap
        x[near] = p + np.where(x[near] >= p, gap, -gap).astype(x.dtype)
    return x


def case_adder(cases):
    """The case(name, model, args=None, no_grad=None) of a case module:
    appends {"name", "model"[, "args"][, "no_grad"]} to `cases`."""
    def case(name, model, args=None, no_grad=None):
        c = {"name": name, "model": model}
        if args:
            c["args"] = args
        if no_grad:
            c["no_grad"] = no_grad
        cases.append(c)
    return case
