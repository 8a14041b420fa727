/* ops/cuda/layout_kernels.cu — device code of the data-movement operators:
 * strided copies (Transpose, Slice, Concat, Split, Expand, Tile, SliceGrad),
 * fills, Range, Gather and GatherElements with their gradients, Pad and
 * Resize with theirs. See layout-kernels.h for what each launcher does.
 *
 * Floating-point sums are written with the _rn intrinsics so that nvcc
 * cannot contract them into fused multiply-adds: the CPU kernels round
 * every product and sum, and these kernels give the same bits. */
#include <cstring>
#include <type_traits>

#include <cub/cub.cuh>

#include "ops/cuda/layout-kernels.h"
#include "onnx/onnx.h"

namespace {

const int THREADS = 256;
const int64_t MAX_BLOCKS = 1 << 20;

inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1)
        b = 1;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

struct u128 {
    unsigned long long a, b;
};

/* Runs f.template operator()<T>() with T the unsigned type of `unit` bytes. */
template <typename F>
cudaError_t by_unit(size_t unit, F f)
{
    switch (unit) {
    case 1: return f((uint8_t *)0);
    case 2: return f((uint16_t *)0);
    case 4: return f((uint32_t *)0);
    case 8: return f((unsigned long long *)0);
    case 16: return f((u128 *)0);
    default: return cudaErrorInvalidValue;
    }
}

/* ---- strided copies ---------------------------------------------------------- */

template <typename T, typename I>
__global__ void copy_kernel(T *dst, const T *src, int64_t total, struct layout_copy g)
{
    GRID_LOOP(e, total) {
        I rem = (I)e;
        int64_t so = 0, d = 0;
        for (int a = g.rank - 1; a >= 0; a--) {
            I n = (I)g.dims[a];
            I q = rem / n;
            int64_t i = (int64_t)(rem - q * n);
            so += i * g.src_strides[a];
            d += i * g.dst_strides[a];
            rem = q;
        }
        dst[d] = src[so];
    }
}

const int TILE = 32, TILE_ROWS = 8;

template <typename T>
__global__ void transpose_kernel(T *dst, const T *src, int64_t batches, int64_t tiles_i, int64_t tiles_j,
                                 struct layout_copy g)
{
    __shared__ T tile[TILE][TILE + 1];
    const int r = g.rank;
    const int64_t I = g.dims[r - 2], J = g.dims[r - 1], sj = g.src_strides[r - 1];
    const int64_t per_batch = tiles_i * tiles_j;
    for (int64_t w = blockIdx.x; w < batches * per_batch; w += gridDim.x) {
        int64_t b = w / per_batch, t = w % per_batch;
        int64_t i0 = (t / tiles_j) * TILE, j0 = (t % tiles_j) * TILE;
        int64_t rem = b, off = 0;
        for (int a = r - 3; a >= 0; a--) {
            int64_t q = rem / g.dims[a];
            off += (rem - q * g.dims[a]) * g.src_strides[a];
            rem = q;
        }
        /* read along i (unit stride in src) */
        for (int y = threadIdx.y; y < TILE; y += TILE_ROWS) {
            int64_t i = i0 + threadIdx.x, j = j0 + y;
            if (i < I && j < J)
                tile[y][threadIdx.x] = src[off + i + j * sj];
        }
        __syncthreads();
        /* write along j (unit stride in dst) */
        T *db = dst + b * I * J;
        for (int y = threadIdx.y; y < TILE; y += TILE_ROWS) {
            int64_t i = i0 + y, j = j0 + threadIdx.x;
            if (i < I && j < J)
                db[i * J + j] = tile[threadIdx.x][y];
        }
        __syncthreads();
    }
}

template <typename T>
__global__ void fill_kernel(T *dst, int64_t n, T v)
{
    GRID_LOOP(i, n)
        dst[i] = v;
}

/* ---- Range, Shape ----------------------------------------------------------- */

__global__ void range_f32_kernel(float *y, int64_t n, float s, float d)
{
    GRID_LOOP(i, n)
        y[i] = __fadd_rn(s, __fmul_rn((float)i, d));
}

__global__ void range_f64_kernel(double *y, int64_t n, double s, double d)
{
    GRID_LOOP(i, n)
        y[i] = __dadd_rn(s, __dmul_rn((double)i, d));
}

