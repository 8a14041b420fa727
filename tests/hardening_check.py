#!/usr/bin/env python3
"""Regression tests of issue 19 (hardening): inputs that crashed dtrexec, that
it accepted as nonsense with exit 0, or that it answered with the wrong exit
code or an unclear message. Every case asserts the exit code of DESIGN.md
(1 bad input, 2 budget or out of memory) and that stderr names the problem;
none may crash (a signal, or exit 3).

Usage: hardening_check.py DTREXEC GROUP   (GROUP: crashes, sizes, options, messages)"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
vi = helper.make_tensor_value_info
failures = []
# Under ASan an allocation of terabytes aborts unless told to fail as malloc
# does: the out-of-memory paths are what these cases check.
ENV = dict(os.environ, ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                                            "allocator_may_return_null=1"])))


def save(tmp, name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def small_model(tmp):
    """x[2,4] @ W -> Relu: trainable, for the option checks."""
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")
    return save(tmp, "small", [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                               helper.make_node("Relu", ["h"], ["y"], name="relu")],
                [vi("x", F, [2, 4])], [vi("y", F, [2, 3])], [w], opset=17)


def expect(label, cmd, code, *needles, stdin=None):
    """Runs cmd; the exit code must be `code` and stderr must contain every needle."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=120, input=stdin, env=ENV)
    except subprocess.TimeoutExpired:
        failures.append(f"{label}: timed out")
        print(f"FAIL {label}: timed out")
        return
    err = p.stderr.decode("utf-8", "replace")
    missing = [n for n in needles if n not in err]
    if p.returncode != code or missing:
        failures.append(label)
        print(f"FAIL {label}: exit {p.returncode} (want {code}), missing {missing!r}\n  stderr: {err.strip()[:600]}")
    else:
        print(f"ok   {label}: exit {code}: {err.strip().splitlines()[-1][:160] if err.strip() else ''}")
    return p


def graph_json(path, nodes, links):
    """A Checkmate node-link graph: nodes (id, cost_cpu, cost_ram), links."""
    doc = {"directed": True, "multigraph": False, "graph": {},
           "nodes": [{"id": i, "name": f"n{i}", "cost_cpu": c, "cost_ram": r} for i, c, r in nodes],
           "links": [{"source": a, "target": b} for a, b in links]}
    with open(path, "w") as f:
        f.write(json.dumps(doc))
    return path


