// FP32 (FFMA) GEMM fed by TMA, warp-specialised and persistent: C[M,N] = A[M,K] · B[K,N], row-major float32,
// M and N multiples of 4 (TMA needs 16-byte row strides), any K.
//
// The arithmetic is `tuned`'s (gemm/05_warptile.cu at its tuned tile): a 256×128 block tile, 128×32 warp tiles,
// 16×8 accumulators a thread, read as float4 groups 32 rows and 16 columns apart from k-major tiles of A and B.
// What changes is who moves the data. `tuned`'s 256 threads each load a share of the next slice into 24
// registers, store it to shared memory (A transposed on the way) and meet at a barrier every slice; the profile
// showed two warps per scheduler at 253 registers with a quarter of the issue slots empty. Here:
//  * a `before` step transposes A into the workspace At (K × M), so that both operands are k-major in memory
//    and TMA copies their k-rows as they are (tensor maps without swizzle: plain rows of 1 KB and 512 bytes,
//    the layout the float4 reads want, conflict-free and addressed by immediate offsets);
//  * one producer warp issues two tensor copies per slot into a ring of STAGES slots (full/empty mbarriers);
//  * the eight consumer warps keep no staging registers and issue no global loads, shared-memory stores or
//    block-wide barriers: each waits on "slot full", multiplies, and arrives on "slot free";
//  * persistent blocks (grid = min(tiles, SMs)) walk the tiles gridDim apart, so the producer loads the next
//    tile while the consumers store this one.
// Nine warps split unevenly over the SM's four schedulers, whose register files are separate: three warps on
// one of them cap every thread at 168 registers, which this kernel needs (no spills). Reading A as it is
// instead (128-byte swizzle, a float4 of 4 k steps per row) needs about 200, so a producer warpgroup handing
// registers over with setmaxnreg; that version (commit 0ce2412) measured 2-3% slower than this one with its
// transpose. So did a producer warpgroup that transposes A itself on its way into shared memory, with no
// workspace (commit 86ff097, 2% slower; with two slices of loads in flight, 607aeda, 20% slower).
//
// Compile-time parameters (-DNAME=value):
//   BK       k per slot (16 or 32): STAGES · BK · 384 · 4 bytes of shared memory.
//   STAGES   slots in the ring (2 or more).
//   SWIZZLE  0: tiles in row-major order; G > 0: bands of G tile rows (gemm_common.cuh's tile_coords).
// Launch: 1-D grid of at most one block per SM (more are correct, one tile each), block (288, 1, 1): eight
// consumer warps, then the producer warp. Tensor maps: map_at over At (K × M) in boxes of BK × 256, map_b over B
// (K × N) in boxes of BK × 128, both unswizzled; the copy engine zero-fills the ragged edges.

#include "../include/gemm_common.cuh"  // tile_coords, outer_product, store_thread_tile
#include "../include/hopper.cuh"       // mbarriers, TensorMap, tma_load_2d

#ifndef BK
#define BK 16
#endif
#ifndef STAGES
#define STAGES 6
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif

static_assert(BK == 16 || BK == 32, "BK: 16 or 32");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");

constexpr int BM = 256, BN = 128, WM = 128, WN = 32, TM = 16, TN = 8;
constexpr int WARPS_N = BN / WN, CONSUMER_WARPS = (BM / WM) * WARPS_N;  // 4 × 2 warps of 32 thread tiles
constexpr int THREADS = 32 * (CONSUMER_WARPS + 1);                       // + the producer warp
constexpr int TX = WN / TN, TY = WM / TM;                                 // a warp's threads along N and M
constexpr int A_SLOT = BK * BM * 4, SLOT = A_SLOT + BK * BN * 4;          // bytes: At rows, then B rows
static_assert(TX * TY == 32, "a warp tile holds exactly 32 thread tiles");

