// Grouped GEMM on Hopper (sm_90a) in fp16, bf16 and fp8 e4m3: D_g[M_g, N] = A_g[M_g, K] · B_g[N, K]ᵀ for G groups,
// float32 accumulators, the input's type out (bfloat16 for fp8) (gpubench/ops/grouped_gemm.py; DeepGEMM's
// contiguous and masked layouts, and for fp8 their block-scaled forms).
//
// The loop is gemm/10_wgmma_tma.cu's, for its nt layout (both operands K-major, as the op lays A and B): a producer
// warp keeps an mbarrier ring of STAGES slots full by TMA, two consumer warpgroups multiply with wgmma m64nBNk16
// from 128-byte-swizzled shared memory, blocks are persistent and the ring runs on from one tile to the next,
// optionally in clusters of 2 whose blocks take two row blocks of the same group and column block and multicast
// halves of B's tile to each other. What is new is where a tile is:
//  * One walk over every group's tiles (group_walk.cuh): persistent blocks (clusters) take units gridDim apart,
//    and every warp maps its unit to (group, row block, column block) from the groups' counts, 32 groups a step.
//    Within a group the row blocks are walked in bands of SWIZZLE (gemm_common.cuh's tile_coords), as 10 does.
//  * A is one 2-D map over all of its rows ([M, K]: the stacked runs, or the masked slabs G·M_max rows end to
//    end): a tile's rows start at its group's first row (offsets[g]) plus a multiple of BM, so a tile never starts
//    in another group, but its last rows may run past the group's count, into pad rows or the next group's rows
//    (or past M, where TMA reads zeros). They multiply into rows of D that are not the group's.
//  * B is one 2-D map over [G·N, K]: group g's tile at column block n0 reads rows g·N + n0 ..; past N they are the
//    next group's rows (or zeros past G·N), which reach only columns of D past N, never stored.
//  * The epilogue stores a warpgroup's 64 rows × BN by TMA (map_d over [M, N], clipped to N) where all 64 rows are
//    the group's; a group's last, partial rows are stored by the threads themselves, straight from the registers,
//    row by row up to the group's count (the TMA clip knows only M, and the rows past the count may be another
//    group's); rows of no group are left as they were.
// Empty groups have no tiles; a ragged K reads zeros past K (TMA's fill). The counts and offsets are read on the
// device: the same binary runs any split of the rows (as a MoE layer's router makes them).
//
// fp8 (ELEM = __nv_fp8_e4m3; 10's PROMOTE = 1 with scales): a slot is 128 k, one scale block. Each slot's four k32
// wgmmas sum from zero into acc; the warpgroup waits for them, frees the slot and adds acc into float32 `total`,
// times the slot's scales: in the block layouts (-DLAYOUT_CONTIGUOUS_BLOCK, -DLAYOUT_MASKED_BLOCK) SA[t][row] for
// each of the thread's two rows and SB[g][n0/128][t] for the tile (BN = 128: one 128-column block), read from
// global memory two slots ahead; with per-tensor scales, 1, and SA[0]·SB[0] at the end. SA lies K block by K
// block (DeepGEMM's "transposed" scales): a warp's 16 rows for a slot are two 32-byte sectors, where rows of
// KB scales each made it sixteen, an eighth more bytes from L2 a slot than A and B bring. The tensor cores'
// ~14-bit accumulation never runs past 128 products (DeepGEMM's promotion). While one warpgroup adds, the other's
// wgmmas can run.
// TMA_SCALES = 1 (block layouts; DeepGEMM's way): the producer brings the scales with each slot instead, SA's rows
// for its K block by TMA (map_sa over SA [KB, M], zeros past M) and SB's value, which it reads itself (a float a
// slot, published by its arrive); consumers read theirs from shared memory after the slot's wait. Why: with the
// scales read from global memory the loop issued about 1,065-1,126 TFLOP/s on an H200 against 1,237-1,293 with
// per-tensor scales, ncu's first stall "long scoreboard" (the loads); a ring of cp.async copies made by the
// consumers was slower still. The copy engine starts a box's innermost dimension only on a 16-byte boundary (a
// masked slab of 150 rows put a tile's first row at byte 600: an illegal instruction), so the box starts at the
// tile's first row rounded down to 4 and holds 132 rows. 5 slots: the scales' 644 bytes a slot do not fit beside 6.
// BN = 160 (fp8, per-tensor scales or t1): tiles of 128 × 160, cuBLASLt's choice on DeepGEMM's 4096 × 7168 shape.
// Why: a slot then holds a quarter more tensor work between the waits that the promotion needs (each warpgroup's
// wgmmas waited for, scaled and added, slot by slot), and a product reads fewer bytes from L2 (A's 128 rows and
// B's 160 per 128 × 160 outputs: 10% fewer, 13% with B shared by a cluster of 2); 128 × 128 tiles kept the tensor
// pipe busy 69-79% of the time under ncu, cuBLASLt's 128 × 160 92%. B's tile is one box of 160 rows (80 a block
// in a cluster). Its columns span two of B's 128-column scale blocks (a tile starts 0, 32, 64 or 96 columns into
// one), so t1's slot brings two SB values and each 32 columns of the accumulators take the one of their block.
// D's last 32 columns, past its 64-column boxes, are stored from the registers.
// NEXT = 1 (with t1): once a tile's last slot is added in, the warpgroup finds its next tile and issues that tile's
// first slot before it stores this one. Why: with 16 slots a tile (K = 2048) the block-scaled kernel ran about 5%
// slower than with 56 (K = 7168), as if each tile cost one slot more. From its last wait until its next tile's
// first issue a warpgroup stores D and walks to the next tile, and the other warpgroup's one slot of queued work
// does not cover that time; the early slot does. The store sits in the branch that issues it: after the branch,
// ptxas waited for the early wgmmas before the store (C7517), and the first n1 build overlapped nothing
// (tests/test_nvcc.py checks where that wait lands).
// STAGGER = 1 (with t1, one set, no NEXT): warpgroup 1 starts its first slot once warpgroup 0 has finished its own,
// and so runs about a slot behind it from then on. Why: the two share every slot, so in step they reach a tile's
// end together and store it together, and the tensor cores idle for the whole epilogue (with 16 slots a tile about
// one slot's time in 17, n1's reasoning). A slot apart, one warpgroup's epilogue runs while the other still has
// its last slot to multiply, and the first starts the next tile while the second stores. The ring holds the lag:
// warpgroup 0 may run up to STAGES - 1 slots ahead before it waits for warpgroup 1 to free one.
// AHEAD = 1 (with t1, one set, no NEXT): each warpgroup finds its next tile while its tile's first slot's wgmmas
// run, not between the store and the next tile's first issue. Why: under ncu's source counters at 7168 × 2048
// (docs/evidence/ncu-grouped-source-h200.txt) the consumers spent about as long between a tile's last slot and the
// next tile's first as in two of its 16 slots, half of it in the store and half in finding the next tile (the
// walk, tile_coords' integer divisions, the group's offset from memory). Both warpgroups are in step, so the
// tensor cores idle meanwhile. The cost: with a slot outside the slot loop, nvcc keeps the ring's descriptors in
// ordinary registers and moves them to uniform ones in the loop (8 R2UR an iteration of two slots).
//
// Tiles (compile-time, -DNAME=value): BN (128 or 256, fp8 128 or 160: a consumer thread's BN/2 accumulators),
// STAGES (ring slots of (128 + BN)·128 bytes), CLUSTER (1 or 2 blocks along M sharing B), SWIZZLE (bands of row
// blocks within a group), UWG, CARRY, PEEK (loop_switches.cuh, as in 10), TMA_SCALES (0 or 1: fp8's block scales
// by TMA), ACCS, NEXT, STAGGER, AHEAD (above). BM is 128 (64 rows a consumer warpgroup), BK 128 bytes of k (64 16-bit
// elements, 128 fp8 ones).
// Shared memory: STAGES·(128 + BN)·128 + 32768 (C's staging) + 1024 (alignment) + 16·STAGES (barriers), and with
// TMA_SCALES STAGES·(640 + 4) (the scales' slots; 640 + 8 with BN = 160, two SB values a slot).
// Arguments: the maps of A, B and D, D itself (the partial rows), fp8's scales SA and SB (16-bit types: not read),
// the op's groups (each row's group, not read), then counts, offsets, G, N, K, KB (K's scale blocks), NB (N's) and M
// (A's rows all told: SA's row length), then SA's map (TMA_SCALES in a block layout; else not read).
// Launch: a 1-D grid of a multiple of CLUSTER blocks, at most one per SM; 384 threads: consumer warpgroups 0 and
// 1, then the producer warpgroup (its first warp walks the tiles, lane 0 issues the copies).

