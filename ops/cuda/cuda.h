/* ops/cuda — the CUDA backend, built as the shared module
 * libdtrexec_cuda.so (CMake target dtrexec_cuda): device memory, copies and
 * streams through the CUDA runtime; kernels through cuBLAS, cuDNN and our
 * own .cu files. Neither libdtrexec nor the dtrexec binary links it: the
 * runtime loads it when a session asks for `--device cuda` (see "backend
 * modules" in ops/ops.h) and reaches it only through the one symbol it
 * exports, dtrx_backend_module (module.c), and struct backend. The module
 * carries its own copy of the ops/ helpers it calls (linked from the static
 * library, hidden), so it loads into any host: the static binary, or a
 * program using libdtrexec.so.
 *
 * Nothing here assumes a device exists: opening says why it cannot open
 * one, and callers report that (tests skip).
 *
 * Kernels follow the ops/ contract unchanged: tensors' data pointers are
 * device memory, except the inputs an op flags in op_def.host_inputs, which
 * the runtime hands to infer() and to the kernel as host copies. Scratch from
 * op_env.scratch_alloc is device memory from the budget's arena.
 *
 * This header is the module's inside: what module.c and backend.c share. */
#ifndef DTRX_OPS_CUDA_H
#define DTRX_OPS_CUDA_H

#include <stddef.h>

#include "ops/ops.h"

/* Opens device 0 with one stream and cuBLAS/cuDNN handles bound to it. NULL,
 * with the reason in `why`, when no usable device is present. The backend
 * is shared and reference counted: release it with cuda_backend_close (its
 * vtable's close). */
const struct backend *cuda_backend_open(char *why, size_t why_size);
void cuda_backend_close(const struct backend *b);
/* What the last failed call of backend b (a copy, an allocation) reported. */
const char *cuda_backend_last_error(const struct backend *b);

/* The backend's kernel lookup (struct backend.kernel): the op's own device
 * kernel (op_host_bridge) if it names one, else the entry of the kernel
 * tables for its domain and name, covering every since-version the op_def
 * covers; NULL when there is none. */
typedef op_kernel_fn cuda_kernel_fn;
cuda_kernel_fn cuda_kernel_of(const struct op_def *def);
/* The tables' entry for (domain, name), NULL when none. */
cuda_kernel_fn cuda_kernel_find(const char *domain, const char *name);
/* Iterates over the kernel tables (for `dtrexec ops`): NULL past the end. */
const char *cuda_kernel_name_at(int index, const char **domain);

#endif
