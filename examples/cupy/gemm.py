"""A CuPy RawKernel GEMM for gpubench: C[M,N] = A[M,K] · B[K,N], row-major FP32, on CuPy arrays (the default for a
.py variant on the cuda backend).

Each block computes a BM × BN tile of C: its threads stage a BK-deep slice of A (stored transposed, so that a thread
reads its column of A as consecutive words) and of B in shared memory, and each thread accumulates a TM × TN
register tile from them. The tile sizes come from the spec's configurations (`configs`) as keyword arguments and
reach nvcc as -D defines; CuPy compiles each configuration once, on its first call, which gpubench times on its own
(details.first_call_ms) before it verifies and times the kernel.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TN))
gemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float As[BK][BM];  // A's slice, transposed: As[k][m]
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN);  // this thread's column of register tiles ...
    const int ty = threadIdx.x / (BN / TN);  // ... and its row
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS) {  // consecutive threads: consecutive k, one row of A
            const int m = i / BK, k = i % BK, gm = row0 + m, gk = k0 + k;
            As[k][m] = gm < M && gk < K ? A[(size_t)gm * K + gk] : 0.0f;
        }
        for (int i = threadIdx.x; i < BK * BN; i += THREADS) {  // consecutive threads: consecutive columns of B
            const int k = i / BN, n = i % BN, gk = k0 + k, gn = col0 + n;
            Bs[k][n] = gk < K && gn < N ? B[(size_t)gk * N + gn] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gm = row0 + ty * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gn = col0 + tx * TN + j;
            if (gm < M && gn < N) C[(size_t)gm * N + gn] = acc[i][j];
        }
    }
}
"""

_kernels: dict[tuple, cp.RawKernel] = {}


def gemm_tiled(A, B, C, M, N, K, BM, BN, BK, TM, TN):
    key = (BM, BN, BK, TM, TN)
    if key not in _kernels:
        defines = tuple(f"-D{name}={value}" for name, value in zip(("BM", "BN", "BK", "TM", "TN"), key))
        _kernels[key] = cp.RawKernel(SOURCE, "gemm_tiled", options=("-std=c++17", *defines))
    threads = (BM // TM) * (BN // TN)
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    _kernels[key](grid, (threads,), (A, B, C, np.int32(M), np.int32(N), np.int32(K)))
    return {"threads": threads, "grid": list(grid)}
