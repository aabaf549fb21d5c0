// TF32 tensor-core GEMM for Hopper (sm_90a), fed by TMA: C[M,N] = A[M,K] · B[K,N], row-major float32,
// K and N multiples of 4 (TMA needs 16-byte row strides), any M.
//
// What it adds to gemm/08_tf32.cu (same product: C^T = B^T · A^T, A's rows as wgmma's K-major shared operand,
// B's fragments through registers, see there):
//  * TMA copies. One thread issues each slot as 1 + BN/32 tensor copies (the driver's CUtensorMap, built on
//    the host from the spec's `tensor_maps` and passed in global memory); the copy engine writes the 128-byte
//    swizzle and zero-fills edges, so no thread spends issue slots on address arithmetic or bounds checks.
//  * An mbarrier pipeline with warp specialisation. A producer warpgroup refills a ring of STAGES slots; the
//    consumer warpgroups only wait on "slot full", multiply and arrive on "slot free". Nothing waits on
//    __syncthreads, so one warpgroup running behind another does not stall it. The arrives are plain CTA-scope
//    releases: with `.release.cluster` arrives the kernel ran 1.6 times slower (docs/perf-notes.md).
//  * Persistent blocks. The grid is at most one block (one cluster of blocks) per SM, and each walks the tiles
//    gridDim apart. The ring's slots and phases run on from one tile to the next, so the producer loads the next
//    tile's first slots while the consumers still store this one, and no block pays a launch, a barrier set-up
//    or an empty pipeline per tile. (cuBLAS's TF32 kernel on the H100 has this shape too: 132 blocks of 384
//    threads in clusters of 2, docs/evidence/ncu-tf32-l2-4096.txt.)
//  * TMA stores. C leaves through shared memory (the tile's last slot) and the copy engine, in whole 128-byte
//    rows, while the consumers go on to the next tile.
//  * Clusters with multicast (CLUSTER = 2). Two blocks side by side in N need the same BM rows of A: each one's
//    TMA loads half of them and the copy engine writes it into both blocks' shared memory, so A is requested
//    from L2 once per two blocks.
//
// Tiles (compile-time, -DNAME=value):
//   BN       C columns per block: 64 or 128, one consumer warpgroup per 64 columns (BM = 256 rows: a consumer
//            thread holds 128 accumulators). Each SM receives (256 + BN)·128 bytes per k step for 256·BN·32
//            products.
//   STAGES   slots in the ring (2 or more): STAGES·(256·128 + BN·128) + 1024 + 16·STAGES bytes of shared memory.
//   CLUSTER  1 or 2 blocks per cluster along N, sharing the A tile by multicast.
//   SWIZZLE  0: tiles in row-major order; G > 0: bands of G tile rows (gemm_common.cuh's tile_coords, as in
//            gemm/05_warptile.cu), so the blocks resident together share more panels of A and B in L2. A cluster's
//            blocks take neighbouring tiles of one row either way.
//   PROBE    measurement only (tools/gpu/tf32_probe.py): 1 skips the products (the copies alone), 2 the copies (the
//            products on whatever shared memory holds), 3 the stores of C; results are then wrong. 4 keeps the
//            clusters and their shared "slot free" barriers but loads A without multicast, 5 arrives on "slot free"
//            with cluster-scope release semantics, as this kernel once did (both with right results).
// Launch: a 1-D grid of any multiple of CLUSTER blocks, min(tiles, SMs) for persistence (tiles = ceil(M/256) ·
// CLUSTER·ceil(ceil(N/BN)/CLUSTER)); block (2·BN + 128, 1, 1): BN/64 consumer warpgroups, then the producer
// warpgroup (one thread issues the copies). map_c has boxes of 64 rows × 32 columns; the copy engine clips them to
// M × N.
// Accuracy: as gemm/08_tf32.cu (B rounded to TF32 on the way to registers, A truncated by the tensor cores).

#include "../include/gemm_common.cuh"  // tile_coords
#include "../include/hopper.cuh"

#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif
#ifndef PROBE
#define PROBE 0
#endif

static_assert(BN == 64 || BN == 128, "BN: 64 or 128 (one consumer warpgroup per 64 columns)");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1 or 2");

