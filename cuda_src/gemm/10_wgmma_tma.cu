// Tensor-core GEMM in the 16-bit and 8-bit precisions for Hopper (sm_90a): C[M,N] = A·B with ELEM inputs
// (__half, __nv_bfloat16, or __nv_fp8_e4m3 with a per-tensor scale each), float32 accumulators, ELEM_OUT output
// (the input's type, bfloat16 for fp8), rounded to nearest once at the end.
//
// Both operands reach the tensor cores from shared memory (wgmma with two descriptors), where TMA writes them in
// 128-byte swizzled rows. The pipeline is gemm/09_tf32_tma.cu's: a producer warpgroup keeps an mbarrier ring of
// STAGES slots full (one thread issues the copies), two consumer warpgroups multiply, blocks are persistent and
// walk the tiles gridDim apart, the ring runs on from one tile to the next, and C leaves through shared memory by
// TMA stores. What is new:
//  * Both operands by descriptor, so every layout is read as it lies. A TMA box is always 64 rows × 128 bytes
//    (64 × 64 elements of 16 bits, 64 × 128 of fp8): one box is 8 KB, eight 1024-byte swizzle atoms. For each
//    operand, by layout (A is M×K unless stored transposed, B is K×N unless stored transposed):
//      K-major  (A in nn and nt, B in nt: K contiguous): a box is 64 rows of M (or N) × BK k. A tile's boxes
//               stack along M (N); the descriptor is smem_desc (8-row atoms 1024 bytes apart) and a k16 step
//               moves its start 32 bytes along the row. TMA coordinates (x = k0, y = m0 + 64·box).
//      MN-major (A in tn, B in nn and tn: M or N contiguous): a box is 64 rows of k × 64 elements of M (N).
//               wgmma reads it transposed (its TA/TB bits): smem_desc_mn, 8-k atoms 1024 bytes apart, boxes
//               (64 columns of M or N) 8192 bytes apart; a k16 step moves the start 2048 bytes (16 k rows).
//               TMA coordinates (x = m0 + 64·box, y = k0).
//    fp8 wgmma has no transpose bits: fp8 takes nt only, where both operands are K-major.
//  * A BM × BN tile per block: consumer warpgroup wg owns rows BM/2·wg.., MI = BM/128 blocks of 64 rows, and
//    issues MI m64nBNk16 wgmmas (k32 for fp8) a k step, BK·bytes = 128 bytes of k per slot. With 128 × 256 or
//    256 × 128 a thread holds 128 accumulators; each SM receives (128 + 256)·128 bytes per slot for 128·256·64
//    products (16-bit), twice the TF32 kernel's reuse per byte. 256 × 128 (MI = 2) is cuBLAS's bf16 tile at 4096
//    (nvjet_sm90_tst_256x128_64x4_1x2: two n128 wgmmas a k step where 128 × 256 issues one n256).
//  * Clusters of 2 or 4 share the larger operand tile. Where BN >= BM, along M: the blocks take tiles (m, n),
//    (m + 1, n), ..., which need the same B tile; each one's TMA loads its share of B's boxes and multicasts them
//    into every block of the cluster. A block then reads BM + BN/CLUSTER rows of operands from L2 a slot (128 × 256
//    c2: 256, c4: 192). Where BM > BN (256 × 128, as cuBLAS's 1x2 clusters), along N: tiles (m, n), (m, n + 1),
//    ... share the A tile; each block loads BM/CLUSTER of its rows and multicasts them: again 256 rows a slot at c2.
//    Whole clusters must be resident at once for the persistent walk: a 132-SM Hopper (66 TPCs in 8 GPCs of at
//    most 9) holds at most 32 clusters of 4, the lent H100s 30 (a probe:
//    git show 20862c3:tools/gpu/cluster_occupancy.cu), so c4 needs the
//    spec's BLOCKS (120 there); the clusters past those run after the others (0.53 of cuBLAS at 128 blocks).
//  * fp8's two-level accumulation (PROMOTE = p > 0): Hopper's fp8 wgmma keeps about 14 bits of mantissa while it
//    accumulates (DeepSeek-V3's report, 3.3.2), so each window of p slots (p·128 k) is summed by the tensor cores
//    from zero (scale-d = 0) and then added into a float32 set of its own, BN/2 more registers a thread. SETS = 1:
//    the window's end waits for this warpgroup's wgmmas before adding (the tensor cores idle unless the other
//    consumer warpgroup's wgmmas fill the gap). SETS = 2: windows alternate between two fp8 sets, and a window is
//    added in while the next window's first slot runs (3·BN/2 registers: BN = 128 only). Each window is added to
//    float32 sums zeroed at the tile's start (one add a value, no select for the first window). PROMOTE = 0 accumulates
//    in the tensor cores throughout. The per-tensor scales multiply the sums in the epilogue (a null pointer
//    stands for 1: 16-bit types).
//
// Tiles (compile-time, -DNAME=value): BM (128, or 256 with BN = 128), BN (128 or 256; 192 for fp8), BK (64 for
// 16-bit types, 128 for fp8: one 128-byte swizzle row), STAGES (ring slots), CLUSTER (1, 2 or 4, along M or N as
// above), SWIZZLE (0: row-major order of the cluster groups; G: bands of G group rows, gemm_common.cuh's tile_coords,
// so the blocks resident together share panels of A and B in L2),
// BBOX (rows of a K-major B per TMA box, 64 unless a cluster splits BN = 192: 96), PROMOTE and SETS (fp8),
// UWG (1: the warpgroup index is broadcast from lane 0, so the compiler keeps the descriptors in uniform registers
// and the slot loop has no R2UR moves; 0: computed per thread), CARRY (1: the consumers carry the next slot's ring
// index, phase and descriptors from one slot to the next, a few adds, where 0 derives them from the slot count: a
// division by STAGES and each descriptor rebuilt from its address between the full barrier's answer and the first
// wgmma), PEEK (1, with CARRY: a consumer asks whether its next slot's data has come right after issuing this
// slot's wgmmas, while they run, and skips the wait there if it has, as cuBLASLt's loop does), OVERLAP (0: a tile's C is staged and stored before the next tile's first wgmma; 1: C is rounded into BN/4
// registers of 16-bit pairs, the next tile's first slot is issued, and C leaves one round per slot while the
// tensor cores multiply: the staging stores, barriers and the wait between rounds come off the tensor cores' path.
// With SETS = 1 only: x2's 3·BN/2 accumulators leave no room for BN/4 more).
// Shared memory: STAGES·(BM + BN)·128 + 32768 (C's staging) + 1024 (alignment) + 16·STAGES (barriers).
// Launch: a 1-D grid of a multiple of CLUSTER blocks, at most one per SM; block (384): consumer warpgroups 0 and 1,
// then the producer warpgroup. Maps: A in boxes of 64 rows × BK, B of BBOX rows × BK, C (M×N) of 64 × 64; the copy
// engine zero-fills loads past the edges (so a ragged K adds zeros) and clips stores to M × N. TMA needs rows
// that start on 16-byte boundaries: the spec's `requires`.