#include "../include/hopper.cuh"
#include "../include/loop_switches.cuh"  // UWG, CARRY, PEEK
#include "../include/mma_sync.cuh"       // pack2: two floats rounded into one 32-bit word of ELEM_OUT
#include "group_walk.cuh"

#ifndef ELEM
#define ELEM __nv_bfloat16
#endif
#ifndef ELEM_OUT
#define ELEM_OUT ELEM
#endif
#ifndef BN
#define BN 256
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
#ifndef TMA_SCALES
#define TMA_SCALES 0  // 1: the block layouts' scales come with each slot, through shared memory (see the top)
#endif
#ifndef ACCS
#define ACCS 1  // 2 (with TMA_SCALES): two accumulator sets, a slot's wgmmas in flight while the last is scaled
#endif
#ifndef NEXT
#define NEXT 0  // 1 (with TMA_SCALES, one set): the next tile's first wgmmas issued before this tile's epilogue
#endif

#ifndef STAGGER
#define STAGGER 0  // 1 (with TMA_SCALES, one set, no NEXT): warpgroup 1 a slot behind warpgroup 0
#endif

#ifndef AHEAD
#define AHEAD 0  // 1 (with TMA_SCALES, one set, no NEXT): the next tile found under the first slot's wgmmas
#endif
// AHEAD's walk: block scales by TMA only (elsewhere AHEAD builds the plain loop); a macro, as it shapes the loops
#if AHEAD && TMA_SCALES && (defined(LAYOUT_CONTIGUOUS_BLOCK) || defined(LAYOUT_MASKED_BLOCK))
#define WALK_AHEAD 1
#else
#define WALK_AHEAD 0
#endif

