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
(cd build-asan && ctest --output-on-failure -j"$jobs")