#include "../include/hopper.cuh"
#include "../include/tile_walk.cuh"  // TileWalk: the persistent walk, in clusters
#include "../include/loop_switches.cuh"  // UWG, CARRY, PEEK

#ifndef ELEM
#define ELEM __nv_bfloat16
#endif
#ifndef ELEM_OUT
#define ELEM_OUT ELEM
#endif
#if !defined(LAYOUT_NN) && !defined(LAYOUT_NT) && !defined(LAYOUT_TN)
#define LAYOUT_NN 1  // the op's default layout
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
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
#ifndef PROMOTE
#define PROMOTE 0
#endif
#ifndef SETS
#define SETS 1
#endif
#ifndef BBOX
#define BBOX 64
#endif
#ifndef OVERLAP
#define OVERLAP 0
#endif

#if defined(LAYOUT_TN)
constexpr int A_MN_MAJOR = 1;  // A stored K×M
#else
constexpr int A_MN_MAJOR = 0;
#endif
#if defined(LAYOUT_NT)
constexpr int B_MN_MAJOR = 0;  // B stored N×K
#else
constexpr int B_MN_MAJOR = 1;
#endif

constexpr bool FP8 = sizeof(ELEM) == 1;
constexpr int CONSUMERS = 2;                     // warpgroups of BM/2 rows each
constexpr int MI = BM / 128;                     // ... in MI blocks of 64 rows (one m64 wgmma each a k step)
// The cluster shares the larger operand tile (B where BN >= BM, A where BM > BN) and so runs along the other
// dimension: CM × CN tiles, CM·CN = CLUSTER.
// (tile_walk.cuh's TileWalk: a block's tiles, in order)
using Walk = TileWalk<BM, BN, CLUSTER, SWIZZLE>;
constexpr bool SHARE_A = Walk::SHARE_A;  // BM > BN
constexpr int CM = Walk::CM, CN = Walk::CN;
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int KSTEPS = 4;                        // wgmmas per slot: 32 bytes of k each
constexpr int BOX = 8192;                        // one TMA box: 64 rows × 128 bytes
constexpr int A_STAGE = BM * 128, B_STAGE = BN * 128;
constexpr int C_STAGE = 2 * BOX;                 // a consumer warpgroup's staging: 64 rows × 128 columns of C
constexpr int C_BOXES = BN / 64;                 // C's boxes of 64 columns across a tile, staged two at a time
constexpr int ROW_ROUNDS = (C_BOXES + 1) / 2;    // ... in this many rounds through a warpgroup's staging
constexpr int ROUNDS = MI * ROW_ROUNDS;          // a warpgroup's rounds: its MI blocks of 64 rows, one after another
// setmaxnreg hands the producer warpgroup's registers to the consumers at run time, as gemm/09_tf32_tma.cu does.
// ptxas reports __launch_bounds__(384, 1)'s 168 registers a thread (what the launch allocates), but gives the code
// after setmaxnreg.inc up to CONSUMER_REGS (nvcc 13.0: x2's consumers use up to R228 in the SASS, no spills; without
// the setmaxnreg.inc the same build spills 1,088 bytes: tests/test_nvcc.py).
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8 > 240
                                  ? 240 : (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;

static_assert(BK * sizeof(ELEM) == 128, "BK: one 128-byte swizzle row of k (64 for 16-bit types, 128 for fp8)");
static_assert(BN == 128 || BN == 256 || (FP8 && BN == 192), "BN: 128 or 256 (or 192 for fp8)");
static_assert(BM == 128 || (BM == 256 && BN == 128), "BM: 128, or 256 with BN = 128 (MI·BN/2 accumulators)");
static_assert(BBOX == 64 || (!B_MN_MAJOR && BN % (BBOX * CLUSTER) == 0 && BBOX % 8 == 0 && BBOX <= 256),
              "BBOX: rows of B per TMA box, 64 (MN-major: 64 k rows), or whole 8-row atoms that split BN over the cluster");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "CLUSTER: 1, 2 or 4");
