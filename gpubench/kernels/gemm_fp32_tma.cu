// FP32 (FFMA) GEMM fed by TMA, warp-specialised and persistent: C[M,N] = A[M,K] · B[K,N], row-major float32,
// K and N multiples of 4 (TMA needs 16-byte row strides), any M.
//
// The arithmetic is `tuned`'s (gemm_warptile.cu): a 256×128 block tile, 128 accumulators a thread, 6 float4 reads
// of shared memory per k step. What changes is who moves the data. `tuned`'s 256 threads each load a share of
// the next slice into 24 registers, store it to shared memory (A transposed on the way) and meet at a barrier
// every slice; the profile showed two warps per scheduler at 253 registers and a quarter of the issue slots
// empty. Here:
//  * one thread of a producer warpgroup issues two tensor copies per slot into a ring of STAGES slots
//    (full/empty mbarriers); the warpgroup hands its registers to the consumers with setmaxnreg (a whole
//    warpgroup, because the register file is split between the SM's four schedulers: a ninth warp alone would
//    cap every warp at 168 registers, and the consumers need about 200);
//  * the eight consumer warps keep no staging registers and issue no global loads, shared-memory stores or
//    block-wide barriers: each waits on "slot full", multiplies, and arrives on "slot free";
//  * persistent blocks (grid = min(tiles, SMs)) walk the tiles gridDim apart, so the producer loads the next
//    tile while the consumers store this one.
//
// A stays as it is in memory: a slot holds A's 256 rows × 32 k as 128-byte rows in TMA's 128-byte swizzle (the
// 16-byte chunk of k/4 sits at chunk (k/4) ^ (row % 8)), and B's 32 k-rows × 128 columns as plain 512-byte rows.
// A thread reads one float4 of A per row for 4 k steps at once: its 8 rows are 8 apart (rows ty, ty+8, ...), so
// the 8 rows a warp reads together have 8 different (row % 8) and their chunks fall in 8 different bank groups.
// Per 4 k steps a thread reads 8 float4s of A and 4 × 4 of B, as `tuned` reads 6 per k step, and holds 32 floats
// of A. (Transposing A into a workspace first, so that both operands are k-major, measured 2.3% slower at 4096:
// the transpose.)
//
// Compile-time parameters (-DNAME=value):
//   STAGES   slots in the ring (2 to 4): STAGES · 48 KB of shared memory.
//   SWIZZLE  0: tiles in row-major order; G > 0: bands of G tile rows (gemm_common.cuh's tile_coords).
// Thread tiles: TM = 8 rows (8 apart) × TN = 16 columns (4 float4 groups 16 apart); warp tiles 64 × 64; 4 × 2 warps.
// Launch: 1-D grid of at most one block per SM (more are correct), block (384, 1, 1): eight consumer warps, then the
// producer warpgroup. Tensor maps: map_a over A (M × K) in boxes of 256 × 32, 128-byte swizzle; map_b over B (K × N)
// in boxes of 32 × 128, unswizzled; the copy engine zero-fills the ragged edges.

#include "gemm_common.cuh"  // tile_coords, store_row4
#include "hopper.cuh"       // mbarriers, TensorMap, tma_load_2d

#ifndef STAGES
#define STAGES 4
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif

static_assert(STAGES >= 2 && STAGES <= 4, "STAGES: 2 to 4 slots of 48 KB");

constexpr int BM = 256, BN = 128, BK = 32, WM = 64, WN = 64, TM = 8, TN = 16;
constexpr int WARPS_N = BN / WN, CONSUMER_WARPS = (BM / WM) * WARPS_N;  // 4 × 2 warps of 32 thread tiles
constexpr int THREADS = 32 * CONSUMER_WARPS + 128;                      // + the producer warpgroup
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // setmaxnreg: 128·40 + 256·232 ≤ 64K
constexpr int A_SLOT = BM * BK * 4, SLOT = A_SLOT + BK * BN * 4;          // bytes: A's rows, then B's k-rows
static_assert((WM / TM) * (WN / TN) * 4 == 32 * 4 && WM / TM == 8, "a warp: 8 thread rows × 4 thread columns");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_fp32_tma(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b, float* __restrict__ C,
              int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;  // the swizzle repeats every 1024 bytes: align the slots
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
    if (warp >= CONSUMER_WARPS) {
        // ---- producer: one thread keeps the ring full ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == CONSUMER_WARPS && lane == 0) {
            tma_acquire(map_a);
            tma_acquire(map_b);
            uint32_t it = 0;
            for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
                int tile_m, tile_n;
                tile_coords<SWIZZLE>(tile, tiles_m, tiles_n, tile_m, tile_n);
                for (int t = 0; t < slices; ++t, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(empty(s), ((it / STAGES) & 1) ^ 1);
                    mbar_expect_bytes(full(s), SLOT);
                    tma_load_2d(slots + s * SLOT, map_a, t * BK, tile_m * BM, full(s));
                    tma_load_2d(slots + s * SLOT + A_SLOT, map_b, tile_n * BN, t * BK, full(s));
                }
            }
        }
        return;
    }

    // ---- consumers: warp tile (warp / 2, warp % 2); thread (ty, tx) = (lane / 4, lane % 4) ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int ty = lane / 4, tx = lane % 4;
    const int wm0 = (warp / WARPS_N) * WM + ty;      // this thread's rows: wm0 + 8i
    const int wn0 = (warp % WARPS_N) * WN + 4 * tx;  // its columns: wn0 + 16g .. + 3
    uint32_t it = 0;
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        int tile_m, tile_n;
        tile_coords<SWIZZLE>(tile, tiles_m, tiles_n, tile_m, tile_n);
        float acc[TM][TN] = {};
        for (int t = 0; t < slices; ++t, ++it) {
            const int s = it % STAGES;
            mbar_wait(full(s), (it / STAGES) & 1);
            const uint8_t* As = slot_ptr + s * SLOT + wm0 * 128;  // row wm0 of A; rows wm0 + 8i are 1 KB apart
            const float* Bs = reinterpret_cast<const float*>(slot_ptr + s * SLOT + A_SLOT) + wn0;
#pragma unroll
            for (int k4 = 0; k4 < BK / 4; ++k4) {
                float4 a[TM];  // a[i] = A(row wm0 + 8i, k 4·k4 .. 4·k4 + 3)
                const int chunk = (k4 ^ ty) << 4;  // row % 8 == ty for every row of this thread
#pragma unroll
                for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(As + i * 1024 + chunk);
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
                    float b[TN];
#pragma unroll
                    for (int g = 0; g < TN / 4; ++g) {
                        const float4 v = *reinterpret_cast<const float4*>(Bs + (4 * k4 + kk) * BN + 16 * g);
                        b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
                    }
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        const float ai = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
#pragma unroll
                        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ai, b[j], acc[i][j]);
                    }
                }
            }
            __syncwarp();  // every lane's reads of the slot are done (their FMAs above consumed them)
            if (lane == 0) mbar_arrive(empty(s));
        }
        const int row0 = tile_m * BM + wm0, col0 = tile_n * BN + wn0;
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float v[4] = {acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]};
                store_row4(C, N, M, row0 + 8 * i, col0 + 16 * g, v, true);
            }
    }
}
