// TF32 tensor-core GEMM for Hopper (sm_90a), fed by TMA: C[M,N] = A[M,K] · B[K,N], row-major float32,
// K and N multiples of 4 (TMA needs 16-byte row strides), any M.
//
// What it adds to gemm_tf32.cu (same product: C^T = B^T · A^T, A's rows as wgmma's K-major shared operand,
// B's fragments through registers, see there):
//  * TMA copies. One thread issues each stage as 1 + BN/32 tensor copies (the driver's CUtensorMap, built on
//    the host from the spec's `tensor_maps` and passed in global memory); the copy engine writes the 128-byte
//    swizzle and zero-fills edges, so no thread spends issue slots on address arithmetic or bounds checks.
//  * An mbarrier pipeline with warp specialisation. A producer warpgroup refills a ring of STAGES slots; the
//    consumer warpgroups only wait on "slot full", multiply and arrive on "slot free". Nothing waits on
//    __syncthreads, so one warpgroup running behind another does not stall it.
//  * Clusters with multicast (CLUSTER = 2). Two blocks side by side in N need the same BM rows of A: each one's
//    TMA loads half of them and the copy engine writes it into both blocks' shared memory, so A is requested
//    from L2 once per two blocks. (Measured on an H100: 18% fewer L2 reads, the same bytes delivered to each
//    SM, and slower; docs/perf-notes.md.)
//
// Tiles (compile-time, -DNAME=value):
//   BM       C rows per block: 128 or 256 (wgmma m64n128k8 steps along M; a consumer thread holds BM/2 floats).
//   BN       C columns per block: 64, 128 or 192, one consumer warpgroup per 64 columns. Each SM receives
//            (BM + BN)·128 bytes per k step for BM·BN·32 products: a wider block needs fewer bytes per product.
//   KSTEPS   8-deep k steps whose B fragments a consumer loads at once: 4 (a whole slot, two sets of 16
//            registers alternating) or 1 (4 registers at a time, two sets; what fits beside 3 warpgroups).
//   STAGES   slots in the ring (2 or more): STAGES·(BM·128 + BN·128) + 1024 + 16·STAGES bytes of shared memory.
//   CLUSTER  1 or 2 blocks per cluster along N, sharing the A tile by multicast.
//   SWIZZLE  0: tiles in row-major order; G > 0: bands of G tile rows (gemm_common.cuh's tile_coords, as in
//            gemm_warptile.cu), so the blocks resident together share fewer panels of B in L2.
// Launch: grid (ceil(M/BM) · CLUSTER·ceil(ceil(N/BN)/CLUSTER), 1, 1), one block per tile;
// block (2·BN + 128, 1, 1): BN/64 consumer warpgroups, then the producer warpgroup (one thread issues the copies).
// Accuracy: as gemm_tf32.cu (B rounded to TF32 on the way to registers, A truncated by the tensor cores).

#include "gemm_common.cuh"  // tile_coords
#include "hopper.cuh"

#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef KSTEPS
#define KSTEPS 4
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif

static_assert(BM == 128 || BM == 256, "BM: 128 or 256");
static_assert(BN == 64 || BN == 128 || BN == 192, "BN: 64, 128 or 192 (one consumer warpgroup per 64 columns)");
static_assert(KSTEPS == 1 || KSTEPS == 4, "KSTEPS: 1 or 4");
static_assert(SWIZZLE == 0 || CLUSTER == 1, "a cluster's blocks must be neighbours in N: row-major order only");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1 or 2");

