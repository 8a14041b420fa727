#!/usr/bin/env python3
"""The installed library, as an embedder sees it (issue 23).
Usage: install_check.py BUILD_DIR

`cmake --install BUILD_DIR --prefix TMP/stage`, moved to TMP/prefix (the
files must be relocatable), then, with the build tree out of the way (only
TMP/prefix is used):
- the layout: include/dtrexec/dtrexec.h, which includes no header of the
  project (only the C library's) and compiles alone as C11 and as C++;
  libdtrexec.a; libdtrexec.so.X.Y.Z with the soname libdtrexec.so.X.Y;
  lib/pkgconfig/dtrexec.pc; lib/cmake/dtrexec/;
- tests/install/consumer.c built through pkg-config (shared, and static with
  --static) and through find_package(dtrexec) (dtrexec::dtrexec and
  dtrexec::dtrexec_static), each run on a small CNN: its output (bit for bit) and one SGD
  step's loss (to the 9 digits both print) equal what the installed `dtrexec` command
  prints, run from an empty directory;
- the installed `dtrexec plan --solver checkmate`, from an empty directory,
  runs the solver front end installed under TMP/prefix.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CC = os.environ.get("CC", "cc")


def sh(args, **kw):
    res = subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)
    if res.returncode:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {res.returncode}\n{res.stdout}{res.stderr}")
    return res.stdout


def check_layout(prefix):
    header = os.path.join(prefix, "include", "dtrexec", "dtrexec.h")
    if not os.path.isfile(header):
        raise SystemExit(f"FAIL: {header} not installed")
    includes = re.findall(r'^\s*#\s*include\s*([<"][^>"]+[>"])', open(header).read(), re.M)
    foreign = [i for i in includes if i not in ("<stddef.h>", "<stdint.h>")]
    if foreign:
        raise SystemExit(f"FAIL: the public header includes {foreign}: it must need only the C library")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "h.c")
        open(src, "w").write("#include <dtrexec/dtrexec.h>\nint main(void) { return dtrx_last_error() == 0; }\n")
        sh([CC, "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", os.path.join(prefix, "include"),
            "-c", src, "-o", os.path.join(d, "h.o")])
        if shutil.which("c++"):
            sh(["c++", "-x", "c++", "-Wall", "-Werror", "-I", os.path.join(prefix, "include"), "-c", src,
                "-o", os.path.join(d, "hpp.o")])
    lib = os.path.join(prefix, "lib")
    real = [f for f in os.listdir(lib) if re.fullmatch(r"libdtrexec\.so\.\d+\.\d+\.\d+", f)]
    if len(real) != 1 or not os.path.isfile(os.path.join(lib, "libdtrexec.a")):
        raise SystemExit(f"FAIL: lib/ holds {sorted(os.listdir(lib))}")
    soname = re.search(r"SONAME\)\s+Library soname: \[([^\]]+)\]", sh(["readelf", "-d", os.path.join(lib, real[0])]))
    want = real[0].rsplit(".", 1)[0]
    if not soname or soname.group(1) != want or not os.path.islink(os.path.join(lib, want)):
        raise SystemExit(f"FAIL: {real[0]}'s soname is {soname and soname.group(1)}, expected {want} (a link)")
    for f in ("pkgconfig/dtrexec.pc", "cmake/dtrexec/dtrexecConfig.cmake", "cmake/dtrexec/dtrexecConfigVersion.cmake"):
        if not os.path.isfile(os.path.join(lib, f)):
            raise SystemExit(f"FAIL: lib/{f} not installed")
    print(f"layout ok: include/dtrexec/dtrexec.h, {real[0]} (soname {want}), libdtrexec.a, dtrexec.pc, cmake package")


def reference(prefix, model, work):
    """Output 0 and one SGD step's loss from the installed command, run in an empty directory."""
    empty = os.path.join(work, "empty")
    os.mkdir(empty)
    exe = os.path.join(prefix, "bin", "dtrexec")
    sh([exe, model, "--threads", "1", "--output-dir", "out", "--quiet"], cwd=empty)
    y = numpy_helper.to_array(onnx.load_tensor(os.path.join(empty, "out", "output_0.pb"))).astype(np.float32).ravel()
    out = sh([exe, model, "--threads", "1", "--train", "--steps", "1"], cwd=empty)
    loss = float(re.search(r"step 1 loss (\S+)", out).group(1))
    check_planner(exe, model, empty, prefix)
    return y, loss


