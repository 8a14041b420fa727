/* ops/syslib.h — the system libraries behind the host kernels (OpenBLAS,
 * oneDNN and the image codecs), opened with dlopen the first time something
 * needs them rather than by the dynamic loader at process start. Together they
 * cost about 7 ms and 20 shared objects at every start (oneDNN alone pulls in
 * libstdc++ and OpenCL), which commands that run no kernel — `sim`, `plan`,
 * `ops`, `--version` — never use. libdtrexec and dtrexec therefore link none
 * of them: every function ops/ calls has a forwarding definition of the same
 * name (ops/syslib_blas.c, syslib_dnnl.c, syslib_image.c, generated from each
 * library's header by the table in the file) that resolves the real one on
 * its first call; the headers stay the libraries' own, so a mismatched
 * prototype does not compile.
 *
 * Sessions open OpenBLAS and oneDNN when they are created
 * (syslib_open_kernels), so a missing library is a clear error there; the
 * image decoder opens its codec before decoding. A forwarding function called
 * with its library absent (a program that calls kernels without a session)
 * prints the loader's message and exits with status 3. The sonames are the
 * ones the build found (CMake reads them from the libraries it configured
 * against); DTRX_LIB_OPENBLAS, DTRX_LIB_DNNL, DTRX_LIB_JPEG, DTRX_LIB_PNG,
 * DTRX_LIB_TIFF, DTRX_LIB_WEBP and DTRX_LIB_OPENJP2 name another file to
 * open (OpenBLAS's OpenMP build, say). Thread-safe. Knows nothing of
 * sessions or tensors. */
#ifndef DTRX_OPS_SYSLIB_H
#define DTRX_OPS_SYSLIB_H

#include <stddef.h>

enum syslib {
    SYSLIB_OPENBLAS,
    SYSLIB_DNNL,
    SYSLIB_JPEG,
    SYSLIB_PNG,
    SYSLIB_TIFF,
    SYSLIB_WEBP,
    SYSLIB_OPENJP2,
    SYSLIB_COUNT
};

/* Opens `lib` (once per process; later calls are an atomic load). 0 on
 * success; -1 with a message naming the library, what needs it and the
 * dynamic loader's reason. */
int syslib_open(enum syslib lib, char *err, size_t err_size);

/* OpenBLAS and oneDNN, which the host kernels call. */
int syslib_open_kernels(char *err, size_t err_size);

/* The address of `name` in `lib`, opening it if need be; exits with status 3
 * and a message when the library or the symbol is missing. */
void *syslib_symbol(enum syslib lib, const char *name);

/* The soname dlopen is given ("libdnnl.so.2"), and whether it is open. */
const char *syslib_soname(enum syslib lib);
int syslib_is_open(enum syslib lib);

#endif
