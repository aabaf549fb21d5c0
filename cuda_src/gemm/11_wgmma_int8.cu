// INT8 tensor-core GEMM for Hopper (sm_90a): C[M,N] = A·B with int8 inputs and int32 accumulators and output, exact.
//
// Layout nt only: A is M×K and B is stored N×K, both row-major, so both operands are K-contiguous. That is not a
// choice here: the integer wgmma (s8 × s8 → s32) has no transpose bits and reads K-major operands only, as fp8's.
//
// The pipeline is gemm/10_wgmma_tma.cu's, cut down to what int8 needs:
//  * TMA copies both operands into a ring of STAGES slots in shared memory, 128-byte swizzled. A slot is BK = 128
//    k (128 bytes, one swizzle row) of BM rows of A and BN rows of B, in boxes of 64 rows × 128 bytes (8 KB). The
//    copy engine zero-fills rows past M and N and the k past K, so a ragged edge adds products of zeros.
//  * One producer thread (in a warpgroup of its own, which setmaxnreg strips to 40 registers a thread) keeps the ring
//    full through two mbarriers a slot: "full" (its arrive plus the bytes it announces) and "empty" (one arrive per
//    consumer warpgroup of every block the slot's bytes reach, once its wgmmas have read the slot).
//  * Two consumer warpgroups: warpgroup wg owns rows BM/2·wg .. of the tile in MI = BM/128 blocks of 64 (PING = 1:
//    every other tile whole, MI = BM/64, see below) and issues, per slot, four k steps of MI
//    wgmma.m64nBNk32.s32.s8.s8 (32 bytes of k each: the descriptor's start moves 32 bytes along the swizzled rows),
//    both operands by descriptor (hopper.cuh's wgmma_s8). One slot's wgmmas stay in flight while the next slot's are
//    issued; the slot before is then released.
//  * Persistent blocks: at most one per SM, walking the tiles gridDim apart (in bands of SWIZZLE tile rows where
//    SWIZZLE > 0, gemm_common.cuh's tile_coords, so that the blocks resident together share panels in L2; the walk
//    is tile_walk.cuh's, 10's). The ring runs on from one tile to the next: while the consumers store a tile, the
//    producer already loads the next one's first slots.
//  * CLUSTER = 2 or 4 (10's clusters): the blocks of a cluster take tiles that share the larger operand tile (B's
//    where BN >= BM: tiles stacked along M; A's where BM > BN: side by side along N). Each block's producer loads
//    its rank's share of the shared tile's boxes and multicasts them into every block of the cluster, so a block
//    reads BM + BN/CLUSTER (or BM/CLUSTER + BN) rows of operands from L2 a slot: 256 where 128 × 256 alone reads 384.
//    A consumer warpgroup releases a slot on the "empty" barrier of every block of the cluster (their producers
//    write into it). A cluster's tile past M or N (an odd count of tiles) is computed on zeros and not stored.
//  * The consumer loop is the fastest one measured for 10's fp8 (its u1 d1 q1): the warpgroup index broadcast from
//    lane 0 (descriptors in uniform registers), the slot, phase and descriptors carried from slot to slot
//    (hopper.cuh's RingCursor), and the next slot's full barrier asked about while this slot's wgmmas run.
//  * C leaves straight from the accumulators (TMASTORE = 0): for a register pair a quad of threads writes 32
//    consecutive bytes of one row (a whole sector), 8-byte stores where N is even (the pair's address is then 8-byte
//    aligned), one int32 at a time otherwise, rows past M and columns past N skipped. While the consumers store, the
//    tensor cores idle (the int32 tile needs all its registers until it has left: 10's OVERLAP, which keeps a tile's
//    C in BN/4 registers of 16-bit pairs while the next tile's first slots run, would need BN/2 more here).
//  * TMASTORE = 1: C leaves through shared memory, by TMA. Each consumer warpgroup has 16 KB of staging, two boxes
//    of 64 rows × 32 int32 (128 bytes a row, 128B swizzle) used in turn: it writes one box (8-byte shared stores
//    whose 32 lanes fill 256 bytes in two wavefronts), fences, and its leader thread copies the box out (TMA clips it
//    to M × N) while the warpgroup writes the other one; a box is written again once its copy has read it (bulk
//    wait_group.read 1). The copy engine writes whole 128-byte rows where the threads' stores were 8 bytes each,
//    and the LSU issues 8 shared stores a box instead of 8 global ones with their address arithmetic and bounds
//    tests. The map of C needs rows on 16-byte boundaries (N % 4 == 0): where N is not, it is not built and the
//    kernel stores as TMASTORE = 0 does (a test of N, uniform across the block).
//  * TMASTORE = 2: the same staging split by warps, with no barrier across the warpgroup: each warp stages its own
//    16 rows of a box (2 KB, its two buffers in its own 4 KB) and its lane 0 copies them out (boxes of 16 rows × 32),
//    the warp's threads ordered by __syncwarp where t1 has two 128-thread barriers a box. Four times as many copies,
//    a quarter the size each (the map's box is 16 rows).
//  * PING = 1 (CUTLASS's "pingpong"; conv/14's PING): the warpgroups take the block's tiles in turn, each a whole
//    BM × BN tile (BM = 64 or 128). A tile's slots follow the other warpgroup's tile's in the ring, and its wgmmas
//    are issued once the other's are (named barriers 8 and 9), so they run while the other's C leaves: the stores
//    come off the tensor cores' path. Each slot is read by one warpgroup (its "empty" barrier counts one arrive); a
//    warpgroup skips its ring cursor over the other's slots (RingCursor::seek). The same bytes a slot feed half the
//    products of a shared 2·BM-row tile. With CLUSTER, the blocks of a cluster walk the same sequence of groups, so
//    warpgroup wg of each takes its tile of the same group, whose shared operand its peers multicast into the same
//    slots: a slot is released by that one warpgroup of each block.
//
// Tiles (-DNAME=value): BM (128, or 256 with BN = 128; PING: 64 with BN = 256, or 128 with BN = 128), BN (128 or
// 256), STAGES (ring slots), SWIZZLE (0 or a band of tile rows), PING (0 or 1), CLUSTER (1, 2 or 4), TMASTORE (0, 1
// or 2). A consumer thread holds MI·BN/2 ≤ 128 int32 accumulators. Shared memory: STAGES·(BM + BN)·128 + 32768 where
// TMASTORE > 0 (C's staging) + 1024 (alignment) + 16·STAGES (barriers). Launch: a 1-D grid of whole clusters, at
// most one block per SM; block 384 threads (consumer warpgroups 0 and 1, then the producer warpgroup). Maps: A (M×K)
// and B (N×K), boxes of 64 rows × 128 bytes, 128B swizzle; TMA needs K % 16 == 0 (rows on 16-byte boundaries); C
// (M×N int32, boxes of 64 rows × 32, t2: 16 × 32) where TMASTORE > 0 and N % 4 == 0.

