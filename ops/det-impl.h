/* ops/det-impl.h — the arithmetic of Det and DetGrad (ops/det.c), written
 * once for the host and the device: ops/det.c and ops/cuda/misc_kernels.cu
 * both include it, so the CPU and CUDA kernels compute the same operations
 * in the same order (in double). Not part of the ops/ interface. */
#ifndef DTRX_OPS_DET_IMPL_H
#define DTRX_OPS_DET_IMPL_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DET_FN __host__ __device__ static inline
#else
#define DET_FN static inline
#endif

/* The determinant of the n x n row-major matrix a, by LU decomposition
 * with partial pivoting (the first largest pivot); a is overwritten. */
DET_FN double det_lu(double *a, int64_t n)
{
    double det = 1;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
                p = i;
        if (a[p * n + k] == 0)
            return 0;
        if (p != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            det = -det;
        }
        const double piv = a[k * n + k];
        det *= piv;
        for (int64_t i = k + 1; i < n; i++) {
            const double f = a[i * n + k] / piv;
            for (int64_t j = k + 1; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
        }
    }
    return det;
}

/* The cofactor matrix of the n x n matrix x (strided by 1, row-major),
 * which is d det / dx, into c; w is workspace of 2 n^2 doubles. Where x is
 * invertible, c = det * inverse(x)^T by Gauss-Jordan elimination; where it
 * is singular, each cofactor is the signed determinant of its minor (n^5
 * work, but exact where the inverse does not exist). */
#define DET_COFACTORS(T)                                                                \
    DET_FN void det_cofactors_##T(const T *x, int64_t n, T *c, double *w)             \
    {                                                                                 \
        double *a = w, *inv = w + n * n;                                              \
        for (int64_t i = 0; i < n * n; i++)                                           \
            a[i] = (double)x[i];                                                      \
        const double det = det_lu(a, n);                                              \
        if (det != 0) {                                                               \
            /* Gauss-Jordan on [x | I] with partial pivoting: a holds x, inv I */     \
            for (int64_t i = 0; i < n * n; i++)                                       \
                a[i] = (double)x[i];                                                  \
            for (int64_t i = 0; i < n; i++)                                           \
                for (int64_t j = 0; j < n; j++)                                       \
                    inv[i * n + j] = i == j;                                          \
            for (int64_t k = 0; k < n; k++) {                                         \
                int64_t p = k;                                                        \
                for (int64_t i = k + 1; i < n; i++)                                   \
                    if (fabs(a[i * n + k]) > fabs(a[p * n + k]))                      \
                        p = i;                                                        \
                for (int64_t j = 0; j < n; j++) {                                     \
                    double t = a[k * n + j];                                          \
                    a[k * n + j] = a[p * n + j];                                      \
                    a[p * n + j] = t;                                                 \
                    t = inv[k * n + j];                                               \
                    inv[k * n + j] = inv[p * n + j];                                  \
                    inv[p * n + j] = t;                                               \
                }                                                                     \
                const double piv = a[k * n + k];                                      \
                for (int64_t j = 0; j < n; j++) {                                     \
                    a[k * n + j] /= piv;                                              \
                    inv[k * n + j] /= piv;                                            \
                }                                                                     \
                for (int64_t i = 0; i < n; i++) {                                     \
                    if (i == k)                                                       \
                        continue;                                                     \
                    const double f = a[i * n + k];                                    \
                    for (int64_t j = 0; j < n; j++) {                                 \
                        a[i * n + j] -= f * a[k * n + j];                             \
                        inv[i * n + j] -= f * inv[k * n + j];                         \
                    }                                                                 \
                }                                                                     \
            }                                                                         \
            for (int64_t i = 0; i < n; i++)                                           \
                for (int64_t j = 0; j < n; j++)                                       \
                    c[i * n + j] = (T)(det * inv[j * n + i]);                         \
            return;                                                                   \
        }                                                                             \
        for (int64_t i = 0; i < n; i++)                                               \
            for (int64_t j = 0; j < n; j++) {                                         \
                int64_t m = 0;                                                        \
                for (int64_t r = 0; r < n; r++)                                       \
                    for (int64_t q = 0; q < n; q++)                                   \
                        if (r != i && q != j)                                         \
                            a[m++] = (double)x[r * n + q];                            \
                const double d = n == 1 ? 1.0 : det_lu(a, n - 1);                     \
                c[i * n + j] = (T)((i + j) % 2 ? -d : d);                             \
            }                                                                         \
    }
DET_COFACTORS(float)
DET_COFACTORS(double)
#endif
