// Direct convolution with the input tile in shared memory, tuned for few channels and filters (the lab's
// 3-channel, 1-filter, 3×3 layer), where the work is moving bytes, not arithmetic.
//
// A block computes an (TY·OY) × (TX·OX) tile of one output plane (image n, filter k = blockIdx.z). Per
// input channel it stages the matching input window, halo included, in shared memory with coalesced loads
// (zeros where the window hangs over the padding), then each thread computes OY×OX outputs from it with the
// channel's R×S weights in registers. So every input element is read from memory about once, instead of
// R·S times through the cache, and each thread's OY vertically adjacent outputs reuse the shared rows they
// have in common. A thread's OX columns are TX apart, so at stride 1 a warp reads consecutive words.
// The 3×3 filter at strides 1, 2, 3 is compiled with constant taps and stride; other shapes take the same
// code with run-time values.

#include "conv_taps.cuh"

#ifndef TX
#define TX 32
#define TY 8
#define OX 2
#define OY 4
#endif

constexpr int THREADS = TX * TY, TILE_W = TX * OX, TILE_H = TY * OY;

// The shared window one block needs: ((TILE-1)·stride + R) rows × ((TILE-1)·stride + S) columns per channel.
// The launcher sizes dynamic shared memory with the same formula.
__host__ __device__ constexpr int window(int tile, int stride, int taps) { return (tile - 1) * stride + taps; }

template <int R_, int S_, int STRIDE_>  // 0 = take the run-time value
__device__ __forceinline__ void conv_plane(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                           float* tile, int C, int H, int W, int K, int R, int S, int stride, int pad,
                                           int OH, int OW)
{
    const int r_n = R_ ? R_ : R, s_n = S_ ? S_ : S, st = STRIDE_ ? STRIDE_ : stride;
    const int win_h = window(TILE_H, st, r_n), win_w = window(TILE_W, st, s_n);
    const int n = blockIdx.z / K, k = blockIdx.z % K;
    const int oh0 = blockIdx.y * TILE_H, ow0 = blockIdx.x * TILE_W;
    const int ih0 = oh0 * st - pad, iw0 = ow0 * st - pad;
    const int ty = threadIdx.x / TX, tx = threadIdx.x % TX;

    float acc[OY][OX] = {};
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((size_t)n * C + c) * H * W;
        for (int e = threadIdx.x; e < win_h * win_w; e += THREADS) {
            const int ih = ih0 + e / win_w, iw = iw0 + e % win_w;
            tile[e] = ((unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W) ? __ldg(xc + (size_t)ih * W + iw) : 0.0f;
        }
        const float* wc = w + ((size_t)k * C + c) * r_n * s_n;
        __syncthreads();
        // One tap: its weight times the window element under each of the thread's outputs.
        auto tap = [&](int r, int s, float wv) {
#pragma unroll
            for (int i = 0; i < OY; ++i)
#pragma unroll
                for (int j = 0; j < OX; ++j)
                    acc[i][j] = fmaf(tile[((ty * OY + i) * st + r) * win_w + (tx + j * TX) * st + s], wv, acc[i][j]);
        };
        for_each_tap<R_, S_>(wc, r_n, s_n, tap);
        __syncthreads();  // the next channel overwrites the window
    }
    float* yk = y + ((size_t)n * K + k) * OH * OW;
#pragma unroll
    for (int i = 0; i < OY; ++i)
#pragma unroll
        for (int j = 0; j < OX; ++j) {
            const int oh = oh0 + ty * OY + i, ow = ow0 + tx + j * TX;
            if (oh < OH && ow < OW) yk[(size_t)oh * OW + ow] = acc[i][j];
        }
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv_sliding_tiled(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, int C,
                   int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ float tile[];
    if (R == 3 && S == 3 && stride == 1) conv_plane<3, 3, 1>(x, w, y, tile, C, H, W, K, R, S, stride, pad, OH, OW);
    else if (R == 3 && S == 3 && stride == 2) conv_plane<3, 3, 2>(x, w, y, tile, C, H, W, K, R, S, stride, pad, OH, OW);
    else if (R == 3 && S == 3 && stride == 3) conv_plane<3, 3, 3>(x, w, y, tile, C, H, W, K, R, S, stride, pad, OH, OW);
    else conv_plane<0, 0, 0>(x, w, y, tile, C, H, W, K, R, S, stride, pad, OH, OW);
}
