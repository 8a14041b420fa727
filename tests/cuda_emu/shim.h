/* tests/cuda_emu/shim.h — the CUDA device dialect of ops/cuda/*.cu on the host (see run.sh). */
#pragma once
#include <cuda_runtime_api.h>
#include <algorithm>
#include <vector>
#include <thread>
#include <barrier>
#include <functional>
#include <cstring>
#include <cstdint>
#include <cmath>
struct edim3 { unsigned x, y, z; edim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
#define dim3 edim3
extern thread_local edim3 threadIdx, blockIdx;
extern edim3 blockDim, gridDim;
extern std::barrier<> *emu_bar;
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __forceinline__
#define __forceinline__ inline
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
inline void __syncthreads() { emu_bar->arrive_and_wait(); }
inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, sizeof u); return u; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { auto o = *p; if (v < o) *p = v; return o; }
template <typename F> void emu_launch(edim3 g, edim3 b, bool threaded, F f)
{
    gridDim = g; blockDim = b;
    for (unsigned bx = 0; bx < g.x; bx++) {
        if (!threaded) {
            for (unsigned ty = 0; ty < b.y; ty++)
                for (unsigned tx = 0; tx < b.x; tx++) {
                    blockIdx = edim3(bx, 0, 0); threadIdx = edim3(tx, ty, 0); f();
                }
            continue;
        }
        std::barrier<> bar(b.x * b.y);
        emu_bar = &bar;
        std::vector<std::thread> ts;
        for (unsigned ty = 0; ty < b.y; ty++)
            for (unsigned tx = 0; tx < b.x; tx++)
                ts.emplace_back([=] { blockIdx = edim3(bx, 0, 0); threadIdx = edim3(tx, ty, 0); f(); });
        for (auto &t : ts) t.join();
    }
}
namespace cub {
struct DeviceRadixSort {
    template <typename K, typename V, typename N>
    static cudaError_t SortPairs(void *temp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, N n,
                                 int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t s = 0)
    {
        if (!temp) { bytes = 64; return cudaSuccess; }
        std::vector<std::pair<K, V>> v;
        for (N i = 0; i < n; i++) v.push_back({ kin[i], vin[i] });
        K mask = end_bit >= 64 ? ~(K)0 : (((K)1 << end_bit) - 1);
        std::stable_sort(v.begin(), v.end(), [&](auto &a, auto &b) { return (a.first & mask) < (b.first & mask); });
        for (N i = 0; i < n; i++) { kout[i] = v[i].first; vout[i] = v[i].second; }
        return cudaSuccess;
    }
};
}