static_assert(!FP8 || (!A_MN_MAJOR && !B_MN_MAJOR), "fp8 wgmma reads K-major operands only: layout nt");
static_assert(PROMOTE >= 0 && (PROMOTE == 0 || FP8), "PROMOTE: fp8 only");
static_assert(SETS == 1 || (SETS == 2 && PROMOTE > 0), "SETS: 1, or 2 (alternating fp8 sets) with PROMOTE");
static_assert(OVERLAP == 0 || (OVERLAP == 1 && SETS == 1), "OVERLAP: 0, or 1 with one accumulator set");
// The accumulators a consumer thread holds: BN/2 for the tensor cores, as much again in float32 where promoted,
// BN/2 more for a second fp8 set (each MI times over). ptxas allocates up to setmaxnreg's CONSUMER_REGS (232) to
// the code after it.
static_assert(MI * BN / 2 * (PROMOTE > 0 ? SETS + 1 : 1) <= 192,
              "the accumulators must leave ~40 of 232 registers free");
static_assert(sizeof(ELEM_OUT) == 2, "the epilogue packs two 16-bit outputs per register");

#include "../include/cluster_dims.cuh"  // CLUSTER_DIMS

// Box `box` of an operand's slot at k0, whose rows or columns start at mn0 (see the header for the two majors).
template <int MN_MAJOR, int ROWS = 64>
__device__ __forceinline__ void load_box(uint32_t dst, const TensorMap* map, int mn0, int k0, int box, uint32_t bar,
                                         uint16_t mask = 0)
{
    if (MN_MAJOR)
        tma_load_2d(dst + box * BOX, map, mn0 + 64 * box, k0, bar, mask);
    else
        tma_load_2d(dst + box * ROWS * 128, map, k0, mn0 + ROWS * box, bar, mask);
}

// Descriptor of k step j (32 bytes of k) of an operand tile at `base` (its first box).
template <int MN_MAJOR>
__device__ __forceinline__ uint64_t operand_desc(uint32_t base, int j)
{
    return MN_MAJOR ? smem_desc_mn(base + j * 2048, BOX) : smem_desc(base + j * 32);
}

