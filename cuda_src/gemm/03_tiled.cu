// Register-tiled GEMM: C[M,N] = A[M,K] · B[K,N], row-major float32 (register_tile.cuh explains the tiling).
//
// Tile sizes are compile-time constants (-DBM=... -DBN=... -DBK=... -DTM=... -DTN=...) so that the
// accumulators are registers and every loop over them unrolls.
//
// tiled_product is also the GEMM of conv/02_im2col.cu, which includes this file.

#include "../include/register_tile.cuh"

#ifndef BM
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#endif

using Tile = RegisterTile<BM, BN, BK, TM, TN>;

__device__ __forceinline__ void tiled_product(const float* __restrict__ A, const float* __restrict__ B,
                                              float* __restrict__ C, int M, int N, int K)
{
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    A += (size_t)row0 * K;
    B += col0;
    C += (size_t)row0 * N + col0;
    const int m_left = M - row0, n_left = N - col0;
    Tile tile;
    tile.run(
        K, m_left, n_left,
        [&](int m, int k) { return (m < m_left && k < K) ? A[(size_t)m * K + k] : 0.0f; },
        [&](int k, int n) { return (k < K && n < n_left) ? B[(size_t)k * N + n] : 0.0f; },
        [&](int m, int n, float v) { C[(size_t)m * N + n] = v; });
}

extern "C" __global__ void __launch_bounds__(Tile::THREADS)
gemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    tiled_product(A, B, C, M, N, K);
}
