#!/usr/bin/env python3
"""`pip install .` into a new virtual environment, then the pytest suite
against the installed package (issue 23).
Usage: pip_install_check.py SOURCE_DIR WORK_DIR

The source is what a fresh clone holds: the files git tracks plus new ones
it does not ignore (or the whole tree without build directories, outside
git), copied to WORK_DIR/src with their times, so that WORK_DIR/build (the
scikit-build-core build directory, kept between runs) rebuilds only what
changed. The venv (WORK_DIR/venv, made anew each run) sees the system's
site-packages for numpy, onnx, onnxruntime, pytest and scikit-build-core
(scripts/setup.sh installs them), so the install needs no network:
`pip install --no-build-isolation`. The CUDA backend is left out of this
build (DTRX_CUDA=OFF) to keep the check to a few minutes; ccache, where
installed, serves a cold build directory.

Then, from an empty directory: `import dtrexec` comes from the venv with
its libraries (libdtrexec.so, libdtrexec_sim.so) and the solver front ends
(solvers/) inside the package, the `dtrexec` command is the venv's, and
tests/python passes against them (no DTREXEC_LIBRARY, no build tree).
"""
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile


def sh(args, **kw):
    print("+", " ".join(args), flush=True)
    res = subprocess.run(args, **kw)
    if res.returncode:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {res.returncode}")


def source_files(root):
    if os.path.isdir(os.path.join(root, ".git")) or os.path.isfile(os.path.join(root, ".git")):
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True,
                             check=True).stdout.decode()
        return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(root, f))]
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("build", ".")) and x != "__pycache__"]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    root, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    src, venv, build = (os.path.join(work, x) for x in ("src", "venv", "build"))
    os.makedirs(work, exist_ok=True)
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(venv, ignore_errors=True)
    with tempfile.TemporaryFile() as tmp:   # a tar round trip keeps the files' times
        with tarfile.open(fileobj=tmp, mode="w") as t:
            for f in source_files(root):
                t.add(os.path.join(root, f), arcname=f, recursive=False)
        tmp.seek(0)
        with tarfile.open(fileobj=tmp) as t:
            t.extractall(src)
    sh([sys.executable, "-m", "venv", "--system-site-packages", venv])
    py = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k not in ("DTREXEC_LIBRARY", "DTREXEC_SIM_LIBRARY", "DTREXEC_CLI", "PYTHONPATH")}
    if shutil.which("ccache") and "CMAKE_C_COMPILER_LAUNCHER" not in env:
        env["CMAKE_C_COMPILER_LAUNCHER"] = "ccache"   # a cold build directory still hits the cache
    sh([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--disable-pip-version-check", "-q",
        "-C", f"build-dir={build}", "-C", "cmake.define.DTRX_CUDA=OFF", src], env=env)
    empty = tempfile.mkdtemp(prefix="dtrexec-venv-")
    try:
        check = ("import os, sys, dtrexec; p = os.path.dirname(dtrexec.__file__); "
                 "assert p.startswith(sys.prefix), p; "
                 "assert os.path.isfile(os.path.join(p, 'libdtrexec.so')), os.listdir(p); "
                 "assert os.path.isfile(os.path.join(p, 'libdtrexec_sim.so')), os.listdir(p); "
                 "assert os.path.isfile(os.path.join(p, 'solvers', 'milp_highs.py')), os.listdir(p); "
                 "from dtrexec import _sim; assert _sim.solvers_dir() == os.path.join(p, 'solvers'); "
                 "assert os.path.isfile(os.path.join(p, 'py.typed')); "
                 "assert not any(f.endswith('.c') for f in os.listdir(p)); print('installed:', p)")
        sh([py, "-c", check], cwd=empty, env=env)
        exe = os.path.join(venv, "bin", "dtrexec")
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"FAIL: the venv has no dtrexec command at {exe}")
        sh([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(src, "tests", "python")], cwd=empty,
           env=dict(env, DTREXEC_CLI=exe))
    finally:
        shutil.rmtree(empty, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
