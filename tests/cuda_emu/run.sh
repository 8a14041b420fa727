#!/bin/sh
# tests/cuda_emu/run.sh — runs tests/test_cuda_layout.c with the layout
# family's CUDA kernels executed on the host, for machines without a GPU,
# and the "reduce_ext" case of tests/test_cuda_elem.c with the kernels of
# ops/cuda/elem_reduce_ext.c (the rest of the elem family needs device
# intrinsics the shim does not have).
#
# The .cu files are rewritten (transform.py: each kernel<<<grid, block>>>
# launch becomes a loop over the blocks and threads) and compiled as C++
# against shim.h (the device dialect: thread indices, _rn intrinsics,
# atomicMin, __syncthreads on real threads for the transpose and on fibers
# for the *_block_kernel reductions, a stable sort for cub's radix sort);
# stub.c stands in for the CUDA runtime calls, cuBLAS's GEMMs (OpenBLAS,
# column-major; the strided-batched ones, used by Einsum, as loops) and the
# backend (host memory). What it checks: the host code, the kernel bodies
# and their indexing, against the CPU kernels, under ASan/UBSan with SAN=1.
# What it cannot: real parallel races, launch limits, cub and cuBLAS
# themselves.
#
# Usage: tests/cuda_emu/run.sh BUILD_DIR_WITHOUT_CUDA [SAN=1 in the environment]
# where BUILD_DIR_WITHOUT_CUDA was configured with -DDTRX_CUDA=OFF and has
# built dtrexec_static.
set -e
M=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
E="$M/tests/cuda_emu"
[ -n "$SAN" ] && SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
INC="-I$M -I$E -I/usr/local/cuda/include -I$B/gen $(pkg-config --cflags openblas)"
LIBS="$B/libdtrexec.a -lcheck_pic -lrt -lsubunit -lprotobuf-c $(pkg-config --libs openblas) -ldnnl -fopenmp -lm -lpthread"
for f in layout_kernels index_kernels rnn_kernels elem_reduce_ext_kernels; do
    python3 "$E/transform.py" "$M/ops/cuda/$f.cu" "$W/$f.cpp"
    g++ -std=c++20 -O1 -g -ffp-contract=off $SAN $INC -c "$W/$f.cpp" -o "$W/$f.o"
done
printf '#include "shim.h"\nthread_local edim3 threadIdx, blockIdx;\nedim3 blockDim, gridDim;\nstd::barrier<> *emu_bar;\nemu_fibers *emu_fib;\n' > "$W/globals.cpp"
g++ -std=c++20 -O1 -g $SAN $INC -c "$W/globals.cpp" -o "$W/globals.o"
for f in layout layout_index layout_scatter layout_select layout_einsum layout_resize recurrent elem_reduce_ext; do
    gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/$f.c" -o "$W/$f.o"
done
gcc -std=c11 -O1 -g $SAN $INC -c "$E/stub.c" -o "$W/stub.o"
for t in layout elem; do
    gcc -std=c11 -O1 -g $SAN $INC -DDTRX_HAVE_CUDA=1 -c "$M/tests/test_cuda_$t.c" -o "$W/test_$t.o"
done
gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/testops.c" -o "$W/testops.o"
gcc -std=c11 -O1 -g $SAN $INC -DDTRX_HAVE_CUDA=1 -c "$M/tests/testcuda.c" -o "$W/testcuda.o"
gcc -std=c11 -O1 -g $SAN $INC -DDTRX_DATA_DIR='"x"' -DDTRX_SOURCE_DIR='"x"' -DDTRX_BINARY='"x"' \
    -c "$M/tests/testutil.c" -o "$W/testutil.o"
cat > "$W/tables_layout.c" <<'T'
#include "ops/cuda/cuda-impl.h"
extern const struct cuda_kernel_entry cuda_kernels_layout[];
const struct cuda_kernel_entry *const emu_tables[] = { cuda_kernels_layout, 0 };
T
cat > "$W/tables_elem.c" <<'T'
#include "ops/cuda/elem-impl.h"
static const struct cuda_kernel_entry rx[] = {
    { "", "ReduceProd", cuda_elem_reduce_ext }, { "", "ReduceL1", cuda_elem_reduce_ext },
    { "", "ReduceL2", cuda_elem_reduce_ext }, { "", "ReduceSumSquare", cuda_elem_reduce_ext },
    { "", "ReduceLogSum", cuda_elem_reduce_ext }, { "", "ReduceLogSumExp", cuda_elem_reduce_ext },
    { "dtrexec", "ReduceExtGrad", cuda_elem_reduce_ext_grad }, { 0 },
};
const struct cuda_kernel_entry *const emu_tables[] = { rx, 0 };
T
for t in layout elem; do
    gcc -std=c11 -O1 -g $SAN $INC -c "$W/tables_$t.c" -o "$W/tables_$t.o"
done
COMMON="$W/testops.o $W/testcuda.o $W/testutil.o $W/globals.o $W/stub.o"
g++ $SAN -o "$W/test_cuda_layout_emu" "$W"/test_layout.o "$W"/tables_layout.o $COMMON "$W"/layout.o \
    "$W"/layout_index.o "$W"/layout_scatter.o "$W"/layout_select.o "$W"/layout_einsum.o "$W"/layout_resize.o \
    "$W"/recurrent.o "$W"/layout_kernels.o "$W"/index_kernels.o "$W"/rnn_kernels.o $LIBS
g++ $SAN -o "$W/test_cuda_elem_emu" "$W"/test_elem.o "$W"/tables_elem.o $COMMON "$W"/elem_reduce_ext.o \
    "$W"/elem_reduce_ext_kernels.o $LIBS
CK_DEFAULT_TIMEOUT=1200 "$W/test_cuda_layout_emu"
CK_DEFAULT_TIMEOUT=1200 CK_RUN_CASE=reduce_ext "$W/test_cuda_elem_emu"
