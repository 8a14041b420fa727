/* ops/cuda — the CUDA backend: device memory, copies and streams through the
 * CUDA runtime; kernels through cuBLAS, cuDNN and our own .cu files.
 *
 * Built whenever nvcc is found (DTRX_HAVE_CUDA is then defined for the
 * runtime). Nothing here assumes a device exists: cuda_backend_open() says
 * why it cannot open one, and callers report that (tests skip).
 *
 * Kernels follow the ops/ contract unchanged: tensors' data pointers are
 * device memory, except the inputs an op flags in op_def.host_inputs, which
 * the runtime hands to infer() and to the kernel as host copies. Scratch from
 * op_env.scratch_alloc is device memory from the budget's arena. */
#ifndef DTRX_OPS_CUDA_H
#define DTRX_OPS_CUDA_H

#include <stddef.h>

#include "ops/ops.h"

/* Opens device 0 with one stream and cuBLAS/cuDNN handles bound to it. NULL,
 * with the reason in `why`, when no usable device is present. */
const struct backend *cuda_backend_open(char *why, size_t why_size);
void cuda_backend_close(const struct backend *b);
/* What the last failed call of backend b (a copy, an allocation) reported. */
const char *cuda_backend_last_error(const struct backend *b);

/* The CUDA kernel of an operator (by domain and name, covering every
 * since-version the op_def covers), NULL when it has none. */
typedef int (*cuda_kernel_fn)(struct op_call *c);
cuda_kernel_fn cuda_kernel_find(const char *domain, const char *name);
/* Iterates over the CUDA kernel table (for `dtrexec ops`): NULL past the end. */
const char *cuda_kernel_name_at(int index, const char **domain);

#endif
