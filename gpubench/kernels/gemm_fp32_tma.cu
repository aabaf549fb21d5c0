// FP32 (FFMA) GEMM, warp-specialised and persistent: C[M,N] = A[M,K] · B[K,N], row-major float32, N a multiple
// of 4 (TMA needs 16-byte row strides for B), any M and K.
//
// The arithmetic is `tuned`'s (gemm_warptile.cu at its tuned tile): a 256×128 block tile, 128×32 warp tiles,
// 16×8 accumulators a thread, read as float4 groups 32 rows and 16 columns apart from k-major tiles of A and B.
// What changes is who moves the data. `tuned`'s 256 threads each load a share of the next slice into 24
// registers, store it to shared memory (A transposed on the way) and meet at a barrier every slice; the profile
// showed two warps per scheduler at 253 registers with a quarter of the issue slots empty. Here a producer
// warpgroup moves the data and eight consumer warps only multiply:
//  * B's k-rows arrive by TMA (one tensor copy per slot, unswizzled: plain 512-byte rows);
//  * A is transposed on its way into shared memory by the producer warpgroup: 8 float4 loads along A's rows and
//    32 stores per thread and slot, the next slot's loads in flight meanwhile (TMA copies but does not
//    transpose 4-byte elements);
//  * a ring of STAGES slots with full/empty mbarriers; the consumers keep no staging registers and issue no
//    global loads, shared-memory stores or block-wide barriers: each waits on "slot full", multiplies, and
//    arrives on "slot free";
//  * persistent blocks (grid = min(tiles, SMs)) walk the tiles gridDim apart, so the producers load the next
//    tile while the consumers store this one.
// Two versions measured before this one, both correct, are in the history: A transposed into a workspace by a
// `before` kernel and copied by TMA too (commit 659477d: the transpose took 2% of the call at 4096), and A read as
// it is in a 128-byte swizzle, 4 k steps per float4, with a register-hungry thread tile (commit 0ce2412: 2-3%
// slower). 384 threads × 168 registers fill the register file; no setmaxnreg is needed.
//
// Compile-time parameters (-DNAME=value):
//   STAGES   slots in the ring (2 or more): STAGES · 24,832 bytes of shared memory.
//   SWIZZLE  0: tiles in row-major order; G > 0: bands of G tile rows (gemm_common.cuh's tile_coords).
// Launch: 1-D grid of at most one block per SM (more are correct, one tile each), block (384, 1, 1): eight
// consumer warps, then the producer warpgroup. Tensor map: map_b over B (K × N) in boxes of 16 × 128, unswizzled;
// the copy engine zero-fills its ragged edges.

#include "gemm_common.cuh"  // tile_coords, store_row4
#include "hopper.cuh"       // mbarriers, TensorMap, tma_load_2d

#ifndef STAGES
#define STAGES 6
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif

static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");

