// TF32 tensor-core GEMM for Hopper (sm_90a): C[M,N] = A[M,K] · B[K,N], row-major float32, any M, N, K ≥ 1.
//
// Hopper's warpgroup MMA (wgmma.mma_async) lets 4 warps (128 threads) drive the tensor cores as one
// asynchronous 64×n×8 matrix product, reading an operand straight from shared memory through a 64-bit
// "matrix descriptor". For TF32 both operands must be K-major (K contiguous): A is, B (K×N row-major) is not.
// So each block computes its tile of C transposed, C^T = B^T · A^T, which makes
//  * wgmma's A operand = B^T tile: loaded from shared memory into registers by ordinary loads, which can read
//    any layout, so B is staged untransposed ([k][n]) and rounded to TF32 (cvt.rna) on the way;
//  * wgmma's B operand = A^T tile: row m of A is exactly one K-major column, so A goes global → shared
//    untouched, in the 128-byte-swizzled layout that the descriptor describes.
// Accumulator row r of warpgroup g is C column n0 + 64g + r, accumulator column c is C row m0 + c.
//
// Tiles (compile-time, -DNAME=value):
//   BM      C rows per block: 128 or 256 (each wgmma is m64n128k8 along M; a thread holds BM/2 accumulators).
//   BN      C columns per block: 64 or 128, one warpgroup per 64 columns, so THREADS = 2·BN.
//   BK      K per stage; must be 32 (one A row = 128 bytes = one 128B-swizzle row).
//   STAGES  shared-memory pipeline depth, ≥ 3: while tile t is multiplied and t+1 read, tiles up to
//           t+STAGES-1 are in flight (the fit: STAGES·(A_STAGE + B_STAGE) + 1024 ≤ 227 KB).
// Launch: grid (ceil(N/BN), ceil(M/BM), 1), block (2·BN, 1, 1), dynamic shared memory
//         STAGES·(BM·BK·4 + BK·(BN+8)·4) + 1024 bytes (201,728 with the defaults: set the attribute first).
// gemm_tf32_batched is the same over blockIdx.z (A, B, C each a stride apart), the im2col convention.
//
// Accuracy: B is rounded to TF32 (round-to-nearest); A reaches the tensor cores as raw FP32 bits, of which
// they read only the TF32 part (truncation). Accumulation is FP32. Expect ||C-ref||/||ref|| ≈ 3e-4 to 1e-3.

#include "../include/hopper.cuh"  // wgmma and its descriptors, to_tf32, fence_proxy_async, the epilogue

#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 4
#endif

static_assert(BM == 128 || BM == 256, "BM: 128 or 256");
static_assert(BN == 64 || BN == 128, "BN: 64 or 128 (one warpgroup per 64; more would not fit in registers)");
static_assert(BK == 32, "BK: one 128-byte swizzle row of floats");
static_assert(STAGES >= 3, "the pipeline keeps two stages busy while it refills a third");

constexpr int THREADS = 2 * BN;                 // (BN / 64) warpgroups of 128 threads
constexpr int MI = BM / 128;                    // m64n128k8 wgmmas per 8-deep K step
constexpr int BS = BN + 8;                      // B row stride in floats (see load_frags)
constexpr int A_STAGE = BM * BK * 4;            // bytes; a multiple of 1024, so every stage is swizzle-aligned
constexpr int B_STAGE = BK * BS * 4;

// ---- PTX wrappers -------------------------------------------------------------------------------------------

