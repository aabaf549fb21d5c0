// The transform kernels of Winograd F(TILE×TILE, 3×3) in separate steps, shared by conv/10_winograd_gemm.cu (the
// products on FFMA) and conv/15_winograd_tf32x3.cu (the products on tensor cores, split into three TF32 parts):
//   winograd_filter_t  U[e][k][c] = (G g Gᵀ)ₑ for every filter k and channel c
//   winograd_input_t   V[e][c][p] = (Bᵀ d B)ₑ for every channel c and output tile p (its ALPHA×ALPHA patch d)
//   winograd_output_t  y[n][k][tile] = Aᵀ M[·][k][p] A: the TILE×TILE outputs of tile p
// Channels and tiles are padded to multiples of 4 (Cp, Pp) with zeros, so every GEMM row starts on a 16-byte
// boundary. SPLIT (default 1): the products ran as SPLIT partial sums over slices of the channels, each into its
// own copy of M (E·K·Pp floats apart); the output transform is linear, so it adds the copies as it reads them, and
// no atomics or extra pass are needed to give the short 7² and 14² layers more blocks than one wave.
#pragma once

#include "winograd_transforms.cuh"  // ALPHA, E and the 1-D transforms

#ifndef SPLIT
#define SPLIT 1
#endif

__device__ __forceinline__ int pad4(int n) { return (n + 3) / 4 * 4; }

// The channels [begin, end) that partial sum s of SPLIT adds up: whole steps of `step` channels, the last slice
// shorter (or empty: its copy of M is then written as zeros, which the output transform adds harmlessly).
struct ChannelSlice {
    int begin, end;
};
__device__ __forceinline__ ChannelSlice channel_slice(int Cp, int s, int step)
{
    const int per = (Cp + SPLIT * step - 1) / (SPLIT * step) * step;
    return {min(Cp, s * per), min(Cp, (s + 1) * per)};
}

// ---- U[e][k][c]: one thread per (filter, channel), channels fastest so the E stores are coalesced ----------

__device__ __forceinline__ void filter_transform_at(long long idx, const float* __restrict__ w, float* __restrict__ U,
                                                    int K, int C)
{
    const int Cp = pad4(C);
    if (idx >= (long long)K * Cp) return;
    const int c = idx % Cp, k = idx / Cp;
    float u[ALPHA][ALPHA] = {};
    if (c < C) {
        filter_tile(w + ((size_t)k * C + c) * 9, u);
    }
    const size_t plane = (size_t)K * Cp;
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) U[(i * ALPHA + j) * plane + idx] = u[i][j];
}

extern "C" __global__ void __launch_bounds__(256)
winograd_filter_t(const float* __restrict__ w, float* __restrict__ U, int K, int C)
{
    filter_transform_at((long long)blockIdx.x * blockDim.x + threadIdx.x, w, U, K, C);
}

// ---- V[e][c][p]: one thread per (channel, tile), tiles fastest ----------------------------------------------

__device__ __forceinline__ void input_transform_at(long long idx, const float* __restrict__ x, float* __restrict__ V,
                                                   int N, int C, int H, int W, int pad, int OH, int OW)
{
    const int TH = (OH + TILE - 1) / TILE, TW = (OW + TILE - 1) / TILE, P = N * TH * TW;
    const int Cp = pad4(C), Pp = pad4(P);
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

extern "C" __global__ void __launch_bounds__(256)
winograd_input_t(const float* __restrict__ x, float* __restrict__ V, int N, int C, int H, int W, int pad, int OH,
                 int OW)
{
    input_transform_at((long long)blockIdx.x * blockDim.x + threadIdx.x, x, V, N, C, H, W, pad, OH, OW);
}

// ---- both transforms in one launch: the first blocks transform filters, the rest input tiles ----------------
// Both are bound by memory (at 7², 37.7 MB of U, 0.021 ms, against 9.4 MB of V, 0.011 ms), and one after the
// other each ends in a partly empty last wave and a launch gap; side by side their traffic overlaps.

extern "C" __global__ void __launch_bounds__(256)
winograd_transforms_t(const float* __restrict__ w, float* __restrict__ U, const float* __restrict__ x,
                      float* __restrict__ V, int N, int C, int H, int W, int K, int pad, int OH, int OW)
{
    const int filter_blocks = (K * pad4(C) + 255) / 256;  // the spec's grid: these plus the input's blocks
    if ((int)blockIdx.x < filter_blocks)
        filter_transform_at((long long)blockIdx.x * 256 + threadIdx.x, w, U, K, C);
    else
        input_transform_at((long long)(blockIdx.x - filter_blocks) * 256 + threadIdx.x, x, V, N, C, H, W, pad, OH,
                           OW);
}

// ---- y from M: one thread per (filter, tile), tiles fastest so the E loads are coalesced -------------------

extern "C" __global__ void __launch_bounds__(256)
winograd_output_t(const float* __restrict__ Mw, float* __restrict__ y, int N, int K, int OH, int OW)
{
    const int TH = (OH + TILE - 1) / TILE, TW = (OW + TILE - 1) / TILE, P = N * TH * TW, Pp = pad4(P);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)K * P) return;
    const int p = idx % P, k = idx / P;
    const size_t plane = (size_t)K * Pp, copy = (size_t)E * plane;  // copy: one partial sum's M
    const float* m = Mw + (size_t)k * Pp + p;
    float t[TILE][ALPHA];  // Aᵀ M: each column
#pragma unroll
    for (int j = 0; j < ALPHA; ++j) {
        float col[ALPHA], out[TILE];
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) {
            col[i] = m[(i * ALPHA + j) * plane];
#pragma unroll
            for (int s = 1; s < SPLIT; ++s) col[i] += m[s * copy + (i * ALPHA + j) * plane];
        }
        output_line(col, out);
#pragma unroll
        for (int i = 0; i < TILE; ++i) t[i][j] = out[i];
    }
    const int n = p / (TH * TW), r = p % (TH * TW), oh0 = (r / TW) * TILE, ow0 = (r % TW) * TILE;
    float* dst = y + (((size_t)n * K + k) * OH + oh0) * OW + ow0;
#pragma unroll
    for (int i = 0; i < TILE; ++i) {  // (Aᵀ M) A: each row, clipped to the image
        float o[TILE];
        output_line(t[i], o);
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            if (oh0 + i < OH && ow0 + j < OW) dst[i * OW + j] = o[j];
    }
}
