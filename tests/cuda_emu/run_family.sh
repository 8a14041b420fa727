#!/bin/sh
# tests/cuda_emu/run_family.sh — runs tests/cuda_emu/FAMILY_check.c: one
# family's CUDA kernels executed on the host against the CPU kernels, for
# machines without a GPU (CTest's cuda/emu-misc, -quant, -vision, -window).
#
# The family is its host files ops/cuda/FAMILY*.c (the kernel table and
# launches) and its device files ops/cuda/FAMILY*_kernels.cu. Each .cu is
# rewritten with the shared device header inlined where it includes it
# (ops/cuda/elem-device.cuh, whose templates launch kernels too), then
# transformed as in run.sh (each launch a loop over blocks and threads; the
# block-wide folds on fibers) and compiled as C++ against shim.h. The check
# stands in for the CUDA runtime and for the other families' kernels the
# family calls (emu_check.h, or quant_check.c's own).
#
# Usage: tests/cuda_emu/run_family.sh FAMILY BUILD_DIR [SAN=1 in the environment]
# where BUILD_DIR is any configured and built tree (its ops/ and onnx/
# objects are linked; they do not call the CUDA backend).
set -e
# Exit 77 (CTest's skip) without the CUDA headers.
[ -f /usr/local/cuda/include/cuda_runtime_api.h ] || { echo "SKIPPED: no CUDA headers"; exit 77; }
F=$1
M=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$2" && pwd)
E="$M/tests/cuda_emu"
[ -f "$E/${F}_check.c" ] || { echo "run_family.sh: no check $E/${F}_check.c for family '$F'" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -n "$SAN" ] && SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
INC="-I$M -I$E -I/usr/local/cuda/include -I$B/gen $(pkg-config --cflags openblas)"
# The bit casts come from shim.h; only __launch_bounds__ is left to drop.
echo '#define __launch_bounds__(x)' > "$W/intrin.h"
OBJS=""
for cu in "$M"/ops/cuda/"$F"*_kernels.cu; do
    n=$(basename "$cu" .cu)
    python3 - "$M" "$cu" "$W/$n.full.cu" <<'PY'
import sys
m, src, out = sys.argv[1:4]
hdr = open(m + "/ops/cuda/elem-device.cuh").read()
open(out, "w").write(open(src).read().replace('#include "ops/cuda/elem-device.cuh"', hdr))
PY
    python3 "$E/transform.py" "$W/$n.full.cu" "$W/$n.cpp"
    g++ -std=c++20 -O1 -g -ffp-contract=off $SAN $INC -include "$W/intrin.h" -c "$W/$n.cpp" -o "$W/$n.o"
    OBJS="$OBJS $W/$n.o"
done
for c in "$M"/ops/cuda/"$F"*.c; do
    n=$(basename "$c" .c)
    gcc -std=c11 -O1 -g $SAN $INC -c "$c" -o "$W/host_$n.o"
    OBJS="$OBJS $W/host_$n.o"
done
printf '#include "shim.h"\nthread_local edim3 threadIdx, blockIdx;\nedim3 blockDim, gridDim;\nstd::barrier<> *emu_bar;\nemu_fibers *emu_fib;\n' > "$W/globals.cpp"
g++ -std=c++20 -O1 -g $SAN $INC -c "$W/globals.cpp" -o "$W/globals.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$E/${F}_check.c" -o "$W/check.o"
O="$B/CMakeFiles/dtrx_objs.dir"
# shellcheck disable=SC2086
g++ $SAN -o "$W/${F}_check" "$W/check.o" $OBJS "$W/globals.o" \
    "$O"/ops/*.o "$O"/onnx/*.o "$B"/CMakeFiles/dtrx_onnx_proto.dir/gen/onnx/*.o \
    -lprotobuf-c $(pkg-config --libs openblas libjpeg libpng libtiff-4 libwebp libopenjp2) -ldnnl -fopenmp -lm -lpthread
"$W/${F}_check"
