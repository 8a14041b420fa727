#!/bin/sh
# tests/cuda_emu/run_window.sh — runs tests/cuda_emu/window_check.c: the
# "window" family's CUDA kernels (ops/cuda/window.c, window_kernels.cu:
# LpPool, MaxUnpool, Col2Im and their gradients) executed on the host
# against the CPU kernels, for machines without a GPU.
#
# window_kernels.cu is transformed as in run.sh (each launch a loop over
# blocks and threads) and compiled as C++ against shim.h; window_check.c
# stands in for the CUDA runtime. The family calls no other family.
#
# Usage: tests/cuda_emu/run_window.sh BUILD_DIR [SAN=1 in the environment]
# where BUILD_DIR is any configured and built tree (its ops/ and onnx/
# objects are linked; they do not call the CUDA backend).
set -e
# Exit 77 (CTest's skip) without the CUDA headers.
[ -f /usr/local/cuda/include/cuda_runtime_api.h ] || { echo "SKIPPED: no CUDA headers"; exit 77; }
M=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
E="$M/tests/cuda_emu"
[ -n "$SAN" ] && SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
INC="-I$M -I$E -I/usr/local/cuda/include -I$B/gen $(pkg-config --cflags openblas)"
python3 "$E/transform.py" "$M/ops/cuda/window_kernels.cu" "$W/window_kernels.cpp"
g++ -std=c++20 -O1 -g -ffp-contract=off $SAN $INC -c "$W/window_kernels.cpp" -o "$W/window_kernels.o"
printf '#include "shim.h"\nthread_local edim3 threadIdx, blockIdx;\nedim3 blockDim, gridDim;\nstd::barrier<> *emu_bar;\nemu_fibers *emu_fib;\n' > "$W/globals.cpp"
g++ -std=c++20 -O1 -g $SAN $INC -c "$W/globals.cpp" -o "$W/globals.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/window.c" -o "$W/window.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$E/window_check.c" -o "$W/check.o"
O="$B/CMakeFiles/dtrx_objs.dir"
g++ $SAN -o "$W/window_check" "$W/check.o" "$W/window.o" "$W/window_kernels.o" "$W/globals.o" \
    "$O"/ops/*.o "$O"/onnx/*.o "$B"/CMakeFiles/dtrx_onnx_proto.dir/gen/onnx/*.o \
    -lprotobuf-c $(pkg-config --libs openblas) -ldnnl -fopenmp -lm -lpthread
"$W/window_check"
