#!/usr/bin/env bash
# bench/gpu-check.sh — everything issue 7 asks of a GPU machine, in one go and
# in under 8 minutes on an H200: build dtrexec with CUDA (Release), run the
# CUDA tests (the C suites tests/test_cuda_*, then tests/cuda_check.py: node
# tests, every operator and gradient against the CPU, DTR under budgets,
# losses), then a short training benchmark (bench/experiments/gpu_bench.py: ResNet-50 at
# batch 64 and the Transformer, unbudgeted / 2.0x / 0.5x / 0.3x budgets, the
# largest batch within a fixed budget with and without DTR).
#
# Usage: bench/gpu-check.sh [--skip-build] [--no-tests] [--no-bench] [--quick]
#   BUILD_DIR     build folder (default build-gpu in the repository)
#   GPU_CHECK_SECONDS  the whole time limit (default 460); each part gets
#                 what is left, and what does not fit is reported as left out
#   GPU_CHECK_DEVICE  cuda (default); cpu runs the same parts on the host,
#                 which tests this script where there is no GPU
#   OUT           when set, the report (gpu-check.md) and logs go there;
#                 else the report goes to stdout
# Needs cmake, a C compiler, nvcc and the libraries of the CPU build. The
# model generator and the comparisons need python3 with numpy and onnx: where
# they are missing, those parts are skipped with a message. Nothing is
# downloaded.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
LIMIT=${GPU_CHECK_SECONDS:-460}
START=$(date +%s)
SKIP_BUILD=0 TESTS=1 BENCH=1 QUICK=""
for a in "$@"; do
  case $a in
    --skip-build) SKIP_BUILD=1 ;;
    --no-tests) TESTS=0 ;;
    --no-bench) BENCH=0 ;;
    --quick) QUICK=--quick ;;
    *) echo "usage: $0 [--skip-build] [--no-tests] [--no-bench] [--quick]" >&2; exit 1 ;;
  esac
done
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  LOGS=$OUT
else
  LOGS=$(mktemp -d)
fi
REPORT=$LOGS/gpu-check.md
: > "$REPORT"
left() { echo $((LIMIT - ($(date +%s) - START))); }
RESERVE=0   # seconds the tests leave for the benchmark
say() { echo "$*" | tee -a "$REPORT"; }
elapsed() { echo $(($(date +%s) - $1)); }

say "## dtrexec GPU check ($(date -u '+%Y-%m-%d %H:%M UTC'))"
say ""
say "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if command -v nvidia-smi > /dev/null; then
  say "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"
else
  say "- GPU: nvidia-smi not found"
fi
say "- CUDA: $(nvcc --version 2>/dev/null | tail -1 || echo 'nvcc not found'); CPUs: $(nproc)"
JOBS=$(nproc)
DEVICE=${GPU_CHECK_DEVICE:-cuda}

# ---- build -------------------------------------------------------------------
if [ $SKIP_BUILD = 0 ]; then
  t0=$(date +%s)
  if ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDTRX_CUDA=ON > "$LOGS/configure.log" 2>&1; then
    say "- build: cmake failed (see configure.log):"; tail -n 15 "$LOGS/configure.log" | tee -a "$REPORT"; exit 1
  fi
  # dtrexec and the CUDA test suites only: the rest of the tests are the CPU's.
  targets="dtrexec $(cd "$ROOT/tests" && ls test_cuda_*.c 2>/dev/null | sed 's/\.c$//' | tr '\n' ' ')"
  if ! timeout "$(left)" cmake --build "$BUILD" -j "$JOBS" --target $targets > "$LOGS/build.log" 2>&1; then
    say "- build: failed after $(elapsed $t0) s (see build.log):"; grep -E "error|Error" "$LOGS/build.log" | head -n 20 | tee -a "$REPORT"; exit 1
  fi
  say "- build: $(elapsed $t0) s ($targets)"
fi
DTREXEC=$BUILD/dtrexec
if ! "$DTREXEC" --version | grep -q cuda; then
  say "- $DTREXEC was built without CUDA (nvcc not found by cmake?)"; exit 1
fi
probe=$("$DTREXEC" check --device "$DEVICE" --quiet /nonexistent-folder 2>&1)
if echo "$probe" | grep -q "is not available"; then
  say "- device: $probe"; say ""; say "No usable CUDA device: nothing more to run."; exit 1
