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
#include <csetjmp>
#include <memory>
#include <ucontext.h>
struct edim3 { unsigned x, y, z; edim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
#define dim3 edim3
extern thread_local edim3 threadIdx, blockIdx;
extern edim3 blockDim, gridDim;
extern std::barrier<> *emu_bar;
/* Kernels named *_block_kernel run their block's threads as fibers on one
 * OS thread (a thread per GPU thread is too slow for 256-thread blocks):
 * each __syncthreads switches back to a round-robin scheduler, and a round
 * ends with every fiber at the same barrier (or finished). A fiber starts
 * through makecontext/swapcontext and switches afterwards by
 * _setjmp/_longjmp, which skip the signal-mask system call. */
struct emu_fibers {
    unsigned n = 0, cur = 0;
    std::vector<ucontext_t> ctx;
    ucontext_t sched;
    struct jb_box { jmp_buf b; };
    std::vector<jb_box> jb;
    std::vector<char> started, done;
    jmp_buf sched_jb;
    std::vector<std::unique_ptr<char[]>> stacks;   /* kept from launch to launch */
    std::function<void()> body;
};
extern emu_fibers *emu_fib;
inline emu_fibers &emu_fiber_pool()
{
    static emu_fibers fb;
    return fb;
}
const size_t EMU_FIBER_STACK = 256 << 10;
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
inline void __syncthreads()
{
    if (!emu_fib)
        emu_bar->arrive_and_wait();
    else if (!_setjmp(emu_fib->jb[emu_fib->cur].b))
        _longjmp(emu_fib->sched_jb, 1);
}
inline void emu_fiber_entry()
{
    emu_fib->body();
    emu_fib->done[emu_fib->cur] = 1;
    _longjmp(emu_fib->sched_jb, 1);
}
inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, sizeof u); return u; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { auto o = *p; if (v < o) *p = v; return o; }
/* mode 0: threads one after the other; 1: real threads with a barrier; 2: fibers. */
template <typename F> void emu_launch(edim3 g, edim3 b, int mode, F f)
{
    gridDim = g; blockDim = b;
    if (mode == 2) {
        emu_fibers &fb = emu_fiber_pool();
        fb.n = b.x * b.y;
        fb.ctx.resize(fb.n);
        fb.jb.resize(fb.n);
        fb.started.resize(fb.n);
        fb.done.resize(fb.n);
        while (fb.stacks.size() < fb.n)
            fb.stacks.emplace_back(new char[EMU_FIBER_STACK]);
        fb.body = f;
        for (unsigned bx = 0; bx < g.x; bx++) {
            blockIdx = edim3(bx, 0, 0);
            for (unsigned i = 0; i < fb.n; i++) {
                getcontext(&fb.ctx[i]);
                fb.ctx[i].uc_stack.ss_sp = fb.stacks[i].get();
                fb.ctx[i].uc_stack.ss_size = EMU_FIBER_STACK;
                fb.ctx[i].uc_link = &fb.sched;
                makecontext(&fb.ctx[i], emu_fiber_entry, 0);
                fb.started[i] = fb.done[i] = 0;
            }
            emu_fib = &fb;
            for (bool any = true; any;) {
                any = false;
                for (unsigned i = 0; i < fb.n; i++)
                    if (!fb.done[i]) {
                        fb.cur = i;
                        threadIdx = edim3(i % b.x, i / b.x, 0);
                        any = true;
                        if (_setjmp(fb.sched_jb))
                            continue;
                        if (!fb.started[i]) {
                            fb.started[i] = 1;
                            swapcontext(&fb.sched, &fb.ctx[i]);
                        } else {
                            _longjmp(fb.jb[i].b, 1);
                        }
                    }
            }
            emu_fib = nullptr;
        }
        return;
    }
    bool threaded = mode == 1;
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
