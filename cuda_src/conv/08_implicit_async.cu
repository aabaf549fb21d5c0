// Implicit-GEMM convolution on the cp.async pipeline (async_tile.cuh), for layers with many channels.
//
// GEMM_M = K (filters), GEMM_N = N·OH·OW (output pixels), GEMM_K = C·R·S, as in conv/03_implicit.cu; what
// changes is how B's elements are found. Instead of dividing k into (c, r, s) and a column into (image,
// oh, ow) for every element of every slice:
//  * each thread always stages the same four output pixels (THREADS is a multiple of BN/4), so their image
//    base, first input row and first input column are computed once, before the main loop;
//  * a table in shared memory maps k to its input offset (c·H + r)·W + s and its (r, s), built once per block,
//    so an element's address is base + table[k] and its bounds check two compares.
// Elements in the padding are zero-filled by cp.async; filters (A) are copied 16 bytes at a time when C·R·S
// is a multiple of 4. Output is written NCHW, 16 bytes at a time where OH·OW is a multiple of 4.

#include "../include/async_tile.cuh"

#ifndef BM
#define BM 128
#define BN 128
#define BK 16
#define WM 64
#define WN 32
#define TM 8
#define TN 8
#define STAGES 3
#define SWIZZLE 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

using Tile = AsyncTile<BM, BN, BK, WM, WN, TM, TN, STAGES>;
static_assert(Tile::THREADS % (BN / 4) == 0, "each thread must keep the same four columns in every slice");

extern "C" __global__ void __launch_bounds__(Tile::THREADS, MIN_BLOCKS)
conv_implicit_async(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, int C,
                    int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ __align__(16) float smem[];  // the ring, then the k table (offset, r<<16 | s) × C·R·S
    const int P = OH * OW, RS = R * S, CRS = C * RS, cols = N * P;
    int tile_m, tile_n;
    tile_coords<SWIZZLE>((K + BM - 1) / BM, (cols + BN - 1) / BN, tile_m, tile_n);
    const int row0 = tile_m * BM, col0 = tile_n * BN;

    int2* table = reinterpret_cast<int2*>(smem + STAGES * Tile::SLOT_FLOATS);
    for (int k = threadIdx.x; k < CRS; k += Tile::THREADS) {
        const int c = k / RS, r = (k % RS) / S, s = k % S;
        table[k] = make_int2((c * H + r) * W + s, (r << 16) | s);
    }

    // The four output pixels this thread stages, fixed for the whole loop.
    const int n4 = (threadIdx.x % (BN / 4)) * 4;
    long long base[4];
    int ih0[4], iw0[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int col = col0 + n4 + q;
        const int img = col / P, p = col % P;
        ih0[q] = (p / OW) * stride - pad;
        iw0[q] = (p % OW) * stride - pad;
        base[q] = col < cols ? (long long)img * C * H * W + (long long)ih0[q] * W + iw0[q] : 0;
        if (col >= cols) ih0[q] = -(1 << 20);  // fails every bounds check below: a zero column
    }
    __syncthreads();  // the table is complete

    Tile tile;
    tile.run(smem, CRS, [&](float* As, float* Bs, int k0) {
        copy_window<BM, BK, Tile::THREADS>(As, Tile::A_LD, w + (size_t)row0 * CRS + k0, CRS, K - row0, CRS - k0,
                                           CRS % 4 == 0);
        for (int v = threadIdx.x; v < BK * BN / 4; v += Tile::THREADS) {
            const int kk = v / (BN / 4), k = k0 + kk;
            const int2 e = k < CRS ? table[k] : make_int2(0, -(1 << 30));
            const int r = e.y >> 16, s = e.y & 0xffff;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool in = k < CRS && (unsigned)(ih0[q] + r) < (unsigned)H && (unsigned)(iw0[q] + s) < (unsigned)W;
                cp_async4(Bs + kk * BN + n4 + q, in ? x + base[q] + e.x : x, in ? 4 : 0);
            }
        }
    });

    const bool vec = P % 4 == 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int k = row0 + tile.row(i);
        if (k >= K) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const int col = col0 + tile.col(g);
            if (vec && col + 3 < cols) {  // four pixels of one image: one 16-byte store
                const int img = col / P, p = col % P;
                *reinterpret_cast<float4*>(y + ((size_t)img * K + k) * P + p) =
                    make_float4(tile.acc[i][4 * g], tile.acc[i][4 * g + 1], tile.acc[i][4 * g + 2], tile.acc[i][4 * g + 3]);
                continue;
            }
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (col + j < cols) {
                    const int img = (col + j) / P, p = (col + j) % P;
                    y[((size_t)img * K + k) * P + p] = tile.acc[i][4 * g + j];
                }
        }
    }
}