fi
HAVE_PY=0
if python3 -c "import numpy, onnx" 2>/dev/null; then HAVE_PY=1; fi
[ $HAVE_PY = 1 ] || say "- python3 with numpy and onnx not found: model-based tests and the benchmark are skipped"

# ---- tests ---------------------------------------------------------------------
FAILED=0
run_part() {   # name, seconds at most, command...
  local name=$1 cap=$2; shift 2
  local l; l=$(($(left) - RESERVE))
  if [ "$l" -lt 20 ]; then say "| $name | left out (time limit) | | |"; return; fi
  [ "$cap" -gt "$l" ] && cap=$l
  local t0; t0=$(date +%s)
  local log="$LOGS/$(echo "$name" | tr '/ ' '__').log"
  timeout "$cap" "$@" > "$log" 2>&1
  local rc=$?
  local what=PASS
  if [ $rc = 124 ]; then what="TIMEOUT (${cap} s)"; FAILED=$((FAILED + 1))
  elif [ $rc != 0 ]; then what="FAIL ($rc)"; FAILED=$((FAILED + 1))
  elif grep -q "SKIPPED" "$log"; then what=SKIPPED; fi
  local note; note=$(grep -E "^(node tests|grad-|PASS|FAIL|SKIPPED|[0-9]+%: Checks)" "$log" | tail -n 1 | cut -c1-150 | tr '|' '/')
  say "| $name | $what | $(elapsed "$t0") | $note |"
}
if [ $BENCH = 1 ] && [ $HAVE_PY = 1 ]; then RESERVE=${GPU_BENCH_SECONDS:-160}; fi
if [ $TESTS = 1 ]; then
  say ""; say "### Tests"; say ""
  say "| test | result | seconds | last line |"; say "|---|---|---|---|"
  for t in "$BUILD"/tests/test_cuda_*; do
    [ -x "$t" ] && run_part "$(basename "$t")" 90 "$t"
  done
  export DTRX_DATA_DIR=${DTRX_DATA_DIR:-$ROOT/../shared/data}
  CC=(python3 "$ROOT/tests/cuda_check.py" "$DTREXEC" --device "$DEVICE")
  if [ -d "$DTRX_DATA_DIR/onnx-node" ]; then
    run_part cuda/node 90 "${CC[@]}" node --jobs "$JOBS"
  else
    say "| cuda/node | left out: no node tests at $DTRX_DATA_DIR/onnx-node | | |"
  fi
  if [ $HAVE_PY = 1 ]; then
    for f in "$ROOT"/tests/grad/cases_*.py; do
      fam=$(basename "$f" .py); fam=${fam#cases_}
      run_part "cuda/grad-$fam" 60 "${CC[@]}" "grad-$fam" --jobs "$JOBS" --quick
    done
    run_part cuda/budget-smallcnn 45 "${CC[@]}" budget-smallcnn
    run_part cuda/budget-transformer 45 "${CC[@]}" budget-transformer
    run_part cuda/losses 45 "${CC[@]}" losses
  fi
fi

# ---- benchmark ---------------------------------------------------------------------
if [ $BENCH = 1 ] && [ $HAVE_PY = 1 ]; then
  say ""
  l=$(left)
  if [ "$l" -lt 60 ]; then
    say "Benchmark left out: ${l} s left of the ${LIMIT} s limit."
  else
    python3 "$ROOT/bench/experiments/gpu_bench.py" --dtrexec "$DTREXEC" --seconds $((l - 10)) --md "$LOGS/bench.md" \
      --work "$LOGS/bench-work" --device "$DEVICE" $QUICK > "$LOGS/bench.log" 2>&1
    if [ -s "$LOGS/bench.md" ]; then
      tee -a "$REPORT" < "$LOGS/bench.md"
    else
      say "Benchmark failed:"; tail -n 20 "$LOGS/bench.log" | tee -a "$REPORT"
    fi
    rm -rf "$LOGS/bench-work"
  fi
fi
say ""
say "Total $(elapsed "$START") s; $FAILED test part(s) failed. Logs: $LOGS"
exit $((FAILED > 0))