def check_planner(exe, model, empty, prefix):
    """The installed planner, from an empty directory: checkmate's solver
    front end is the one installed under the (moved) prefix, found beside
    the binary, not the source tree's or the configured prefix's."""
    sh([exe, "export", model, "--train", "-o", "g.json"], cwd=empty)
    res = subprocess.run([exe, "plan", "g.json", "--solver", "checkmate", "--budget", "0.9x", "--time-limit", "120",
                          "--verbose", "-o", "s.json"], cwd=empty, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"FAIL: the installed `dtrexec plan --solver checkmate` exited {res.returncode}: "
                         f"{res.stderr[-2000:]}")
    m = re.search(r"solver front end (\S+), run by", res.stderr)
    want = os.path.realpath(os.path.join(prefix, "share", "dtrexec", "solvers", "milp_highs.py"))
    if not m or os.path.realpath(m.group(1)) != want:
        raise SystemExit(f"FAIL: checkmate ran {m and m.group(1)}, expected the installed {want}")
    sh([exe, "sim", "g.json", "--plan", "s.json", "--json"], cwd=empty)
    print(f"installed planner ok: checkmate ran {want} from an empty directory; its schedule replays")


def compare(name, exe, model, y, loss, env=None):
    lines = sh([exe, model], env=env).split("\n")
    got = np.array([float(v) for v in lines if v and not v.startswith("loss")], dtype=np.float32)
    got_loss = float([v for v in lines if v.startswith("loss")][0].split()[1])
    if got.shape != y.shape or not np.array_equal(got, y):
        raise SystemExit(f"FAIL: {name}: output differs from the command's (max |diff| "
                         f"{np.max(np.abs(got - y)) if got.shape == y.shape else 'shape'})")
    if got_loss != loss:
        raise SystemExit(f"FAIL: {name}: loss {got_loss!r}, the command's {loss!r}")
    print(f"{name}: {y.size} output values and the loss {loss!r} equal the command's")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    build = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        # Installed in one place and used from another: the .pc and CMake
        # files must be relocatable.
        stage, prefix = os.path.join(work, "stage"), os.path.join(work, "prefix")
        sh(["cmake", "--install", build, "--prefix", stage])
        os.rename(stage, prefix)
        check_layout(prefix)
        model = os.path.join(work, "smallcnn.onnx")
        sh([sys.executable, os.path.join(ROOT, "bench", "models", "make.py"), "smallcnn", "--tiny", "--batch", "2",
            "--size", "16", "-o", model])
        y, loss = reference(prefix, model, work)
        lib = os.path.join(prefix, "lib")
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
        src = os.path.join(HERE, "consumer.c")
        for mode, extra in (("pkg-config shared", []), ("pkg-config static", ["--static"])):
            flags = sh(["pkg-config", "--cflags", "--libs"] + extra + ["dtrexec"], env=env).split()
            exe = os.path.join(work, mode.replace(" ", "-"))
            link = [] if extra else ["-Wl,-rpath," + lib]
            # A static link takes libdtrexec.a: the .so beside it would win otherwise.
            if extra:
                flags = [f for f in flags if f != "-ldtrexec"]
                flags.insert(0, os.path.join(lib, "libdtrexec.a"))
            sh([CC, "-std=c11", src, "-o", exe] + flags + link)
            compare(mode, exe, model, y, loss)
        cm = os.path.join(work, "cmake-consumer")
        sh(["cmake", "-S", HERE, "-B", cm, "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"])
        sh(["cmake", "--build", cm])
        for target in ("consumer_shared", "consumer_static"):
            compare(f"find_package {target}", os.path.join(cm, target), model, y, loss)
    print("PASS")


if __name__ == "__main__":
    main()