def crashes(exe, tmp):
    # A Tile to 2^62 elements: the byte count wrapped to 0 and the copy wrote past a 64-byte block.
    tile = save(tmp, "tile62", [helper.make_node("Tile", ["x", "r"], ["y"], name="tile0")], [vi("x", F, [1])],
                [vi("y", F, None)], [helper.make_tensor("r", I64, [1], [2 ** 62])])
    expect("tile-2^62", [exe, tile], 1, "node 'tile0' (Tile)", "4611686018427387904", "2^62")
    # Repeats whose product overflows int64 itself.
    tile2 = save(tmp, "tile_wrap", [helper.make_node("Tile", ["x", "r"], ["y"], name="tile1")], [vi("x", F, [4])],
                 [vi("y", F, None)], [helper.make_tensor("r", I64, [1], [2 ** 62])])
    expect("tile-int64-overflow", [exe, tile2], 1, "node 'tile1' (Tile)", "overflows")

    # A link to an unknown node id: lookup()'s -1 came back as 4294967295 through a uint32.
    bad = graph_json(os.path.join(tmp, "bad_link.json"), [(0, 1.0, 100), (1, 1.0, 100), (2, 1.0, 100)],
                     [(0, 1), (1, 7)])
    for solver in ["checkpoint-all", "chen-sqrtn", "chen-greedy", "griewank", "checkmate", "checkmate-lp"]:
        expect(f"plan-unknown-link/{solver}",
               [exe, "plan", bad, "--solver", solver, "--budget", "1x", "-o", os.path.join(tmp, "s.json")],
               1, "link 1 does not join two known node ids")
    good = graph_json(os.path.join(tmp, "good.json"), [(0, 1.0, 100), (1, 1.0, 100), (2, 1.0, 100)], [(0, 1), (1, 2)])
    sched = os.path.join(tmp, "good_sched.json")
    p = subprocess.run([exe, "plan", good, "--solver", "checkpoint-all", "-o", sched], capture_output=True)
    if p.returncode != 0:
        failures.append("plan good graph")
        print("FAIL plan good graph:", p.stderr.decode()[:300])
    expect("sim-plan-unknown-link", [exe, "sim", bad, "--plan", sched], 1, "link 1 does not join two known node ids")
    expect("sim-unknown-link", [exe, "sim", bad], 1, "link 1 does not join two known node ids")

    # --threads 100000 crashed inside libgomp.
    model = small_model(tmp)
    for t in ["100000", "0", "-3", "1025"]:
        expect(f"threads-{t}", [exe, model, "--threads", t], 1, "--threads", "from 1 to 1024", f"'{t}'")
    expect("plan-threads-100000", [exe, "plan", good, "--solver", "checkmate", "--threads", "100000", "-o",
                                   os.path.join(tmp, "s.json")], 1, "--threads", "from 1 to 1024")
    # and a sane count still runs
    expect("threads-4-runs", [exe, model, "--threads", "4", "--quiet"], 0)

    # A Conv over an empty batch divided by the chunk's zero images when its
    # oneDNN workspace was sized (libFuzzer, corpus/model/regress-conv-empty-batch.onnx).
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "W")
    conv = save(tmp, "conv_empty_batch", [helper.make_node("Conv", ["x", "W"], ["y"], name="conv0", pads=[1, 1, 1, 1])],
                [vi("x", F, [0, 1, 17, 5])], [vi("y", F, [0, 2, 17, 5])], [w])
    p = expect("conv-empty-batch", [exe, conv, "--threads", "2"], 0)
    if p is not None and b"[0,2,17,5]" not in p.stdout:
        failures.append("conv-empty-batch shape")
        print("FAIL conv-empty-batch: output is not [0,2,17,5]:", p.stdout.decode()[:200])


