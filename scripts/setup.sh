#!/usr/bin/env bash
# Installs everything dtrexec needs to build and test on a fresh Debian
# machine: compilers and libraries from apt, Python packages for test-data
# generation and reference checks from pip. Safe to run again.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
need=""
for pkg in build-essential cmake pkg-config protobuf-c-compiler libprotobuf-c-dev libonnx-dev \
           check libsubunit-dev libopenblas-dev libdnnl-dev python3 python3-pip python3-venv coinor-cbc \
           libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
if [ -n "$need" ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
PY=${PYTHON:-python3}
# onnx is pinned: its node-test generators are the conformance suite
# (tests/node-tests.cmake), and tests/node-known-failures.txt is for this release.
ONNX_VERSION=1.23.2
if ! $PY -c "import numpy, onnxruntime, onnx; assert onnx.__version__ == '$ONNX_VERSION'" 2>/dev/null; then
  $PY -m pip install -q --disable-pip-version-check numpy "onnx==$ONNX_VERSION" onnxruntime 2>&1 | grep -v "Running pip as the 'root' user" || true
  $PY -c "import numpy, onnxruntime, onnx; assert onnx.__version__ == '$ONNX_VERSION'"
fi
# HiGHS: the MILP/LP solver behind `dtrexec plan --solver checkmate` (bench/solvers/milp_highs.py)
if ! $PY -c "import highspy" 2>/dev/null; then
  $PY -m pip install -q --disable-pip-version-check highspy 2>&1 | grep -v "Running pip as the 'root' user" || true
  $PY -c "import highspy"
fi
# OR-Tools: SCIP and CP-SAT, the other MILP back ends (DTRX_MILP_SOLVER=scip|cpsat, bench/solvers/milp_ortools.py);
# Debian's coinor-cbc above is the third (cbc). tests/milp_solver_check.py checks each against HiGHS.
if ! $PY -c "import ortools" 2>/dev/null; then
  $PY -m pip install -q --disable-pip-version-check ortools 2>&1 | grep -v "Running pip as the 'root' user" || true
  $PY -c "import ortools"
fi
# Pillow: the ONNX reference's image decoder; tests/image_decoder_check.py
# compares ImageDecoder with it (and onnx's ImageDecoder node-test generator
# encodes its images with it when present).
if ! $PY -c "import PIL" 2>/dev/null; then
  $PY -m pip install -q --disable-pip-version-check Pillow 2>&1 | grep -v "Running pip as the 'root' user" || true
  $PY -c "import PIL"
fi
# The Python package's build backend and tests (tests/python, pyproject.toml):
# pip_install_check.py installs into a venv without build isolation, so the
# backend comes from here.
if ! $PY -c "import pytest, scikit_build_core" 2>/dev/null; then
  $PY -m pip install -q --disable-pip-version-check pytest "scikit-build-core>=0.10" 2>&1 | grep -v "Running pip as the 'root' user" || true
  $PY -c "import pytest, scikit_build_core"
fi