// At[k][m] = A[m][k], 64 × 64 at a time through a tile padded to 65 columns (two-way bank conflicts at most):
// each thread reads 4 float4s along A's rows and writes 4 float4s along At's, so a block keeps 16 KB in flight.
// Grid (ceil(K/64), ceil(M/64)), block 256. (A 32 × 32 version with one float per load and store took 66 µs at
// 4096², 65% of the copy bandwidth.)
extern "C" __global__ void __launch_bounds__(256) transpose_a(const float* __restrict__ A, float* __restrict__ At,
                                                              int M, int K)
{
    __shared__ float tile[64][65];
    const int k0 = blockIdx.x * 64, m0 = blockIdx.y * 64, tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const bool vec = K % 4 == 0 && M % 4 == 0;  // float4 rows (A's and At's rows start on 16 bytes)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int m = m0 + ty + 16 * j, k = k0 + 4 * tx;
        float v[4] = {0.f, 0.f, 0.f, 0.f};
        if (vec && m < M && k + 3 < K) {
            const float4 f = *reinterpret_cast<const float4*>(A + (size_t)m * K + k);
            v[0] = f.x; v[1] = f.y; v[2] = f.z; v[3] = f.w;
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
                if (m < M && k + q < K) v[q] = A[(size_t)m * K + k + q];
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) tile[ty + 16 * j][4 * tx + q] = v[q];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int k = k0 + ty + 16 * j, m = m0 + 4 * tx;
        const float v[4] = {tile[4 * tx][ty + 16 * j], tile[4 * tx + 1][ty + 16 * j], tile[4 * tx + 2][ty + 16 * j],
                            tile[4 * tx + 3][ty + 16 * j]};
        store_row4(At, M, K, k, m, v, vec);  // row k of At (K × M), columns m .. m+3, clipped
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_fp32_tma(const TensorMap* __restrict__ map_at, const TensorMap* __restrict__ map_b, float* __restrict__ C,
              int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;  // TMA writes boxes to 128-byte aligned addresses
    const uint32_t slots = raw + pad, bars = slots + STAGES * SLOT;
    const uint8_t* const slot_ptr = smem_raw + pad;     // the same slots, for ordinary loads
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its slice"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer warp is done with slot s"

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, slices = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the copy engine
    }
    __syncthreads();

    // Both roles count slots with `it` from one tile to the next: slot it % STAGES, phase (it / STAGES) & 1.
    if (warp == CONSUMER_WARPS) {
        // ---- producer: one lane keeps the ring full ----
        if (lane == 0) {
            tma_acquire(map_at);
            tma_acquire(map_b);
            uint32_t it = 0;
            for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
                int tile_m, tile_n;
                tile_coords<SWIZZLE>(tile, tiles_m, tiles_n, tile_m, tile_n);
                for (int t = 0; t < slices; ++t, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(empty(s), ((it / STAGES) & 1) ^ 1);
                    mbar_expect_bytes(full(s), SLOT);
                    tma_load_2d(slots + s * SLOT, map_at, tile_m * BM, t * BK, full(s));
                    tma_load_2d(slots + s * SLOT + A_SLOT, map_b, tile_n * BN, t * BK, full(s));
                }
            }
        }
        return;
    }

    // ---- consumers: warp tile (warp / 4, warp % 4), thread tile (lane / 4, lane % 4) ----
    const int wm0 = (warp / WARPS_N) * WM + (lane / TX) * 4;  // this thread's first row ...
    const int wn0 = (warp % WARPS_N) * WN + (lane % TX) * 4;  // ... and column in the block tile
    uint32_t it = 0;
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        int tile_m, tile_n;
        tile_coords<SWIZZLE>(tile, tiles_m, tiles_n, tile_m, tile_n);
        float acc[TM][TN] = {};
        for (int t = 0; t < slices; ++t, ++it) {
            const int s = it % STAGES;
            mbar_wait(full(s), (it / STAGES) & 1);
            const float* As = reinterpret_cast<const float*>(slot_ptr + s * SLOT);
            const float* Bs = reinterpret_cast<const float*>(slot_ptr + s * SLOT + A_SLOT);
#pragma unroll
            for (int k = 0; k < BK; ++k)
                outer_product<TM, TN, WM / (TM / 4), WN / (TN / 4)>(acc, As + k * BM + wm0, Bs + k * BN + wn0);
            __syncwarp();  // every lane's reads of the slot are done (their FMAs above consumed them)
            if (lane == 0) mbar_arrive(empty(s));
        }
        store_thread_tile<TM, TN, WM / (TM / 4), WN / (TN / 4)>(C, N, M, tile_m * BM + wm0, tile_n * BN + wn0, acc,
                                                                true);
    }
}