#if defined(LAYOUT_CONTIGUOUS_BLOCK) || defined(LAYOUT_MASKED_BLOCK)
constexpr bool BLOCK_SCALES = true;  // SA [KB, M] (a K block's rows side by side), SB [G, NB, KB]
#else
constexpr bool BLOCK_SCALES = false;  // fp8: one scale each; 16-bit types: none
#endif

constexpr bool FP8 = sizeof(ELEM) == 1;
constexpr int BM = 128, BK = 128 / sizeof(ELEM);
constexpr int CONSUMERS = 2;                   // warpgroups of 64 rows each
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int KSTEPS = 4;                      // wgmmas per slot: 32 bytes of k each (k16, fp8 k32)
constexpr int BOX = 8192;                      // one TMA box: 64 rows × 128 bytes
constexpr int A_STAGE = BM * 128, B_STAGE = BN * 128;
constexpr int B_BOX = BN == 160 ? BN / CLUSTER : 64;  // B's box rows (the spec's map_b): 160 wide, one a block
constexpr int B_BOXES = BN / B_BOX / CLUSTER;  // B's boxes this block loads (and multicasts) a slot
constexpr int C_STAGE = 2 * BOX;               // a consumer warpgroup's staging: 64 rows × 128 columns of D
constexpr int C_BOXES = BN / 64;               // D's boxes of 64 columns across a tile, staged two at a time
constexpr int ROUNDS = (C_BOXES + 1) / 2;
constexpr int TAIL = BN % 64;                  // columns past D's whole boxes (160: 32), stored from the registers
// fp8 block scales by TMA: a slot's SA_ROWS rows of SA for its K block from the tile's first row rounded down to 4
// (the box's 16-byte start; 528 bytes, in areas of 640: a tensor copy's destination starts on 128 bytes, or the
// copy faults with a misaligned address) and SB's value for the tile (a float a slot after the barriers; two for
// a 160-wide tile, whose columns span two of B's scale blocks)
constexpr bool SCALES_BY_TMA = BLOCK_SCALES && TMA_SCALES;
// NEXT's early slot: block scales by TMA only (elsewhere NEXT builds the plain loop)
[[maybe_unused]] constexpr bool EARLY = SCALES_BY_TMA && NEXT;
// STAGGER's lag: block scales by TMA only (elsewhere STAGGER builds the plain loop); its named barrier (2 and 3
// are the warpgroups' stores')
constexpr bool STAGGERED = SCALES_BY_TMA && STAGGER;
constexpr int STAGGER_BARRIER = 4;
constexpr int SA_ROWS = BM + 4;
constexpr int SA_BOX = SA_ROWS * 4;                   // the bytes the copy brings (and the slot's barrier awaits)
constexpr int SA_SLOT = (SA_BOX + 127) / 128 * 128;  // the area it lands in
constexpr int SA_AREA = SCALES_BY_TMA ? STAGES * SA_SLOT : 0;
constexpr int SB_SLOT = BN % 128 ? 8 : 4;             // SB's bytes a slot: one value, or a 160-wide tile's two
constexpr int PRODUCER_REGS = 40;              // setmaxnreg, as 10: the producer's registers go to the consumers
constexpr int CONSUMER_REGS = 232;

