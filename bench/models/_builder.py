"""A small ONNX graph builder shared by the model generators.

Each helper appends nodes and initializers with deterministic, meaningful
names ("layer1.0.conv1", "layer1.0.conv1.weight") and returns the name of
its output tensor; a node's (single) output tensor carries the node's name,
so traces, exported graphs and error messages read like the model's source.
Weights are random from one seeded generator, scaled so that activations
stay of order one through deep stacks (He-style fan-in scaling, batch-norm
statistics near the identity): outputs then compare meaningfully between
runtimes at rtol 1e-3.

Only `onnx` and `numpy` are used. Models are written for ai.onnx opset 17
and IR version 8 (onnxruntime and dtrexec both load them) unless a
generator asks for more.
"""

import ast

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

# Metadata key listing the exclusive upper bound of integer inputs (token ids),
# "input_ids=30522;...", so that sample_inputs() draws valid indices.
META_INT_HIGH = "dtrx.int_input_high"


class Builder:
    """Collects nodes, initializers and graph inputs/outputs for one model."""

    def __init__(self, name, seed=0, opset=OPSET, ir_version=IR_VERSION):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.ir_version = ir_version
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self.metadata = {}
        self._node_names = set()
        self._tensor_names = set()

    # -- names ---------------------------------------------------------------

    def _claim_tensor(self, name):
        if name in self._tensor_names:
            raise ValueError(f"{self.name}: duplicate tensor name '{name}'")
        self._tensor_names.add(name)
        return name

    # -- graph interface -----------------------------------------------------

    def input(self, name, shape, dtype=TensorProto.FLOAT):
        self._claim_tensor(name)
        self.inputs.append(helper.make_tensor_value_info(name, dtype, list(shape)))
        return name

    def output(self, name, dtype=TensorProto.FLOAT, rename=None):
        """Marks an existing tensor as a graph output; its shape is filled in
        by shape inference when the model is built. `rename` gives the tensor
        a public name ("logits") without an extra Identity node."""
        if rename is not None:
            self._claim_tensor(rename)
            for n in self.nodes:
                n.output[:] = [rename if o == name else o for o in n.output]
                n.input[:] = [rename if i == name else i for i in n.input]
            self._tensor_names.discard(name)
            name = rename
        self.outputs.append(helper.make_tensor_value_info(name, dtype, None))
        return name

    def const(self, name, array):
        """An initializer holding `array` as is (dtype preserved)."""
        self._claim_tensor(name)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, name, values):
        return self.const(name, np.asarray(values, dtype=np.int64))

    def floats(self, name, values):
        return self.const(name, np.asarray(values, dtype=np.float32))

    def node(self, op_type, inputs, name, outputs=None, **attrs):
        """Appends one node. With `outputs` None the node has one output
        named like the node; an int gives that many outputs "name.0",
        "name.1", ...; a list gives those suffixes ("Y" -> "name.Y"), where
        an empty suffix leaves that optional output unused. Returns the
        single output name, or the list of them."""
        if name in self._node_names:
            raise ValueError(f"{self.name}: duplicate node name '{name}'")
        self._node_names.add(name)
        if outputs is None:
            outs = [self._claim_tensor(name)]
        elif isinstance(outputs, int):
            outs = [self._claim_tensor(f"{name}.{i}") for i in range(outputs)]
        else:
            outs = [self._claim_tensor(f"{name}.{s}") if s else "" for s in outputs]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if outputs is None else outs

    # -- random parameters ---------------------------------------------------

    def he_normal(self, name, shape, fan_in, gain=2.0):
        std = np.sqrt(gain / fan_in)
        return self.const(name, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def uniform(self, name, shape, bound):
        return self.const(name, self.rng.uniform(-bound, bound, shape).astype(np.float32))

    def small(self, name, shape, scale=0.02):
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    # -- layers --------------------------------------------------------------

    def conv(self, x, name, cin, cout, k, stride=1, pad=None, group=1, bias=False, dilation=1):
        """Conv with an OIHW weight "name.weight" (and "name.bias")."""
        if pad is None:
            pad = dilation * (k - 1) // 2
        w = self.he_normal(f"{name}.weight", (cout, cin // group, k, k), fan_in=cin // group * k * k)
        ins = [x, w]
        if bias:
            ins.append(self.small(f"{name}.bias", (cout,)))
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        if group != 1:
            attrs["group"] = group
        if dilation != 1:
            attrs["dilations"] = [dilation, dilation]
        return self.node("Conv", ins, name, **attrs)

    def conv_transpose(self, x, name, cin, cout, k, stride):
        w = self.he_normal(f"{name}.weight", (cin, cout, k, k), fan_in=cin)
        b = self.small(f"{name}.bias", (cout,))
        return self.node("ConvTranspose", [x, w, b], name, kernel_shape=[k, k], strides=[stride, stride])

    def bn(self, x, name, c, gamma=1.0):
        """Inference-mode BatchNormalization with statistics near the identity
        (kept unfolded: the runtime, DTR and training all see the real op)."""
        rng = self.rng
        scale = self.const(f"{name}.weight", (gamma * rng.uniform(0.8, 1.2, c)).astype(np.float32))
        shift = self.const(f"{name}.bias", rng.uniform(-0.1, 0.1, c).astype(np.float32))
        mean = self.const(f"{name}.running_mean", rng.uniform(-0.1, 0.1, c).astype(np.float32))
        var = self.const(f"{name}.running_var", rng.uniform(0.8, 1.2, c).astype(np.float32))
        return self.node("BatchNormalization", [x, scale, shift, mean, var], name, epsilon=1e-5)

    def relu(self, x, name):
        return self.node("Relu", [x], name)

    def relu6(self, x, name):
        """ReLU6 as Clip(x, 0, 6); the two bounds are shared initializers."""
        if "relu6.min" not in self._tensor_names:
            self.floats("relu6.min", 0.0)
            self.floats("relu6.max", 6.0)
        return self.node("Clip", [x, "relu6.min", "relu6.max"], name)

    def maxpool(self, x, name, k, stride, pad=0):
        return self.node("MaxPool", [x], name, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    def avgpool(self, x, name, k, stride, pad=0):
        return self.node("AveragePool", [x], name, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    def gap(self, x, name):
        return self.node("GlobalAveragePool", [x], name)

    def flatten(self, x, name):
        return self.node("Flatten", [x], name, axis=1)

    def gemm(self, x, name, cin, cout, gain=1.0):
        """torch.nn.Linear: y = x W^T + b with W [cout, cin]."""
        w = self.he_normal(f"{name}.weight", (cout, cin), fan_in=cin, gain=gain)
        b = self.small(f"{name}.bias", (cout,))
        return self.node("Gemm", [x, w, b], name, transB=1)

    def linear(self, x, name, cin, cout, gain=1.0):
        """MatMul by W [cin, cout] then Add bias: works on any leading dims."""
        w = self.he_normal(f"{name}.weight", (cin, cout), fan_in=cin, gain=gain)
        b = self.small(f"{name}.bias", (cout,))
        y = self.node("MatMul", [x, w], f"{name}.matmul")
        return self.node("Add", [y, b], name)

    def layernorm(self, x, name, c, eps=1e-12):
        scale = self.const(f"{name}.weight", self.rng.uniform(0.9, 1.1, c).astype(np.float32))
        shift = self.small(f"{name}.bias", (c,))
        return self.node("LayerNormalization", [x, scale, shift], name, axis=-1, epsilon=eps)

    def gelu_erf(self, x, name):
        """Gelu as 0.5 * x * (1 + erf(x / sqrt(2))) in opset-17 operators."""
        if "gelu.sqrt2" not in self._tensor_names:
            self.floats("gelu.sqrt2", np.sqrt(2.0))
            self.floats("gelu.one", 1.0)
            self.floats("gelu.half", 0.5)
        d = self.node("Div", [x, "gelu.sqrt2"], f"{name}.div")
        e = self.node("Erf", [d], f"{name}.erf")
        a = self.node("Add", [e, "gelu.one"], f"{name}.add")
        m = self.node("Mul", [x, a], f"{name}.mul")
        return self.node("Mul", [m, "gelu.half"], name)

    # -- output --------------------------------------------------------------

    def build(self, doc=""):
        """Returns a checked ModelProto with graph outputs' shapes inferred."""
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                  initializer=self.initializers, doc_string=doc)
        model = helper.make_model(graph, producer_name="dtrexec-bench-models",
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = self.ir_version
        if self.metadata:
            helper.set_model_props(model, self.metadata)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for out in model.graph.output:
            vi = known.get(out.name)
            if vi is None or not vi.type.tensor_type.HasField("shape"):
                raise ValueError(f"{self.name}: shape inference gave no shape for output '{out.name}'")
            out.type.CopyFrom(vi.type)
        onnx.checker.check_model(model, full_check=True)
        return model


def sample_inputs(model, seed=0):
    """Seeded random inputs for a model's graph inputs: standard normal for
    floats, uniform in [0, high) for integer inputs (high from the model's
    metadata, default 2). Returns {name: ndarray} in graph input order."""
    rng = np.random.default_rng(seed)
    highs = {}
    for p in model.metadata_props:
        if p.key == META_INT_HIGH:
            for item in p.value.split(";"):
                if item:
                    k, v = item.split("=")
                    highs[k] = int(v)
    init_names = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        if any(s <= 0 for s in shape):
            raise ValueError(f"input '{vi.name}' has a symbolic dimension; bind it first")
        np_dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(np_dtype, np.integer):
            feeds[vi.name] = rng.integers(0, highs.get(vi.name, 2), shape).astype(np_dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np_dtype)
    return feeds


def parse_value(text):
    """A parameter value: a Python literal where it parses as one (2, 0.5,
    (2, 2), True), else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_sets(ap, items, overrides):
    """Adds make scripts' `--set KEY=VALUE` items to overrides."""
    for item in items:
        if "=" not in item:
            ap.error(f"--set expects KEY=VALUE, got '{item}'")
        k, v = item.split("=", 1)
        overrides[k] = parse_value(v)
    return overrides
