#!/usr/bin/env python3
"""docs/DESIGN.md against the CLI it describes. Fails when the binary has a
subcommand, option, exit code or output field the page does not document,
when the page documents an option the binary does not accept, or when the
sources read a DTRX_* environment variable or define a DTRX_* build option
the page does not list (or the page lists one nothing reads).

What it compares:
  - `dtrexec --list-options` (cli/main.c, cli/options.c): subcommands,
    options per subcommand, exit codes; against the page's tables marked
    <!-- subcommands -->, <!-- options: CMD -->, <!-- exit -->;
  - every option the list names is accepted by the binary (run with an
    example value, it is not refused as unknown), and an unknown option is
    refused, so the probe means something;
  - every option literal ("--x", "-x") in cli/*.c is in the list, so an
    option added to a parser and not to the list fails here;
  - CLI_EXIT_* in cli/cli.h against the list and the page;
  - getenv / os.environ reads of DTRX_* in the sources against <!-- env -->,
    CMake option()/CACHE DTRX_* against <!-- build -->;
  - real output: --stats of an inference and two training runs (every field
    documented, every documented field produced), sim --json and plan --json
    (both ways), the trace, the graph of `dtrexec export`, schedules and the
    --grad-dir index (every field produced is documented).
Usage: docs_check.py DTREXEC SOURCE_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTREXEC = os.path.abspath(sys.argv[1])
SRC = os.path.abspath(sys.argv[2])
PAGE = os.path.join(SRC, "docs", "DESIGN.md")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def compare(what, found, documented, both_ways=True):
    for name in sorted(set(found) - set(documented)):
        fail(f"{what}: '{name}' is not documented in docs/DESIGN.md")
    if both_ways:
        for name in sorted(set(documented) - set(found)):
            fail(f"{what}: docs/DESIGN.md documents '{name}', which the program does not have")


# ---- the page's marked tables ----

def page_tables():
    """marker -> list of first-cell token lists, for each table right after
    an HTML comment marker."""
    tables = {}
    lines = open(PAGE, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- (.+?) -->", line.strip())
        if not m:
            continue
        rows = []
        k = i + 1
        while k < len(lines) and lines[k].startswith("|"):
            rows.append(lines[k])
            k += 1
        if len(rows) < 2:
            fail(f"docs/DESIGN.md: marker '{m.group(1)}' is not followed by a table")
            continue
        cells = []
        for row in rows[2:]:   # header and separator
            first = row.split("|")[1]
            cells.append(re.findall(r"`([^`]+)`", first))
        if m.group(1) in tables:
            fail(f"docs/DESIGN.md: marker '{m.group(1)}' appears twice")
        tables[m.group(1)] = cells
    return tables


tables = page_tables()


def documented(marker):
    if marker not in tables:
        fail(f"docs/DESIGN.md has no table marked <!-- {marker} -->")
        return set()
    return {tok for cell in tables[marker] for tok in cell}


# ---- the binary's own list ----

listing = subprocess.run([DTREXEC, "--list-options"], capture_output=True, text=True, timeout=60)
if listing.returncode != 0:
    print("FAIL: dtrexec --list-options exited", listing.returncode, listing.stderr)
    sys.exit(1)
commands, same, options, exits = [], {}, {}, {}
for line in listing.stdout.splitlines():
    f = line.split("\t")
    if f[0] == "command":
        commands.append(f[1])
    elif f[0] == "same":
        same[f[1]] = f[2]
    elif f[0] == "option":
        options.setdefault(f[1], []).append((f[2], None if f[3] == "-" else f[3], None if f[4] == "-" else f[4]))
    elif f[0] == "exit":
        exits[int(f[1])] = f[2]
    else:
        fail(f"--list-options: unknown line '{line}'")

compare("subcommands", commands, documented("subcommands"))
for cmd in ["dtrexec"] + commands:
    if cmd in same:
        if f"options: {cmd}" in tables:
            compare(f"options of {cmd}", [o for o, _, _ in options.get(same[cmd], [])], documented(f"options: {cmd}"))
        continue
    compare(f"options of {cmd}", [o for o, _, _ in options.get(cmd, [])], documented(f"options: {cmd}"))

# ---- option literals in the parsers ----

for name in sorted(os.listdir(os.path.join(SRC, "cli"))):
    if not name.endswith(".c"):
        continue
    cmd = "dtrexec" if name == "main.c" else "run" if name == "cmd_run.c" else name[4:-2] if name.startswith("cmd_") else None
    if cmd is None or cmd not in options and cmd not in commands and cmd != "dtrexec":
        continue
    text = open(os.path.join(SRC, "cli", name), encoding="utf-8").read()
    listed = {o for o, _, _ in options.get(cmd, [])}
    for lit in sorted(set(re.findall(r'"(--?[a-z][a-z0-9-]*)"', text))):
        if lit not in listed:
            fail(f"cli/{name} parses '{lit}', which `dtrexec --list-options` does not list for {cmd} "
                 f"(add it to cli/options.c and docs/DESIGN.md)")

# ---- the binary accepts what the list says, and refuses the unknown ----

REFUSED = re.compile(r"unknown option|unexpected argument|^usage:", re.M)


def probe_args(cmd, tmp):
    missing = os.path.join(tmp, "missing")
    return {
        "dtrexec": [],
        "ops": ["ops"],
        "run": [missing + ".onnx"],
        "export": ["export", missing + ".onnx", "--train", "-o", os.path.join(tmp, "g.json")],
        "check": ["check", missing],
        "params": ["params", missing + ".onnx"],
        "gradcheck": ["gradcheck", missing + ".onnx"],
        "sim": ["sim", missing + ".json"],
        "bench": ["bench", missing + ".json"],
        "plan": ["plan", missing + ".json", "--solver", "checkpoint-all", "-o", os.path.join(tmp, "s.json")],
    }.get(cmd, [cmd, missing])   # a new subcommand: one missing file as its argument


def probe(cmd, opt, example, tmp):
    args = probe_args(cmd, tmp)
    argv = [DTREXEC] + args + [opt] + ([example] if example is not None else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp)
    return argv, r


with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
    jobs = []
    for cmd in ["dtrexec"] + commands:
        base = same.get(cmd, cmd)
        for opt, value, example in options.get(base, []):
            if value and example is None:
                fail(f"--list-options: {cmd} {opt} takes {value} but gives no example")
            jobs.append((cmd, opt, True, pool.submit(probe, cmd, opt, example, tmp)))
        if cmd != "dtrexec" and options.get(base):
            jobs.append((cmd, "--no-such-option", False, pool.submit(probe, cmd, "--no-such-option", None, tmp)))
    for cmd, opt, known, job in jobs:
        argv, r = job.result()
        refused = bool(REFUSED.search(r.stderr)) and r.returncode != 0
        if known and refused:
            fail(f"{cmd}: {' '.join(argv[1:])} is refused as an unknown option (exit {r.returncode}): {r.stderr.strip()[:200]}")
        if not known and not refused:
            fail(f"{cmd}: an unknown option is not refused (exit {r.returncode}): the probe cannot tell accepted options")
        if r.returncode < 0 or r.returncode > 4:
            fail(f"{cmd}: {' '.join(argv[1:])} exited {r.returncode}")

# ---- exit codes ----

cli_h = open(os.path.join(SRC, "cli", "cli.h"), encoding="utf-8").read()
enum_codes = {int(v) for v in re.findall(r"CLI_EXIT_\w+\s*=\s*(\d+)", cli_h)}
compare("exit codes (cli/cli.h against --list-options)", [str(c) for c in enum_codes], [str(c) for c in exits])
compare("exit codes", [str(c) for c in enum_codes], documented("exit"))

# ---- environment variables and build options ----

SKIP_DIRS = {".git", "tests/data", "bench/results"}
env_found, build_found = set(), set()
# the last pattern is the shell one (.sh files use only it); the others are for C and Python
ENV_READ = [re.compile(p) for p in (r'getenv\(\s*"(DTRX_\w+)"', r'environ\.get\(\s*["\'](DTRX_\w+)',
                                    r'environ\[\s*["\'](DTRX_\w+)', r'os\.getenv\(\s*["\'](DTRX_\w+)',
                                    # ops/syslib.c's table of library variables, read through getenv(libs[i].env)
                                    r'"(DTRX_LIB_[A-Z0-9_]+)"',
                                    r'\$\{?(DTRX_\w+)')]
for root, dirs, files in os.walk(SRC):
    rel = os.path.relpath(root, SRC)
    dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel, d)) not in SKIP_DIRS
               and not d.startswith("build") and not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))]
    for name in files:
        path = os.path.join(root, name)
        is_cmake = name == "CMakeLists.txt" or name.endswith(".cmake")
        if not (name.endswith((".c", ".h", ".cu", ".py", ".sh")) or is_cmake):
            continue
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        if is_cmake:
            build_found |= set(re.findall(r"option\(\s*(DTRX_\w+)", text))
            build_found |= set(re.findall(r"set\(\s*(DTRX_\w+)[^)]*\bCACHE\b", text))
        elif name.endswith(".sh"):
            env_found |= set(ENV_READ[-1].findall(text))
        else:
            for pat in ENV_READ[:-1]:
                env_found |= set(pat.findall(text))
compare("DTRX_* environment variables", env_found, documented("env"))
compare("DTRX_* build options", build_found, documented("build"))

# ---- fields of real output ----


def flatten(obj, prefix=""):
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            name = prefix + k
            if isinstance(v, dict):
                out |= flatten(v, name + ".")
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                for x in v:
                    out |= flatten(x, name + "[].")
            else:
                out.add(name)
    return out


def mlp(path):
    rs = np.random.RandomState(0)
    inits = [numpy_helper.from_array((rs.randn(8, 16) * 0.3).astype(np.float32), "W1"),
             numpy_helper.from_array((rs.randn(16, 4) * 0.3).astype(np.float32), "W2"),
             numpy_helper.from_array(np.array([-1, 16], np.int64), "shape")]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shape"], ["rs"], name="reshape"),
             helper.make_node("MatMul", ["rs", "W2"], ["y"], name="mm2")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def run(args, cwd, ok=(0,)):
    r = subprocess.run([DTREXEC] + args, capture_output=True, text=True, timeout=300, cwd=cwd)
    if r.returncode not in ok:
        fail(f"dtrexec {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[:300]}")
    return r


with tempfile.TemporaryDirectory() as tmp:
    model = os.path.join(tmp, "mlp.onnx")
    mlp(model)
    env_dims = ["--dim", "batch=32:64"]
    run([model, "--dim", "batch=4", "--repeat", "2", "--stats", "s1.json", "--quiet"], tmp)
    run([model, "--train", "--steps", "3", *env_dims, "--budget", "2x", "--stats", "s2.json", "--trace", "t.jsonl",
         "--grad-dir", "grads", "--quiet"], tmp)
    run([model, "--train", "--steps", "2", "--dim", "batch=8", "--fresh-inputs", "--stats", "s3.json", "--quiet"], tmp)
    stats_keys = set()
    for name in ("s1.json", "s2.json", "s3.json"):
        path = os.path.join(tmp, name)
        if os.path.exists(path):
            keys = set(json.load(open(path)))
            compare(f"--stats fields ({name})", keys, documented("fields: stats"), both_ways=False)
            stats_keys |= keys
        else:
            fail(f"--stats wrote no {name}")
    compare("--stats fields (the three runs together)", stats_keys, documented("fields: stats"))

    trace = os.path.join(tmp, "t.jsonl")
    if os.path.exists(trace):
        keys, kinds = set(), set()
        for line in open(trace):
            rec = json.loads(line)
            keys |= set(rec)
            kinds.add(rec.get("INSTRUCTION"))
        compare("trace fields", keys, documented("fields: trace"), both_ways=False)
        compare("trace records", kinds, documented("fields: trace-records"), both_ways=False)
    index = os.path.join(tmp, "grads", "index.json")
    if os.path.exists(index):
        compare("--grad-dir index.json fields", flatten(json.load(open(index))), documented("fields: grad-index"))
    else:
        fail("--grad-dir wrote no index.json")

    run(["export", model, "--train", "--dim", "batch=8", "-o", "graph.json"], tmp)
    graph = os.path.join(tmp, "graph.json")
    sim_keys, plan_keys = set(), set()
    if os.path.exists(graph):
        compare("graph fields (dtrexec export)", flatten(json.load(open(graph))), documented("fields: graph"),
                both_ways=False)
        for args in (["sim", graph, "--json", "--budget", "0.6"], ["sim", trace, "--json", "--budget", "0.5"],
                     ["sim", graph, "--json", "--planners-memory", "--schedule-out", "dtr.json", "--budget", "0.9"]):
            r = run(args, tmp, ok=(0, 2))
            if r.stdout.strip():
                sim_keys |= set(json.loads(r.stdout))
        r = run(["plan", graph, "--solver", "checkpoint-all", "-o", "all.json", "--json"], tmp)
        if r.stdout.strip():
            plan_keys |= set(json.loads(r.stdout))
        run(["plan", graph, "--solver", "chen-sqrtn", "-o", "chen.json"], tmp, ok=(0, 2))
        for sched in ("all.json", "chen.json", "dtr.json"):
            path = os.path.join(tmp, sched)
            if os.path.exists(path):
                compare(f"schedule fields ({sched})", flatten(json.load(open(path))), documented("fields: schedule"),
                        both_ways=False)
                r = run(["sim", graph, "--plan", path, "--json"], tmp, ok=(0, 1))
                if r.returncode == 0:
                    sim_keys |= set(json.loads(r.stdout))
        compare("sim --json fields", sim_keys, documented("fields: sim-json"))
        compare("plan --json fields", plan_keys, documented("fields: plan-json"))
    else:
        fail("dtrexec export wrote no graph")

if failures:
    print(f"{len(failures)} problems: docs/DESIGN.md and the CLI disagree")
    sys.exit(1)
print("docs/DESIGN.md documents every subcommand, option, exit code, DTRX_ variable and field checked")