static_assert(sizeof(ELEM_OUT) == 2, "two 16-bit outputs per register (fp8's out: bfloat16)");
static_assert(BN == 128 || BN == 256 || (FP8 && BN == 160), "BN: 128 or 256, fp8 128 or 160 (BN/2 accumulators)");
static_assert(!FP8 || BN != 256, "fp8: BN 128 or 160 (acc and total: 2·BN/2 registers a consumer thread)");
static_assert(BN != 160 || !BLOCK_SCALES || TMA_SCALES, "BN 160 spans two of B's scale blocks: with t1's scales only");
static_assert(FP8 || !BLOCK_SCALES, "block scales: fp8 only");
static_assert(TMA_SCALES == 0 || TMA_SCALES == 1, "TMA_SCALES: 0 (block scales read into registers) or 1 (by TMA)");
static_assert(NEXT == 0 || (NEXT == 1 && TMA_SCALES == 1 && ACCS == 1), "NEXT: 0, or 1 with t1's one set");
static_assert(STAGGER == 0 || (STAGGER == 1 && TMA_SCALES == 1 && ACCS == 1 && NEXT == 0),
              "STAGGER: 0, or 1 with t1's one set and no NEXT");
static_assert(AHEAD == 0 || (AHEAD == 1 && TMA_SCALES == 1 && ACCS == 1 && NEXT == 0),
              "AHEAD: 0, or 1 with t1's one set and no NEXT");
static_assert(ACCS == 1 || (ACCS == 2 && TMA_SCALES == 1 && BN == 128),
              "ACCS: 1, or 2 with the block scales by TMA on 128-column tiles (three sets of BN/2 registers)");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1, or 2 blocks along M sharing B");
static_assert(SWIZZLE >= 0, "SWIZZLE: 0 (row-major within a group) or the rows of a band");

#include "../include/cluster_dims.cuh"  // CLUSTER_DIMS

using Walk = GroupWalk<BM * CLUSTER, BM, BN, SWIZZLE>;