constexpr int BM = 256, BN = 128, BK = 16, WM = 128, WN = 32, TM = 16, TN = 8;
constexpr int WARPS_N = BN / WN, CONSUMER_WARPS = (BM / WM) * WARPS_N;  // 4 × 2 warps of 32 thread tiles
constexpr int PRODUCERS = 128, THREADS = 32 * CONSUMER_WARPS + PRODUCERS;
constexpr int TX = WN / TN, TY = WM / TM;                                 // a warp's threads along N and M
// A transposed: BK rows of BM floats padded by 4, so that a warp's transposed stores meet at most two to a bank
// and rows stay 16-byte aligned. B's rows follow at a 128-byte boundary (16,640 = 130 · 128), as TMA wants.
constexpr int A_LD = BM + 4, A_SLOT = BK * A_LD * 4, B_SLOT = BK * BN * 4, SLOT = A_SLOT + B_SLOT;
constexpr int A_VECS = BM * BK / 4 / PRODUCERS;  // float4s of A per producer thread and slot (8)
static_assert(TX * TY == 32, "a warp tile holds exactly 32 thread tiles");
static_assert(A_SLOT % 128 == 0, "B's slot must start on 128 bytes");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_fp32_tma(const float* __restrict__ A, const TensorMap* __restrict__ map_b, float* __restrict__ C, int M, int N,
              int K)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;  // TMA writes boxes to 128-byte aligned addresses
    const uint32_t slots = raw + pad, bars = slots + STAGES * SLOT;
    uint8_t* const slot_ptr = smem_raw + pad;           // the same slots, for ordinary loads and stores
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its slice"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer warp is done with slot s"

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, slices = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full(s), 1 + PRODUCERS / 32);  // B's copy (with its bytes), then each producer warp's stores
            mbar_init(empty(s), CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the copy engine
    }
    __syncthreads();

    // Both roles count slots with `it` from one tile to the next: slot it % STAGES, phase (it / STAGES) & 1.
    if (warp >= CONSUMER_WARPS) {
        // ---- producers: thread p loads rows 64·(p/32) + 8j + (p%32)/4 of A's slice, 4 k from 4·(p%4) ----
        // The slices of all this block's tiles in one sequence g = 0, 1, ...; slice g+1 is loaded into registers
        // while slice g waits for its slot and is stored, so each thread keeps two slices' loads in flight.
        const int p = threadIdx.x - 32 * CONSUMER_WARPS, r0 = 64 * (p / 32) + (p % 32) / 4, c = 4 * (p % 4);
        if (p == 0) tma_acquire(map_b);
        const int my_tiles = blockIdx.x < tiles_m * tiles_n ? (tiles_m * tiles_n - 1 - blockIdx.x) / gridDim.x + 1 : 0;
        const int total = my_tiles * slices;
        auto origin = [&](int g, int& m0, int& n0, int& k0) {
            int tile_m, tile_n;
            tile_coords<SWIZZLE>(blockIdx.x + (g / slices) * gridDim.x, tiles_m, tiles_n, tile_m, tile_n);
            m0 = tile_m * BM;
            n0 = tile_n * BN;
            k0 = (g % slices) * BK;
        };
        auto load = [&](int g, float4 (&v)[A_VECS]) {
            int m0, n0, k0;
            origin(g, m0, n0, k0);
            const bool fast = K % 4 == 0 && m0 + BM <= M && k0 + BK <= K;  // uniform across the warpgroup
#pragma unroll
            for (int j = 0; j < A_VECS; ++j) {
                const int m = m0 + r0 + 8 * j, k = k0 + c;
                if (fast) {
                    v[j] = *reinterpret_cast<const float4*>(A + (size_t)m * K + k);
                } else {
                    float e[4];
#pragma unroll
                    for (int q = 0; q < 4; ++q) e[q] = m < M && k + q < K ? A[(size_t)m * K + k + q] : 0.f;
                    v[j] = make_float4(e[0], e[1], e[2], e[3]);
                }
            }
        };
        auto put = [&](int g, const float4 (&v)[A_VECS]) {
            int m0, n0, k0;
            origin(g, m0, n0, k0);
            const int s = g % STAGES;
            mbar_wait(empty(s), ((g / STAGES) & 1) ^ 1);
            if (p == 0) {
                mbar_expect_bytes(full(s), B_SLOT);
                tma_load_2d(slots + s * SLOT + A_SLOT, map_b, n0, k0, full(s));
            }
            float* As = reinterpret_cast<float*>(slot_ptr + s * SLOT);
#pragma unroll
            for (int j = 0; j < A_VECS; ++j) {  // A(m, k .. k+3) → As[k .. k+3][m]
                float* dst = As + c * A_LD + r0 + 8 * j;
                dst[0] = v[j].x;
                dst[A_LD] = v[j].y;
                dst[2 * A_LD] = v[j].z;
                dst[3 * A_LD] = v[j].w;
            }
            __syncwarp();  // the warp's stores are done before its arrive releases them to the consumers
            if (lane == 0) mbar_arrive(full(s));
        };
        float4 v0[A_VECS], v1[A_VECS];
        if (total > 0) load(0, v0);
        for (int g = 0; g < total; g += 2) {  // two register sets alternate (constant indices, no local memory)
            if (g + 1 < total) load(g + 1, v1);
            put(g, v0);
            if (g + 1 < total) {
                if (g + 2 < total) load(g + 2, v0);
                put(g + 1, v1);
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
            for (int k = 0; k < BK; ++k) {
                float a[TM], b[TN];
#pragma unroll
                for (int g = 0; g < TM / 4; ++g) {
                    const float4 v = *reinterpret_cast<const float4*>(As + k * A_LD + wm0 + g * (WM / (TM / 4)));
                    a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
                }
#pragma unroll
                for (int g = 0; g < TN / 4; ++g) {
                    const float4 v = *reinterpret_cast<const float4*>(Bs + k * BN + wn0 + g * (WN / (TN / 4)));
                    b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            __syncwarp();  // every lane's reads of the slot are done (their FMAs above consumed them)
            if (lane == 0) mbar_arrive(empty(s));
        }
        const int row0 = tile_m * BM, col0 = tile_n * BN;
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float v[4] = {acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]};
                store_row4(C, N, M, row0 + wm0 + (i / 4) * (WM / (TM / 4)) + i % 4,
                           col0 + wn0 + g * (WN / (TN / 4)), v, true);
            }
    }
}