// cp.async with zero-fill: `bytes` of the copy are read from global, the rest of the `size` written as 0.
__device__ __forceinline__ void cp_async16(uint32_t dst, const float* src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(uint32_t dst, const float* src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// ---- the kernel -------------------------------------------------------------------------------------------

__device__ __forceinline__ void tf32_product(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // Align the stages to 1024 bytes (the swizzle pattern repeats every 8 rows of 128 bytes) ourselves rather
    // than trusting the dynamic shared memory base: that is the 1024 spare bytes of the launch.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sA = raw + pad, sB = sA + STAGES * A_STAGE;             // shared-window addresses
    const float* Bs_all = reinterpret_cast<const float*>(smem_raw + pad + STAGES * A_STAGE);

    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32, wg = tid / 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;
    // 16-byte copies need 16-byte aligned rows; other shapes take element-wise copies (same layout, slower).
    const bool vec_a = K % 4 == 0 && (reinterpret_cast<uintptr_t>(A) & 15) == 0;
    const bool vec_b = N % 4 == 0 && (reinterpret_cast<uintptr_t>(B) & 15) == 0;

    // Issue the copies of k-tile `tile` into stage tile % STAGES; out-of-range elements are zero-filled (and
    // their source clamped to a valid address). Always commits a group, so that group i is tile i.
    auto load_tile = [&](int tile) {
        if (tile < ktiles) {
            const int k0 = tile * BK, s = tile % STAGES;
            // A tile: row r (128 bytes) holds 16-byte chunks c = k/4 at position c ^ (r % 8): the 128B swizzle.
            // Consecutive threads copy consecutive chunks of a row: coalesced reads, conflict-free writes.
            if (vec_a) {
#pragma unroll
                for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
                    const int e = tid + i * THREADS, r = e / (BK / 4), c = e % (BK / 4), m = m0 + r, k = k0 + 4 * c;
                    const bool ok = m < M && k < K;
                    cp_async16(sA + s * A_STAGE + r * 128 + ((c ^ (r & 7)) << 4), ok ? A + (size_t)m * K + k : A,
                               ok ? 16 : 0);
                }
            } else {
#pragma unroll 4
                for (int i = 0; i < BM * BK / THREADS; ++i) {
                    const int e = tid + i * THREADS, r = e / BK, kk = e % BK, m = m0 + r, k = k0 + kk;
                    const bool ok = m < M && k < K;
                    cp_async4(sA + s * A_STAGE + r * 128 + (((kk >> 2) ^ (r & 7)) << 4) + (kk & 3) * 4,
                              ok ? A + (size_t)m * K + k : A, ok ? 4 : 0);
                }
            }
            // B tile: plain [k][n] rows, BS floats apart.
            if (vec_b) {
#pragma unroll
                for (int i = 0; i < BK * BN / 4 / THREADS; ++i) {
                    const int e = tid + i * THREADS, kr = e / (BN / 4), c = e % (BN / 4), k = k0 + kr, n = n0 + 4 * c;
                    const bool ok = k < K && n < N;
                    cp_async16(sB + s * B_STAGE + (kr * BS + 4 * c) * 4, ok ? B + (size_t)k * N + n : B, ok ? 16 : 0);
                }
            } else {
#pragma unroll 4
                for (int i = 0; i < BK * BN / THREADS; ++i) {
                    const int e = tid + i * THREADS, kr = e / BN, nn = e % BN, k = k0 + kr, n = n0 + nn;
                    const bool ok = k < K && n < N;
                    cp_async4(sB + s * B_STAGE + (kr * BS + nn) * 4, ok ? B + (size_t)k * N + n : B, ok ? 4 : 0);
                }
            }
        }
        cp_async_commit();
    };

    // This thread's wgmma A fragments of k-tile `tile` (4 K steps × 4 registers), read from the [k][n] B tile.
    // A warp reads rows k = 8j + lane%4 (+4), columns n = .. + lane/4 (+8): with a row stride ≡ 8 (mod 32)
    // floats the 32 lanes hit 32 different banks.
    auto load_frags = [&](int tile, uint32_t (&f)[16]) {
        const float* Bs = Bs_all + (tile % STAGES) * (B_STAGE / 4) + 64 * wg + 16 * warp + lane / 4;
#pragma unroll
        for (int j = 0; j < BK / 8; ++j) {
            const float* p = Bs + (8 * j + lane % 4) * BS;
            f[4 * j + 0] = to_tf32(p[0]);
            f[4 * j + 1] = to_tf32(p[8]);
            f[4 * j + 2] = to_tf32(p[4 * BS]);
            f[4 * j + 3] = to_tf32(p[4 * BS + 8]);
        }
    };

    float acc[MI][64] = {};  // MI tiles of 64×128 (n × m) accumulators per warpgroup

    // One k-tile: multiply tile t (fragments `cur`), then, while those wgmmas run, wait for tile t+1, refill
    // the stage that tile t-1 used with tile t+STAGES-1 and load tile t+1's fragments into `nxt`. Two fragment
    // arrays alternate so that the registers an in-flight wgmma reads are never overwritten.
    auto step = [&](int t, const uint32_t (&cur)[16], uint32_t (&nxt)[16]) {
        const uint32_t a_tile = sA + (t % STAGES) * A_STAGE;
        wgmma_fence();  // orders the fragment loads (register writes) before the wgmmas that read them
#pragma unroll
        for (int j = 0; j < BK / 8; ++j)
#pragma unroll
            for (int i = 0; i < MI; ++i)  // rows 128i.. of the A tile (16 KB apart), bytes 32j.. of each row
                wgmma_m64n128k8(acc[i], &cur[4 * j], smem_desc(a_tile + i * 128 * 128 + j * 32));
        wgmma_commit();
        wgmma_wait<1>();  // tile t-1's wgmmas have finished reading its stage (tile t's keep running)
        if (t + 1 < ktiles) {
            cp_async_wait<STAGES - 3>();  // groups 0..t+1 complete: tile t+1 has landed
            fence_proxy_async();          // make those shared-memory writes visible to wgmma
            __syncthreads();              // ... from every thread; and all warpgroups are done with tile t-1
            load_tile(t + STAGES - 1);    // into the stage of tile t-1
            load_frags(t + 1, nxt);
        }
    };

#pragma unroll 1
    for (int t = 0; t < STAGES - 1; ++t) load_tile(t);
    cp_async_wait<STAGES - 2>();
    fence_proxy_async();
    __syncthreads();
    uint32_t f0[16], f1[16];
    load_frags(0, f0);
#pragma unroll 1
    for (int t = 0; t < ktiles; t += 2) {
        step(t, f0, f1);
        if (t + 1 < ktiles) step(t + 1, f1, f0);
    }
    wgmma_drain(acc);
    store_transposed(acc, C, M, N, m0, n0 + 64 * wg);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    tf32_product(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_tf32_batched(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                  int K, long long stride_a, long long stride_b, long long stride_c)
{
    const size_t z = blockIdx.z;
    tf32_product(A + z * stride_a, B + z * stride_b, C + z * stride_c, M, N, K);
}