template <typename T>
__global__ void range_int_kernel(T *y, int64_t n, int64_t s, int64_t d)
{
    GRID_LOOP(i, n)
        y[i] = (T)(int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
}

struct i64x8 {
    int64_t v[8];
};

__global__ void write_i64_kernel(int64_t *dst, int n, i64x8 vals)
{
    int i = threadIdx.x;
    if (i < n)
        dst[i] = vals.v[i];
}

/* ---- index reads ------------------------------------------------------------- */

__device__ __forceinline__ int64_t index_at(const void *idx, int idx64, int64_t i)
{
    return idx64 ? ((const int64_t *)idx)[i] : (int64_t)((const int32_t *)idx)[i];
}

/* The index at position i, from the end when negative; 0 (with the position
 * recorded) when out of range. */
__device__ __forceinline__ int64_t index_checked(const void *idx, int idx64, int64_t i, int64_t d,
                                                 unsigned long long *bad)
{
    int64_t v = index_at(idx, idx64, i);
    if (v < -d || v >= d) {
        atomicMin(bad, (unsigned long long)i);
        return 0;
    }
    return v < 0 ? v + d : v;
}

__global__ void bad_reset_kernel(unsigned long long *bad)
{
    *bad = ~0ull;
}

__global__ void index_check_kernel(const void *idx, int idx64, int64_t n, int64_t d, unsigned long long *bad)
{
    GRID_LOOP(i, n)
        index_checked(idx, idx64, i, d, bad);
}

template <typename T>
__global__ void gather_kernel(T *dst, const T *src, const void *idx, int idx64, int64_t outer, int64_t n,
                              int64_t d, int64_t inner, unsigned long long *bad)
{
    GRID_LOOP(e, outer * n * inner) {
        int64_t w = e / inner, k = e - w * inner;
        int64_t o = w / n, j = w - o * n;
        int64_t v = index_checked(idx, idx64, j, d, bad);
        dst[e] = src[(o * d + v) * inner + k];
    }
}

struct dims8 {
    int64_t v[TENSOR_MAX_RANK];
};

template <typename T>
__global__ void gather_elements_kernel(T *dst, const T *src, const void *idx, int idx64, int rank, dims8 idims,
                                       dims8 xs, int axis, int64_t d, int64_t n, unsigned long long *bad)
{
    GRID_LOOP(e, n) {
        int64_t rem = e, off = 0;
        for (int a = rank - 1; a >= 0; a--) {
            int64_t q = rem / idims.v[a];
            if (a != axis)
                off += (rem - q * idims.v[a]) * xs.v[a];
            rem = q;
        }
        off += index_checked(idx, idx64, e, d, bad) * xs.v[axis];
        dst[e] = src[off];
    }
}

/* ---- scatter-adds by sorting ---------------------------------------------------- */

inline size_t align256(size_t b)
{
    return (b + 255) / 256 * 256;
}

int key_bits(int64_t max_key)
{
    int bits = 1;
    while (bits < 64 && ((uint64_t)max_key >> bits) != 0)
        bits++;
    return bits;
}

/* Bytes of cub's radix sort of n (uint64 key, int64 value) pairs whose keys
 * are at most max_key. */
size_t cub_sort_bytes(int64_t n, int64_t max_key)
{
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs((void *)0, bytes, (const unsigned long long *)0, (unsigned long long *)0,
                                    (const long long *)0, (long long *)0, (int)(n > 0 ? n : 1), 0,
                                    key_bits(max_key));
    return bytes;
}

/* The scratch pieces: keys and values in and out, then cub's storage. */
struct sort_space {
    unsigned long long *keys_in, *keys;
    long long *vals_in, *vals;
    void *temp;
    size_t temp_bytes;
};

sort_space sort_carve(void *scratch, int64_t n, int64_t max_key)
{
    sort_space s;
    char *p = (char *)scratch;
    size_t pair = align256(sizeof(long long) * (size_t)(n > 0 ? n : 1));
    s.keys_in = (unsigned long long *)p;
    s.keys = (unsigned long long *)(p + pair);
    s.vals_in = (long long *)(p + 2 * pair);
    s.vals = (long long *)(p + 3 * pair);
    s.temp = p + 4 * pair;
    s.temp_bytes = cub_sort_bytes(n, max_key);
    return s;
}

__global__ void gather_keys_kernel(unsigned long long *keys, long long *vals, const void *idx, int idx64,
                                   int64_t n, int64_t d, unsigned long long *bad)
{
    GRID_LOOP(j, n) {
        keys[j] = (unsigned long long)index_checked(idx, idx64, j, d, bad);
        vals[j] = j;
    }
}

__global__ void gather_elements_keys_kernel(unsigned long long *keys, long long *vals, const void *idx,
                                            int idx64, int rank, dims8 idims, dims8 ys, int axis, int64_t d,
                                            int64_t n, unsigned long long *bad)
{
    GRID_LOOP(e, n) {
        int64_t rem = e, off = 0;
        for (int a = rank - 1; a >= 0; a--) {
            int64_t q = rem / idims.v[a];
            if (a != axis)
                off += (rem - q * idims.v[a]) * ys.v[a];
            rem = q;
        }
        off += index_checked(idx, idx64, e, d, bad) * ys.v[axis];
        keys[e] = (unsigned long long)off;
        vals[e] = e;
    }
}

/* First position in sorted keys[0..n) not below key. */
__device__ __forceinline__ int64_t lower_bound(const unsigned long long *keys, int64_t n, unsigned long long key)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

template <typename T>
__device__ __forceinline__ T add_rn(T a, T b);
template <>
__device__ __forceinline__ float add_rn<float>(float a, float b) { return __fadd_rn(a, b); }
template <>
__device__ __forceinline__ double add_rn<double>(double a, double b) { return __dadd_rn(a, b); }

template <typename T>
__global__ void gather_grad_kernel(T *y, const T *dy, const unsigned long long *keys, const long long *vals,
                                   int64_t outer, int64_t n, int64_t d, int64_t inner)
{
    GRID_LOOP(e, outer * d * inner) {
        int64_t w = e / inner, k = e - w * inner;
        int64_t o = w / d, v = w - o * d;
        T acc = 0;
        for (int64_t p = lower_bound(keys, n, (unsigned long long)v); p < n && keys[p] == (unsigned long long)v; p++)
            acc = add_rn(acc, dy[(o * n + vals[p]) * inner + k]);
        y[e] = acc;
    }
}

template <typename T>
__global__ void gather_elements_grad_kernel(T *y, int64_t ynumel, const T *dy, const unsigned long long *keys,
                                            const long long *vals, int64_t n)
{
    GRID_LOOP(e, ynumel) {
        T acc = 0;
        for (int64_t p = lower_bound(keys, n, (unsigned long long)e); p < n && keys[p] == (unsigned long long)e; p++)
            acc = add_rn(acc, dy[vals[p]]);
        y[e] = acc;
    }
}

/* ---- Pad ------------------------------------------------------------------------- */

template <typename T>
__global__ void pad_kernel(T *y, const T *x, int64_t total, int rank, dims8 ydims, dims8 xs, const int64_t *map,
                           dims8 offs, T cval)
{
    GRID_LOOP(e, total) {
        int64_t rem = e, off = 0;
        int constant = 0;
        for (int a = rank - 1; a >= 0; a--) {
            int64_t q = rem / ydims.v[a];
            int64_t i = map[offs.v[a] + rem - q * ydims.v[a]];
            if (i < 0)
                constant = 1;
            else
                off += i * xs.v[a];
            rem = q;
        }
        y[e] = constant ? cval : x[off];
    }
}

/* ---- separable scatters (PadGrad, ResizeGrad) --------------------------------------
 * Destination t enumerates its sources as an odometer over the per-axis
 * entry lists, axis 0 outermost: that is dy's row-major order, the order in
 * which the CPU kernels add. */

struct odometer {
    int64_t lo[TENSOR_MAX_RANK], hi[TENSOR_MAX_RANK], cur[TENSOR_MAX_RANK];
};

/* Sets up the lists of destination t; 0 when some axis has no source. */
__device__ __forceinline__ int odometer_start(odometer &od, const struct layout_scatter &s, const int64_t *csr,
                                              int64_t t)
{
    int64_t rem = t;
    int any = 1;
    for (int a = s.rank - 1; a >= 0; a--) {
        int64_t q = rem / s.tdims[a], i = rem - q * s.tdims[a];
        od.lo[a] = csr[s.cs[a] + i];
        od.hi[a] = csr[s.cs[a] + i + 1];
        od.cur[a] = od.lo[a];
        any &= od.hi[a] > od.lo[a];
        rem = q;
    }
    return any;
}

/* Moves to the next source tuple; 0 past the last. */
__device__ __forceinline__ int odometer_next(odometer &od, int rank)
{
    for (int a = rank - 1; a >= 0; a--) {
        if (++od.cur[a] < od.hi[a])
            return 1;
        od.cur[a] = od.lo[a];
    }
    return 0;
}

template <typename T>
__global__ void pad_grad_kernel(T *y, const T *dy, int64_t total, struct layout_scatter s, const int64_t *csr,
                                const int64_t *ent)
{
    GRID_LOOP(t, total) {
        odometer od;
        T acc = 0;
        if (odometer_start(od, s, csr, t)) {
            do {
                int64_t off = 0;
                for (int a = 0; a < s.rank; a++)
                    off += (ent[od.cur[a]] >> 2) * s.sstrides[a];
                acc = add_rn(acc, dy[off]);
            } while (odometer_next(od, s.rank));
        }
        y[t] = acc;
    }
}

/* The taps of output e per axis into rt; returns x's offset at every first tap. */
__device__ __forceinline__ int64_t resize_taps_of(int64_t e, int rank, const dims8 &ydims, const dims8 &xs,
                                                  const struct layout_tap *taps, const dims8 &offs,
                                                  const struct layout_tap **rt)
{
    int64_t rem = e, base = 0;
    for (int a = rank - 1; a >= 0; a--) {
        int64_t q = rem / ydims.v[a];
        rt[a] = taps + offs.v[a] + (rem - q * ydims.v[a]);
        base += rt[a]->i0 * xs.v[a];
        rem = q;
    }
    return base;
}

/* Resize without blending (nearest, or linear landing on sources): a copy. */
template <typename T>
__global__ void resize_copy_kernel(T *y, const T *x, int64_t total, int rank, dims8 ydims, dims8 xs,
                                   const struct layout_tap *taps, dims8 offs)
{
    GRID_LOOP(e, total) {
        const struct layout_tap *rt[TENSOR_MAX_RANK];
        y[e] = x[resize_taps_of(e, rank, ydims, xs, taps, offs, rt)];
    }
}

/* Resize forward: output e blends the corners over the active axes, in the
 * CPU's corner order, with weights multiplied in axis order. */
template <typename T>
__global__ void resize_kernel(T *y, const T *x, int64_t total, int rank, dims8 ydims, dims8 xs,
                              const struct layout_tap *taps, dims8 offs, int k, dims8 active)
{
    GRID_LOOP(e, total) {
        const struct layout_tap *rt[TENSOR_MAX_RANK];
        int64_t base = resize_taps_of(e, rank, ydims, xs, taps, offs, rt);
        double sum = 0;
        for (int corner = 0; corner < (1 << k); corner++) {
            int64_t off = base;
            double weight = 1;
            for (int j = 0; j < k; j++) {
                const struct layout_tap *t = rt[active.v[j]];
                if (corner >> j & 1) {
                    weight = __dmul_rn(weight, t->w);
                    off += (t->i1 - t->i0) * xs.v[active.v[j]];
                } else {
                    weight = __dmul_rn(weight, __dsub_rn(1.0, t->w));
                }
            }
            if (weight == 0)
                continue;
            sum = __dadd_rn(sum, __dmul_rn(weight, (double)x[off]));
        }
        y[e] = (T)sum;
    }
}

/* ResizeGrad: the CPU adds weight * g (in double) to each corner's target in
 * dy order, then corner order; float targets are rounded after every add. */
template <typename T>
__global__ void resize_grad_kernel(T *x, const T *dy, int64_t total, struct layout_scatter s, const int64_t *csr,
                                   const int64_t *ent, const struct layout_tap *taps)
{
    GRID_LOOP(t, total) {
        odometer od;
        T acc = 0;
        if (odometer_start(od, s, csr, t)) {
            do {
                int64_t off = 0;
                for (int a = 0; a < s.rank; a++)
                    off += (ent[od.cur[a]] >> 2) * s.sstrides[a];
                double g = (double)dy[off];
                for (int corner = 0; corner < (1 << s.k); corner++) {
                    double weight = 1;
                    int reads = 1;
                    for (int j = 0; j < s.k && reads; j++) {
                        int a = s.active[j], bit = corner >> j & 1;
                        int64_t en = ent[od.cur[a]];
                        const struct layout_tap *tp = taps + s.toffs[a] + (en >> 2);
                        reads = (int)(en >> bit & 1);
                        weight = __dmul_rn(weight, bit ? tp->w : __dsub_rn(1.0, tp->w));
                    }
                    /* axes without blending read their first tap only; every
                     * entry of theirs has mask bit 0 */
                    if (!reads || weight == 0)
                        continue;
                    acc = (T)__dadd_rn((double)acc, __dmul_rn(weight, g));
                }
            } while (odometer_next(od, s.rank));
        }
        x[t] = acc;
    }
}

dims8 to_dims8(const int64_t *v, int n)
{
    dims8 d = {};
    for (int i = 0; i < n && i < TENSOR_MAX_RANK; i++)
        d.v[i] = v[i];
    return d;
}

} // namespace

