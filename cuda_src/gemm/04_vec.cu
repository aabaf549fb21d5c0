// Register-tiled GEMM with 128-bit global loads: C[M,N] = A[M,K] · B[K,N], row-major float32.
//
// gemm_tiled's kernel (register_tile.cuh) with one change: tiles that lie wholly inside aligned matrices are
// staged with float4 loads, a quarter of the load instructions. A is read four k at a time along its rows
// and transposed into shared memory as it is stored (As[k][m], so that the multiply reads a thread's rows
// as float4s); B is copied row by row as float4s. Edge tiles, and matrices whose rows are not 16-byte aligned
// (K or N not a multiple of 4), take the element-wise path.

#include "../include/register_tile.cuh"

#ifndef BM
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2  // the float4 staging costs registers: without a cap ptxas takes 139 and one block fits per SM
#endif

using Tile = RegisterTile<BM, BN, BK, TM, TN>;
static_assert(BK % 4 == 0 && BN % 4 == 0, "float4 staging");

extern "C" __global__ void __launch_bounds__(Tile::THREADS, MIN_BLOCKS)
gemm_vec(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    A += (size_t)row0 * K;
    B += col0;
    C += (size_t)row0 * N + col0;
    const int m_left = M - row0, n_left = N - col0;
    const bool aligned = K % 4 == 0 && N % 4 == 0;
    auto a_at = [&](int m, int k) { return (m < m_left && k < K) ? A[(size_t)m * K + k] : 0.0f; };
    auto b_at = [&](int k, int n) { return (k < K && n < n_left) ? B[(size_t)k * N + n] : 0.0f; };

    Tile tile;
    tile.run_staged(
        K, m_left, n_left,
        [&](float (*As)[Tile::A_STRIDE], float (*Bs)[BN], int k0) {
            if (!(aligned && m_left >= BM && n_left >= BN && k0 + BK <= K)) {
                tile.stage(As, Bs, k0, a_at, b_at);
                return;
            }
            for (int v = threadIdx.x; v < BM * BK / 4; v += Tile::THREADS) {
                const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
                const float4 x = *reinterpret_cast<const float4*>(A + (size_t)m * K + k0 + k);
                As[k][m] = x.x; As[k + 1][m] = x.y; As[k + 2][m] = x.z; As[k + 3][m] = x.w;
            }
            for (int v = threadIdx.x; v < BK * BN / 4; v += Tile::THREADS) {
                const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
                *reinterpret_cast<float4*>(&Bs[k][n]) = *reinterpret_cast<const float4*>(B + (size_t)(k0 + k) * N + n);
            }
        },
        [&](int m, int n, float v) { C[(size_t)m * N + n] = v; });
}
