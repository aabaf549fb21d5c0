// A slowdown planted on purpose, for `gpubench ab` to find (tools/gpu/micro.sh).
//
// The lab's naive GEMM, C[M,N] = A[M,K] * B[K,N] (gpubench's argument order: --args A,B,C,M,N,K), one thread per
// output, B x B blocks (-DBLOCK_SIZE, the --kernel machinery's launch). With PLANT_CYCLES > 0, the first thread
// of every block first waits that many SM clock cycles (clock64), then the block computes as usual: each block
// lasts that much longer, so the call does by a calibrated share. A file that includes this header sets
// PLANT_CYCLES before it (0: the kernel as it is; micro.sh writes the A and B files).
#ifndef PLANT_CYCLES
#define PLANT_CYCLES 0
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE * BLOCK_SIZE)
planted_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
#if PLANT_CYCLES > 0
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        long long start = clock64();
        while (clock64() - start < (long long)PLANT_CYCLES) {
        }
    }
    __syncthreads();
#endif
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        }
        C[(size_t)row * N + col] = acc;
    }
}