/* ---- launchers ------------------------------------------------------------------------- */

extern "C" cudaError_t layout_copy_launch(void *dst, const void *src, size_t unit, const struct layout_copy *cp,
                                          cudaStream_t stream)
{
    int64_t total = 1;
    for (int a = 0; a < cp->rank; a++)
        total *= cp->dims[a];
    if (total == 0)
        return cudaSuccess;
    const struct layout_copy g = *cp;
    /* 32-bit index arithmetic where the element count fits (offsets stay
     * 64-bit): the divisions are the kernel's main cost. */
    int small = total < ((int64_t)1 << 32);
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        if (small)
            copy_kernel<T, uint32_t><<<blocks_for(total), THREADS, 0, stream>>>((T *)dst, (const T *)src, total, g);
        else
            copy_kernel<T, int64_t><<<blocks_for(total), THREADS, 0, stream>>>((T *)dst, (const T *)src, total, g);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t layout_transpose_launch(void *dst, const void *src, size_t unit, const struct layout_copy *cp,
                                               cudaStream_t stream)
{
    int r = cp->rank;
    if (r < 2)
        return cudaErrorInvalidValue;
    int64_t batches = 1;
    for (int a = 0; a < r - 2; a++)
        batches *= cp->dims[a];
    int64_t ti = (cp->dims[r - 2] + TILE - 1) / TILE, tj = (cp->dims[r - 1] + TILE - 1) / TILE;
    int64_t tiles = batches * ti * tj;
    if (tiles == 0)
        return cudaSuccess;
    unsigned grid = (unsigned)(tiles < MAX_BLOCKS ? tiles : MAX_BLOCKS);
    const struct layout_copy g = *cp;
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        transpose_kernel<T><<<grid, dim3(TILE, TILE_ROWS), 0, stream>>>((T *)dst, (const T *)src, batches, ti, tj, g);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t layout_fill_launch(void *dst, int64_t n, const void *value, size_t unit, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        T v;
        memcpy(&v, value, sizeof v);
        fill_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((T *)dst, n, v);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t layout_range_launch(void *dst, int dtype, int64_t n, double start_f, double delta_f,
                                           int64_t start_i, int64_t delta_i, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    unsigned b = blocks_for(n);
    switch (dtype) {
    case ONNX_DTYPE_FLOAT:
        range_f32_kernel<<<b, THREADS, 0, stream>>>((float *)dst, n, (float)start_f, (float)delta_f);
        break;
    case ONNX_DTYPE_DOUBLE:
        range_f64_kernel<<<b, THREADS, 0, stream>>>((double *)dst, n, start_f, delta_f);
        break;
    case ONNX_DTYPE_INT64:
        range_int_kernel<int64_t><<<b, THREADS, 0, stream>>>((int64_t *)dst, n, start_i, delta_i);
        break;
    case ONNX_DTYPE_INT32:
        range_int_kernel<int32_t><<<b, THREADS, 0, stream>>>((int32_t *)dst, n, start_i, delta_i);
        break;
    case ONNX_DTYPE_INT16:
        range_int_kernel<int16_t><<<b, THREADS, 0, stream>>>((int16_t *)dst, n, start_i, delta_i);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t layout_write_i64_launch(int64_t *dst, int n, const int64_t *values, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (n > 8)
        return cudaErrorInvalidValue;
    i64x8 v = {};
    for (int i = 0; i < n; i++)
        v.v[i] = values[i];
    write_i64_kernel<<<1, 32, 0, stream>>>(dst, n, v);
    return cudaGetLastError();
}

extern "C" cudaError_t layout_bad_reset_launch(unsigned long long *bad, cudaStream_t stream)
{
    bad_reset_kernel<<<1, 1, 0, stream>>>(bad);
    return cudaGetLastError();
}

extern "C" cudaError_t layout_index_check_launch(const void *idx, int idx64, int64_t n, int64_t d,
                                                 unsigned long long *bad, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    index_check_kernel<<<blocks_for(n), THREADS, 0, stream>>>(idx, idx64, n, d, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t layout_gather_launch(void *dst, const void *src, const void *idx, int idx64, int64_t outer,
                                            int64_t n, int64_t d, int64_t inner, size_t unit,
                                            unsigned long long *bad, cudaStream_t stream)
{
    int64_t total = outer * n * inner;
    if (total == 0)
        return cudaSuccess;
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        gather_kernel<T><<<blocks_for(total), THREADS, 0, stream>>>((T *)dst, (const T *)src, idx, idx64, outer, n,
                                                                      d, inner, bad);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t layout_gather_elements_launch(void *dst, const void *src, const void *idx, int idx64,
                                                     int rank, const int64_t *idims, const int64_t *xstrides,
                                                     int axis, int64_t d, size_t unit, unsigned long long *bad,
                                                     cudaStream_t stream)
{
    int64_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= idims[a];
    if (n == 0)
        return cudaSuccess;
    dims8 id = to_dims8(idims, rank), xs = to_dims8(xstrides, rank);
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        gather_elements_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((T *)dst, (const T *)src, idx, idx64, rank,
                                                                           id, xs, axis, d, n, bad);
        return cudaGetLastError();
    });
}

extern "C" size_t layout_sort_scratch_bytes(int64_t n, int64_t max_key)
{
    size_t pair = align256(sizeof(long long) * (size_t)(n > 0 ? n : 1));
    return 4 * pair + align256(cub_sort_bytes(n, max_key));
}

/* Sorts the (key, position) pairs sorted_keys_in/vals_in of s by key, stably. */
static cudaError_t sort_pairs(sort_space &s, int64_t n, int64_t max_key, cudaStream_t stream)
{
    size_t bytes = s.temp_bytes;
    return cub::DeviceRadixSort::SortPairs(s.temp, bytes, s.keys_in, s.keys, s.vals_in, s.vals, (int)n, 0,
                                           key_bits(max_key), stream);
}

extern "C" cudaError_t layout_gather_grad_launch(void *y, const void *dy, const void *idx, int idx64, int64_t outer,
                                                 int64_t n, int64_t d, int64_t inner, int dbl, void *scratch,
                                                 size_t scratch_bytes, unsigned long long *bad, cudaStream_t stream)
{
    int64_t total = outer * d * inner;
    if (total == 0)
        return cudaSuccess;
    if (n > INT32_MAX || scratch_bytes < layout_sort_scratch_bytes(n, d - 1))
        return cudaErrorInvalidValue;
    sort_space s = sort_carve(scratch, n, d - 1);
    if (n > 0) {
        gather_keys_kernel<<<blocks_for(n), THREADS, 0, stream>>>(s.keys_in, s.vals_in, idx, idx64, n, d, bad);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            e = sort_pairs(s, n, d - 1, stream);
        if (e != cudaSuccess)
            return e;
    }
    if (dbl)
        gather_grad_kernel<double><<<blocks_for(total), THREADS, 0, stream>>>((double *)y, (const double *)dy,
                                                                               s.keys, s.vals, outer, n, d, inner);
    else
        gather_grad_kernel<float><<<blocks_for(total), THREADS, 0, stream>>>((float *)y, (const float *)dy, s.keys,
                                                                              s.vals, outer, n, d, inner);
    return cudaGetLastError();
}

extern "C" cudaError_t layout_gather_elements_grad_launch(void *y, int64_t ynumel, const void *dy, const void *idx,
                                                          int idx64, int rank, const int64_t *idims,
                                                          const int64_t *ystrides, int axis, int64_t d, int dbl,
                                                          void *scratch, size_t scratch_bytes,
                                                          unsigned long long *bad, cudaStream_t stream)
{
    if (ynumel == 0)
        return cudaSuccess;
    int64_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= idims[a];
    if (n > INT32_MAX || scratch_bytes < layout_sort_scratch_bytes(n, ynumel - 1))
        return cudaErrorInvalidValue;
    sort_space s = sort_carve(scratch, n, ynumel - 1);
    if (n > 0) {
        dims8 id = to_dims8(idims, rank), ys = to_dims8(ystrides, rank);
        gather_elements_keys_kernel<<<blocks_for(n), THREADS, 0, stream>>>(s.keys_in, s.vals_in, idx, idx64, rank, id,
                                                                            ys, axis, d, n, bad);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            e = sort_pairs(s, n, ynumel - 1, stream);
        if (e != cudaSuccess)
            return e;
    }
    if (dbl)
        gather_elements_grad_kernel<double><<<blocks_for(ynumel), THREADS, 0, stream>>>(
            (double *)y, ynumel, (const double *)dy, s.keys, s.vals, n);
    else
        gather_elements_grad_kernel<float><<<blocks_for(ynumel), THREADS, 0, stream>>>(
            (float *)y, ynumel, (const float *)dy, s.keys, s.vals, n);
    return cudaGetLastError();
}

extern "C" cudaError_t layout_pad_launch(void *y, const void *x, int rank, const int64_t *ydims, const int64_t *xs,
                                         const int64_t *map, const int64_t *offs, const void *cval, size_t unit,
                                         cudaStream_t stream)
{
    int64_t total = 1;
    for (int a = 0; a < rank; a++)
        total *= ydims[a];
    if (total == 0)
        return cudaSuccess;
    dims8 yd = to_dims8(ydims, rank), xst = to_dims8(xs, rank), of = to_dims8(offs, rank);
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        T v;
        memcpy(&v, cval, sizeof v);
        pad_kernel<T><<<blocks_for(total), THREADS, 0, stream>>>((T *)y, (const T *)x, total, rank, yd, xst, map, of, v);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t layout_pad_grad_launch(void *y, const void *dy, int dbl, const struct layout_scatter *s,
                                              const int64_t *csr, const int64_t *ent, cudaStream_t stream)
{
    int64_t total = 1;
    for (int a = 0; a < s->rank; a++)
        total *= s->tdims[a];
    if (total == 0)
        return cudaSuccess;
    if (dbl)
        pad_grad_kernel<double><<<blocks_for(total), THREADS, 0, stream>>>((double *)y, (const double *)dy, total, *s,
                                                                            csr, ent);
    else
        pad_grad_kernel<float><<<blocks_for(total), THREADS, 0, stream>>>((float *)y, (const float *)dy, total, *s,
                                                                           csr, ent);
    return cudaGetLastError();
}

extern "C" cudaError_t layout_resize_launch(void *y, const void *x, int rank, const int64_t *ydims, const int64_t *xs,
                                            const struct layout_tap *taps, const int64_t *offs, int k,
                                            const int *active, int dtype_double, size_t unit, cudaStream_t stream)
{
    int64_t total = 1;
    for (int a = 0; a < rank; a++)
        total *= ydims[a];
    if (total == 0)
        return cudaSuccess;
    dims8 yd = to_dims8(ydims, rank), xst = to_dims8(xs, rank), of = to_dims8(offs, rank), ac = {};
    for (int j = 0; j < k && j < TENSOR_MAX_RANK; j++)
        ac.v[j] = active[j];
    unsigned b = blocks_for(total);
    if (k > 0) {
        /* blending reads numbers: float or double only (checked by the caller) */
        if (dtype_double)
            resize_kernel<double><<<b, THREADS, 0, stream>>>((double *)y, (const double *)x, total, rank, yd, xst,
                                                              taps, of, k, ac);
        else
            resize_kernel<float><<<b, THREADS, 0, stream>>>((float *)y, (const float *)x, total, rank, yd, xst, taps,
                                                             of, k, ac);
        return cudaGetLastError();
    }
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        resize_copy_kernel<T><<<b, THREADS, 0, stream>>>((T *)y, (const T *)x, total, rank, yd, xst, taps, of);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t layout_resize_grad_launch(void *x, const void *dy, int dbl, const struct layout_scatter *s,
                                                 const int64_t *csr, const int64_t *ent, const struct layout_tap *taps,
                                                 cudaStream_t stream)
{
    int64_t total = 1;
    for (int a = 0; a < s->rank; a++)
        total *= s->tdims[a];
    if (total == 0)
        return cudaSuccess;
    if (dbl)
        resize_grad_kernel<double><<<blocks_for(total), THREADS, 0, stream>>>((double *)x, (const double *)dy, total,
                                                                               *s, csr, ent, taps);
    else
        resize_grad_kernel<float><<<blocks_for(total), THREADS, 0, stream>>>((float *)x, (const float *)dy, total, *s,
                                                                              csr, ent, taps);
    return cudaGetLastError();
}
