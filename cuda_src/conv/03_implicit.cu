// Implicit-GEMM convolution, NCHW float32: the GEMM of im2col without the column matrix in memory.
//
// GEMM_M = K (output channels), GEMM_N = N·OH·OW (output pixels of all images), GEMM_K = C·R·S. A is the
// filter tensor as stored (K rows of C·R·S); B's element (crs, col) is read from the input through the im2col
// index mapping while staging the tile, zero in the padding. The register tiling is gemm_tiled's
// (register_tile.cuh); only the B loader and the NCHW epilogue differ.

#include "../include/register_tile.cuh"

#ifndef BM
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#endif

using Tile = RegisterTile<BM, BN, BK, TM, TN>;

extern "C" __global__ void __launch_bounds__(Tile::THREADS)
conv_implicit(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, int C, int H,
              int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    const int P = OH * OW, RS = R * S, CRS = C * RS;
    const int cols = N * P;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int m_left = K - row0, n_left = cols - col0;
    const float* wb = w + (size_t)row0 * CRS;

    Tile tile;
    tile.run(
        CRS, m_left, n_left,
        [&](int m, int k) { return (m < m_left && k < CRS) ? wb[(size_t)m * CRS + k] : 0.0f; },
        [&](int k, int n) {
            const int col = col0 + n;
            if (k >= CRS || col >= cols) return 0.0f;
            const int img = col / P, p = col % P;
            const int c = k / RS, r = (k % RS) / S, s = k % S;
            const int ih = (p / OW) * stride - pad + r, iw = (p % OW) * stride - pad + s;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) return 0.0f;
            return x[(((size_t)img * C + c) * H + ih) * W + iw];
        },
        [&](int m, int n, float v) {
            const int col = col0 + n, img = col / P, p = col % P;
            y[((size_t)img * K + row0 + m) * P + p] = v;
        });
}
