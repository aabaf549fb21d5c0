// What the tensor-core implicit-GEMM convolutions (11_tc_implicit.cu, 12_tc_wgmma.cu) share: the loader that does
// im2col in its addressing, and the store of an output tile staged in shared memory. NHWC, 16-bit elements.
//
// The GEMM: rows are output pixels (M = N·OH·OW), columns filters (K), the reduction (r, s, c) walked tap by tap,
// SLICE channels at a time. A slice of A is then, for each pixel, SLICE consecutive channels of one input pixel, and a
// slice of B is SLICE consecutive channels of each filter's KRSC row: both copied as 16-byte chunks of 8 channels
// (C % 8 == 0 keeps them aligned and whole).
#pragma once

#include "../include/gemm_common.cuh"  // cp_async16
#include "../include/mma_sync.cuh"     // Swizzled

// Each thread always copies the same chunk column of the same rows of both tiles, so before the main loop it works
// out, once, each of its pixels' offset in x at tap (0, 0) and a mask of the taps that land inside the image (bit
// r·S + s; R·S ≤ 32). At a tap the address is that offset plus a number the whole block shares, (r·W + s)·C + c,
// and whether the tap is padding is one bit: no division and no bounds arithmetic in the loop. Padding, pixels
// past M, filters past K and channels past C are copied as zeros (cp.async's zero-fill).
template <typename T, int TILE_M, int TILE_N, int SLICE, int NTHREADS>
struct ImplicitLoader {
    static constexpr int CH = SLICE / 8;  // 16-byte chunks per tile row
    static constexpr int ROWS_PER_PASS = NTHREADS / CH;
    static constexpr int A_ITERS = TILE_M / ROWS_PER_PASS, B_ITERS = TILE_N / ROWS_PER_PASS;
    static_assert(NTHREADS % CH == 0 && TILE_M % ROWS_PER_PASS == 0 && TILE_N % ROWS_PER_PASS == 0,
                  "every thread copies the same chunk column of whole passes over both tiles");
    using Tile = Swizzled<SLICE>;

    const T* x;
    const T* w;
    int C, W, S;
    int col8, row0;               // this thread's channels col8..col8+7 of a slice, its first row
    long long x_off[A_ITERS];     // its pixels' offsets in x at tap (0, 0), channel 0
    uint32_t taps_in[A_ITERS];    // their in-image taps
    long long w_off[B_ITERS];     // its filters' rows in w; −1 past K
    int r = 0, s = 0, c = 0;      // the next slice: tap (r, s), channels c..c+SLICE

    __device__ ImplicitLoader(const T* x_, const T* w_, int N, int C_, int H, int W_, int K, int R, int S_, int stride,
                              int pad, int OH, int OW, int m0, int n0, int thread)  // thread: 0 .. NTHREADS − 1
        : x(x_), w(w_), C(C_), W(W_), S(S_)
    {
        const int P = OH * OW, M = N * P;
        col8 = (thread % CH) * 8;
        row0 = thread / CH;
#pragma unroll
        for (int i = 0; i < A_ITERS; ++i) {
            const int m = m0 + row0 + i * ROWS_PER_PASS;
            x_off[i] = 0;
            taps_in[i] = 0;
            if (m < M) {
                const int img = m / P, p = m % P;
                const int ih0 = (p / OW) * stride - pad, iw0 = (p % OW) * stride - pad;
                x_off[i] = (((long long)img * H + ih0) * W + iw0) * C;
                for (int rr = 0; rr < R; ++rr)
                    for (int ss = 0; ss < S; ++ss)
                        if ((unsigned)(ih0 + rr) < (unsigned)H && (unsigned)(iw0 + ss) < (unsigned)W)
                            taps_in[i] |= 1u << (rr * S + ss);
            }
        }
#pragma unroll
        for (int j = 0; j < B_ITERS; ++j) {
            const int k = n0 + row0 + j * ROWS_PER_PASS;
            w_off[j] = k < K ? (long long)k * R * S * C : -1;
        }
    }

    // Copy the next slice into a stage: A's TILE_M × SLICE tile at As, B's TILE_N × SLICE tile at Bs (both swizzled).
    __device__ __forceinline__ void load(T* As, T* Bs)
    {
        const int tap = r * S + s, chunk = col8 / 8;
        const bool chan_in = c + col8 < C;  // C % 8 == 0: a chunk is wholly inside C or wholly past it
        const long long at_x = ((long long)r * W + s) * C + c + col8;
#pragma unroll
        for (int i = 0; i < A_ITERS; ++i) {
            const bool in = chan_in && (taps_in[i] >> tap & 1u);
            cp_async16(As + Tile::at(row0 + i * ROWS_PER_PASS, chunk), in ? x + x_off[i] + at_x : x, in ? 16 : 0);
        }
        const int at_w = tap * C + c + col8;
#pragma unroll
        for (int j = 0; j < B_ITERS; ++j) {
            const bool in = chan_in && w_off[j] >= 0;
            cp_async16(Bs + Tile::at(row0 + j * ROWS_PER_PASS, chunk), in ? w + w_off[j] + at_w : w, in ? 16 : 0);
        }
        c += SLICE;
        if (c >= C) {
            c = 0;
            if (++s == S) {
                s = 0;
                ++r;
            }
        }
    }
};

// Slices of the reduction: every tap, C in whole slices of `slice` channels (the last one zero-filled past C).
__device__ __forceinline__ int implicit_slices(int C, int R, int S, int slice)
{
    return R * S * ((C + slice - 1) / slice);
}

// The block's TILE_M × TILE_N output tile, already rounded and staged in shared memory (row stride LD elements),
// written to y (an M × K row-major matrix in NHWC) in whole 16-byte chunks of rows: every store coalesced; element by
// element only where K is not a multiple of 8 (rows not 16-byte aligned) or at the last partial chunk.
template <typename T, int TILE_M, int TILE_N, int LD, int NTHREADS>
__device__ __forceinline__ void store_staged_tile(const T* Cs, T* __restrict__ y, int m0, int n0, int M, int K,
                                                  int thread)  // 0 .. NTHREADS − 1: this thread's place among them
{
    const bool whole_rows = K % 8 == 0;
    for (int v = thread; v < TILE_M * (TILE_N / 8); v += NTHREADS) {
        const int row = v / (TILE_N / 8), k = n0 + (v % (TILE_N / 8)) * 8, m = m0 + row;
        if (m >= M || k >= K) continue;
        const T* src = Cs + row * LD + (k - n0);
        T* dst = y + (size_t)m * K + k;
        if (whole_rows && k + 8 <= K) {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
        } else {
            for (int e = 0; e < 8 && k + e < K; ++e) dst[e] = src[e];
        }
    }
}
