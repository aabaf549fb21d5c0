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
//    consumer warpgroup, once its wgmmas have read the slot).
//  * Two consumer warpgroups: warpgroup wg owns rows BM/2·wg .. of the tile in MI = BM/128 blocks of 64 (PING = 1:
//    every other tile whole, MI = BM/64, see below) and issues, per slot, four k steps of MI
//    wgmma.m64nBNk32.s32.s8.s8 (32 bytes of k each: the descriptor's start moves 32 bytes along the swizzled rows),
//    both operands by descriptor (hopper.cuh's wgmma_s8). One slot's wgmmas stay in flight while the next slot's are
//    issued; the slot before is then released.
//  * Persistent blocks: at most one per SM, walking the tiles gridDim apart (in bands of SWIZZLE tile rows where
//    SWIZZLE > 0, gemm_common.cuh's tile_coords, so that the blocks resident together share panels in L2). The ring
//    runs on from one tile to the next: while the consumers store a tile, the producer already loads the next one's
//    first slots.
//  * The consumer loop is the fastest one measured for 10's fp8 (its u1 d1 q1): the warpgroup index broadcast from
//    lane 0 (descriptors in uniform registers), the slot, phase and descriptors carried from slot to slot
//    (hopper.cuh's RingCursor), and the next slot's full barrier asked about while this slot's wgmmas run.
//  * C leaves straight from the accumulators: for a register pair a quad of threads writes 32 consecutive bytes of
//    one row (a whole sector), 8-byte stores where N is even (the pair's address is then 8-byte aligned), one int32
//    at a time otherwise, rows past M and columns past N skipped. No staging, no TMA store: the first version.
//    While the consumers store, the tensor cores idle (the int32 tile needs all its registers until it has left).
//  * PING = 1 (CUTLASS's "pingpong"; conv/14's PING): the warpgroups take the block's tiles in turn, each a whole
//    BM × BN tile (BM = 64 or 128). A tile's slots follow the other warpgroup's tile's in the ring, and its wgmmas
//    are issued once the other's are (named barriers 8 and 9), so they run while the other's C leaves: the stores
//    come off the tensor cores' path. Each slot is read by one warpgroup (its "empty" barrier counts one arrive); a
//    warpgroup skips its ring cursor over the other's slots (RingCursor::seek). The same bytes a slot feed half the
//    products of a shared 2·BM-row tile.
//
// Tiles (-DNAME=value): BM (128, or 256 with BN = 128; PING: 64 with BN = 256, or 128 with BN = 128), BN (128 or
// 256), STAGES (ring slots), SWIZZLE (0 or a band of tile rows), PING (0 or 1). A consumer thread holds MI·BN/2 ≤
// 128 int32 accumulators. Shared memory: STAGES·(BM + BN)·128 + 1024 (alignment) + 16·STAGES (barriers). Launch: a
// 1-D grid of at most one block per SM; block 384 threads (consumer warpgroups 0 and 1, then the producer
// warpgroup). Maps: A (M×K) and B (N×K), boxes of 64 rows × 128 bytes, 128B swizzle; TMA needs K % 16 == 0 (rows on
// 16-byte boundaries).

#include "../include/gemm_common.cuh"  // tile_coords
#include "../include/hopper.cuh"       // wgmma_s8, smem_desc, mbarriers, ring_init, RingCursor, tma_load_2d

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

constexpr int BK = 128;                      // k per slot: one 128-byte swizzle row of int8
constexpr int CONSUMERS = 2;
// PING = 0: the two consumer warpgroups share each tile, BM/2 rows each; PING = 1: each takes every other tile whole
constexpr int WG_M = PING ? BM : BM / CONSUMERS, MI = WG_M / 64;  // a warpgroup's rows, in MI blocks of 64
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int KSTEPS = BK / 32;              // wgmmas (k32) per slot and block
constexpr int BOX = 64 * 128;                // one TMA box: 64 rows × 128 bytes
constexpr int A_STAGE = BM * 128, B_STAGE = BN * 128;
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;           // (65536 − 128·40) / 256, rounded down to 8 and capped as 10's
constexpr int PING_BARRIER = 8;             // PING's named barriers 8 and 9: "your turn" to warpgroup 0 and 1