#include "../include/hopper.cuh"     // wgmma_s8, smem_desc, mbarriers, ring_init, RingCursor, TMA loads and stores
#include "../include/tile_walk.cuh"  // TileWalk: the persistent walk (gemm/10's), in clusters

#ifndef ELEM
#define ELEM int8_t
#endif
#ifndef ELEM_OUT
#define ELEM_OUT int
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif
#ifndef PING
#define PING 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef TMASTORE
#define TMASTORE 0
#endif

constexpr int BK = 128;                      // k per slot: one 128-byte swizzle row of int8
constexpr int CONSUMERS = 2;
// PING = 0: the two consumer warpgroups share each tile, BM/2 rows each; PING = 1: each takes every other tile whole
constexpr int WG_M = PING ? BM : BM / CONSUMERS, MI = WG_M / 64;  // a warpgroup's rows, in MI blocks of 64
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int KSTEPS = BK / 32;              // wgmmas (k32) per slot and block
constexpr int BOX = 64 * 128;                // one TMA box: 64 rows × 128 bytes (of int8 operands or int32 C)
constexpr int A_STAGE = BM * 128, B_STAGE = BN * 128;
constexpr int C_STAGE = 2 * BOX;             // TMASTORE: a consumer warpgroup's staging, two boxes used in turn
constexpr int C_ROWS = TMASTORE == 2 ? 16 : 64;  // ... of C_ROWS rows (t1: the warpgroup's 64, t2: a warp's 16)
constexpr int C_BUF = C_ROWS * 128;          // ... of C_BUF bytes (t2: each warp its own two)
constexpr int C_COLS = 128 / 4;             // ... each 64 rows × 32 int32 (128 bytes) of C
constexpr int C_ROUNDS = MI * BN / 32;       // a warpgroup's boxes of C a tile
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;           // (65536 − 128·40) / 256, rounded down to 8 and capped as 10's
constexpr int PING_BARRIER = 8;             // PING's named barriers 8 and 9: "your turn" to warpgroup 0 and 1
constexpr int STAGE_BARRIER = 2;            // TMASTORE's named barriers 2 and 3: warpgroup 0's and 1's staging
// The cluster shares the larger operand tile (B where BN >= BM, A where BM > BN), multicast by its blocks' producers
using Walk = TileWalk<BM, BN, CLUSTER, SWIZZLE>;
constexpr bool SHARE_A = Walk::SHARE_A;

