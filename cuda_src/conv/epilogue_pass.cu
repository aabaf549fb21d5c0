// The fused epilogue as a pass of its own, over a convolution's finished accumulators: the second half of cuDNN's
// unfused sequence, which gpubench times where cuDNN refuses the fused graph (gpubench/backends/cuda/cudnn_fused.py).
// One thread per output element, grid-stride; the arithmetic is include/epilogue.cuh's, as the fused kernels'.
//
// -DACC: what the convolution left (float, or int for an int8 problem); -DELEM_OUT: the output's type (and z's);
// -DEPILOGUE: the epilogue's index. The layout is an argument: the output channel of element i is
//   NCHW (0): (i / plane) % K;  NHWC (1): i % K;  NCHW_VECT_C (2): ((i / (32·plane)) % (K / 32)) · 32 + i % 32,
// where plane = OH·OW.

#include "../include/epilogue.cuh"

#ifndef ACC
#define ACC float
#endif
#ifndef ELEM_OUT
#define ELEM_OUT float
#endif

#include <type_traits>

constexpr bool INT_OUT = std::is_same<ACC, int>::value && std::is_same<ELEM_OUT, int>::value;

__device__ __forceinline__ int channel_of(long long i, int layout, int K, int plane)
{
    if (layout == 1) return static_cast<int>(i % K);
    if (layout == 2) return static_cast<int>((i / (32LL * plane)) % (K / 32)) * 32 + static_cast<int>(i % 32);
    return static_cast<int>((i / plane) % K);
}

extern "C" __global__ void epilogue_pass(const ACC* __restrict__ acc, const float* __restrict__ bias,
                                         const ELEM_OUT* __restrict__ z, const float* __restrict__ scale,
                                         ELEM_OUT* __restrict__ y, long long total, int layout, int K, int plane,
                                         float alpha, float beta, float gamma)
{
    const EpilogueArgs e{alpha, beta, gamma, bias, scale};
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const int k = channel_of(i, layout, K, plane);
        if constexpr (INT_OUT) {  // int32 accumulators to an int32 output: integer arithmetic, exact
            y[i] = epilogue_value_int(acc[i], e, k, EPI_HAS_ADD ? epilogue_load_int<ELEM_OUT>(z[i]) : 0);
        } else {
            const float zi = EPI_HAS_ADD ? epilogue_load<ELEM_OUT>(z[i]) : 0.f;
            y[i] = epilogue_store<ELEM_OUT>(epilogue_value(static_cast<float>(acc[i]), channel_terms(e, k), gamma, zi));
        }
    }
}