def sizes(exe, tmp):
    # Expand to [2^32, 2^32, 2^31]: "ran" with a 192-byte peak (signed overflow of the element count).
    expand = save(tmp, "expand", [helper.make_node("Expand", ["x", "s"], ["y"], name="exp0")], [vi("x", F, [1])],
                  [vi("y", F, None)], [helper.make_tensor("s", I64, [3], [2 ** 32, 2 ** 32, 2 ** 31])])
    expect("expand-2^95", [exe, expand], 1, "node 'exp0' (Expand)", "[4294967296,4294967296,2147483648]", "2^62")
    # An input declared [2^32, 2^32, 2^32]
    big_in = save(tmp, "big_input", [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                  [vi("x", F, [2 ** 32, 2 ** 32, 2 ** 32])], [vi("y", F, None)])
    expect("input-2^96", [exe, big_in], 1, "input 'x'", "[4294967296,4294967296,4294967296]", "2^62")
    # ... and one whose zero dimension hides a product past int64 in the others
    zero_in = save(tmp, "zero_input", [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                   [vi("x", F, [0, 2 ** 40, 2 ** 40])], [vi("y", F, None)])
    expect("input-zero-dim-2^80", [exe, zero_in], 1, "input 'x'", "2^62")
    # --dim binding a symbolic dimension to a size that overflows
    sym = save(tmp, "sym_input", [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
               [vi("x", F, ["N", 2 ** 40])], [vi("y", F, None)])
    expect("dim-overflow", [exe, sym, "--dim", "N=4611686018427387904"], 1, "input 'x'", "2^62")
    expect("dim-out-of-range", [exe, sym, "--dim", "N=9223372036854775807"], 1, "--dim", "from 1 to")
    # A Reshape whose target shape's product wraps around to the input's element count.
    reshape = save(tmp, "reshape_wrap", [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs0")],
                   [vi("x", F, [1])], [vi("y", F, None)],
                   [helper.make_tensor("s", I64, [2], [2 ** 32, 2 ** 32])])
    expect("reshape-wrap", [exe, reshape], 1, "node 'rs0' (Reshape)", "more elements than int64")
    # Pads whose sum with the axis overflows int64.
    pad = save(tmp, "pad_wrap", [helper.make_node("Pad", ["x", "p"], ["y"], name="pad0")], [vi("x", F, [2])],
               [vi("y", F, None)], [helper.make_tensor("p", I64, [2], [2 ** 62, 2 ** 62])])
    expect("pad-int64-overflow", [exe, pad], 1, "node 'pad0' (Pad)", "overflow int64")
    # Possible but does not fit: 2^40 floats is 4 TiB.
    fits_not = save(tmp, "tile40", [helper.make_node("Tile", ["x", "r"], ["y"], name="tile40")], [vi("x", F, [1])],
                    [vi("y", F, None)], [helper.make_tensor("r", I64, [1], [2 ** 40])])
    expect("tile-4TiB-oom", [exe, fits_not], 2, "out of memory", "4398046511104 bytes")
    # Host out of memory for an input's random data exits 2 (was 3).
    huge_in = save(tmp, "huge_input", [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                   [vi("x", F, [2 ** 20, 2 ** 20, 2 ** 10])], [vi("y", F, None)])
    expect("input-host-oom", [exe, huge_in], 2, "out of host memory", "input 'x'")

    # Infinite and NaN node costs in a graph: "overhead -nan" with exit 0.
    for label, cost in [("inf", "Infinity"), ("nan", "NaN"), ("huge", "1e400")]:
        path = os.path.join(tmp, f"cost_{label}.json")
        with open(path, "w") as f:
            f.write('{"directed": true, "graph": {}, "nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 8}, '
                    '{"id": 1, "cost_cpu": %s, "cost_ram": 8}], "links": [{"source": 0, "target": 1}]}' % cost)
        # JSON has no Infinity or NaN (the reader refuses them); 1e400 parses as infinity
        needles = ["node 1", "finite non-negative"] if label == "huge" else ["unexpected character"]
        expect(f"sim-graph-cost-{label}", [exe, "sim", path], 1, *needles)
        expect(f"plan-graph-cost-{label}", [exe, "plan", path, "--solver", "checkpoint-all", "-o",
                                            os.path.join(tmp, "s.json")], 1, *needles)
    big = graph_json(os.path.join(tmp, "bytes_huge.json"), [(0, 1.0, 8), (1, 1.0, 1e19)], [(0, 1)])
    expect("graph-bytes-1e19", [exe, "sim", big], 1, "node 1", "finite non-negative")
    expect("plan-graph-bytes-1e19", [exe, "plan", big, "--solver", "checkpoint-all", "-o",
                                     os.path.join(tmp, "s.json")], 1, "node 1", "finite non-negative")


def options(exe, tmp):
    model = small_model(tmp)
    # Budgets that silently trained with no budget at all (float-to-integer overflow).
    for b in ["1e30", "inf", "2^64", "99999999999999999999999", "1e308x", "infx", "1e-9x", "nan", "-4GB", "0",
              "nanx", "0x"]:
        expect(f"budget-{b}", [exe, model, "--train", "--budget", b], 1, "--budget", "2^62 bytes",
               "1e-06x to 1000x", f"'{b}'")
    expect("budget-4GB-runs", [exe, model, "--train", "--budget", "4GB", "--quiet"], 0)
    # A bare number below 16 is a ratio to sim and plan; run refuses it
    # instead of reading it as a few bytes.
    for b in ["4", "0.5", "15.9"]:
        expect(f"budget-bare-{b}", [exe, model, "--train", "--budget", b], 1, f"--budget {b} would be {b} bytes",
               f"write {b}x", f"({b}GB)")
    expect("budget-bare-16-is-bytes", [exe, model, "--train", "--budget", "16"], 2, "budget of 16 bytes")
    # a ratio within range whose bytes round to 0
    expect("budget-ratio-zero-bytes", [exe, model, "--train", "--budget", "1e-6x"], 1, "--budget", "0 bytes",
           "outside 1 byte")
    # plan --budget 1e308x planned for 1 byte
    good = graph_json(os.path.join(tmp, "good.json"), [(0, 1.0, 100), (1, 1.0, 100), (2, 1.0, 100)], [(0, 1), (1, 2)])
    for b in ["1e308x", "inf", "1e30", "infx", "99999999999999999999999"]:
        expect(f"plan-budget-{b}", [exe, "plan", good, "--solver", "checkpoint-all", "--budget", b, "-o",
                                    os.path.join(tmp, "s.json")], 1, "--budget", "2^62 bytes", f"'{b}'")
        expect(f"sim-budget-{b}", [exe, "sim", good, "--budget", b], 1, "--budget", "2^62 bytes", f"'{b}'")
    expect("plan-budget-tiny-ratio", [exe, "plan", good, "--solver", "checkpoint-all", "--budget", "1e-6x", "-o",
                                      os.path.join(tmp, "s.json")], 1, "outside 1 byte")
    expect("plan-time-limit-inf", [exe, "plan", good, "--solver", "checkmate", "--time-limit", "inf", "-o",
                                   os.path.join(tmp, "s.json")], 1, "--time-limit", "from 0 to 1e7")
    # --lr 1e39 is infinite in float: trained to NaN with exit 0.
    for opt, val in [("--lr", "1e39"), ("--lr", "inf"), ("--lr", "nan"), ("--lr", "-1"), ("--lr", "0.1x"),
                     ("--momentum", "1e39"), ("--momentum", "2"), ("--weight-decay", "1e39"),
                     ("--weight-decay", "-0.5")]:
        expect(f"{opt}-{val}", [exe, model, "--train", opt, val], 1, opt, "finite number from", f"'{val}'")
    expect("lr-0.01-runs", [exe, model, "--train", "--lr", "0.01", "--quiet"], 0)
    for opt in ["--steps", "--repeat"]:
        expect(f"{opt}-2^31", [exe, model, opt, "2147483648"], 1, opt, "from 1 to 2147483647")
    # gradcheck and check: strict numbers, not atof
    for opt, val in [("--eps", "abc"), ("--eps", "0"), ("--eps", "inf"), ("--rtol", "1e-3x"), ("--atol", "nan"),
                     ("--rtol", "-1"), ("--max-elems", "0"), ("--max-elems", "12abc")]:
        expect(f"gradcheck{opt}-{val}", [exe, "gradcheck", model, opt, val], 1, "dtrexec gradcheck", opt, f"'{val}'")
    for opt, val in [("--rtol", "abc"), ("--atol", "inf")]:
        expect(f"check{opt}-{val}", [exe, "check", opt, val, tmp], 1, "dtrexec check", opt, f"'{val}'")
    for val in ["abc", "-1", "1e3", "18446744073709551616"]:
        expect(f"gradcheck--seed-{val}", [exe, "gradcheck", model, "--seed", val], 1, "dtrexec gradcheck", "--seed",
               f"'{val}'")
    # --help is an answer (stdout, exit 0); unknown options and missing values are named.
    for cmd in ["check", "gradcheck"]:
        p = expect(f"{cmd}-help", [exe, cmd, "--help"], 0)
        if p is not None and b"usage: dtrexec " + cmd.encode() not in p.stdout:
            failures.append(f"{cmd}-help: no usage on stdout")
        expect(f"{cmd}-unknown-option", [exe, cmd, "--bogus", model], 1, f"dtrexec {cmd}: unknown option '--bogus'")
        expect(f"{cmd}-missing-value", [exe, cmd, model, "--rtol"], 1, f"dtrexec {cmd}: --rtol needs a value")
    expect("check-no-folder", [exe, "check", "--quiet"], 1, "no test folder given")
    expect("gradcheck-two-models", [exe, "gradcheck", model, model], 1, "one model only")
    # Symbolic dimensions: gradcheck binds them with --dim, as its message says.
    sym = save(tmp, "sym", [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [vi("x", F, ["batch", 4])],
               [vi("y", F, ["batch", 3])], [numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "W")])
    expect("gradcheck-symbolic-unbound", [exe, "gradcheck", sym], 1, "--dim batch=N")
    expect("gradcheck-dim", [exe, "gradcheck", sym, "--dim", "batch=3"], 0)
    for val in ["batch", "batch=0", "=3", "batch=x"]:
        expect(f"gradcheck-dim-{val}", [exe, "gradcheck", sym, "--dim", val], 1, "--dim")
    # ops took any argument; sim --seed read text as 0; bench --time-limit had no bound.
    expect("ops-argument", [exe, "ops", "--bogus"], 1, "dtrexec ops: takes no arguments: unexpected argument '--bogus'")
    expect("ops-help", [exe, "ops", "--help"], 0)
    for val in ["abc", "-3", "1.5"]:
        expect(f"sim--seed-{val}", [exe, "sim", good, "--seed", val], 1, "dtrexec sim", "--seed", f"'{val}'")
    expect("bench-time-limit-1e9", [exe, "bench", good, "--time-limit", "1e9"], 1, "--time-limit", "from 0 to 1e7")
    # Training options without --train were quietly ignored.
    for opt, val in [("-o", "g.json"), ("--export", "g.json"), ("--lr", "0.1"), ("--steps", "3"), ("--loss", "mse"),
                     ("--labels", "l.npy"), ("--optimizer", "adam"), ("--nesterov", None), ("--freeze", "W"),
                     ("--grad-dir", "gd")]:
        cmd = [exe, model, opt] + ([os.path.join(tmp, val)] if val and val.endswith((".json", ".npy")) else [val] if val else [])
        expect(f"run{opt}-without-train", cmd, 1, f"{opt} is an option of training runs and needs --train")


def deep_if(depth):
    """If nodes nested `depth` deep in then_branch, the innermost branch holding a node of an unknown domain."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="bad", domain="nowhere")], "leaf", [],
                          [vi("y", F, [2])])
    for d in range(1, depth + 1):
        els = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name=f"id{d}")], f"else{d}", [],
                                [vi("y", F, [2])])
        g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name=f"if{d}", then_branch=g, else_branch=els)],
                              f"g{d}", [], [vi("y", F, [2])])
    g.input.extend([vi("c", TensorProto.BOOL, []), vi("x", F, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def messages(exe, tmp):
    # Deep If nesting gave a 1 KB chain repeating "subgraph 'then_branch'":
    # the two outermost levels, a count of the elided ones, the innermost.
    for depth, elided in [(3, None), (30, 27)]:
        path = os.path.join(tmp, f"deep_if_{depth}.onnx")
        onnx.save(deep_if(depth), path)
        words = [f"node 'if{depth}' (If): subgraph 'then_branch'", "node 'if1' (If): subgraph 'then_branch': node 'bad'",
                 "domain 'nowhere' is not in the model's opset imports"]
        if elided:
            words.append(f"(then {elided} more nested subgraphs)")
        p = expect(f"deep-if-{depth}", [exe, path], 1, *words)
        if p is not None and elided and len(p.stderr) > 400:
            failures.append(f"deep-if-{depth}: message of {len(p.stderr)} bytes")
    # A declared output type the graph does not compute is a broken model
    # (onnxruntime refuses it at load); a declared shape it contradicts is a
    # warning, as in onnxruntime, and the computed shape is returned.
    relu = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    typed = save(tmp, "out_type", relu, [vi("x", F, [2, 3])], [vi("y", onnx.TensorProto.INT64, [2, 3])])
    expect("output-declared-type", [exe, typed], 1, "graph output 'y' is declared int64, but the graph computes float32")
    for name, dims, text in [("out_shape", [5, 7], "[5,7]"), ("out_rank", [2], "[2]"), ("out_sym", ["n", 4], "[?,4]")]:
        path = save(tmp, name, relu, [vi("x", F, [2, 3])], [vi("y", F, dims)])
        p = expect(f"output-declared-{name}", [exe, path], 0,
                   f"warning: graph output 'y' is declared {text}, but the graph computes [2,3]")
        if p is not None and b"output 0 'y': float32 [2,3]" not in p.stdout:
            failures.append(f"output-declared-{name}: stdout {p.stdout[:200]!r}")
    ok = save(tmp, "out_ok", relu, [vi("x", F, [2, 3])], [vi("y", F, ["n", 3])])
    p = expect("output-declared-symbolic-fits", [exe, ok], 0)
    if p is not None and b"warning" in p.stderr:
        failures.append(f"output-declared-symbolic-fits: warned {p.stderr[:200]!r}")
    # A required input left empty ("" marks an omitted optional one) crashed
    # Gemm's shape inference and OptionalGetElement (found by tests/fuzz).
    gemm = save(tmp, "gemm_empty", [helper.make_node("Gemm", ["", "b"], ["y"], name="g")],
                [vi("b", F, [3, 4])], [vi("y", F, None)])
    expect("required-input-empty", [exe, gemm], 1, "node 'g' (Gemm)", "input 0 is required")
    oge = save(tmp, "oge_empty", [helper.make_node("OptionalGetElement", [""], ["y"], name="oge")],
               [vi("x", F, [2])], [vi("y", F, None)], opset=18)
    expect("optional-input-empty", [exe, oge], 1, "node 'oge' (OptionalGetElement)", "input 0 is required")
    # `dtrexec --help` points to --help-run, which was rejected.
    p = subprocess.run([exe, "--help"], capture_output=True)
    if p.returncode != 0 or b"--help-run" not in p.stdout:
        failures.append("help mentions --help-run")
        print("FAIL help mentions --help-run:", p.returncode, p.stdout[-300:])
    p = subprocess.run([exe, "--help-run"], capture_output=True)
    if p.returncode != 0 or b"--budget" not in p.stdout or b"usage: dtrexec MODEL.onnx" not in p.stdout:
        failures.append("--help-run")
        print("FAIL --help-run:", p.returncode, p.stdout[:300], p.stderr[:300])
    else:
        print("ok   --help-run: exit 0, prints the run options")

    # A declared dimension of -5 asked to bind a dimension that has no name.
    neg = save(tmp, "neg_dim", [helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", F, [-5, 3])],
               [vi("y", F, None)])
    p = expect("dim-minus-5", [exe, neg], 1, "value 'x'", "dimension 0 is -5", "not a valid size")
    if p is not None and b"--dim" in p.stderr:
        failures.append("dim-minus-5 mentions --dim")
        print("FAIL dim-minus-5 still asks for --dim")
    # An unnamed unknown dimension cannot be bound with --dim: the message says to give the input.
    unk = save(tmp, "unknown_dim", [helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", F, [None, 3])],
               [vi("y", F, None)])
    expect("dim-unnamed", [exe, unk], 1, "input 'x'", "dimension 0 has neither a size nor a name", "--input x=")

    # Raw bytes of corrupted names were printed unescaped.
    m = onnx.load(save(tmp, "plain", [helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", F, [2])],
                       [vi("y", F, [2])]))
    m.graph.node[0].op_type = "Re\x1b[31mlu\x07"
    raw = os.path.join(tmp, "raw_names.onnx")
    with open(raw, "wb") as f:
        f.write(m.SerializeToString())
    p = expect("escaped-name", [exe, raw], 1, "\\x1b[31mlu\\x07")
    if p is not None and (b"\x1b" in p.stderr or b"\x07" in p.stderr):
        failures.append("escaped-name raw bytes")
        print("FAIL escaped-name: raw control bytes on stderr")
    # invalid UTF-8 is escaped, valid UTF-8 kept
    data = m.SerializeToString().replace("Re\x1b[31mlu\x07".encode(), b"R\xffelu\xc3\xa9xyz")
    raw2 = os.path.join(tmp, "raw_names2.onnx")
    with open(raw2, "wb") as f:
        f.write(data)
    p = expect("escaped-invalid-utf8", [exe, raw2], 1, "R\\xffelu\u00e9xyz")

    # External data: fields checked before the allocation; a/../data.bin inside the folder accepted.
    d = os.path.join(tmp, "ext")
    os.makedirs(os.path.join(d, "a"), exist_ok=True)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    with open(os.path.join(d, "data.bin"), "wb") as f:
        f.write(w.tobytes())

    def ext_model(name, dims, loc, extra=()):
        t = TensorProto(name="W", data_type=F, dims=dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in [("location", loc)] + list(extra):
            e = t.external_data.add()
            e.key, e.value = k, v
        g = helper.make_graph([helper.make_node("Add", ["x", "W"], ["y"], name="add0")], "ext",
                              [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], initializer=[t])
        mm = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        mm.ir_version = 8
        path = os.path.join(d, name + ".onnx")
        with open(path, "wb") as f:
            f.write(mm.SerializeToString())
        return path

    expect("external-dotdot-inside", [exe, ext_model("dotdot", [2, 3], "a/../data.bin"), "--quiet"], 0)
    expect("external-dot", [exe, ext_model("dot", [2, 3], "./a/./../data.bin"), "--quiet"], 0)
    expect("external-dotdot-escapes", [exe, ext_model("escape", [2, 3], "a/../../data.bin")], 1,
           "escapes the model directory")
    # 2^38 floats (1 TiB) with a bad offset: refused from the fields, with no allocation first
    # (the allocation came first and failed as out of memory, exit 2, or aborted under ASan).
    huge = ext_model("huge", [2 ** 19, 2 ** 19], "data.bin", [("offset", "x12")])
    expect("external-huge-bad-offset", [exe, huge], 1,
           "external data offset 'x12' is not a number")
    huge2 = ext_model("huge2", [2 ** 19, 2 ** 19], "data.bin")
    expect("external-huge-short-file", [exe, huge2], 1, "too short")
    # valid fields and a (sparse) file of 1 TiB: then the allocation fails, as out of memory (exit 2, was 1);
    # only where the kernel refuses to overcommit that much (mode 1 would grant it and read 1 TiB)
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            overcommit_always = f.read().strip() == "1"
    except OSError:
        overcommit_always = True
    try:
        if overcommit_always:
            raise OSError("overcommit")
        with open(os.path.join(d, "sparse.bin"), "wb") as f:
            f.truncate(2 ** 40)
        sparse_ok = True
    except OSError:
        sparse_ok = False
    if sparse_ok:
        huge4 = ext_model("huge4", [2 ** 19, 2 ** 19], "sparse.bin")
        expect("external-huge-oom", [exe, huge4], 2, "tensor 'W'", "out of memory")
    huge3 = ext_model("huge3", [2 ** 19, 2 ** 19], "missing.bin")
    expect("external-huge-missing", [exe, huge3], 1, "missing.bin")


def main():
    exe, group = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        {"crashes": crashes, "sizes": sizes, "options": options, "messages": messages}[group](exe, tmp)
    if failures:
        print(f"{len(failures)} failing: {', '.join(failures)}")
        sys.exit(1)
    print(f"hardening/{group}: all passed")


if __name__ == "__main__":
    main()
