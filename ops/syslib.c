/* ops/syslib.c — opening the host kernels' system libraries on demand
 * (ops/syslib.h). */
#include "ops/syslib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* CMake passes the sonames of the libraries it configured against; these are
 * Debian 12's, for a build that does not. */
#ifndef DTRX_SONAME_OPENBLAS
#define DTRX_SONAME_OPENBLAS "libopenblas.so.0"
#endif
#ifndef DTRX_SONAME_DNNL
#define DTRX_SONAME_DNNL "libdnnl.so.2"
#endif
#ifndef DTRX_SONAME_JPEG
#define DTRX_SONAME_JPEG "libjpeg.so.62"
#endif
#ifndef DTRX_SONAME_PNG
#define DTRX_SONAME_PNG "libpng16.so.16"
#endif
#ifndef DTRX_SONAME_TIFF
#define DTRX_SONAME_TIFF "libtiff.so.6"
#endif
#ifndef DTRX_SONAME_WEBP
#define DTRX_SONAME_WEBP "libwebp.so.7"
#endif
#ifndef DTRX_SONAME_OPENJP2
#define DTRX_SONAME_OPENJP2 "libopenjp2.so.7"
#endif

static const struct {
    const char *soname;
    const char *env;  /* names a file or soname to open instead */
    const char *what; /* what the library is and what needs it */
} libs[SYSLIB_COUNT] = {
    [SYSLIB_OPENBLAS] = {DTRX_SONAME_OPENBLAS, "DTRX_LIB_OPENBLAS", "OpenBLAS, the host kernels' BLAS"},
    [SYSLIB_DNNL] = {DTRX_SONAME_DNNL, "DTRX_LIB_DNNL",
                     "oneDNN, the host convolution, pooling, normalization and GEMM kernels"},
    [SYSLIB_JPEG] = {DTRX_SONAME_JPEG, "DTRX_LIB_JPEG", "libjpeg, ImageDecoder's JPEG codec"},
    [SYSLIB_PNG] = {DTRX_SONAME_PNG, "DTRX_LIB_PNG", "libpng, ImageDecoder's PNG codec"},
    [SYSLIB_TIFF] = {DTRX_SONAME_TIFF, "DTRX_LIB_TIFF", "libtiff, ImageDecoder's TIFF codec"},
    [SYSLIB_WEBP] = {DTRX_SONAME_WEBP, "DTRX_LIB_WEBP", "libwebp, ImageDecoder's WebP codec"},
    [SYSLIB_OPENJP2] = {DTRX_SONAME_OPENJP2, "DTRX_LIB_OPENJP2", "OpenJPEG, ImageDecoder's JPEG 2000 codec"},
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[SYSLIB_COUNT];      /* published with release stores */
static char failures[SYSLIB_COUNT][512]; /* the first failure, kept: dlopen is not retried */

const char *syslib_soname(enum syslib lib) { return libs[lib].soname; }

int syslib_is_open(enum syslib lib) { return __atomic_load_n(&handles[lib], __ATOMIC_ACQUIRE) != NULL; }

int syslib_open(enum syslib lib, char *err, size_t err_size)
{
    if (syslib_is_open(lib))
        return 0;
    pthread_mutex_lock(&lock);
    if (!handles[lib] && !failures[lib][0]) {
        /* the library's DTRX_LIB_* variable, when set, names another
         * build of it (OpenBLAS's OpenMP variant, say) */
        const char *over = getenv(libs[lib].env);
        const char *file = over && *over ? over : libs[lib].soname;
        dlerror();
        /* RTLD_LOCAL: the libraries' symbols stay out of the global scope,
         * where the forwarding definitions of the same names live. */
        void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            __atomic_store_n(&handles[lib], h, __ATOMIC_RELEASE);
        } else {
            const char *why = dlerror();
            snprintf(failures[lib], sizeof failures[lib], "cannot load %s%s%s (%s): %s", file,
                     file == over ? " from " : "", file == over ? libs[lib].env : "", libs[lib].what,
                     why ? why : "unknown dynamic loader error");
        }
    }
    int bad = handles[lib] == NULL;
    if (bad && err && err_size)
        snprintf(err, err_size, "%s", failures[lib]);
    pthread_mutex_unlock(&lock);
    return bad ? -1 : 0;
}

int syslib_open_kernels(char *err, size_t err_size)
{
    return syslib_open(SYSLIB_OPENBLAS, err, err_size) || syslib_open(SYSLIB_DNNL, err, err_size) ? -1 : 0;
}

void *syslib_symbol(enum syslib lib, const char *name)
{
    char err[600];
    if (syslib_open(lib, err, sizeof err)) {
        fprintf(stderr, "dtrexec: %s\n", err);
        exit(3);
    }
    void *h = __atomic_load_n(&handles[lib], __ATOMIC_ACQUIRE);
    dlerror();
    void *sym = dlsym(h, name);
    if (!sym) {
        const char *why = dlerror();
        fprintf(stderr, "dtrexec: %s (%s) has no function %s: %s\n", libs[lib].soname, libs[lib].what, name,
                why ? why : "not found");
        exit(3);
    }
    return sym;
}
