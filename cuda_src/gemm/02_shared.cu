// GEMM with shared-memory tiles: C[M,N] = A[M,K] · B[K,N], row-major float32.
//
// A BLOCK×BLOCK thread block computes a BLOCK×BLOCK tile of C. It walks K in steps of BLOCK, each step staging
// one BLOCK×BLOCK tile of A and one of B in shared memory (one element per thread, coalesced along rows), so
// every element fetched from global memory is used BLOCK times from shared memory instead of once.
// Out-of-range elements of ragged edge tiles are staged as zeros, so the inner loop needs no bounds checks.

#ifndef BLOCK
#define BLOCK 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
gemm_shared(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    // In the inner loop a warp reads one As element per row (a broadcast) and consecutive Bs elements
    // (distinct banks), so neither tile needs padding.
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float Bs[BLOCK][BLOCK];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * BLOCK + tx;
    const int row = blockIdx.y * BLOCK + ty;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();  // the next step overwrites the tiles
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
