#!/usr/bin/env python3
"""Test data for tests/test_onnx.c, generated at test time into OUT_DIR.

Writes valid models that exercise loader features (external data, IR 3
initializer inputs, symbolic dims, subgraphs with outer-scope values,
out-of-order nodes, every attribute kind), tensors in raw / typed / .npy form
with identical values, .npy copies of a few node-test inputs, and hostile
files. `manifest.tsv` lists every hostile file as
    <kind: model|tensor> TAB <path relative to OUT_DIR> TAB <key word the error must contain>

Usage: gen_onnx_cases.py OUT_DIR NODE_TEST_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
NODE = sys.argv[2]
os.makedirs(OUT, exist_ok=True)
manifest = []


def path(*p):
    full = os.path.join(OUT, *p)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    return full


def model(nodes, inputs, outputs, inits=(), ir=8, opsets=(("", 17),), value_info=(), name="g"):
    g = helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(inits),
                          value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = ir
    return m


def fvi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(m, rel):
    onnx.save_model(m, path(rel))


def bad_model(m, rel, keyword):
    save(m, rel)
    manifest.append(("model", rel, keyword))


def bad_bytes(data, rel, keyword, kind="model"):
    with open(path(rel), "wb") as f:
        f.write(data)
    manifest.append((kind, rel, keyword))


X = fvi("x", [2, 3])
Y = fvi("y", [2, 3])
W_VALUES = (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0)

# ---- valid models ----------------------------------------------------------

# External data: two weights in one file (second at a non-zero offset) and a
# third in a subdirectory.
w1 = numpy_helper.from_array(W_VALUES, "w1")
w2 = numpy_helper.from_array(W_VALUES * 2, "w2")
w3 = numpy_helper.from_array(np.arange(4, dtype=np.int64), "w3")
ext = model([helper.make_node("Add", ["x", "w1"], ["t"]), helper.make_node("Add", ["t", "w2"], ["y"])],
            [X], [Y], [w1, w2, w3])
onnx.save_model(ext, path("ext_ok", "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
os.makedirs(path("ext_sub", "sub", "w.bin").rsplit("/", 1)[0], exist_ok=True)
ext2 = model([helper.make_node("Add", ["x", "w1"], ["y"])], [X], [Y], [w1])
onnx.save_model(ext2, path("ext_sub", "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="sub/w.bin", size_threshold=0)


def ext_variant(rel, location, keyword, truncate=None, symlink_to=None):
    m = model([helper.make_node("Add", ["x", "w1"], ["y"])], [X], [Y],
              [numpy_helper.from_array(W_VALUES, "w1")])
    d = os.path.dirname(path(rel))
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(W_VALUES.tobytes()[:truncate] if truncate else W_VALUES.tobytes())
    if symlink_to:
        link = os.path.join(d, "link.bin")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(symlink_to, link)
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    bad_model(m, rel, keyword)


ext_variant("ext_abs/model.onnx", os.path.abspath(path("ext_abs", "w.bin")), "absolute")
ext_variant("ext_dotdot/model.onnx", "../ext_abs/w.bin", "escapes")
ext_variant("ext_dotdot2/model.onnx", "a/../../w.bin", "escapes")
ext_variant("ext_missing/model.onnx", "nothere.bin", "missing")
ext_variant("ext_short/model.onnx", "w.bin", "too short", truncate=10)
ext_variant("ext_symlink/model.onnx", "link.bin", "outside the model directory",
            symlink_to=os.path.abspath(path("ext_abs", "w.bin")))

# IR 3: the initializer is also listed as a graph input (required then).
ir3 = model([helper.make_node("Add", ["x", "w"], ["y"])], [X, fvi("w", [2, 3])], [Y],
            [numpy_helper.from_array(W_VALUES, "w")], ir=3, opsets=(("", 7),))
save(ir3, "ir3.onnx")

# The newest IR and opset the current onnx release writes (onnx 1.23: IR 14, opset 28).
save(model([helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [numpy_helper.from_array(W_VALUES, "w")],
           ir=14, opsets=(("", 28),)), "ir14_opset28.onnx")

# Symbolic dims, value_info, a default domain spelled "ai.onnx", opset of a custom domain.
sym = model([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])],
            [fvi("x", ["N", 3])], [fvi("y", ["N", 3])], value_info=[fvi("h", ["N", 3])],
            opsets=(("ai.onnx", 13), ("com.example", 2)))
save(sym, "symbolic.onnx")

# Nodes stored in reverse order, unnamed (names default to <op>_<index>), and
# an If whose branch reads 'a', produced by a node listed after the If.
then_g = helper.make_graph([helper.make_node("Add", ["a", "a"], ["t_out"])], "then_g", [], [fvi("t_out", [2, 3])])
else_g = helper.make_graph([helper.make_node("Neg", ["a"], ["e_out"])], "else_g", [], [fvi("e_out", [2, 3])])
nodes = [
    helper.make_node("Relu", ["r2"], ["y"]),
    helper.make_node("Relu", ["r1"], ["r2"]),
    helper.make_node("If", ["c"], ["r1"], then_branch=then_g, else_branch=else_g),
    helper.make_node("Abs", ["x"], ["a"]),
]
ooo = model(nodes, [X, fvi("c", [], TensorProto.BOOL)], [Y], opsets=(("", 13),))
save(ooo, "out_of_order.onnx")

# Every attribute kind on a node of a custom domain.
attr_g = helper.make_graph([helper.make_node("Identity", ["x"], ["gy"])], "attr_g", [], [fvi("gy", [2, 3])])
every = helper.make_node(
    "Everything", ["x"], ["y"], domain="com.example", name="every",
    f=1.5, i=-7, s="hello", t=numpy_helper.from_array(np.array([1, 2, 3], dtype=np.int32), "tv"),
    g=attr_g, floats=[0.5, -2.0], ints=[1, 2, 3, 4], strings=["a", "bc"],
    tensors=[numpy_helper.from_array(np.array([1.0], dtype=np.float32), "t0"),
             numpy_helper.from_array(np.array([[1, 2]], dtype=np.int64), "t1")],
    graphs=[attr_g, attr_g])
save(model([every], [X], [Y], opsets=(("", 17), ("com.example", 1))), "attributes.onnx")

# Input and expected output of ir3.onnx, for running a saved copy in onnxruntime.
x_val = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
with open(path("ir3_in.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x_val, "x").SerializeToString())
with open(path("ir3_out.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x_val + W_VALUES, "y").SerializeToString())

# A long chain stored in reverse order (20000 unnamed Relu nodes): loading
# must stay linear in the number of nodes.
CHAIN = 20000
chain = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(CHAIN)][::-1]
save(model(chain, [fvi("v0", [4])], [fvi(f"v{CHAIN}", [4])]), "long_chain.onnx")

# 64 MiB of weights in 16 initializers, initializer k filled with k + 0.5.
big_w = [numpy_helper.from_array(np.full((1024, 1024), k + 0.5, dtype=np.float32), f"big{k}") for k in range(16)]
big_nodes = [helper.make_node("Add", ["x" if k == 0 else f"s{k - 1}", f"big{k}"], [f"s{k}"]) for k in range(16)]
save(model(big_nodes, [fvi("x", [1024, 1024])], [fvi("s15", [1024, 1024])], big_w), "big_weights.onnx")

# ---- tensors: raw_data vs typed fields vs .npy, same values -----------------

rng = np.random.default_rng(5)
typed = {
    "float32": (TensorProto.FLOAT, rng.standard_normal((2, 3)).astype(np.float32), "float_data"),
    "float64": (TensorProto.DOUBLE, rng.standard_normal((3,)).astype(np.float64), "double_data"),
    "int64": (TensorProto.INT64, np.array([[-(2**40), 3], [5, 2**62]], dtype=np.int64), "int64_data"),
    "int32": (TensorProto.INT32, np.array([-5, 0, 2**31 - 1], dtype=np.int32), "int32_data"),
    "int16": (TensorProto.INT16, np.array([-300, 7, 32767], dtype=np.int16), "int32_data"),
    "uint16": (TensorProto.UINT16, np.array([0, 65535, 1234], dtype=np.uint16), "int32_data"),
    "int8": (TensorProto.INT8, np.array([[-128, 127], [0, -1]], dtype=np.int8), "int32_data"),
    "uint8": (TensorProto.UINT8, np.array([0, 255, 17], dtype=np.uint8), "int32_data"),
    "bool": (TensorProto.BOOL, np.array([True, False, True], dtype=np.bool_), "int32_data"),
    "float16": (TensorProto.FLOAT16, np.array([1.5, -2.25, 65504.0], dtype=np.float16), "int32_data"),
    "uint32": (TensorProto.UINT32, np.array([0, 2**32 - 1, 9], dtype=np.uint32), "uint64_data"),
    "uint64": (TensorProto.UINT64, np.array([0, 2**64 - 1, 9], dtype=np.uint64), "uint64_data"),
    "scalar": (TensorProto.FLOAT, np.array(3.25, dtype=np.float32), "float_data"),
    "empty": (TensorProto.FLOAT, np.zeros((0, 4), dtype=np.float32), "float_data"),
}
for name, (dt, arr, field) in typed.items():
    raw = numpy_helper.from_array(arr, name)
    with open(path("tensors", name + "_raw.pb"), "wb") as f:
        f.write(raw.SerializeToString())
    t = TensorProto(name=name, data_type=dt, dims=list(arr.shape))
    flat = arr.reshape(-1)
    if dt == TensorProto.FLOAT16:
        getattr(t, field).extend(flat.view(np.uint16).astype(np.int32).tolist())
    elif dt == TensorProto.BOOL:
        getattr(t, field).extend(flat.astype(np.int32).tolist())
    else:
        getattr(t, field).extend(flat.tolist())
    with open(path("tensors", name + "_typed.pb"), "wb") as f:
        f.write(t.SerializeToString())
    np.save(path("tensors", name + ".npy"), arr)
# bfloat16 has no NumPy type: raw and typed hold the same bit patterns.
bf_bits = np.array([0x3FC0, 0xC010, 0x7F80, 0x0001], dtype=np.uint16)
t = TensorProto(name="bf16", data_type=TensorProto.BFLOAT16, dims=[4], raw_data=bf_bits.tobytes())
with open(path("tensors", "bfloat16_raw.pb"), "wb") as f:
    f.write(t.SerializeToString())
t = TensorProto(name="bf16", data_type=TensorProto.BFLOAT16, dims=[4])
t.int32_data.extend(bf_bits.astype(np.int32).tolist())
with open(path("tensors", "bfloat16_typed.pb"), "wb") as f:
    f.write(t.SerializeToString())

# .npy header versions 1, 2 and 3 of one array; hostile .npy files.
arr = np.arange(12, dtype=np.float32).reshape(3, 4)
for v in (1, 2, 3):
    with open(path("npy", f"v{v}.npy"), "wb") as f:
        np.lib.format.write_array(f, arr, version=(v, 0))
with open(path("npy", "fortran.npy"), "wb") as f:
    np.lib.format.write_array(f, np.asfortranarray(arr), version=(1, 0))
manifest.append(("tensor", "npy/fortran.npy", "Fortran"))
np.save(path("npy", "bigendian.npy"), arr.astype(">f4"))
manifest.append(("tensor", "npy/bigendian.npy", "big-endian"))
np.save(path("npy", "unicode.npy"), np.array(["ab", "c"]))
manifest.append(("tensor", "npy/unicode.npy", "unsupported .npy dtype"))
data = open(path("npy", "v1.npy"), "rb").read()
bad_bytes(data[:-5], "npy/truncated.npy", "truncated", kind="tensor")
bad_bytes(data[:20], "npy/header_cut.npy", "truncated", kind="tensor")
bad_bytes(data + b"\0" * 4, "npy/trailing.npy", "expected 48", kind="tensor")
bad_bytes(data[:6] + bytes([9, 0]) + data[8:], "npy/version9.npy", "version", kind="tensor")

# .npy copies of node-test inputs, compared with the .pb files in C.
for test, file in [("test_conv_with_strides_padding", "input_0"), ("test_conv_with_strides_padding", "input_1"),
                   ("test_conv_with_strides_padding", "output_0"),
                   ("test_add_int8", "input_0"), ("test_add_uint16", "input_1"), ("test_add_uint64", "input_0"),
                   ("test_maxpool_2d_uint8", "output_0"), ("test_cast_FLOAT16_to_DOUBLE", "input_0"),
                   ("test_cast_DOUBLE_to_FLOAT", "input_0"), ("test_pow_types_float32_int64", "input_1"),
                   ("test_div_int32_trunc", "input_0"), ("test_training_dropout", "input_2"),
                   ("test_lstm_defaults", "output_0")]:
    src = os.path.join(NODE, test, "test_data_set_0", f"{file}.pb")
    t = TensorProto()
    t.ParseFromString(open(src, "rb").read())
    np.save(path("node_npy", f"{test}_{file}.npy"), numpy_helper.to_array(t))

# ---- hostile models and tensors ----------------------------------------------


def relu(i, o, name=""):
    return helper.make_node("Relu", [i], [o], name=name)


bad_model(model([relu("b", "a", "n_a"), relu("a", "b", "n_b"), relu("a", "y")], [X], [Y]), "cycle.onnx", "cycle")
bad_model(model([relu("y", "y", "self")], [X], [Y]), "self_cycle.onnx", "cycle")
w = numpy_helper.from_array(W_VALUES, "w")
bad_model(model([helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [w, w]), "dup_init.onnx",
          "duplicate initializer name 'w'")
bad_model(model([relu("x", "y", "r1"), relu("x", "y", "r2")], [X], [Y]), "produced_twice.onnx", "produced twice")
bad_model(model([relu("x", "x", "rx"), relu("x", "y")], [X], [Y]), "redefines_input.onnx", "produced twice")
bad_model(model([relu("nope", "y", "lonely")], [X], [Y]), "missing_input.onnx", "input 'nope' is not produced")
bad_model(model([relu("x", "y")], [X], [Y, fvi("z", [1])]), "missing_output.onnx", "output 'z' is missing")
bad_model(model([relu("x", "y")], [X, X], [Y]), "dup_graph_input.onnx", "declared twice")
bad_model(model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y], ir=2), "ir2.onnx", "ir_version 2")
bad_model(model([relu("x", "y")], [X], [Y], ir=15), "ir15.onnx", "ir_version 15")
bad_model(model([relu("x", "y")], [X], [Y], opsets=(("", 0),)), "opset0.onnx", "opset 0")
bad_model(model([relu("x", "y")], [X], [Y], opsets=(("", 29),)), "opset29.onnx", "opset 29")
bad_model(model([relu("x", "y")], [X], [Y], opsets=(("", 13), ("ai.onnx", 14))), "opset_twice.onnx", "twice")
bad_model(model([relu("x", "y")], [X], [Y], opsets=(("com.example", 1),)), "no_default_opset.onnx",
          "not in the model's opset imports")
nog = model([relu("x", "y")], [X], [Y])
nog.ClearField("graph")
bad_model(nog, "no_graph.onnx", "no graph")
bad_model(model([helper.make_node("", ["x"], ["y"])], [X], [Y]), "no_op_type.onnx", "no op_type")
dup_attr = helper.make_node("Relu", ["x"], ["y"], name="dup")
dup_attr.attribute.extend([helper.make_attribute("alpha", 1.0), helper.make_attribute("alpha", 2.0)])
bad_model(model([dup_attr], [X], [Y]), "dup_attr.onnx", "given twice")
bad_model(model([relu("x", "y")], [X], []), "no_outputs.onnx", "no outputs")

sub_bad = helper.make_graph([helper.make_node("Neg", ["ghost"], ["o"])], "sub_bad", [], [fvi("o", [1])])
bad_model(model([helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=sub_bad, else_branch=sub_bad)],
                [fvi("c", [], TensorProto.BOOL)], [fvi("y", [1])], opsets=(("", 13),)),
          "subgraph_missing.onnx", "input 'ghost' is not produced")


def init_model(t, rel, keyword):
    bad_model(model([helper.make_node("Add", ["x", t.name], ["y"])], [X], [Y], [t]), rel, keyword)


init_model(TensorProto(name="neg", data_type=TensorProto.FLOAT, dims=[-1, 3]), "neg_dim.onnx", "negative")
init_model(TensorProto(name="huge", data_type=TensorProto.FLOAT, dims=[2**30, 2**30, 4], raw_data=b"\0" * 16),
           "huge_dims.onnx", "absurd")
init_model(TensorProto(name="huge2", data_type=TensorProto.FLOAT, dims=[2**62, 2**62], raw_data=b"\0" * 16),
           "overflow_dims.onnx", "absurd")
init_model(TensorProto(name="deep", data_type=TensorProto.FLOAT, dims=[1] * 9, raw_data=b"\0" * 4),
           "rank9.onnx", "rank 9")
init_model(TensorProto(name="short", data_type=TensorProto.FLOAT, dims=[2, 3], raw_data=b"\0" * 20),
           "raw_mismatch.onnx", "raw_data has 20 bytes, expected 24")
t = TensorProto(name="few", data_type=TensorProto.FLOAT, dims=[2, 3])
t.float_data.extend([1, 2, 3, 4, 5])
init_model(t, "typed_mismatch.onnx", "float_data holds 5 values, expected 6")
init_model(TensorProto(name="nodata", data_type=TensorProto.INT64, dims=[2]), "no_data.onnx", "no data")
t = TensorProto(name="strs", data_type=TensorProto.STRING, dims=[2])
t.string_data.append(b"x")
init_model(t, "string_count.onnx", "string_data holds 1 values, expected 2")
init_model(TensorProto(name="strraw", data_type=TensorProto.STRING, dims=[1], raw_data=b"x"),
           "string_raw.onnx", "keeps its values in string_data")
init_model(TensorProto(name="notype", dims=[1], raw_data=b"\0" * 4), "no_dtype.onnx", "no data type")
t = TensorProto(name="seg", data_type=TensorProto.FLOAT, dims=[1], raw_data=b"\0" * 4)
t.segment.begin = 0
t.segment.end = 1
init_model(t, "segment.onnx", "segmented")
const = helper.make_node("Constant", [], ["y"], name="const_bad",
                         value=TensorProto(name="cv", data_type=TensorProto.FLOAT, dims=[3], raw_data=b"\0" * 8))
bad_model(model([const], [], [Y]), "bad_const_attr.onnx", "const_bad")
bad_model(model([relu("x", "y")], [fvi("x", [1] * 9)], [Y]), "input_rank9.onnx", "rank 9")
neg_vi = model([relu("x", "y")], [X], [Y])
neg_vi.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
save(neg_vi, "negative_value_info_dim.onnx")

bad_bytes(b"this is not an onnx model at all\n" * 4, "garbage.onnx", "protobuf")
bad_bytes(b"", "empty.onnx", "empty")
bad_bytes(b"\x0a\xff\xff\xff\xff\x0f", "huge_length.onnx", "truncated")
bad_bytes(b"this is not a tensor\n", "tensors/garbage.pb", "protobuf", kind="tensor")
bad_bytes(b"", "tensors/empty.pb", "empty", kind="tensor")
bad_bytes(TensorProto(name="r9", data_type=TensorProto.FLOAT, dims=[1] * 9, raw_data=b"\0" * 4).SerializeToString(),
          "tensors/rank9.pb", "rank 9", kind="tensor")
bad_bytes(TensorProto(name="m", data_type=TensorProto.INT32, dims=[3], raw_data=b"\0" * 8).SerializeToString(),
          "tensors/mismatch.pb", "raw_data has 8 bytes, expected 12", kind="tensor")

with open(path("manifest.tsv"), "w") as f:
    for kind, rel, key in manifest:
        f.write(f"{kind}\t{rel}\t{key}\n")
print(f"wrote {len(manifest)} hostile cases to {OUT}")
