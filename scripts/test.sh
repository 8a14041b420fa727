#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds a release tree and an
# AddressSanitizer + UndefinedBehaviorSanitizer tree, and runs every CTest
# case (unit suites, ONNX node tests, CLI tests) in both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)
BUILD_DIR=build scripts/build.sh
(cd build && ctest --output-on-failure -j"$jobs")
BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DDTRX_SANITIZE=ON
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Sanitized kernels run several times slower: the budget sweeps use one
# heuristic and coarse budgets there (the release tree runs them in full).
(cd build-asan && BUDGET_CHECK_QUICK=1 ctest --output-on-failure -j"$jobs")