static_assert(std::is_same_v<ELEM, int8_t> && std::is_same_v<ELEM_OUT, int>, "int8 in, int32 out");
static_assert(BN == 128 || BN == 256, "BN: 128 or 256 (one wgmma's N)");
static_assert(PING == 0 || PING == 1, "PING: 0 (the warpgroups share a tile) or 1 (they take tiles in turn)");
static_assert(WG_M == 64 || WG_M == 128, "BM: 64 or 128 rows a consumer warpgroup (BM/2 without PING, BM with it)");
static_assert(WG_M * BN <= 16384, "a consumer thread holds MI·BN/2 ≤ 128 int32 accumulators");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "CLUSTER: 1, 2 or 4");
static_assert((SHARE_A ? BM : BN) % (64 * CLUSTER) == 0, "the shared tile splits into whole boxes of 64 rows a block");
static_assert(TMASTORE >= 0 && TMASTORE <= 2,
              "TMASTORE: 0 (C straight from the accumulators), 1 or 2 (staged, TMA: by warpgroup or by warp)");

#include "../include/cluster_dims.cuh"  // CLUSTER_DIMS

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
gemm_wgmma_int8(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b,
                const TensorMap* __restrict__ map_c, int* __restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // The swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align ourselves.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sA = raw + pad, sB = sA + STAGES * A_STAGE, sC = sB + STAGES * B_STAGE;
    const uint32_t bars = sC + (TMASTORE ? CONSUMERS * C_STAGE : 0);
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its tiles"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer warpgroup reading s is done"

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ktiles = (K + BK - 1) / BK;
    const Walk walk(M, N);  // the block's j-th tile: walk.has(j), walk.origin_of(walk.group + j * walk.stride, ...)

    // empty: the warpgroups reading a slot (both, or with PING the one whose tile it feeds) in every block of the
    // cluster (the slot's bytes are multicast into each)
    ring_init<STAGES, CLUSTER>(bars, (PING ? 1 : CONSUMERS) * CLUSTER);

    if (warp >= 4 * CONSUMERS) {
        // ---- producer: one thread, two operands' boxes a slot ----------------------------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_a);
            tma_acquire(map_b);
            // The boxes of each operand this block loads: all of its own operand's, its rank's share of the shared
            // one's, multicast into every block of the cluster (each block's full barrier counts the whole slot).
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;
            constexpr int A_BOXES = SHARE_A ? BM / 64 / CLUSTER : BM / 64;
            constexpr int B_BOXES = SHARE_A ? BN / 64 : BN / 64 / CLUSTER;
            const int a_first = SHARE_A ? walk.rank * A_BOXES : 0, b_first = SHARE_A ? 0 : walk.rank * B_BOXES;
            RingSlot<STAGES> ring;
            for (int j = 0; walk.has(j); ++j) {
                int m0, n0;
                walk.origin_of(walk.group + j * walk.stride, m0, n0);
                for (int t = 0; t < ktiles; ++t) {
                    const int s = ring.slot, k0 = t * BK;
                    mbar_sleep(empty(s), ring.phase ^ 1);  // released (a fresh barrier passes)
                    mbar_expect_bytes(full(s), A_STAGE + B_STAGE);  // whole boxes, zero-filled past the edges
#pragma unroll
                    for (int b = a_first; b < a_first + A_BOXES; ++b)
                        tma_load_2d(sA + s * A_STAGE + b * BOX, map_a, k0, m0 + 64 * b, full(s), SHARE_A ? mask : 0);
#pragma unroll
                    for (int b = b_first; b < b_first + B_BOXES; ++b)
                        tma_load_2d(sB + s * B_STAGE + b * BOX, map_b, k0, n0 + 64 * b, full(s), SHARE_A ? 0 : mask);
                    ring.advance();
                }
            }
        }
    } else {
        // ---- consumers: warpgroup wg multiplies its WG_M rows of a tile (MI blocks of 64) by all BN columns --------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warpgroup_of<true>(warp), w = warp % 4;
        const bool leader = tid % 128 == 0;
        // Slot 0's descriptors at k step 0 for this warpgroup (A: its first block of 64 rows); a slot, a block and a
        // k step only move the start address (16-byte units).
        const int wg_row = PING ? 0 : wg * WG_M;  // the warpgroup's first row in a tile it works on
        RingCursor<STAGES, (A_STAGE >> 4), (B_STAGE >> 4)> ring(smem_desc(sA + wg_row / 64 * BOX), smem_desc(sB));
        constexpr uint32_t BLOCK_STEP = BOX >> 4, KSTEP = 32 >> 4;
        bool ready = false;  // slot ring.slot's data seen to have come (asked while the slot before ran)
        int held = 0;        // the slot whose wgmmas may still be in flight
        // TMASTORE, where C's rows may be copied (N·4 bytes a multiple of 16: the map was built); elsewhere, and
        // without TMASTORE, C leaves straight from the accumulators
        const bool staged = TMASTORE && N % 4 == 0;
        const uint32_t stage = sC + wg * C_STAGE + (TMASTORE == 2 ? w * 2 * C_BUF : 0);  // this thread's buffers
        uint8_t* const stage_ptr = smem_raw + pad + (stage - sA);
        // Who copies the staged boxes out, and the barrier between them and the threads writing them
        const bool issuer = TMASTORE == 2 ? lane == 0 : leader;
        auto stage_sync = [&] {
            if (TMASTORE == 2)
                __syncwarp();
            else
                named_sync(STAGE_BARRIER + wg, 128);
        };
        // j: the block's j-th tile, all of them (PING = 0) or every other one (PING = 1: warpgroup wg takes j = wg,
        // wg + 2, ..., whose slots follow the other warpgroup's in the ring)
        for (int j = PING ? wg : 0; walk.has(j); j += 1 + PING) {
            int m0, n0;
            walk.origin_of(walk.group + j * walk.stride, m0, n0);
            if (PING) ring.seek(j * ktiles), ready = false;  // the tile's first slot, counted as the producer counts
            // PING: this tile's wgmmas go after the other warpgroup's tile's are issued. Not only an order: a slot's
            // full barrier tells its phase by parity, so a warpgroup may wait on a slot only once its use before (a
            // slot of the other's tile) has been filled, or a fresh phase of the wrong parity would pass it at once.
            if (PING && j > 0) named_sync(PING_BARRIER + wg, 256);
            int32_t acc[MI][BN / 2];
            for (int t = 0; t < ktiles; ++t) {
                const int s = ring.slot;
                const uint64_t da = ring.desc_a, db = ring.desc_b;
                if (!ready) mbar_sleep(full(s), ring.phase);
                ring.advance();
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
                    for (int i = 0; i < MI; ++i)  // the tile's first k step overwrites the accumulators
                        wgmma_s8<BN>(acc[i], da + i * BLOCK_STEP + kk * KSTEP, db + kk * KSTEP, t > 0 || kk > 0);
                wgmma_commit();
                ready = mbar_test(full(ring.slot), ring.phase);
                wgmma_wait<1>();  // the slot before's wgmmas are done ...
                if (t > 0 && leader) mbar_arrive_each_block<CLUSTER>(empty(held));  // ... so it may be refilled
                held = s;
            }
            if (PING && walk.has(j + 1))
                named_arrive(PING_BARRIER + 1 - wg, 256);  // the other warpgroup's turn
            wgmma_hold<0>(acc);
            if (leader) mbar_arrive_each_block<CLUSTER>(empty(held));

            // ---- epilogue: accumulators v, v + 1 of block i are C(m, n), C(m, n + 1)
            const int row = 16 * w + lane / 4;  // +8 for odd register pairs
            if (staged) {
                // Through staging, one box of C_ROWS rows × 32 columns at a time, the two buffers in turn: box r is
                // written once the copy of box r − 2 has read its buffer (the copy of box r − 1 may go on
                // meanwhile), then copied out by TMA, which clips it to M × N.
                const int box_row = TMASTORE == 2 ? lane / 4 : row;  // the thread's row in its box (+8: odd pairs)
#pragma unroll
                for (int r = 0; r < C_ROUNDS; ++r) {
                    const int i = r / (BN / C_COLS), q = r % (BN / C_COLS);
                    if (issuer) bulk_wait_read<1>();
                    stage_sync();
#pragma unroll
                    for (int v = 16 * q; v < 16 * q + 16; v += 2) {  // the register pairs of columns 32q .. 32q + 31
                        // row r8, 16-byte chunk (8·(v>>2) − 32q + 2·(lane%4)) / 4 of the box's row, swizzled as TMA
                        // reads it: chunk ^ (r8 % 8); the pair's 8 bytes at (lane % 2)·8 in the chunk
                        const int r8 = box_row + 8 * ((v >> 1) & 1), chunk = 2 * ((v >> 2) % 4) + (lane % 4) / 2;
                        *reinterpret_cast<int2*>(stage_ptr + (r % 2) * C_BUF + r8 * 128 + ((chunk ^ (r8 & 7)) << 4) +
                                                 (lane % 2) * 8) = make_int2(acc[i][v], acc[i][v + 1]);
                    }
                    fence_proxy_async();  // our stores, before the copy engine reads them
                    stage_sync();
                    if (issuer) {
                        const int rows = m0 + wg_row + 64 * i + (TMASTORE == 2 ? 16 * w : 0);
                        tma_store_2d(map_c, stage + (r % 2) * C_BUF, n0 + C_COLS * q, rows);
                        bulk_commit();
                    }
                }
                continue;
            }
            // Stored as they are: for a register pair a quad of threads writes 32 consecutive bytes of one row
            const bool pairs = N % 2 == 0;  // 8-byte aligned pairs
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < BN / 2; v += 2) {
                    const int m = m0 + wg_row + 64 * i + row + 8 * ((v >> 1) & 1);
                    const int n = n0 + 8 * (v >> 2) + 2 * (lane % 4);
                    if (m >= M || n >= N) continue;
                    int* dst = C + (size_t)m * N + n;
                    if (pairs) {
                        *reinterpret_cast<int2*>(dst) = make_int2(acc[i][v], acc[i][v + 1]);
                    } else {
                        dst[0] = acc[i][v];
                        if (n + 1 < N) dst[1] = acc[i][v + 1];
                    }
                }
        }
        if (TMASTORE && issuer) bulk_wait<false>();  // the last copies out complete before the block may leave
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
