#!/bin/sh
# tests/cuda_emu/run.sh — runs the CUDA suites of the families that need no
# cuDNN with their kernels executed on the host, for machines without a GPU:
# tests/test_cuda_layout.c (layout and recurrent kernels) and
# tests/test_cuda_attn.c (norm and attn kernels).
#
# The .cu files are rewritten (transform.py: each kernel<<<grid, block>>>
# launch becomes a loop over the blocks and threads) and compiled as C++
# against shim.h (the device dialect: thread indices, _rn intrinsics,
# atomicMin, __syncthreads on real threads for the kernels that need it, a
# stable sort for cub's radix sort); stub.c stands in for the CUDA runtime
# calls, cuBLAS's sgemm (OpenBLAS, column-major) and the backend (host
# memory). What it checks: the host code, the kernel bodies and their
# indexing, against the CPU kernels, under ASan/UBSan with SAN=1. What it
# cannot: real parallel races, launch limits, cub and cuBLAS themselves.
# (cuBLAS's strided-batched GEMMs, used by Einsum, are loops of OpenBLAS
# calls here.)
#
# Usage: tests/cuda_emu/run.sh BUILD_DIR_WITHOUT_CUDA [SUITE...]
# (SUITE: layout, attn; default both; SAN=1 in the environment for the
# sanitizers) where BUILD_DIR_WITHOUT_CUDA was configured with
# -DDTRX_CUDA=OFF and has built dtrexec_static from the current sources (the
# CPU kernels come from its library: a stale one compares against old code).
set -e
M=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
shift
SUITES=${*:-layout attn}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
E="$M/tests/cuda_emu"
[ -n "$SAN" ] && SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
INC="-I$M -I$E -I/usr/local/cuda/include -I$B/gen $(pkg-config --cflags openblas)"
printf '#include "shim.h"\nthread_local edim3 threadIdx, blockIdx;\nedim3 blockDim, gridDim;\nstd::barrier<> *emu_bar;\nemu_fibers *emu_fib;\n' > "$W/globals.cpp"
g++ -std=c++20 -O1 -g $SAN $INC -c "$W/globals.cpp" -o "$W/globals.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$E/stub.c" -o "$W/stub.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/module.c" -o "$W/module.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/testops.c" -o "$W/testops.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/testcuda.c" -o "$W/testcuda.o"
gcc -std=c11 -D_GNU_SOURCE -O1 -g $SAN $INC -DDTRX_DATA_DIR='"x"' -DDTRX_SOURCE_DIR='"x"' -DDTRX_BINARY='"x"' \
    -c "$M/tests/testutil.c" -o "$W/testutil.o"
for suite in $SUITES; do
    case $suite in
    layout) kernels="layout_kernels index_kernels rnn_kernels"
            hosts="layout layout_index layout_scatter layout_select layout_einsum layout_resize recurrent" ;;
    attn) kernels="norm_kernels attn_kernels"; hosts="norm attn" ;;
    *) echo "unknown suite $suite" >&2; exit 1 ;;
    esac
    objs=""
    for f in $kernels; do
        python3 "$E/transform.py" "$M/ops/cuda/$f.cu" "$W/$f.cpp"
        g++ -std=c++20 -O1 -g -ffp-contract=off $SAN $INC -c "$W/$f.cpp" -o "$W/$f.o"
        objs="$objs $W/$f.o"
    done
    for f in $hosts; do
        gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/$f.c" -o "$W/$f.o"
        objs="$objs $W/$f.o"
    done
    gcc -std=c11 -O1 -g $SAN $INC -c "$M/tests/test_cuda_$suite.c" -o "$W/test_$suite.o"
    g++ $SAN -o "$W/test_cuda_${suite}_emu" "$W/test_$suite.o" "$W"/testops.o "$W"/testutil.o "$W"/testcuda.o \
        $objs "$W"/globals.o "$W"/stub.o "$W"/module.o \
        "$B/libdtrexec.a" -lcheck_pic -lrt -lsubunit -lprotobuf-c $(pkg-config --libs openblas libjpeg libpng libtiff-4 libwebp libopenjp2) -ldnnl -fopenmp -lm -lpthread
    CK_DEFAULT_TIMEOUT=1200 "$W/test_cuda_${suite}_emu"
done
