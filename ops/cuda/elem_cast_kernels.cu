/* ops/cuda/elem_cast_kernels.cu — Cast between the 13 dtypes of ops/cast.c
 * (float, double, float16, bfloat16, int8..uint64, bool), element by
 * element with the CPU's conversions (ew_load / ew_store), so that every
 * result has the CPU's bits. Same-dtype casts are copies, done by the host. */
#include "ops/cuda/elem-device.cuh"

namespace {

template <int S, int D> struct cast_f {
    __host__ explicit cast_f(const struct cuda_ew_consts &) {}
    __device__ typename dt<D>::T operator()(typename dt<S>::T x) const
    {
        return ew_store<D>(ew_load<S>(x));
    }
};

} // namespace

cudaError_t ew_cast_launch(cudaStream_t s, int from, int to, const struct cuda_ew_geom *g,
                           void *out, const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_CAST>(from, [&](auto stag) {
        constexpr int S = decltype(stag)::value;
        return dtype_visit<DS_CAST>(to, [&](auto dtag) {
            constexpr int D = decltype(dtag)::value;
            typedef typename dt<S>::T TS;
            typedef typename dt<D>::T TD;
            return ew_run_flat<1, TD, TS, TS, cast_f<S, D>>(s, g, out, in, k);
        });
    });
}
