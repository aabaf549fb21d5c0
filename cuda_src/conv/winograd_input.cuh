// The input transform of the kernels that read V from device memory (conv/10_winograd_gemm.cu, and
// conv/09_winograd.cu with PRE = 1): V[e][c][p] = (Bᵀ d B)ₑ for channel c and output tile p (its ALPHA×ALPHA input patch
// d), one thread per (channel, tile), tiles fastest so that the E stores are coalesced. Channels and tiles are padded
// to multiples of 4 (Cp, Pp) with zeros: every row of V starts on a 16-byte boundary, and the padding adds nothing.
#pragma once

#include "winograd_transforms.cuh"

__device__ __forceinline__ int pad4(int n) { return (n + 3) / 4 * 4; }

extern "C" __global__ void __launch_bounds__(256)
winograd_input_t(const float* __restrict__ x, float* __restrict__ V, int N, int C, int H, int W, int pad, int OH,
                 int OW)
{
    const int TH = (OH + TILE - 1) / TILE, TW = (OW + TILE - 1) / TILE, P = N * TH * TW;
    const int Cp = pad4(C), Pp = pad4(P);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)Cp * Pp) return;
    const int p = idx % Pp, c = idx / Pp;
    float d[ALPHA][ALPHA] = {};
    if (c < C && p < P) {
        const int n = p / (TH * TW), r = p % (TH * TW);
        const int h0 = (r / TW) * TILE - pad, w0 = (r % TW) * TILE - pad;
        const float* src = x + ((size_t)n * C + c) * H * W;
#pragma unroll
        for (int i = 0; i < ALPHA; ++i)
#pragma unroll
            for (int j = 0; j < ALPHA; ++j) {
                const int h = h0 + i, ww = w0 + j;
                d[i][j] = (h >= 0 && h < H && ww >= 0 && ww < W) ? src[(size_t)h * W + ww] : 0.0f;
            }
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {  // Bᵀ d: each column
            float col[ALPHA];
#pragma unroll
            for (int i = 0; i < ALPHA; ++i) col[i] = d[i][j];
            input_line(col);
#pragma unroll
            for (int i = 0; i < ALPHA; ++i) d[i][j] = col[i];
        }
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) input_line(d[i]);  // (Bᵀ d) B: each row
    }
    const size_t plane = (size_t)Cp * Pp;
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) V[(i * ALPHA + j) * plane + idx] = d[i][j];
}
