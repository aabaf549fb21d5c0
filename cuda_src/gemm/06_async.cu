// Warp-tiled GEMM with a multi-stage cp.async pipeline: C[M,N] = A[M,K] · B[K,N], row-major float32.
// The main loop and its layouts are async_tile.cuh's; this file stages A and B and writes C.
//
// SWIZZLE > 0 orders the tiles in bands for L2 reuse (gemm_common.cuh tile_coords); MIN_BLOCKS asks the
// register allocator to fit that many blocks per SM.

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

extern "C" __global__ void __launch_bounds__(Tile::THREADS, MIN_BLOCKS)
gemm_async(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    int tile_m, tile_n;
    tile_coords<SWIZZLE>((M + BM - 1) / BM, (N + BN - 1) / BN, tile_m, tile_n);
    const int row0 = tile_m * BM, col0 = tile_n * BN;
    const bool aligned = K % 4 == 0 && N % 4 == 0;

    Tile tile;
    tile.run(smem, K, [&](float* As, float* Bs, int k0) {
        copy_window<BM, BK, Tile::THREADS>(As, Tile::A_LD, A + (size_t)row0 * K + k0, K, M - row0, K - k0, aligned);
        copy_window<BK, BN, Tile::THREADS>(Bs, BN, B + (size_t)k0 * N + col0, N, K - k0, N - col0, aligned);
    });

    tile.store(C, N, M, row0, col0, N % 4 == 0);
}