__device__ __forceinline__ uint32_t pack_out(float lo, float hi)
{
    if constexpr (std::is_same_v<ELEM_OUT, __half>) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    } else {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
gemm_wgmma_tma(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b,
               const TensorMap* __restrict__ map_c, const float* __restrict__ A_scale,
               const float* __restrict__ B_scale, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // The swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align ourselves.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sA = raw + pad, sB = sA + STAGES * A_STAGE, sC = sB + STAGES * B_STAGE;
    const uint32_t bars = sC + CONSUMERS * C_STAGE;
    uint8_t* const stage_base = smem_raw + pad + (sC - sA);       // C's staging, for ordinary stores
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its tiles"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer of the cluster is done with s"

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ktiles = (K + BK - 1) / BK;
    Walk walk(M, N);

    ring_init<STAGES, CLUSTER>(bars, CONSUMERS * CLUSTER);  // full(s), then empty(s)

    // Both roles count slots with `it` from one tile to the next: slot it % STAGES, phase (it / STAGES) & 1.
    if (warp >= 4 * CONSUMERS) {
        // ---- producer: one thread keeps the ring full; the warpgroup hands its registers to the consumers ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_a);
            tma_acquire(map_b);
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;
            // The boxes of each operand this block loads: all of its own operand's, its rank's share of the shared
            // one's (multicast into the whole cluster).
            constexpr int A_BOXES = SHARE_A ? BM / 64 / CLUSTER : BM / 64;
            constexpr int B_BOXES = SHARE_A ? BN / BBOX : BN / BBOX / CLUSTER;
            const int a_first = SHARE_A ? walk.rank * A_BOXES : 0, b_first = SHARE_A ? 0 : walk.rank * B_BOXES;
            for (uint32_t it = 0; walk.more(); walk.next()) {
                int m0, n0;
                walk.origin(m0, n0);
                for (int t = 0; t < ktiles; ++t, ++it) {
                    const int s = it % STAGES, k0 = t * BK;
                    mbar_sleep(empty(s), ((it / STAGES) & 1) ^ 1);
                    mbar_expect_bytes(full(s), A_STAGE + B_STAGE);  // all of both, the shared one partly from peers
#pragma unroll
                    for (int b = a_first; b < a_first + A_BOXES; ++b)
                        load_box<A_MN_MAJOR>(sA + s * A_STAGE, map_a, m0, k0, b, full(s), SHARE_A ? mask : 0);
#pragma unroll
                    for (int b = b_first; b < b_first + B_BOXES; ++b)
                        load_box<B_MN_MAJOR, BBOX>(sB + s * B_STAGE, map_b, n0, k0, b, full(s), SHARE_A ? 0 : mask);
                }
            }
        }
    } else {
        // ---- consumers: warpgroup wg multiplies rows BM/2·wg.. of the tile (MI blocks of 64) by all BN columns ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        // UWG: the warpgroup index broadcast from lane 0, which the compiler then knows to be the same in every
        // lane: the descriptors built from it can live in uniform registers (fewer R2UR moves before each wgmma).
        const int wg = warpgroup_of<UWG>(warp), w = warp % 4;
        const bool leader = tid % 128 == 0;
        const float scale = (A_scale ? *A_scale : 1.f) * (B_scale ? *B_scale : 1.f);
        // Slot s is free for the producers (ours and, in a cluster, the peer's, which multicasts into it) once
        // this warpgroup's wgmmas have read it: one arrive per warpgroup on every cluster block's "empty".
        auto release = [&](int s) {
            if (leader) {  // (written out, not looped: a loop here made ptxas serialise 09's wgmmas)
                if (CLUSTER == 1) {
                    mbar_arrive(empty(s));
                } else {
                    mbar_arrive_cluster(empty(s), 0);
                    mbar_arrive_cluster(empty(s), 1);
                    if (CLUSTER == 4) {
                        mbar_arrive_cluster(empty(s), 2);
                        mbar_arrive_cluster(empty(s), 3);
                    }
                }
            }
        };
        // The tensor cores accumulate into acc. With PROMOTE, each window of PROMOTE slots starts its set afresh
        // (scale-d = 0) and is then added into `total`, in float32: with SETS = 1 at the window's end, after
        // waiting for its wgmmas; with SETS = 2 the windows alternate between acc and acc2, and a window's sums
        // are added in while the next window's first slot runs on the tensor cores. A set is MI blocks of 64 rows.
        using Acc = float[MI][BN / 2];
        auto zero = [](Acc& a) {
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) a[i][v] = 0.f;
        };
        auto add = [](Acc& into, const Acc& a) {
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) into[i][v] += a[i][v];
        };
        Acc acc;
        zero(acc);