constexpr int BM = 256;                       // C rows per block: two m64n128k8 wgmmas per 8-deep k step
constexpr int BK = 32;                        // k per slot: one 128-byte swizzle row of floats
constexpr int CONSUMERS = BN / 64;            // warpgroups that multiply
constexpr int THREADS = 128 * (CONSUMERS + 1); // + the producer warpgroup (setmaxnreg works per warpgroup)
// setmaxnreg: the producer keeps 40 registers a thread; the consumers share the rest of the 64K-register file (in
// multiples of 8, at most 240).
constexpr int PRODUCER_REGS = 40;
constexpr int REGS_LEFT = (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;
constexpr int CONSUMER_REGS = REGS_LEFT > 240 ? 240 : REGS_LEFT;
constexpr int A_STAGE = BM * BK * 4;          // bytes: BM swizzled rows of 128 bytes
constexpr int B_BOX = BK * 32 * 4;            // one TMA box of B: 32 k rows × 32 columns (128 bytes, swizzled)
constexpr int B_STAGE = (BN / 32) * B_BOX;
constexpr int C_STAGE = 16384;                // a consumer warpgroup's share of the slot C leaves through
constexpr bool STORE_C = PROBE != 1 && PROBE != 3;
static_assert(CONSUMERS * C_STAGE <= A_STAGE, "C is staged in a slot's A tile");

#include "../include/cluster_dims.cuh"  // CLUSTER_DIMS

// The tiles of one block, in order: the block's cluster takes tile groups (CLUSTER neighbours in a row) cluster,
// cluster + clusters, ...; this block takes the one at its rank in each.
struct TileWalk {
    int tiles_m, groups_n, groups, group, stride, rank;
    __device__ TileWalk(int M, int N)
        : tiles_m((M + BM - 1) / BM), groups_n(((N + BN - 1) / BN + CLUSTER - 1) / CLUSTER),
          groups(tiles_m * groups_n), group(blockIdx.x / CLUSTER), stride(gridDim.x / CLUSTER),
          rank(CLUSTER > 1 ? cluster_rank() : 0) {}
    __device__ bool more() const { return group < groups; }
    __device__ void next() { group += stride; }
    __device__ void origin(int& m0, int& n0) const {
        int tile_m, group_n;
        tile_coords<SWIZZLE>(group, tiles_m, groups_n, tile_m, group_n);
        m0 = tile_m * BM;
        n0 = (group_n * CLUSTER + rank) * BN;
    }
};

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
gemm_tf32_tma(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b,
              const TensorMap* __restrict__ map_c, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // The 128-byte swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align the
    // slots ourselves (the 1024 spare bytes of the launch) rather than trust the dynamic shared memory base.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sA = raw + pad, sB = sA + STAGES * A_STAGE, bars = sB + STAGES * B_STAGE;
    uint8_t* const slots = smem_raw + pad;                        // the same memory, for ordinary loads and stores
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its tile"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer is done with slot s"

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ktiles = (K + BK - 1) / BK;
    TileWalk walk(M, N);

    ring_init<STAGES, CLUSTER>(bars, CONSUMERS * CLUSTER);  // full(s), then empty(s)

    // Both roles count slots with `it` from one tile to the next: slot it % STAGES, phase (it / STAGES) & 1.
    if (warp >= 4 * CONSUMERS) {
        // ---- producer: one thread keeps the ring full; its warpgroup hands its registers to the consumers ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_a);
            tma_acquire(map_b);
            const uint16_t mask = CLUSTER > 1 && PROBE != 4 ? (1u << CLUSTER) - 1 : 0;
            constexpr int A_ROWS = BM / CLUSTER;  // the rows of A one block loads (for all of its cluster)
            for (uint32_t it = 0; walk.more(); walk.next()) {
                int m0, n0;
                walk.origin(m0, n0);
                for (int t = 0; t < ktiles; ++t, ++it) {
                    const int s = it % STAGES, k0 = t * BK;
                    mbar_wait(empty(s), ((it / STAGES) & 1) ^ 1);
                    if (PROBE == 2) {
                        mbar_expect_bytes(full(s), 0);
                        continue;
                    }
                    mbar_expect_bytes(full(s), A_STAGE + B_STAGE);  // the whole A tile arrives, half from the peer
                    for (int h = 0; h < CLUSTER; ++h)  // our half, sent to every block of the cluster
                        if (PROBE == 4 || h == walk.rank)
                            tma_load_2d(sA + s * A_STAGE + h * A_ROWS * 128, map_a, k0, m0 + h * A_ROWS, full(s),
                                        mask);
#pragma unroll
                    for (int b = 0; b < BN / 32; ++b)
                        tma_load_2d(sB + s * B_STAGE + b * B_BOX, map_b, n0 + 32 * b, k0, full(s));
                }
            }
        }
    } else {
        // ---- consumers: warpgroup wg multiplies columns 64·wg.. of the block's BN ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warp / 4, w = warp % 4;
        // This thread's wgmma A fragments for the 4 k steps of a slot, 4 registers per step, from the swizzled B
        // box: rows k = 8j + lane%4 (+4), columns n = 64·wg + 16·w + lane/4 (+8), in one 32-column box.
        const int box = (64 * wg + 16 * w) / 32, nn = (16 * w) % 32 + lane / 4, c = lane % 4;
        auto load_frags = [&](int s, uint32_t (&f)[16]) {
            const uint8_t* base = slots + STAGES * A_STAGE + s * B_STAGE + box * B_BOX;
            auto at = [&](int k, int n) {  // chunk n/4 of row k sits at chunk (n/4) ^ (k % 8): TMA's 128B swizzle
                return *reinterpret_cast<const float*>(base + k * 128 + (((n >> 2) ^ (k & 7)) << 4) + (n & 3) * 4);
            };
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int k = 8 * j + c;
                f[4 * j + 0] = to_tf32(at(k, nn));
                f[4 * j + 1] = to_tf32(at(k, nn + 8));
                f[4 * j + 2] = to_tf32(at(k + 4, nn));
                f[4 * j + 3] = to_tf32(at(k + 4, nn + 8));
            }
#pragma unroll
            for (int i = 0; i < 16; ++i) asm volatile("" : "+r"(f[i]));  // all written before the fence
        };
        // Slot s is free for the producers (ours and the peer's, which multicasts into it) once this
        // warpgroup's wgmmas have read it: one arrive per warpgroup on every cluster block's "empty".
        auto release = [&](int s) {
            if (tid % 128 == 0) {  // (written out, not looped: a loop here made ptxas serialise the wgmmas)
                if (PROBE == 5) {
                    for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster_release(empty(s), r);
                } else if (CLUSTER == 1) {
                    mbar_arrive(empty(s));
                } else {
                    mbar_arrive_cluster(empty(s), 0);
                    mbar_arrive_cluster(empty(s), 1);
                }
            }
        };

        // A slot is one commit group: load its fragments, start its wgmmas, then wait until only it is in flight.
        // The slot before has then been read, so it is released, and its fragment set (the other of the two) may
        // be reloaded next. `odd` (a constant once inlined) says which set this slot takes.
        uint32_t frags[2][16];
        float acc[2][64];
        auto slot = [&](uint32_t it, bool first, int odd) {
            const int s = it % STAGES;
            mbar_wait(full(s), (it / STAGES) & 1);
            if (PROBE != 1) {
                load_frags(s, frags[odd]);
                wgmma_fence();
#pragma unroll
                for (int j = 0; j < 4; ++j)
#pragma unroll
                    for (int i = 0; i < 2; ++i)  // rows 128i.. of the A tile (16 KB apart), bytes 32·(k step)..
                        wgmma_m64n128k8(acc[i], &frags[odd][4 * j], smem_desc(sA + s * A_STAGE + i * 16384 + j * 32));
                wgmma_commit();
                wgmma_wait<1>();
            }
            if (!first) release((it - 1) % STAGES);
        };
        for (uint32_t it = 0; walk.more(); walk.next()) {
            int m0, n0;
            walk.origin(m0, n0);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int v = 0; v < 64; ++v) acc[i][v] = 0.f;
#pragma unroll 1
            for (int t = 0; t < ktiles; t += 2, it += 2) {
                slot(it, t == 0, 0);
                if (t + 1 < ktiles) slot(it + 1, false, 1);
            }
            if (ktiles % 2) --it;
            wgmma_drain(acc);
            // The epilogue. C leaves through the tile's last slot, which every consumer warpgroup has now finished
            // reading: 16 KB of its A tile per warpgroup, in four rounds of 64 rows × 64 columns, each written to
            // shared memory and sent by two TMA stores. The consumers are back to the next tile's products once
            // their last round is read out; the stores finish on their own. The slot is released after that, so
            // the producer meanwhile fills the other slots with the next tile's first k steps.
            const int s_last = (it - 1) % STAGES;
            const uint32_t stage = sA + s_last * A_STAGE + wg * C_STAGE;
            const bool leader = tid % 128 == 0;
            named_sync(1, 128 * CONSUMERS);  // every warpgroup's wgmmas are done with the slot's A tile
#pragma unroll
            for (int q = 0; q < BM / 64; ++q) {
                if (q > 0) {  // the previous round's copy has read the staging area
                    if (leader) bulk_wait<true>();
                    named_sync(2 + wg, 128);
                }
                if (STORE_C) stage_transposed(acc, q, slots + (stage - sA));
                fence_proxy_async();  // our stores, before the copy engine reads them
                named_sync(2 + wg, 128);
                if (leader && STORE_C) {
                    tma_store_2d(map_c, stage, n0 + 64 * wg, m0 + 64 * q);
                    tma_store_2d(map_c, stage + 8192, n0 + 64 * wg + 32, m0 + 64 * q);
                    bulk_commit();
                }
            }
            if (leader) bulk_wait<true>();
            release(s_last);
        }
        if (tid % 128 == 0) bulk_wait<false>();  // the last stores complete before the block may leave
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
