#!/usr/bin/env python3
"""The host kernels' libraries are opened on demand (ops/syslib.h): commands
that run no kernel must not load OpenBLAS, oneDNN or the image codecs (the
dynamic loader's LD_DEBUG=files log says what it loads); a session loads
OpenBLAS and oneDNN; a library that cannot be opened is an error naming it,
what needs it and the loader's reason, with exit code 3 (or, for a codec,
the decode's error), and commands that do not need it still work.
Usage: syslib_check.py DTREXEC"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("DTRX_DATA_DIR", os.path.join(HERE, "..", "..", "shared", "data"))
HEAVY = ("libopenblas", "libdnnl", "libjpeg", "libpng", "libtiff", "libwebp", "libopenjp2")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)


def loaded(args):
    """The shared objects the dynamic loader opens for a command (LD_DEBUG=files)."""
    p = run(args, {"LD_DEBUG": "files"})
    libs = set()
    for line in p.stderr.splitlines():
        if "file=" in line and ("[0];  needed by" in line or "dynamically loaded by" in line
                                or "generating link map" in line):
            name = line.split("file=", 1)[1].split()[0]
            libs.add(os.path.basename(name))
    return p, libs


def model(path):
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    exe = sys.argv[1]
    log = os.path.join(DATA, "dtr-logs", "resnet32-56.log")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mm.onnx")
        model(path)
        light = [[exe, "--version"], [exe, "ops"], [exe, "--help"]]
        if os.path.exists(log):
            light.append([exe, "sim", log, "--budget", "0.5", "--json"])
        for args in light:
            p, libs = loaded(args)
            check(p.returncode == 0, f"{args[1:]} exits 0 (got {p.returncode}: {p.stderr[-300:]})")
            heavy = sorted(l for l in libs if l.startswith(HEAVY))
            check(not heavy, f"{' '.join(args[1:2])} loads no kernel library (loaded {heavy})")
            check(libs, f"{args[1:2]}: LD_DEBUG=files reported the libraries it loads")
        p, libs = loaded([exe, path])
        check(p.returncode == 0, f"a run exits 0 (got {p.returncode}: {p.stderr[-300:]})")
        for want in ("libopenblas", "libdnnl"):
            check(any(l.startswith(want) for l in libs), f"a session loads {want} (loaded {sorted(libs)})")
        check(not any(l.startswith(("libjpeg", "libpng", "libtiff", "libwebp", "libopenjp2")) for l in libs),
              f"a session without ImageDecoder loads no codec (loaded {sorted(libs)})")

        # a missing library: a clear error, exit 3, and what does not need it still works
        for var, what in (("DTRX_LIB_DNNL", "oneDNN"), ("DTRX_LIB_OPENBLAS", "OpenBLAS")):
            bad = os.path.join(tmp, "no-such-lib.so")
            p = run([exe, path], {var: bad})
            check(p.returncode == 3, f"{var} missing: exit 3 (got {p.returncode})")
            check(bad in p.stderr and what in p.stderr and var in p.stderr and "cannot load" in p.stderr,
                  f"{var} missing: the message names the file, the variable and {what}: {p.stderr.strip()}")
            check("Traceback" not in p.stderr and "Segmentation" not in p.stderr, f"{var}: no crash")
            p = run([exe, "--version"], {var: bad})
            check(p.returncode == 0, f"--version without {what} still works (got {p.returncode})")
            if os.path.exists(log):
                p = run([exe, "sim", log, "--budget", "0.5"], {var: bad})
                check(p.returncode == 0, f"sim without {what} still works (got {p.returncode}: {p.stderr[-200:]})")
        # a file that is not the library: the loader's reason
        p = run([exe, path], {"DTRX_LIB_DNNL": path})
        check(p.returncode == 3 and "oneDNN" in p.stderr, f"a non-library as oneDNN: exit 3 naming it ({p.stderr.strip()})")
        # another build of the library through the variable: the soname itself works
        p = run([exe, path], {"DTRX_LIB_OPENBLAS": "libopenblas.so.0"})
        check(p.returncode == 0, f"DTRX_LIB_OPENBLAS=libopenblas.so.0 works (got {p.returncode}: {p.stderr[-200:]})")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("syslib: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