#if PROMOTE > 0
        Acc total;
#if SETS == 2
        Acc acc2;
#endif
        constexpr int WINDOW = PROMOTE;
#else
        Acc& total = acc;  // the tensor cores' accumulators are the result
        constexpr int WINDOW = 1 << 30;
#endif
        // The descriptors of slot 0's first k step for this warpgroup. Slot s and k step j only move the start
        // address (bits 0-13, in 16-byte units), so they are sums: fewer instructions per slot than rebuilding
        // each descriptor (ncu: this kernel issued 0.74 instructions a cycle to cuBLAS's 0.46 before).
        // Block i of 64 rows is A's box MI·wg + i (64 rows of M, K-major or MN-major alike): BOX bytes further.
        const uint64_t desc_a = operand_desc<A_MN_MAJOR>(sA + MI * wg * BOX, 0);
        const uint64_t desc_b = operand_desc<B_MN_MAJOR>(sB, 0);
        constexpr uint32_t A_KSTEP = (A_MN_MAJOR ? 2048 : 32) >> 4, B_KSTEP = (B_MN_MAJOR ? 2048 : 32) >> 4;
        // CARRY: slot `it`'s ring index, phase and descriptors, carried (advanced once per slot issued); PEEK:
        // whether its data was seen to have come (asked while the slot before ran).
        RingCursor<STAGES, (A_STAGE >> 4), (B_STAGE >> 4)> ring(desc_a, desc_b);
        bool ready = false;
        // Wait for slot `it`, then issue its 4·MI wgmmas into `into` (the first of each block overwriting it where
        // `fresh`).
        auto issue = [&](Acc& into, uint32_t it, bool fresh) {
#if CARRY
            // The carried slot (its descriptors read before the wait), then the next one's.
            const int s = ring.slot;
            const uint64_t da = ring.desc_a, db = ring.desc_b;
            if (!(PEEK && ready)) mbar_sleep(full(s), ring.phase);
            ring.advance();
#else
            const int s = it % STAGES;
            mbar_sleep(full(s), (it / STAGES) & 1);
            const uint64_t da = desc_a + s * (A_STAGE >> 4), db = desc_b + s * (B_STAGE >> 4);
#endif
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < KSTEPS; ++j)
#pragma unroll
                for (int i = 0; i < MI; ++i)
                    wgmma_ss<ELEM, BN, A_MN_MAJOR, B_MN_MAJOR>(into[i], da + i * (BOX >> 4) + j * A_KSTEP,
                                                               db + j * B_KSTEP, !(fresh && j == 0));
            wgmma_commit();
            if (PEEK) ready = mbar_test(full(ring.slot), ring.phase);
        };
        // A tile's C, scaled and rounded: accumulators v and v + 1 of block i as one register of two 16-bit
        // outputs, out[i][v/2], with the tile's origin (out_m0 < 0: none waits to be stored).
        uint32_t out[MI][BN / 4];
        int out_m0 = -1, out_n0 = 0;
        // Round r of out's stores: block i = r / ROW_ROUNDS, its C boxes 2q and 2q + 1 (q = r % ROW_ROUNDS; one
        // in a last round of an odd count), rows 64·(MI·wg + i).. × columns 128q.., through this warpgroup's 16 KB
        // of staging, once the round before has been read from it. r must be a constant where this is inlined
        // (out is registers).
        const uint32_t stage = sC + wg * C_STAGE;
        uint8_t* const staged = stage_base + wg * C_STAGE;
        const int row = 16 * w + lane / 4;  // +8 for odd register pairs
        auto store_round = [&](int r) {
            const int i = r / ROW_ROUNDS, q = r % ROW_ROUNDS, rows = out_m0 + 64 * (MI * wg + i);
            const int boxes = C_BOXES - 2 * q < 2 ? 1 : 2;
            if (leader) bulk_wait<true>();  // the previous stores have read the staging area
            named_sync(2 + wg, 128);
#pragma unroll
            for (int p = 0; p < 16 * boxes; ++p) {  // register pairs of columns 128q..128q+127
                const int v = 64 * q + 2 * p;
                // Accumulators v, v + 1: row `row` (+8), columns 8·(v>>2) + 2·(lane%4) + {0, 1}, of box v/32;
                // 16-byte chunk (v>>2)%8 of the row, swizzled as TMA reads it: chunk ^ (row % 8).
                const int r8 = row + 8 * ((v >> 1) & 1), box = (v / 32) % 2, chunk = (v >> 2) % 8;
                *reinterpret_cast<uint32_t*>(staged + box * BOX + r8 * 128 + ((chunk ^ (r8 & 7)) << 4) +
                                             (lane % 4) * 4) = out[i][v / 2];
            }
            fence_proxy_async();  // our stores, before the copy engine reads them
            named_sync(2 + wg, 128);
            if (leader) {
                tma_store_2d(map_c, stage, out_n0 + 128 * q, rows);
                if (boxes == 2) tma_store_2d(map_c, stage + BOX, out_n0 + 128 * q + 64, rows);
                bulk_commit();
            }
        };
        for (uint32_t it = 0; walk.more(); walk.next()) {
            int m0, n0;
            walk.origin(m0, n0);
#if PROMOTE > 0 && SETS == 2
            zero(total);
            int t = 0;
            // One window of slots into `cur`; once the first of them is issued, the window before (in `prev`) has
            // completed: its slot goes back to the producers and its sums into total. False after the tile's last.
            auto window = [&](Acc& cur, Acc& prev) {
#pragma unroll 1
                for (int j = 0; j < WINDOW && t < ktiles; ++j, ++t, ++it) {
                    issue(cur, it, j == 0);
                    if (t == 0) continue;
                    wgmma_hold<1>(prev);  // every slot but this one is done (and prev with them)
                    release((it - 1) % STAGES);
                    if (j == 0) add(total, prev);
                }
                if (t < ktiles) return true;
                wgmma_hold<0>(cur);
                release((it - 1) % STAGES);
                add(total, cur);
                return false;
            };
            while (window(acc, acc2) && window(acc2, acc)) {
            }
#else
#if PROMOTE > 0
            // The window's sums are added to zeros, not selected in for the first window: one add a value per
            // window instead of an add and a select (x1's loop had 64 FSEL beside its 64 FADD a slot).
            zero(total);
#endif
            // Slot `it`, the tile's t-th.
            auto slot = [&](int t) {
                const int s = it % STAGES;
                // The slot's wgmmas; the first of each block overwrites acc (scale-d = 0) where a tile or a window
                // starts.
                issue(acc, it, t % WINDOW == 0);
                if (PROMOTE > 0 && (t % WINDOW == WINDOW - 1 || t == ktiles - 1)) {
                    // The window's last slot: wait for all of it, then add it in.
                    wgmma_hold<0>(acc);
                    if (t > 0 && t % WINDOW != 0) release((it - 1) % STAGES);  // (a window's end was released)
                    release(s);
                    add(total, acc);
                } else {
                    // One slot's wgmmas stay in flight while the next slot's are issued: wait for the one before.
                    wgmma_wait<1>();
                    if (t > 0 && (PROMOTE == 0 || t % WINDOW != 0)) release((it - 1) % STAGES);
                }
            };
            int t = 0;
#if OVERLAP
            // The previous tile's C leaves one round after each of this tile's first slots is issued, while the
            // tensor cores multiply it (the round's wait for the copy engine included).
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                if (t < ktiles) slot(t++), ++it;
                if (out_m0 >= 0) store_round(r);
            }
#endif
#pragma unroll 1
            for (; t < ktiles; ++t, ++it) slot(t);
#if PROMOTE == 0
            wgmma_hold<0>(acc);
            release((it - 1) % STAGES);
#endif
#endif
            // ---- epilogue: rows BM/2·wg.. × BN columns of C, scaled and rounded into `out`, then stored (OVERLAP:
            // once the next tile's first slots are issued, or after the last tile)
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < BN / 2; v += 2)  // (16-bit types: no scale, no multiply between drain and issue)
                    out[i][v / 2] = FP8 ? pack_out(scale * total[i][v], scale * total[i][v + 1])
                                        : pack_out(total[i][v], total[i][v + 1]);
            out_m0 = m0, out_n0 = n0;
#if !OVERLAP
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) store_round(r);
#endif
        }
#if OVERLAP
#pragma unroll
        for (int r = 0; r < ROUNDS; ++r)
            if (out_m0 >= 0) store_round(r);
#endif
        if (leader) bulk_wait<false>();  // the last stores complete before the block may leave
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
