// GEMM straight from global memory: C[M,N] = A[M,K] · B[K,N], row-major float32.
//
// One thread per element of C. threadIdx.x runs along a row of C, so the threads of a warp read consecutive
// floats of a row of B (coalesced) and the same element of A (a broadcast), and write consecutive floats of C.
// When BLOCK is not a multiple of 32 a warp spans several rows of C and loses part of that coalescing: the
// lab's block-size axis shows the cost. Every operand byte is re-read from L2/DRAM K times; nothing is reused
// on chip except what the caches happen to keep.

#ifndef BLOCK
#define BLOCK 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
gemm_global(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    if (row >= M || col >= N) return;

    const float* a = A + (size_t)row * K;
    const float* b = B + col;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(a[k], b[(size_t)k * N], acc);
    C[(size_t)row * N + col] = acc;
}
