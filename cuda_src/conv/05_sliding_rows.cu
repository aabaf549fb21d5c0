// Direct convolution with each thread sliding down a column of OY outputs, for few channels and filters
// (the lab's 3-channel, 1-filter, 3×3 layer), where the work is moving bytes.
//
// Thread (x, y) of a 32×TY block computes outputs (oh0 + i, ow) for i < OY of one output plane (image n,
// filter k = blockIdx.z). It reads the input straight from global memory, each input row it needs once: the
// OY outputs of a column need (OY−1)·stride + R input rows per channel rather than OY·R, and with the taps
// and OY compile-time constants the compiler keeps each loaded value in a register for every output that
// uses it. A warp's 32 threads read consecutive columns (coalesced; the neighbouring taps hit L1), and with no
// shared memory and no barrier a thread has dozens of independent loads in flight at once: what a
// memory-bound kernel needs. The 3×3 filter at strides 1, 2, 3 is compiled with constant taps and stride;
// other shapes take the same code with run-time values.

#include "conv_taps.cuh"

#ifndef TY
#define TY 8
#define OY 8
#endif

constexpr int TX = 32, THREADS = TX * TY;

template <int R_, int S_, int STRIDE_>  // 0 = take the run-time value
__device__ __forceinline__ void conv_column(const float* __restrict__ x, const float* __restrict__ w,
                                            float* __restrict__ y, int C, int H, int W, int K, int R, int S,
                                            int stride, int pad, int OH, int OW)
{
    const int r_n = R_ ? R_ : R, s_n = S_ ? S_ : S, st = STRIDE_ ? STRIDE_ : stride;
    const int n = blockIdx.z / K, k = blockIdx.z % K;
    const int ow = blockIdx.x * TX + threadIdx.x % TX;
    const int oh0 = (blockIdx.y * TY + threadIdx.x / TX) * OY;
    if (ow >= OW || oh0 >= OH) return;
    const int ih0 = oh0 * st - pad, iw0 = ow * st - pad;

    float acc[OY] = {};
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((size_t)n * C + c) * H * W;
        const float* wc = w + ((size_t)k * C + c) * r_n * s_n;
        auto tap = [&](int r, int s, float wv) {
            const int iw = iw0 + s;
            if ((unsigned)iw >= (unsigned)W) return;
#pragma unroll
            for (int i = 0; i < OY; ++i) {
                const int ih = ih0 + i * st + r;
                if ((unsigned)ih < (unsigned)H) acc[i] = fmaf(__ldg(xc + (size_t)ih * W + iw), wv, acc[i]);
            }
        };
        for_each_tap<R_, S_>(wc, r_n, s_n, tap);
    }
    float* yk = y + ((size_t)n * K + k) * OH * OW;
#pragma unroll
    for (int i = 0; i < OY; ++i)
        if (oh0 + i < OH) yk[(size_t)(oh0 + i) * OW + ow] = acc[i];
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv_sliding_rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, int C,
                  int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    if (R == 3 && S == 3 && stride == 1) conv_column<3, 3, 1>(x, w, y, C, H, W, K, R, S, stride, pad, OH, OW);
    else if (R == 3 && S == 3 && stride == 2) conv_column<3, 3, 2>(x, w, y, C, H, W, K, R, S, stride, pad, OH, OW);
    else if (R == 3 && S == 3 && stride == 3) conv_column<3, 3, 3>(x, w, y, C, H, W, K, R, S, stride, pad, OH, OW);
    else conv_column<0, 0, 0>(x, w, y, C, H, W, K, R, S, stride, pad, OH, OW);
}
