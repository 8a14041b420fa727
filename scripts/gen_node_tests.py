#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx release to a folder.

onnx no longer ships its node-test folders; it carries their generators
(onnx.backend.test.case.node, 1,884 cases in onnx 1.23). This writes each
case as the backend-test layout `dtrexec check` reads:

    OUT/<test>/model.onnx
    OUT/<test>/test_data_set_<i>/{input_<j>.pb,output_<j>.pb}

and OUT/MANIFEST.tsv: test name, the operator it tests (its group: the
operator of the test it expands, else the single operator of its graph, else the
operator its name starts with), the operators of its top-level graph, rtol
and atol. Only the tests whose top-level operators are all in --ops are
written when --ops is given (comma-separated op types; "all" for every test).

    scripts/gen_node_tests.py -o build/onnx-node [--ops Add,Mul] [--match SUBSTR]
"""
import argparse
import contextlib
import io
import os
import re
import shutil
import sys
import warnings


def write_value(f, value, vtype, name):
    from onnx import TensorProto, numpy_helper
    if vtype.HasField("sequence_type"):
        f.write(numpy_helper.from_list(value, name).SerializeToString())
    elif vtype.HasField("optional_type"):
        f.write(numpy_helper.from_optional(value, name).SerializeToString())
    elif vtype.HasField("map_type"):
        f.write(numpy_helper.from_dict(value, name).SerializeToString())
    elif isinstance(value, TensorProto):
        f.write(value.SerializeToString())
    else:
        f.write(numpy_helper.from_array(value, name).SerializeToString())


def write_case(case, root):
    out = os.path.join(root, case.name)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    model = case.model
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        d = os.path.join(out, f"test_data_set_{i}")
        os.makedirs(d)
        for j, value in enumerate(inputs):
            vi = model.graph.input[j]
            with open(os.path.join(d, f"input_{j}.pb"), "wb") as f:
                write_value(f, value, vi.type, vi.name)
        for j, value in enumerate(outputs):
            vi = model.graph.output[j]
            with open(os.path.join(d, f"output_{j}.pb"), "wb") as f:
                write_value(f, value, vi.type, vi.name)


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def group_of(name, ops, single):
    """The operator a test is about (see the module docstring)."""
    base = re.sub(r"_expanded(_ver\d+)?$", "", name)
    if base != name and base in single:
        return single[base]
    if len(ops) == 1:
        return ops[0]
    best = ""
    for op in ops:
        stem = "test_" + snake(op)
        if (name == stem or name.startswith(stem + "_")) and len(op) > len(best):
            best = op
    return best or ops[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--ops", default="all")
    ap.add_argument("--match", default="")
    a = ap.parse_args()
    import onnx
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    wanted = None if a.ops == "all" else set(a.ops.split(","))
    os.makedirs(a.out, exist_ok=True)
    cases = [c for c in cases if c.kind == "node" and c.model]
    ops_of = {c.name: sorted({n.op_type for n in c.model.graph.node}) for c in cases}
    single = {name: ops[0] for name, ops in ops_of.items() if len(ops) == 1}
    rows = []
    for case in cases:
        ops = ops_of[case.name]
        if a.match not in case.name or (wanted is not None and not set(ops) <= wanted):
            continue
        write_case(case, a.out)
        group = group_of(case.name, ops, single)
        rows.append(f"{case.name}\t{group}\t{','.join(ops)}\t{case.rtol}\t{case.atol}")
    with open(os.path.join(a.out, "MANIFEST.tsv"), "w") as f:
        f.write(f"# onnx {onnx.__version__}: test\tgroup\tops\trtol\tatol\n")
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows)} node tests of onnx {onnx.__version__} written to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