// One float in or out of shared memory, kept in its place among the other volatile asm (the slot's waits, wgmmas
// and arrives): not hoisted above the wait that makes it valid, not sunk below the arrive that frees it.
__device__ __forceinline__ float lds_f32(uint32_t addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void sts_f32(uint32_t addr, float v)
{
    asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
grouped_wgmma(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b,
              const TensorMap* __restrict__ map_d, ELEM_OUT* __restrict__ D, const float* __restrict__ SA,
              const float* __restrict__ SB, const int* __restrict__ groups, const int* __restrict__ counts,
              const int* __restrict__ offsets, int G, int N, int K, int KB, int NB, int M,
              const TensorMap* __restrict__ map_sa)
{
    extern __shared__ uint8_t smem_raw[];
    // The swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align ourselves.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sA = raw + pad, sB = sA + STAGES * A_STAGE, sC = sB + STAGES * B_STAGE;
    // (TMA_SCALES: SA's slots after the staging, 1024-aligned; SB's floats after the barriers)
    const uint32_t sSA = sC + CONSUMERS * C_STAGE, bars = sSA + SA_AREA, sSB = bars + 16 * STAGES;
    uint8_t* const stage_base = smem_raw + pad + (sC - sA);
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its tiles"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer of the cluster is done with s"

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ktiles = (K + BK - 1) / BK;
    const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;
    // A cluster's blocks walk the same units (each its own row block of them).
    Walk walk(counts, offsets, G, N, blockIdx.x / CLUSTER, gridDim.x / CLUSTER);

    ring_init<STAGES, CLUSTER>(bars, CONSUMERS * CLUSTER);  // full(s), then empty(s)

    // Both roles count slots with `it` from one tile to the next: slot it % STAGES, phase (it / STAGES) & 1.
    if (warp >= 4 * CONSUMERS) {
        // ---- producer: the first warp walks the tiles, its lane 0 keeps the ring full ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS) {
            if (lane == 0) {
                tma_acquire(map_a);
                tma_acquire(map_b);
                if (SCALES_BY_TMA) tma_acquire(map_sa);
            }
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;
            uint32_t it = 0;
            for (; walk.locate(); walk.next()) {
                const GroupTile tile = walk.tile(rank);
                // This rank's share of B's tile (multicast to the cluster), rows group·N + n0 + ...
                const int b_row = tile.group * N + tile.n0 + rank * B_BOXES * B_BOX;
                // TMA_SCALES: the tile's SB row (KB floats, one per slot). Its rows need not start on the 16 bytes
                // a bulk copy or a tensor map asks for (KB is any count), so this lane reads each slot's value
                // itself, before it waits for the slot to empty (the wait hides the load), and stores it into the
                // slot's float before its arrive, whose release makes it visible to the consumers' acquiring wait.
                // A 160-wide tile's last columns may lie in the next column block (the same at N's last block).
                const float* const sb = SB + ((size_t)tile.group * NB + tile.n0 / 128) * KB;
                const float* const sb2 = SB + ((size_t)tile.group * NB + min(tile.n0 / 128 + 1, NB - 1)) * KB;
                if (lane == 0) {
                    for (int t = 0; t < ktiles; ++t, ++it) {
                        const int s = it % STAGES, k0 = t * BK;
                        const float sb_t = SCALES_BY_TMA ? sb[t] : 0.f;
                        const float sb2_t = SCALES_BY_TMA && SB_SLOT == 8 ? sb2[t] : 0.f;
                        mbar_sleep(empty(s), ((it / STAGES) & 1) ^ 1);
                        if (SCALES_BY_TMA) sts_f32(sSB + SB_SLOT * s, sb_t);
                        if (SCALES_BY_TMA && SB_SLOT == 8) sts_f32(sSB + SB_SLOT * s + 4, sb2_t);
                        // all of A and B (B partly from the peer), and SA's box of 132 rows (zeros past M)
                        mbar_expect_bytes(full(s), A_STAGE + B_STAGE + (SCALES_BY_TMA ? SA_BOX : 0));
                        tma_load_2d(sA + s * A_STAGE, map_a, k0, tile.m0, full(s));
                        tma_load_2d(sA + s * A_STAGE + BOX, map_a, k0, tile.m0 + 64, full(s));
                        if (SCALES_BY_TMA) tma_load_2d(sSA + s * SA_SLOT, map_sa, tile.m0 & ~3, t, full(s));
#pragma unroll
                        for (int b = 0; b < B_BOXES; ++b)
                            tma_load_2d(sB + s * B_STAGE + (rank * B_BOXES + b) * B_BOX * 128, map_b, k0,
                                        b_row + B_BOX * b, full(s), mask);
                    }
                }
                __syncwarp();
            }
        }
    } else {
        // ---- consumers: warpgroup wg multiplies rows 64·wg.. of the tile by all BN columns ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warpgroup_of<UWG>(warp), w = warp % 4;
        const bool leader = tid % 128 == 0;
        // STAGGERED: warpgroup 0 lets warpgroup 1 start once its first slot is done (or it has no tile at all)
        [[maybe_unused]] bool lead = STAGGERED && wg == 0;
        if constexpr (STAGGERED)
            if (wg == 1) named_sync(STAGGER_BARRIER, 256);
        // Slot s is free once this warpgroup's wgmmas have read it: one arrive on every cluster block's "empty".
        auto release = [&](int s) {
            if (leader) {
                if (CLUSTER == 1) {
                    mbar_arrive(empty(s));
                } else {
                    mbar_arrive_cluster(empty(s), 0);
                    mbar_arrive_cluster(empty(s), 1);
                }
            }
        };
        float acc[1][BN / 2];
#pragma unroll
        for (int v = 0; v < BN / 2; ++v) acc[0][v] = 0.f;
        float total[FP8 ? BN / 2 : 1];  // fp8: the slots' sums, scaled, in float32
        // fp8's per-tensor scales, applied once at the end (block scales: slot by slot)
        const float scale = FP8 && !BLOCK_SCALES ? SA[0] * SB[0] : 1.f;
        // The descriptors of slot 0's first k step for this warpgroup: A's box wg, B's first; a k16 step moves
        // the start 32 bytes along the swizzled rows, a slot A_STAGE (B_STAGE) bytes.
        RingCursor<STAGES, (A_STAGE >> 4), (B_STAGE >> 4)> ring(smem_desc(sA + wg * BOX), smem_desc(sB));
        constexpr uint32_t KSTEP = 32 >> 4;
        bool ready = false;
        // Wait for slot `it`, then issue its four wgmmas into d (the first overwriting it where `fresh`).
        auto issue = [&](uint32_t it, bool fresh, float (&d)[BN / 2]) {
#if CARRY
            const int s = ring.slot;
            const uint64_t da = ring.desc_a, db = ring.desc_b;
            if (!(PEEK && ready)) mbar_sleep(full(s), ring.phase);
            ring.advance();
#else
            const int s = it % STAGES;
            mbar_sleep(full(s), (it / STAGES) & 1);
            const uint64_t da = ring.first_a + s * (A_STAGE >> 4), db = ring.first_b + s * (B_STAGE >> 4);
#endif
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < KSTEPS; ++j)
                wgmma_ss<ELEM, BN>(d, da + j * KSTEP, db + j * KSTEP, !(fresh && j == 0));
            wgmma_commit();
            if (PEEK) ready = mbar_test(full(ring.slot), ring.phase);
        };
        // A tile's D rounded: accumulators v and v + 1 as one register of two 16-bit outputs, out[v/2].
        uint32_t out[BN / 4];
        const uint32_t stage = sC + wg * C_STAGE;
        uint8_t* const staged = stage_base + wg * C_STAGE;
        const int row = 16 * w + lane / 4;  // this thread's rows of the warpgroup's 64: row, row + 8
        // Round q of a full warpgroup's TMA store: D's boxes 2q and 2q + 1 (one in a last round of an odd count),
        // columns n0 + 128q.., through this warpgroup's 16 KB of staging once the round before has left it
        // (gemm/10_wgmma_tma.cu's store_round with one block of 64 rows).
        auto store_round = [&](int q, int m0, int n0) {
            const int boxes = C_BOXES - 2 * q < 2 ? 1 : 2;
            if (leader) bulk_wait<true>();
            named_sync(2 + wg, 128);
#pragma unroll
            for (int p = 0; p < 16 * boxes; ++p) {
                const int v = 64 * q + 2 * p;
                const int r8 = row + 8 * ((v >> 1) & 1), box = (v / 32) % 2, chunk = (v >> 2) % 8;
                *reinterpret_cast<uint32_t*>(staged + box * BOX + r8 * 128 + ((chunk ^ (r8 & 7)) << 4) +
                                             (lane % 4) * 4) = out[v / 2];
            }
            fence_proxy_async();  // our stores, before the copy engine reads them
            named_sync(2 + wg, 128);
            if (leader) {
                tma_store_2d(map_d, stage, n0 + 128 * q, m0);
                if (boxes == 2) tma_store_2d(map_d, stage + BOX, n0 + 128 * q + 64, m0);
                bulk_commit();
            }
        };
        // A group's last rows: each thread stores its pairs of rows below `valid` (of the warpgroup's 64 at m0),
        // columns below N, from the registers; from accumulator `first` on (a full tile's TAIL columns: first =
        // 32·C_BOXES, column 64·C_BOXES).
        auto store_rows = [&](int m0, int n0, int valid, int first) {
#pragma unroll
            for (int v = first; v < BN / 2; v += 2) {
                const int r = row + 8 * ((v >> 1) & 1), c = n0 + 8 * (v >> 2) + 2 * (lane % 4);
                if (r < valid && c < N)
                    *reinterpret_cast<uint32_t*>(D + (size_t)(m0 + r) * N + c) = out[v / 2];
            }
        };
        uint32_t it = 0;
        // The slot the next issue takes: it % STAGES, carried with CARRY (issue moves the ring on).
        auto now = [&]() {
#if CARRY
            return (int)ring.slot;
#else
            return (int)(it % STAGES);
#endif
        };
        // EARLY: the slot whose wgmmas (a tile's first) are in flight before the tile starts, or -1
        [[maybe_unused]] int early = -1;
#if NEXT
        for (bool more = walk.locate(); more;) {
            const GroupTile tile = walk.tile(rank);
#elif WALK_AHEAD
        // the tile after this one, found under this tile's first slot (the first tile before the loop)
        bool more = walk.locate();
        GroupTile coming = more ? walk.tile(rank) : GroupTile{};
        while (more) {
            const GroupTile tile = coming;
#else
        for (; walk.locate(); walk.next()) {
            const GroupTile tile = walk.tile(rank);
#endif
            const int m0 = tile.m0 + 64 * wg, valid = tile.valid - 64 * wg;  // this warpgroup's rows
            if constexpr (SCALES_BY_TMA) {
                // The slot's scales arrive with it: after the wait (in issue) this warpgroup's rows' SA and the
                // tile's SB are read from the slot's shared memory while the wgmmas run, before the slot is freed.
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) total[v] = 0.f;
                // rows row and row + 8 of SA's slot, whose box starts (m0 & 3) rows before the tile's first
                const uint32_t my_sa = sSA + 4 * ((tile.m0 & 3) + 64 * wg + row);
                // 160-wide tiles: the accumulators' 32-column chunks from `split` on are in B's next scale block
                const int split = (128 - tile.n0 % 128) / 32;
                // A slot: its wgmmas issued (the slot's 128 k summed from zero) ...
                auto start = [&]() {
                    const int s = now();
                    issue(it, true, acc[0]);
                    return s;
                };
                // ... then its scales read, the wgmmas waited for, the slot freed and the sums added in
                auto finish = [&](int s) {
                    const float a0 = lds_f32(my_sa + s * SA_SLOT), a1 = lds_f32(my_sa + s * SA_SLOT + 32);
                    const float b = lds_f32(sSB + SB_SLOT * s);
                    const float b2 = SB_SLOT == 8 ? lds_f32(sSB + SB_SLOT * s + 4) : b;
                    const float s0 = a0 * b, s1 = a1 * b, next0 = a0 * b2, next1 = a1 * b2;
                    wgmma_hold<0>(acc);
                    release(s);
                    ++it;
                    if constexpr (STAGGERED)
                        if (lead) named_arrive(STAGGER_BARRIER, 256), lead = false;
#pragma unroll
                    for (int c = 0; c < BN / 32; ++c) {  // ... and added in at its scales (rows row, row + 8),
                        const bool next = SB_SLOT == 8 && c >= split;  // 32 columns at a time
                        const float r0 = next ? next0 : s0, r1 = next ? next1 : s1;
#pragma unroll
                        for (int v = 16 * c; v < 16 * c + 16; ++v) total[v] += acc[0][v] * ((v >> 1) & 1 ? r1 : r0);
                    }
                };
                auto slot = [&]() { finish(start()); };
#if ACCS == 2
                // Two accumulator sets: slot t + 1's wgmmas go into the other set before slot t's are waited for,
                // so the tensor cores have work queued while this warpgroup scales and adds slot t's sums (with
                // one set, they idle from the wait until the next slot's issue unless the other warpgroup's fill
                // the gap). 64 registers more a thread.
                float other[1][BN / 2];
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) other[0][v] = 0.f;
                // Slot `held`'s sums in a, once waited for (`PENDING` commit groups left in flight): scaled by its
                // scales, added in, the slot freed and a zeroed for its next slot, whose wgmmas accumulate into it.
                int held = now(), t = 0;
                auto promote = [&](auto pending, float (&a)[1][BN / 2]) {
                    const float a0 = lds_f32(my_sa + held * SA_SLOT), a1 = lds_f32(my_sa + held * SA_SLOT + 32);
                    const float b = lds_f32(sSB + SB_SLOT * held);
                    const float s0 = a0 * b, s1 = a1 * b;
                    wgmma_hold<decltype(pending)::value>(a);
                    release(held);
#pragma unroll
                    for (int v = 0; v < BN / 2; ++v) {
                        total[v] += a[0][v] * ((v >> 1) & 1 ? s1 : s0);
                        a[0][v] = 0.f;
                    }
                };
                // Slot t + 1 into cur while slot t (in prev) is promoted; false after the tile's last slot, which
                // cur then holds. The wait's depth goes with the issue in one branch: with the issue and the wait
                // in two branches on the same condition, ptxas could not tell which set a wait left in flight and
                // serialised every wgmma (C7514).
                auto step = [&](float (&cur)[1][BN / 2], float (&prev)[1][BN / 2]) {
                    const int next = now();
                    issue(it, false, cur[0]);
                    ++it;
                    promote(std::integral_constant<int, 1>(), prev);
                    held = next;
                    if (++t + 1 < ktiles) return true;
                    promote(std::integral_constant<int, 0>(), cur);
                    return false;
                };
                issue(it, false, acc[0]);
                ++it;
                if (ktiles == 1)
                    promote(std::integral_constant<int, 0>(), acc);
                else
                    while (step(other, acc) && step(acc, other)) {
                    }
#else
                // Two slots an iteration, as the register-read loop below: so unrolled, nvcc 13 keeps the ring's
                // descriptors in uniform registers (one slot an iteration, its SASS moved them there by 4 R2UR a
                // slot, between the full barrier's answer and the first wgmma: tools/sass_loops.py).
#if NEXT
                finish(early >= 0 ? early : start());  // the first slot, perhaps issued before the last epilogue
                early = -1;
#elif WALK_AHEAD
                // the first slot issued, the next tile found while its wgmmas run (no register of theirs touched,
                // so ptxas waits for them only in finish), the slot finished, then the rest as below
                const int s_first = start();
                walk.next();
                more = walk.locate();
                if (more) coming = walk.tile(rank);
                finish(s_first);
#endif
                constexpr int LOOP_FROM = NEXT || WALK_AHEAD;  // the first slot, where it was done above
#pragma unroll 1
                for (int t = LOOP_FROM; t < ktiles; t += 2) {
                    slot();
                    if (t + 1 < ktiles) slot();
                }
#endif
#pragma unroll
                for (int v = 0; v < BN / 2; v += 2) out[v / 2] = pack2(total[v], total[v + 1], (ELEM_OUT*)nullptr);
            } else if constexpr (FP8) {
                // The thread's two rows' scales (SA's rows; none for a row that is not the group's, never stored,
                // whose scale row may lie past SA), and the tile's column block's (SB).
                const float* const sa0 = SA + (row < valid ? m0 + row : 0);
                const float* const sa1 = SA + (row + 8 < valid ? m0 + row + 8 : 0);
                const float* const sb = SB + ((size_t)tile.group * NB + tile.n0 / 128) * KB;
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) total[v] = 0.f;
                // Block scales are read two slots ahead into two sets of registers, the loop unrolled by two so
                // that each set keeps its registers: slot t uses set t % 2, then asks for slot t + 2's into it.
                // Why: read one slot ahead into one set, the compiler moved the fresh values into the working
                // registers before the slot's wgmmas, so every slot waited for L2 before its tensor work began.
                struct Scales { float a0 = 1.f, a1 = 1.f, b = 1.f; };  // SA's two rows, SB's column block
                // Every read is made (past the last slot: the last slot's again), so that a set's registers are
                // loaded straight, not kept or replaced by a branch. A row past the group reads SA's row 0: its
                // sums are never stored.
                auto read = [&](Scales& s, int t) {
                    if (BLOCK_SCALES) {
                        t = min(t, ktiles - 1);
                        s.b = sb[t];
                        s.a0 = sa0[(size_t)t * M];  // SA [KB, M]: a warp's 16 rows in two sectors
                        s.a1 = sa1[(size_t)t * M];
                    }
                };
                auto step = [&](Scales& s, int t) {
                    const float s0 = s.a0 * s.b, s1 = s.a1 * s.b;  // 1 with per-tensor scales (applied at the end)
                    read(s, t + 2);
                    issue(it, true, acc[0]);  // the slot's 128 k summed from zero ...
                    wgmma_hold<0>(acc);
                    release(it % STAGES);
                    ++it;
#pragma unroll
                    for (int v = 0; v < BN / 2; ++v)  // ... and added in at its scales (rows row, row + 8)
                        total[v] += acc[0][v] * ((v >> 1) & 1 ? s1 : s0);
                };
                Scales even, odd;
                read(even, 0);
                read(odd, 1);
#pragma unroll 1
                for (int t = 0; t < ktiles; t += 2) {
                    step(even, t);
                    if (t + 1 < ktiles) step(odd, t + 1);
                }
#pragma unroll
                for (int v = 0; v < BN / 2; v += 2) out[v / 2] = pack2(scale * total[v], scale * total[v + 1], (ELEM_OUT*)nullptr);
            } else {
#pragma unroll 1
                for (int t = 0; t < ktiles; ++t, ++it) {
                    issue(it, t == 0, acc[0]);
                    // One slot's wgmmas stay in flight while the next slot's are issued: wait for the one before.
                    wgmma_wait<1>();
                    if (t > 0) release((it - 1) % STAGES);
                }
                wgmma_hold<0>(acc);
                release((it - 1) % STAGES);
#pragma unroll
                for (int v = 0; v < BN / 2; v += 2) out[v / 2] = pack2(acc[0][v], acc[0][v + 1], (ELEM_OUT*)nullptr);
            }
            // ---- epilogue: this warpgroup's rows 64·wg.. of the tile, those of the group only ----
            auto store_tile = [&]() {
                if (valid >= 64) {
#pragma unroll
                    for (int q = 0; q < ROUNDS; ++q) store_round(q, m0, tile.n0);
                    if (TAIL) store_rows(m0, tile.n0, 64, 32 * C_BOXES);
                } else if (valid > 0) {
                    store_rows(m0, tile.n0, valid, 0);
                }
            };
#if NEXT
            // The next tile, and with t1 its first slot's wgmmas, which run while this tile is stored. The store
            // is inside each branch: after a branch that issued wgmmas into acc, ptxas waits for them where the
            // paths meet (C7517, "warpgroup.wait is injected"); with the store after the branch, that wait came
            // before the store, and the early slot was done before the store began.
            walk.next();
            more = walk.locate();
            if (EARLY && more) {
                early = now();
                issue(it, true, acc[0]);
                store_tile();
            } else {
                store_tile();
            }
#else
            store_tile();
#endif
        }
        if constexpr (STAGGERED)
            if (lead) named_arrive(STAGGER_BARRIER, 256);  // a block without tiles: nothing to lag behind
        if (leader) bulk_wait<false>();  // the last stores complete before the block may leave
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