constexpr int BK = 32;                        // k per slot: one 128-byte swizzle row of floats
constexpr int CONSUMERS = BN / 64;            // warpgroups that multiply
constexpr int THREADS = 128 * (CONSUMERS + 1); // + the producer warpgroup (setmaxnreg works per warpgroup)
// setmaxnreg: the producer keeps PRODUCER_REGS; the consumers share the rest of the 64K-register file (in
// multiples of 8, at most 240).
constexpr int PRODUCER_REGS = CONSUMERS == 3 ? 24 : 40;
constexpr int REGS_LEFT = (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;
constexpr int CONSUMER_REGS = REGS_LEFT > 240 ? 240 : REGS_LEFT;
constexpr int MI = BM / 128;                  // m64n128k8 wgmmas per 8-deep k step
constexpr int A_STAGE = BM * BK * 4;          // bytes: BM swizzled rows of 128 bytes
constexpr int B_BOX = BK * 32 * 4;            // one TMA box of B: 32 k rows × 32 columns (128 bytes, swizzled)
constexpr int B_STAGE = (BN / 32) * B_BOX;

#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
gemm_tf32_tma(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b, float* __restrict__ C,
              int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // The 128-byte swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align the
    // slots ourselves (the 1024 spare bytes of the launch) rather than trust the dynamic shared memory base.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sA = raw + pad, sB = sA + STAGES * A_STAGE, bars = sB + STAGES * B_STAGE;
    const uint8_t* b_slots = smem_raw + pad + STAGES * A_STAGE;  // the same B slots, for ordinary loads
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its tile"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer is done with slot s"

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const uint32_t rank = CLUSTER > 1 ? cluster_rank() : 0;
    int tile_m, tile_n;  // a cluster's blocks are consecutive in x: same tile row, neighbouring columns
    tile_coords<SWIZZLE>((M + BM - 1) / BM, CLUSTER * (((N + BN - 1) / BN + CLUSTER - 1) / CLUSTER), tile_m, tile_n);
    const int m0 = tile_m * BM, n0 = tile_n * BN;
    const int ktiles = (K + BK - 1) / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full(s), 1);                        // the producer's arrive (plus the bytes it announces)
            mbar_init(empty(s), CONSUMERS * CLUSTER);     // one arrive per consumer warpgroup of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the async proxy, peers
    }
    if (CLUSTER > 1)
        cluster_sync();
    else
        __syncthreads();

    if (warp >= 4 * CONSUMERS) {
        // ---- producer: one thread keeps the ring full; its warpgroup hands its registers to the consumers ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_a);
            tma_acquire(map_b);
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;
            for (int t = 0; t < ktiles; ++t) {
                const int s = t % STAGES, k0 = t * BK;
                mbar_wait(empty(s), ((t / STAGES) & 1) ^ 1);
                mbar_expect_bytes(full(s), A_STAGE + B_STAGE);  // the whole A tile arrives, half from the peer
                tma_load_2d(sA + s * A_STAGE + rank * (A_STAGE / CLUSTER), map_a, k0, m0 + rank * (BM / CLUSTER),
                            full(s), mask);
#pragma unroll
                for (int b = 0; b < BN / 32; ++b)
                    tma_load_2d(sB + s * B_STAGE + b * B_BOX, map_b, n0 + 32 * b, k0, full(s));
            }
        }
    } else {
        // ---- consumers: warpgroup wg multiplies columns 64·wg.. of the block's BN ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warp / 4, w = warp % 4;
        // This thread's wgmma A fragments for k steps j0 .. j0+KSTEPS-1 of a slot, 4 registers per step, from the
        // swizzled B box: rows k = 8j + lane%4 (+4), columns n = 64·wg + 16·w + lane/4 (+8), in one 32-column box.
        const int box = (64 * wg + 16 * w) / 32, nn = (16 * w) % 32 + lane / 4, c = lane % 4;
        auto load_frags = [&](int s, int j0, uint32_t (&f)[4 * KSTEPS]) {
            const uint8_t* base = b_slots + s * B_STAGE + box * B_BOX;
            auto at = [&](int k, int n) {  // chunk n/4 of row k sits at chunk (n/4) ^ (k % 8): TMA's 128B swizzle
                return *reinterpret_cast<const float*>(base + k * 128 + (((n >> 2) ^ (k & 7)) << 4) + (n & 3) * 4);
            };
#pragma unroll
            for (int j = 0; j < KSTEPS; ++j) {
                const int k = 8 * (j0 + j) + c;
                f[4 * j + 0] = to_tf32(at(k, nn));
                f[4 * j + 1] = to_tf32(at(k, nn + 8));
                f[4 * j + 2] = to_tf32(at(k + 4, nn));
                f[4 * j + 3] = to_tf32(at(k + 4, nn + 8));
            }
#pragma unroll
            for (int i = 0; i < 4 * KSTEPS; ++i) asm volatile("" : "+r"(f[i]));  // all written before the fence
        };
        // Slot s is free for the producers (ours and the peer's, which multicasts into it) once this
        // warpgroup's wgmmas have read it: one arrive per warpgroup on every cluster block's "empty".
        auto release = [&](int s) {
            if (tid % 128 == 0) {  // (written out, not looped: a loop here made ptxas serialise the wgmmas)
                mbar_arrive_cluster(empty(s), 0);
                if (CLUSTER > 1) mbar_arrive_cluster(empty(s), 1);
            }
        };

        float acc[MI][64] = {};
        // A slot is multiplied in GROUPS commit groups of KSTEPS k steps. Each group loads its fragments, starts
        // its wgmmas, then waits until only it is in flight: the group before has finished, so its fragment set
        // (the other one of the two) may be reloaded next, and after a slot's first group the previous slot is
        // free. `odd` (a constant once inlined) says which set a slot's first group takes.
        constexpr int GROUPS = BK / 8 / KSTEPS;
        uint32_t frags[2][4 * KSTEPS];
        auto slot = [&](int t, int odd) {
            const int s = t % STAGES;
            mbar_wait(full(s), (t / STAGES) & 1);
#pragma unroll
            for (int g = 0; g < GROUPS; ++g) {
                uint32_t(&cur)[4 * KSTEPS] = frags[(odd * GROUPS + g) % 2];
                load_frags(s, g * KSTEPS, cur);
                wgmma_fence();
#pragma unroll
                for (int j = 0; j < KSTEPS; ++j)
#pragma unroll
                    for (int i = 0; i < MI; ++i)  // rows 128i.. of the A tile (16 KB apart), bytes 32·(k step)..
                        wgmma_m64n128k8(acc[i], &cur[4 * j],
                                        smem_desc(sA + s * A_STAGE + i * 128 * 128 + (g * KSTEPS + j) * 32));
                wgmma_commit();
                wgmma_wait<1>();
                if (g == 0 && t > 0) release((t - 1) % STAGES);
            }
        };
#pragma unroll 1
        for (int t = 0; t < ktiles; t += 2) {
            slot(t, 0);
            if (t + 1 < ktiles) slot(t + 1, 1);
        }
        wgmma_drain(acc);
        store_transposed(acc, C, M, N, m0, n0 + 64 * wg);
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
