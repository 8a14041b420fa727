#!/bin/sh
# tests/cuda_emu/run_elem.sh — runs the "broadcast" case of
# tests/test_cuda_elem.c (arithmetic, comparisons, Where, Cast, the unary
# ops, the activations, Mod, PRelu, And/Or/Xor and their gradient kernels)
# with the elementwise family's broadcasting kernels executed on the host,
# as run.sh does for the layout family: the .cu files rewritten by
# transform.py and compiled as C++ against shim.h (a cuda_runtime.h of our
# own stands in for CUDA's, whose device declarations g++ cannot take).
# The reductions, losses, dropout and optimizer launchers are stubs that
# fail (stub_elem.c; their kernels need warps), so the suite's "other" case
# is not run; the "reduce_ext" case is (ReduceProd ... ReduceLogSumExp and
# ReduceExtGrad: their block kernels run on fibers, see shim.h). What it checks: the host code, the functors and the
# broadcasting kernel's indexing against the CPU kernels, under ASan/UBSan
# with SAN=1; not the device's own math library (CUDA's expf is not the
# host's), races or launch limits.
#
# Usage: tests/cuda_emu/run_elem.sh BUILD_DIR_WITHOUT_CUDA [SAN=1 in the environment]
set -e
M=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
E="$M/tests/cuda_emu"
[ -n "$SAN" ] && SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
INC="-I$M -I$E -I/usr/local/cuda/include -I$B/gen $(pkg-config --cflags openblas)"
mkdir -p "$W/inc"
printf '#pragma once\n#include "shim.h"\n' > "$W/inc/cuda_runtime.h"
# the broadcasting kernel's launches are in the shared header: a rewritten
# copy beside the rewritten .cu files is found first
mkdir -p "$W/ops/cuda"
python3 "$E/transform.py" "$M/ops/cuda/elem-device.cuh" "$W/ops/cuda/elem-device.cuh"
for f in elem_kernels elem_unary_kernels elem_cast_kernels elem_activation_kernels elem_reduce_ext_kernels; do
    python3 "$E/transform.py" "$M/ops/cuda/$f.cu" "$W/$f.cpp"
    g++ -std=c++20 -O1 -g -ffp-contract=off -w $SAN -I"$W/inc" $INC -c "$W/$f.cpp" -o "$W/$f.o"
done
printf '#include "shim.h"\nthread_local edim3 threadIdx, blockIdx;\nedim3 blockDim, gridDim;\nstd::barrier<> *emu_bar;\nemu_fibers *emu_fib;\n' > "$W/globals.cpp"
g++ -std=c++20 -O1 -g $SAN $INC -c "$W/globals.cpp" -o "$W/globals.o"
for f in elem elem_unary elem_activation elem_reduce elem_reduce_ext elem_loss; do
    gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/$f.c" -o "$W/$f.o"
done
gcc -std=c11 -O1 -g $SAN $INC -c "$E/stub.c" -o "$W/stub.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/module.c" -o "$W/module.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$E/stub_elem.c" -o "$W/stub_elem.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/test_cuda_elem.c" -o "$W/test.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/testops.c" -o "$W/testops.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/testcuda.c" -o "$W/testcuda.o"
gcc -std=c11 -O1 -g $SAN $INC -DDTRX_DATA_DIR='"x"' -DDTRX_SOURCE_DIR='"x"' -DDTRX_BINARY='"x"' \
    -c "$M/tests/testutil.c" -o "$W/testutil.o"
g++ $SAN -o "$W/test_cuda_elem_emu" "$W"/test.o "$W"/testops.o "$W"/testcuda.o "$W"/testutil.o \
    "$W"/elem.o "$W"/elem_unary.o "$W"/elem_activation.o "$W"/elem_reduce.o "$W"/elem_reduce_ext.o "$W"/elem_loss.o \
    "$W"/elem_kernels.o "$W"/elem_unary_kernels.o "$W"/elem_cast_kernels.o "$W"/elem_activation_kernels.o \
    "$W"/elem_reduce_ext_kernels.o \
    "$W"/globals.o "$W"/stub.o "$W"/module.o "$W"/stub_elem.o \
    "$B/libdtrexec.a" -lcheck_pic -lrt -lsubunit -lprotobuf-c $(pkg-config --libs openblas libjpeg libpng libtiff-4 libwebp libopenjp2) -ldnnl -fopenmp -lm -lpthread
CK_RUN_CASE=broadcast CK_DEFAULT_TIMEOUT=1200 "$W/test_cuda_elem_emu"
CK_RUN_CASE=reduce_ext CK_DEFAULT_TIMEOUT=1200 "$W/test_cuda_elem_emu"