static_assert(std::is_same_v<ELEM, int8_t> && std::is_same_v<ELEM_OUT, int>, "int8 in, int32 out");
static_assert(BN == 128 || BN == 256, "BN: 128 or 256 (one wgmma's N)");
static_assert(PING == 0 || PING == 1, "PING: 0 (the warpgroups share a tile) or 1 (they take tiles in turn)");
static_assert(WG_M == 64 || WG_M == 128, "BM: 64 or 128 rows a consumer warpgroup (BM/2 without PING, BM with it)");
static_assert(WG_M * BN <= 16384, "a consumer thread holds MI·BN/2 ≤ 128 int32 accumulators");
static_assert(STAGES >= 2, "a ring of one slot cannot overlap copies with products");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_wgmma_int8(const TensorMap* __restrict__ map_a, const TensorMap* __restrict__ map_b, int* __restrict__ C, int M,
                int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // The swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align ourselves.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t sA = raw + ((1024 - (raw & 1023)) & 1023), sB = sA + STAGES * A_STAGE;
    const uint32_t bars = sB + STAGES * B_STAGE;
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its tiles"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "both consumer warpgroups are done with s"

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ktiles = (K + BK - 1) / BK, tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    auto origin = [&](int tile, int& m0, int& n0) {
        int tm, tn;
        tile_coords<SWIZZLE>(tile, tiles_m, tiles_n, tm, tn);
        m0 = tm * BM, n0 = tn * BN;
    };

    ring_init<STAGES, 1>(bars, PING ? 1 : CONSUMERS);  // empty: the one or two warpgroups reading a slot

    if (warp >= 4 * CONSUMERS) {
        // ---- producer: one thread, two operands' boxes a slot ----------------------------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_a);
            tma_acquire(map_b);
            RingSlot<STAGES> ring;
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int m0, n0;
                origin(tile, m0, n0);
                for (int t = 0; t < ktiles; ++t) {
                    const int s = ring.slot, k0 = t * BK;
                    mbar_sleep(empty(s), ring.phase ^ 1);  // released (a fresh barrier passes)
                    mbar_expect_bytes(full(s), A_STAGE + B_STAGE);  // whole boxes, zero-filled past the edges
#pragma unroll
                    for (int b = 0; b < BM / 64; ++b)
                        tma_load_2d(sA + s * A_STAGE + b * BOX, map_a, k0, m0 + 64 * b, full(s));
#pragma unroll
                    for (int b = 0; b < BN / 64; ++b)
                        tma_load_2d(sB + s * B_STAGE + b * BOX, map_b, k0, n0 + 64 * b, full(s));
                    ring.advance();
                }
            }
        }
        return;
    }

    // ---- consumers: warpgroup wg multiplies its WG_M rows of a tile (MI blocks of 64) by all BN columns ------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int wg = warpgroup_of<true>(warp), w = warp % 4;
    const bool leader = tid % 128 == 0;
    // Slot 0's descriptors at k step 0 for this warpgroup (A: its first block of 64 rows); a slot, a block and a k
    // step only move the start address (16-byte units).
    const int wg_row = PING ? 0 : wg * WG_M;  // the warpgroup's first row in a tile it works on
    RingCursor<STAGES, (A_STAGE >> 4), (B_STAGE >> 4)> ring(smem_desc(sA + wg_row / 64 * BOX), smem_desc(sB));
    constexpr uint32_t BLOCK_STEP = BOX >> 4, KSTEP = 32 >> 4;
    bool ready = false;  // slot ring.slot's data seen to have come (asked while the slot before ran)
    int held = 0;        // the slot whose wgmmas may still be in flight
    // j: the block's j-th tile, all of them (PING = 0) or every other one (PING = 1: warpgroup wg takes j = wg, wg +
    // 2, ..., whose slots follow the other warpgroup's in the ring)
    for (int j = PING ? wg : 0; blockIdx.x + j * gridDim.x < tiles; j += 1 + PING) {
        const int tile = blockIdx.x + j * gridDim.x;
        int m0, n0;
        origin(tile, m0, n0);
        if (PING) ring.seek(j * ktiles), ready = false;  // the tile's first slot, counted as the producer counts
        // PING: this tile's wgmmas go after the other warpgroup's tile's are issued. Not only an order: a slot's
        // full barrier tells its phase by parity, so a warpgroup may wait on a slot only once its use before (a slot
        // of the other's tile) has been filled, or a fresh phase of the wrong parity would pass it at once.
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
            if (t > 0 && leader) mbar_arrive(empty(held));  // ... so it may be refilled
            held = s;
        }
        if (PING && blockIdx.x + (j + 1) * gridDim.x < tiles)
            named_arrive(PING_BARRIER + 1 - wg, 256);  // the other warpgroup's turn
        wgmma_hold<0>(acc);
        if (leader) mbar_arrive(empty(held));

        // ---- epilogue: accumulators v, v + 1 of block i are C(m, n), C(m, n + 1), stored as they are
        const bool pairs = N % 2 == 0;  // 8-byte aligned pairs
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int v = 0; v < BN / 2; v += 2) {
                const int m = m0 + wg_row + 64 * i + 16 * w + lane / 4 + 8 * ((v >> 1) & 1);
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
}
