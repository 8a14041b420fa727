#!/bin/sh
# tests/cuda_emu/run_misc.sh — runs tests/cuda_emu/misc_check.c: the "misc"
# family's CUDA kernels (ops/cuda/misc.c, misc_kernels.cu, and the sequence
# mixers of misc_seq.c, misc_seq_kernels.cu) executed on the
# host against the CPU kernels, for machines without a GPU.
#
# misc_kernels.cu is rewritten with its shared device header inlined
# (ops/cuda/elem-device.cuh, whose templates launch kernels too) and then
# transformed as in run.sh (each launch a loop over blocks and threads),
# and compiled as C++ against shim.h. misc_check.c stands in for the CUDA
# runtime and for the other families' kernels misc.c calls.
#
# Usage: tests/cuda_emu/run_misc.sh BUILD_DIR [SAN=1 in the environment]
# where BUILD_DIR is any configured and built tree (its ops/ and onnx/
# objects are linked; they do not call the CUDA backend).
set -e
# Exit 77 (CTest's skip) without the CUDA headers or a C++20 compiler.
[ -f /usr/local/cuda/include/cuda_runtime_api.h ] || { echo "SKIPPED: no CUDA headers"; exit 77; }
M=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
E="$M/tests/cuda_emu"
[ -n "$SAN" ] && SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
INC="-I$M -I$E -I/usr/local/cuda/include -I$B/gen $(pkg-config --cflags openblas)"
python3 - "$M" "$W/misc_full.cu" <<'PY'
import sys
m, out = sys.argv[1], sys.argv[2]
src = open(m + "/ops/cuda/misc_kernels.cu").read()
hdr = open(m + "/ops/cuda/elem-device.cuh").read()
open(out, "w").write(src.replace('#include "ops/cuda/elem-device.cuh"', hdr))
PY
python3 "$E/transform.py" "$W/misc_full.cu" "$W/misc_kernels.cpp"
# The bit casts come from shim.h; only __launch_bounds__ is left to drop.
cat > "$W/intrin.h" <<'H'
#define __launch_bounds__(x)
H
g++ -std=c++20 -O1 -g -ffp-contract=off $SAN $INC -include "$W/intrin.h" -c "$W/misc_kernels.cpp" -o "$W/misc_kernels.o"
# the sequence mixers' device code stands alone (no shared header)
python3 "$E/transform.py" "$M/ops/cuda/misc_seq_kernels.cu" "$W/misc_seq_kernels.cpp"
g++ -std=c++20 -O1 -g -ffp-contract=off $SAN $INC -c "$W/misc_seq_kernels.cpp" -o "$W/misc_seq_kernels.o"
printf '#include "shim.h"\nthread_local edim3 threadIdx, blockIdx;\nedim3 blockDim, gridDim;\nstd::barrier<> *emu_bar;\nemu_fibers *emu_fib;\n' > "$W/globals.cpp"
g++ -std=c++20 -O1 -g $SAN $INC -c "$W/globals.cpp" -o "$W/globals.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/misc.c" -o "$W/misc.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$M/ops/cuda/misc_seq.c" -o "$W/misc_seq.o"
gcc -std=c11 -O1 -g $SAN $INC -c "$E/misc_check.c" -o "$W/check.o"
O="$B/CMakeFiles/dtrx_objs.dir"
g++ $SAN -o "$W/misc_check" "$W/check.o" "$W/misc.o" "$W/misc_kernels.o" "$W/misc_seq.o" \
    "$W/misc_seq_kernels.o" "$W/globals.o" \
    "$O"/ops/*.o "$O"/onnx/*.o "$B"/CMakeFiles/dtrx_onnx_proto.dir/gen/onnx/*.o \
    -lprotobuf-c $(pkg-config --libs openblas) -ldnnl -fopenmp -lm -lpthread
"$W/misc_check"
