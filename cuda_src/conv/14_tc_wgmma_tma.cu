// Tensor-core implicit-GEMM convolution fed by TMA (sm_90a): fp16 or bf16 NHWC, fp32 accumulate.
//
// 13_tc_wgmma_ws.cu measured where its time goes: the producer's copies alone took 84-93% of the kernel, because one
// warpgroup issues a 16-byte cp.async per thread and tile row, with its own address arithmetic, and reaches only
// 3-5 TB/s from L2 (docs/perf-notes.md). Here the copy engine does the im2col itself, so one thread issues a whole
// slice in two instructions:
//  * A (BM output pixels × 64 channels of one filter tap) is one box of an im2col tensor map of x
//    (cuTensorMapEncodeIm2col, backends/cuda/tma.py): the map knows N, H, W, C, the padding (its bounding box,
//    whose corners are −pad and pad − (R − 1)) and the stride (its traversal stride). Given the input pixel under
//    the tile's first output pixel and the tap (s, r) as offsets, the engine walks BM output pixels in order,
//    across output rows and images, and zero-fills what lies in the padding, past C or past the last image. No
//    per-pixel offsets, no tap masks, no registers in the producer.
//  * B (BN filters × the same 64 channels) is one box of a plain 2-D map of w seen as K × (R·S·C), at column
//    tap·C + c. Where C is not a multiple of 64 the box runs into the next tap's channels (or past the row's end,
//    zeros): A is zero there (channels past C), so those products add exactly 0 (for finite filter values).
//  * Both land 128B-swizzled, as wgmma's K-major descriptors read them: no proxy fence, the copy engine and the
//    tensor cores are both the async proxy.
//  * CLUSTER = 2: two blocks with neighbouring pixel tiles and the same filter tile form a cluster; each loads
//    half of the filter box and multicasts it into both, so the pair reads BM·2 + BN rows a slice from L2 instead
//    of (BM + BN)·2. A slot is refilled only when the consumers of both blocks have released it (the "empty"
//    barrier counts the cluster's consumer warps). Measured slower than single blocks in most configurations
//    (docs/perf-notes.md): an option, not the default.
//  * Persistent blocks (PERSISTENT = 1: at most one block per SM, each walking the tiles gridDim apart). The ring
//    runs on from one tile to the next, so while the consumers write a tile out the producer already fills the
//    ring with the next tile's first slices (at these layers a tile is only 18-72 slices long). PERSISTENT = 0:
//    one block per tile (the first measured version; it staged the output in the drained ring).
//  * Three consumer warpgroups (CONSUMERS = 3, BM = 192): the tile count, not the tile, limited the small layers.
//    6272 output pixels (the 7² layer) make 25 tiles of 256 × 4 filter tiles = 100 tiles for 132 SMs, so a
//    quarter of the SMs idled through the call (ncu); in tiles of 192 they make 33 × 4 = 132, and the 14² layer
//    131 × 2 = 262 (two a SM). 512 threads leave a thread 128 registers, so such a consumer holds 64 × BN ≤ 128.
//  * The last wave split in two (SPLIT = 1, persistent single blocks): where the tiles past the last full wave
//    are at most half the blocks (the 14² layer: 196 tiles of 256x128 for 132 blocks, 64 past the first wave), each
//    of those tiles is shared by two blocks, one taking the first half of its slices and one the rest, so every
//    block does 1.5 tiles' slices instead of 64 blocks doing 2 while 68 do 1. The second half's block writes its
//    float32 sums to `partials` and raises the tile's flag (release); the first half's block waits for the flag
//    (acquire), clears it for the next call (the workspace is not zeroed between calls), adds the sums and stores
//    the tile. Both halves run at the same time, in the blocks' last round, so neither waits long and no block
//    waits for one that waits. Measured (docs/perf-notes.md): 14% fewer cycles at 14², but the power limiter took
//    the clock down as far, so no faster there; 192-pixel tiles are the faster way to fill the SMs.
//  * The output through TMA (TMA_STORE = 1, where K % 8 == 0): each consumer warpgroup rounds its rows 64 at a time
//    into a staging area of its own beside the ring (stmatrix, BN / 64 boxes of 64 × 64 in the 128B swizzle) and
//    one of its threads issues the boxes of map_y (y as N·OH·OW × K; the copy engine clips rows past M and filters
//    past K); the warpgroup goes straight on, and waits for the copy engine only before it overwrites the staging
//    area. Where K % 8 != 0 (TMA rows are whole 16-byte chunks; the spec builds no map_y then) and with
//    TMA_STORE = 0, a copy loop of whole 16-byte chunks of output rows reads the same staging area.
//  * PING = 1 (two consumer warpgroups, persistent single blocks): the warpgroups take whole tiles of BM pixels in
//    turn instead of sharing each one; tile t's wgmmas are issued after tile t − 1's (named barriers 8 and 9), so
//    one warpgroup's epilogue runs while the other's wgmmas keep the tensor pipe busy (conv/16's PING; CUTLASS's
//    "pingpong" schedule). A warpgroup's tile is BM ≤ 128 pixels, BN / 2 · BM / 64 ≤ 128 accumulators a thread.
// The rest is 13's: the consumer warpgroups (BM/CONSUMERS pixels × BN filters each, m64nBNk16 wgmmas straight from
// shared memory, one slice's wgmmas in flight), then one producer warpgroup (setmaxnreg hands its registers over),
// an mbarrier ring of STAGES slots.
//
// Tiles (-DNAME=value): BM pixels (64 or 128 per consumer warpgroup; with PING a warpgroup's whole tile), BN
// filters (64, 128 or 256; a consumer thread holds BM/CONSUMERS·BN/128 ≤ 128 accumulators), STAGES, CLUSTER (1 or
// 2), CONSUMERS (2 or 3), PERSISTENT, SPLIT (0 or 1; partials: MAX_SPLIT·BM·BN floats, then MAX_SPLIT flags, where
// SPLIT = 1; unread otherwise), PING (0 or 1), TMA_STORE (0 or 1), and UWG, CARRY, PEEK (loop_switches.cuh; 0 or 1
// each, PEEK with CARRY): the slice loop of gemm/10_wgmma_tma.cu's fp8 configurations, the warpgroup index uniform
// (the descriptors in uniform registers, no R2UR), the ring's slot, phase and descriptors carried from slice to slice
// (the producer's tap and channel chunk walked, not divided), the next slot's full barrier asked about while this
// slice's wgmmas run. Maps: map_x, im2col boxes of BM pixels × 64
// channels; map_w, K × R·S·C in boxes of BN/CLUSTER × 64; map_y and map_z (y and the residual z), N·OH·OW × K in
// boxes of 64 × 64 (read only where K % 8 == 0; map_z only with the epilogue's residual). Launch: a 1-D grid
// of whole clusters, at most one block per tile (tiles: cdiv(cdiv(N·OH·OW, BM), CLUSTER)·CLUSTER·cdiv(K, BN),
// filter tiles fastest, a cluster's CLUSTER blocks sharing one), with PERSISTENT at most one per SM;
// 128·(CONSUMERS + 1) threads; STAGES·(BM + BN)·128 (the ring) + CONSUMERS·128·BN (staging) + 1024 (alignment) +
// 16·STAGES (mbarriers) + 32 (the epilogue's mbarriers) + CONSUMERS·BN·4 (the epilogue's bias values) bytes of
// dynamic shared memory.
//
// The fused epilogue (-DEPILOGUE, include/epilogue.cuh; gpubench/ops/epilogue.py): y = act(α·acc + β·bias[k] + γ·z),
// the ReLU after the residual, applied to each pair of accumulators as it is rounded into the staging area, so that
// the tile still leaves as TMA boxes (or the copy loop's chunks). A build without it (EPILOGUE = 0) only scales by
// α, 1 unless the problem says otherwise: the accumulators as they were.
//  * First version: each consumer thread read z and bias[k] from global memory for each pair of accumulators as it
//    rounded them, a quad of lanes 16 bytes of a row, each load waited for before its stmatrix. Those waits were the
//    epilogue's cost: the best configurations ran ResNet-50's 3×3 layers fused at 0.63-1.01 of cuDNN's fused graph
//    on an H200 (results/nvidia-h200/fused-explore.json.gz).
//  * Now, where K % 8 == 0 (map_z, z as N·OH·OW × K in the boxes and swizzle of map_y): the copy engine brings z
//    into the staging area itself, box for box where the result will be staged, and the tile's BN bias values
//    beside it (one bulk copy), on an mbarrier of the warpgroup's. The first m64 block's z and the bias are asked
//    for while the tile's slices run (after its first slice's wgmmas are issued, once the copy engine has read the
//    tile before out of the staging area), so they have come by the epilogue. Each lane then reads its z with
//    ldmatrix_x4 at the very address its stmatrix_x4 will write (ldmatrix gives a lane the (row, column) pairs
//    stmatrix takes from it), adds it in registers and stores the result in place. A second m64 block (MI = 2) has
//    no room of its own in shared memory (the large tiles fill it): its lanes load those same fragments from global
//    memory ahead, without waiting (during the last slice where registers allow, else as the first block's
//    stmatrix frees accumulators), or with SPLIT, which has no registers for that, the copy engine brings them
//    once the first block has left the staging area. The consumers wait for memory only where what was asked for
//    early has not come yet (and, with SPLIT, for that last load).
//    The arithmetic is the first version's, in the same order: bit for bit the same output. Where K % 8 != 0 (no
//    map_z) or the bias is not 16-byte aligned, the first version's reads.

#include "../include/epilogue.cuh"       // EpilogueArgs, channel_terms, epilogue_value
#include "../include/hopper.cuh"         // wgmma_ss, smem_desc, mbarriers, ring_init, RingCursor, TMA loads
#include "../include/mma_sync.cuh"       // smem_addr, pack2, unpack2, ldmatrix_x4
#include "../include/loop_switches.cuh"  // UWG, CARRY, PEEK

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT __half
#endif
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
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef PERSISTENT
#define PERSISTENT 1  // (only the spec's grid reads it: the kernel walks whatever tiles its grid leaves it)
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef PING
#define PING 0
#endif
#ifndef TMA_STORE
#define TMA_STORE 1
#endif

constexpr int BK = 64;                        // one 128-byte swizzle row of 16-bit channels
constexpr int THREADS = 128 * (CONSUMERS + 1);         // the consumer warpgroups, then the producer
// PING = 0: the consumer warpgroups share each tile (BM / CONSUMERS pixels each); PING = 1: each takes every other
// tile of BM pixels whole, the two taking turns on the tensor pipe (one's epilogue under the other's wgmmas)
constexpr int WG_M = PING ? BM : BM / CONSUMERS, MI = WG_M / 64;  // a consumer's pixels, its m64 wgmmas a k step
constexpr int TILE_WGS = PING ? 1 : CONSUMERS;  // consumer warpgroups that read a tile's slots
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int B_ROWS = BN / CLUSTER;          // the filter rows one block's TMA loads (for the whole cluster)
constexpr int RING_BYTES = STAGES * STAGE_BYTES;
// A consumer warpgroup's m64 block of output rows, rounded: BN / 64 boxes of 64 rows × 64 filters (128 bytes), each
// 128B-swizzled as the copy engine reads a box of map_y (16-byte chunk c of row r at chunk c ^ (r % 8))
constexpr int BOX_BYTES = 64 * 64 * 2, STAGING_BYTES = BN / 64 * BOX_BYTES;
// After the ring's mbarriers, the fused epilogue's: one "z and bias have come" mbarrier a consumer warpgroup (room
// for three), then each warpgroup's BN float bias values of its tile (shared by every build: the spec's size)
constexpr int EPI_BARS_BYTES = 32, BIAS_BYTES = BN * 4;
// setmaxnreg: the producer keeps 40 registers a thread, the consumers share the rest of 64K (at most 232)
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8 > 232
                                  ? 232 : (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;

static_assert(CONSUMERS == 2 || CONSUMERS == 3, "CONSUMERS: two or three consumer warpgroups");
static_assert(WG_M == 64 || WG_M == 128, "BM: 64 or 128 pixels per consumer warpgroup (with PING, a tile)");
static_assert(PING == 0 || (PING == 1 && CONSUMERS == 2 && CLUSTER == 1 && SPLIT == 0 && PERSISTENT == 1),
              "PING: 0, or 1 (two consumer warpgroups taking whole tiles in turn) with persistent single blocks");
static_assert(TMA_STORE == 0 || TMA_STORE == 1, "TMA_STORE: the output through a copy loop (0) or TMA boxes (1)");
static_assert(CONSUMERS == 2 || MI * BN <= 128, "512 threads leave a thread 128 registers: MI · BN / 2 ≤ 64 "
                                                "accumulators with three consumers");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: one wgmma's N, 64, 128 or 256");
static_assert(MI * BN <= 256, "a consumer thread holds MI · BN / 2 ≤ 128 accumulators");
static_assert(STAGES >= 2, "a ring of at least two slices");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1 or 2 blocks sharing the filter tile");
static_assert(B_ROWS % 8 == 0, "each block's share of the filter box is whole 8-row swizzle atoms");
static_assert(PERSISTENT == 0 || PERSISTENT == 1, "PERSISTENT: one block per tile (0) or per SM (1)");
static_assert(SPLIT == 0 || (SPLIT == 1 && CLUSTER == 1 && PERSISTENT == 1),
              "SPLIT: 0, or 1 (the last wave's tiles in two halves) with persistent single blocks");
constexpr int PING_BARRIER = 8;  // PING's named barriers 8 and 9: "your turn" to warpgroup 0 and 1
constexpr int MAX_SPLIT = 128;                    // tiles split at most (the spec sizes `partials` so)
constexpr uint32_t PARTIAL_READY = 0x7FABCDEFu;   // a NaN no arithmetic writes: unlikely in uninitialised memory

#include "../include/cluster_dims.cuh"  // CLUSTER_DIMS

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
conv_tc_wgmma_tma(const TensorMap* __restrict__ map_x, const TensorMap* __restrict__ map_w,
                  const TensorMap* __restrict__ map_y, const TensorMap* __restrict__ map_z,
                  ELEM_OUT* __restrict__ y, float* __restrict__ partials,
                  const float* __restrict__ bias, const ELEM_OUT* __restrict__ z, float alpha, float beta, float gamma,
                  int N, int C, int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* ring = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);  // 128B swizzle: 1024-aligned
    const uint32_t ring_addr = smem_addr(ring), bars = ring_addr + RING_BYTES + CONSUMERS * STAGING_BYTES;
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its slice"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer warp of the cluster is done"
#if EPILOGUE != EPI_NONE
    auto epi_bar = [&](int wg) { return bars + 16 * STAGES + 8 * wg; };  // "warpgroup wg's z (and bias) have come"
    auto bias_at = [&](int wg) { return bars + 16 * STAGES + EPI_BARS_BYTES + wg * BIAS_BYTES; };  // its bias values
#endif
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int P = OH * OW, M = N * P;
    // Tiles in cluster-sized groups; a group is one filter tile (filter tiles fastest, as in 12 and 13) and CLUSTER
    // neighbouring pixel tiles, one per block of the cluster. Clusters walk the groups gridDim / CLUSTER apart.
    const int tiles_n = (K + BN - 1) / BN;
    const int groups = (((M + BM - 1) / BM + CLUSTER - 1) / CLUSTER) * tiles_n;
    const int first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
    const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;
    auto origin = [&](int g, int& m0, int& n0) {
        m0 = ((g / tiles_n) * CLUSTER + rank) * BM;
        n0 = (g % tiles_n) * BN;
    };
    const int cslices = (C + BK - 1) / BK, slices = R * S * cslices;
    // The units a block walks, `step` apart: groups [0, whole) whole, then (SPLIT) each of the `halved` groups after
    // them as two units, its slices [0, slices / 2) and [slices / 2, slices). Halving needs the groups past the
    // last full round to be at most half the blocks, so that both halves fall in the blocks' last round.
    const int past = groups % step;
    const int halved = SPLIT && groups > step && past > 0 && 2 * past <= step && past <= MAX_SPLIT && slices >= 2
                           ? past : 0;
    const int whole = groups - halved, units = groups + halved;
    // unit u: its group g, slices [t0, t1), and half (0: whole or the first half, which stores; 1: the second)
    auto unit = [&](int u, int& g, int& t0, int& t1, int& half) {
        if (u < whole) {
            g = u, t0 = 0, t1 = slices, half = 0;
        } else {
            g = whole + (u - whole) / 2, half = (u - whole) % 2;
            t0 = half ? slices / 2 : 0, t1 = half ? slices : slices / 2;
        }
    };

    // full: the local producer's arrive (+ bytes); empty: every consumer warp of the cluster; the epilogue's: the
    // arrive (+ bytes) of the warpgroup's leader (ring_init's fence and barrier publish them too)
#if EPILOGUE != EPI_NONE
    if (tid == 0)
        for (int c = 0; c < CONSUMERS; ++c) mbar_init(epi_bar(c), 1);
#endif
    ring_init<STAGES, CLUSTER>(bars, 4 * TILE_WGS * CLUSTER);

    // Both roles count slices with `it` from one tile to the next: slot it % STAGES, phase (it / STAGES) & 1 (CARRY:
    // both carried from slice to slice).
    if (warp >= 4 * CONSUMERS) {  // ---- the producer: one thread issues two TMA copies a slice -------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_x);
            tma_acquire(map_w);
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;
            uint32_t it = 0;
            RingSlot<STAGES> ring;  // CARRY: slot `it` and its phase, carried
            for (int u = first; u < units; u += step) {
                int g, t0, t1, half, m0, n0;
                unit(u, g, t0, t1, half);
                (void)half;
                origin(g, m0, n0);
                // The input pixel under the tile's first output pixel (tap (0, 0)); the map walks on from there. A
                // tile wholly past M (the second of a cluster at the end) loads no pixels, only its share of filters.
                const int img = m0 / P, p = m0 % P;
                const int w0 = (p % OW) * stride - pad, h0 = (p / OW) * stride - pad;
                const bool pixels = m0 < M;
                // Slice t: channels c0.. of filter tap `tap` (row r, column tap - r·S), tap = t / cslices. CARRY:
                // found by division for the unit's first slice only, then walked (channel chunks, then the taps of
                // a row, then rows) where the plain loop divides twice a slice.
#if CARRY
                int next_tap = t0 / cslices, next_c0 = (t0 - next_tap * cslices) * BK, next_r = next_tap / S,
                    next_col = next_tap - next_r * S;
#endif
                for (int t = t0; t < t1; ++t, ++it) {
#if CARRY
                    const int s = ring.slot, tap = next_tap, c0 = next_c0, r = next_r;
#else
                    const int s = it % STAGES, tap = t / cslices, c0 = (t - tap * cslices) * BK, r = tap / S;
#endif
                    mbar_wait(empty(s), (CARRY ? ring.phase : (it / STAGES) & 1) ^ 1);  // released (a fresh one passes)
                    mbar_expect_bytes(full(s), (pixels ? A_BYTES : 0) + B_BYTES);  // all of B, half from the peer
                    const uint32_t a = ring_addr + s * STAGE_BYTES;
                    if (pixels) tma_load_im2col_4d(a, map_x, c0, w0, h0, img, tap - r * S, r, full(s));
                    tma_load_2d(a + A_BYTES + rank * B_ROWS * BK * 2, map_w, tap * C + c0, n0 + rank * B_ROWS,
                                full(s), mask);
#if CARRY
                    ring.advance();
                    next_c0 += BK;
                    if (next_c0 >= C) {
                        next_c0 = 0, ++next_tap;
                        if (++next_col == S) next_col = 0, ++next_r;
                    }
#endif
                }
            }
        }
    } else {  // ---- the consumers -------------------------------------------------------------------------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warpgroup_of<UWG>(warp), w = warp % 4;
        // Slot s may be refilled (by our producer, and by the peer's multicast) once this warp's wgmmas have read
        // it: one arrive per warp on the slot's "empty" barrier of every block in the cluster.
        auto release = [&](int s) {
            if (lane == 0) {
                if (CLUSTER == 1) {
                    mbar_arrive(empty(s));
                } else {
                    mbar_arrive_cluster(empty(s), 0);
                    mbar_arrive_cluster(empty(s), 1);
                }
            }
        };
        // This warpgroup's staging: 64 rows × BN as BN / 64 swizzled boxes of 64 filters (see STAGING_BYTES)
        ELEM_OUT* staging = reinterpret_cast<ELEM_OUT*>(ring + RING_BYTES + wg * STAGING_BYTES);
        const uint32_t staging_addr = smem_addr(staging);
        const bool whole_chunks = K % 8 == 0;  // output rows start on 16-byte boundaries
        // TMA boxes of map_y need rows of whole 16-byte chunks: elsewhere (K % 8 != 0) the copy loop, and the spec
        // builds no map_y (a descriptor of zeros this kernel never reads)
        const bool tma_out = TMA_STORE && whole_chunks;
        const bool leader = tid % 128 == 0;  // the warpgroup's thread that issues its TMA stores
        if (tma_out && leader) tma_acquire(map_y);
        // SPLIT: a tile's partial sums, accumulators v, v+1 of row block i of consumer thread tid at float2
        // (i·BN/2 + v)/2 · 128·CONSUMERS + tid (a warp's stores fill 256 contiguous bytes); the flags after them.
        constexpr int CT = 128 * CONSUMERS;
        uint32_t* const flags = reinterpret_cast<uint32_t*>(partials + (size_t)MAX_SPLIT * BM * BN);
        const int wg_off = PING ? 0 : wg * WG_M;  // this warpgroup's first pixel in a tile it works on
#if EPILOGUE != EPI_NONE
        // The epilogue's operands through the copy engine (see the header) where map_z exists, rows of whole 16-byte
        // chunks, and the bias's bulk copy may start at any of its 64-filter tiles (16-byte aligned, as cuMemAlloc's
        // are); elsewhere the global reads of `rounded`.
        const bool epi_tma = whole_chunks && (!EPI_HAS_BIAS || reinterpret_cast<uintptr_t>(bias) % 16 == 0);
        const float* const tile_bias = reinterpret_cast<const float*>(ring + (bias_at(wg) - ring_addr));
        uint32_t epi_phase = 0;  // the parity of the warpgroup's next epilogue load (one load, one wait a tile)
        if (EPI_HAS_ADD && epi_tma && leader) tma_acquire(map_z);
        // (the leader) Ask for m64 block i's z boxes of the tile at (m0, n0) into the staging area, and with block 0
        // for the tile's bias values; rows past M and filters past K arrive as zeros, boxes wholly past them are not
        // asked for. An empty request still arrives, so every load completes one phase.
        auto load_epilogue = [&](int m0, int n0, int i) {
            const int r0 = m0 + wg_off + 64 * i, filters = min(BN, K - n0);  // (K - n0: a multiple of 8)
            int bytes = 0;
            if (EPI_HAS_ADD && r0 < M) bytes += (filters + 63) / 64 * BOX_BYTES;
            if (EPI_HAS_BIAS && i == 0) bytes += filters * 4;
            mbar_expect_bytes(epi_bar(wg), bytes);
            if (EPI_HAS_ADD && r0 < M)
                for (int b = 0; b < BN / 64; ++b)
                    if (n0 + 64 * b < K) tma_load_2d(staging_addr + b * BOX_BYTES, map_z, n0 + 64 * b, r0, epi_bar(wg));
            if (EPI_HAS_BIAS && i == 0) bulk_load(bias_at(wg), bias + n0, filters * 4, epi_bar(wg));
        };
        // MI = 2: the second block's z has no room in shared memory (the staging area holds the first block's until
        // that has been written out, and the large tiles leave no more), and asking the copy engine only then would
        // put a round trip to memory on the consumers' path. So its lanes load their own fragments (the pairs
        // ldmatrix_x4 would give them) from global memory ahead, without waiting: BN / 4 registers. Where the
        // accumulators leave room beside them (BN = 64), all at once during the tile's last slice (they arrive under
        // its wgmmas); else (ptxas gives 384 threads 168 registers, 128 of them accumulators at BN = 128) each chunk
        // pair's as the first block's stmatrix frees its accumulators, arriving under the rest of that epilogue.
        // SPLIT (its first half also reads the second's sums there) spills with them: there the copy engine brings
        // the second block's z once the first's output has left the staging area (Z_SECOND).
        constexpr bool Z_AHEAD = EPI_HAS_ADD && MI == 2 && !SPLIT, Z_IN_LOOP = MI * BN / 2 + BN / 4 <= 96;
        constexpr bool Z_SECOND = EPI_HAS_ADD && MI == 2 && SPLIT;
        uint32_t z_ahead[Z_AHEAD ? BN / 16 : 1][4];
        // chunk pair j of the second block of the tile at (m0, n0): matrix q holds row 16·w + lane/4 + 8·(q % 2),
        // filters 16·j + 8·(q / 2) + 2·(lane % 4), + 1 (zeros past M or K)
        auto load_z_ahead = [&](int m0, int n0, int j) {
            const int r = m0 + wg_off + 64 + 16 * w + lane / 4;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int m = r + 8 * (q % 2), k = n0 + 16 * j + 8 * (q / 2) + 2 * (lane % 4);
                z_ahead[Z_AHEAD ? j : 0][q] =
                    m < M && k < K ? __ldg(reinterpret_cast<const unsigned*>(z + (size_t)m * K + k)) : 0u;
            }
        };
#endif
        uint32_t it = 0;
        // CARRY: slot `it`'s ring index, phase and descriptors (its m64 block 0 and the filters, at k step 0),
        // carried from slice to slice, and the slot before's (released once its wgmmas are done); PEEK: whether
        // slot `it`'s data was seen to have come (asked while the slice before ran).
        constexpr uint32_t A_BLOCK = 64 * BK * 2 >> 4, KSTEP = 32 >> 4;  // descriptor steps: an m64 block, k16
        RingCursor<STAGES, (STAGE_BYTES >> 4), (STAGE_BYTES >> 4)> ring(smem_desc(ring_addr + wg_off * BK * 2),
                                                                        smem_desc(ring_addr + A_BYTES));
        int held = 0;
        bool ready = false;
        // t: the block's t-th unit (u = first + t·step), all of them (PING = 0) or every other one (PING = 1)
        for (int t = PING ? wg : 0; first + t * step < units; t += PING ? 2 : 1) {
            const int u = first + t * step;
            int g, t0, t1, half, m0, n0;
            unit(u, g, t0, t1, half);
            origin(g, m0, n0);
            if (PING) it = t * slices;  // (whole tiles only) the tile's first slice, counted as the producer does
            if (PING && CARRY) ring.seek(it), ready = false;
            // PING: tile t's wgmmas go after tile t − 1's (the other warpgroup's) are issued
            if (PING && t > 0) named_sync(PING_BARRIER + wg, 256);
            float acc[MI][BN / 2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) acc[i][v] = 0.f;

            for (int tt = t0; tt < t1; ++tt, ++it) {
#if CARRY
                const int s = ring.slot;
                const uint64_t da = ring.desc_a, db = ring.desc_b;
                if (!(PEEK && ready)) mbar_wait(full(s), ring.phase);
                ring.advance();
                auto desc_a = [&](int i, int kk) { return da + i * A_BLOCK + kk * KSTEP; };
                auto desc_b = [&](int kk) { return db + kk * KSTEP; };
#else
                const int s = it % STAGES;
                mbar_wait(full(s), (it / STAGES) & 1);
                const uint32_t a = ring_addr + s * STAGE_BYTES + wg_off * BK * 2, b = ring_addr +
                                   s * STAGE_BYTES + A_BYTES;
                auto desc_a = [&](int i, int kk) { return smem_desc(a + i * 64 * BK * 2 + 32 * kk); };
                auto desc_b = [&](int kk) { return smem_desc(b + 32 * kk); };
#endif
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // 16 channels = 32 bytes further along the swizzled rows
#pragma unroll
                    for (int i = 0; i < MI; ++i) wgmma_ss<ELEM, BN>(acc[i], desc_a(i, kk), desc_b(kk), 1);
                wgmma_commit();
                if (PEEK) ready = mbar_test(full(ring.slot), ring.phase);
                wgmma_wait<1>();                                              // the slice before's wgmmas are done ...
                if (tt > t0) release(CARRY ? held : (int)((it - 1) % STAGES));  // ... so its slot may be refilled
                held = s;
#if EPILOGUE != EPI_NONE
                // The tile's first slice is on the tensor pipe: its epilogue's z and bias are asked for now, to come
                // under the rest of its slices. The staging area is free once the copy engine has read the tile
                // before out of it (a wait of the leader's alone, under this slice's wgmmas; the copy loop's readers
                // passed a barrier after it). A tile's second half (SPLIT) stores nothing.
                if (tt == t0 && epi_tma && leader && !(SPLIT && u >= whole && half)) {
                    if (tma_out) bulk_wait<true>();
                    load_epilogue(m0, n0, 0);
                }
                if (Z_AHEAD && Z_IN_LOOP && tt == t1 - 1 && epi_tma && !(SPLIT && u >= whole && half))
#pragma unroll
                    for (int j = 0; j < BN / 16; ++j) load_z_ahead(m0, n0, j);  // (MI = 2) the second block's z
#endif
            }
            if (PING && first + (t + 1) * step < units) named_arrive(PING_BARRIER + 1 - wg, 256);  // the other's turn
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < BN / 2; ++v) asm volatile("" : "+f"(acc[i][v])::"memory");  // after the wait
            release(CARRY ? held : (int)((it - 1) % STAGES));

            // A halved tile: the second half hands its sums to the first, which adds them as it rounds its own.
            const bool add_partial = SPLIT && u >= whole && !half;
            float2* const sums = reinterpret_cast<float2*>(partials + (size_t)(g - whole) * BM * BN);
            if (SPLIT && u >= whole) {
                if (half) {
#pragma unroll
                    for (int i = 0; i < MI; ++i)
#pragma unroll
                        for (int v = 0; v < BN / 2; v += 2)
                            __stcg(sums + (i * BN / 2 + v) / 2 * CT + tid, make_float2(acc[i][v], acc[i][v + 1]));
                    __threadfence();
                    named_sync(1, CT);  // every consumer thread's sums are out
                    if (tid == 0) flag_release(flags + (g - whole), PARTIAL_READY);
                    continue;
                }
                if (tid == 0) {
                    // Both halves run in the blocks' last round, at the same time: a short wait. (A grid whose
                    // blocks were not all resident at once could wait here for ever; a counter to give up after
                    // seconds costs the 128-accumulator tiles ~20 registers of spills: gpubench's watchdog ends it.)
                    while (flag_acquire(flags + (g - whole)) != PARTIAL_READY) __nanosleep(64);
                    flags[g - whole] = 0;  // not ready, for the next call
                }
                named_sync(1, CT);
            }
            // Accumulators v, v + 1 of block i rounded into one register (with the second half's sums, read as they
            // are used, where the tile was halved)
            auto rounded = [&](int i, int v) {
                float lo = acc[i][v], hi = acc[i][v + 1];
                if (add_partial) {
                    const float2 p = __ldcg(sums + (i * BN / 2 + v) / 2 * CT + tid);
                    lo += p.x, hi += p.y;
                }
#if EPILOGUE != EPI_NONE
                // (the first version's reads, where the copy engine brings neither z nor the bias: see the header)
                // output (m, k) and (m, k + 1): row 16·w + lane/4 (+ 8 for the pair's second row) of block i,
                // filters 8·(v / 4) + 2·(lane % 4) of the tile; past M or K nothing is read (and nothing stored)
                const int m = m0 + wg_off + i * 64 + 16 * w + lane / 4 + 8 * ((v / 2) % 2);
                const int k = n0 + 8 * (v / 4) + 2 * (lane % 4);
                if (m < M && k < K) {
                    const bool two = k + 1 < K;
                    const ELEM_OUT* zr = z + (size_t)m * K + k;
                    const ChannelTerms t0{alpha, beta * bias[k]}, t1{alpha, two ? beta * bias[k + 1] : 0.f};
                    lo = epilogue_value(lo, t0, gamma, EPI_HAS_ADD ? epilogue_load<ELEM_OUT>(zr[0]) : 0.f);
                    hi = epilogue_value(hi, t1, gamma, EPI_HAS_ADD && two ? epilogue_load<ELEM_OUT>(zr[1]) : 0.f);
                }
#else
                lo *= alpha, hi *= alpha;
#endif
                return pack2(lo, hi, staging);
            };
#if EPILOGUE != EPI_NONE
            // The same for the pair whose z the lane holds (read from the staging area), with the tile's bias values
            // from shared memory: tile filters 8·(v / 4) + 2·(lane % 4), + 1. Filters past K and rows past M compute
            // on zeros or stale values that are never stored.
            auto staged = [&](int i, int v, uint32_t z2) {
                float lo = acc[i][v], hi = acc[i][v + 1];
                if (add_partial) {
                    const float2 p = __ldcg(sums + (i * BN / 2 + v) / 2 * CT + tid);
                    lo += p.x, hi += p.y;
                }
                const float* const bk = tile_bias + 8 * (v / 4) + 2 * (lane % 4);
                const float2 b = EPI_HAS_BIAS ? *reinterpret_cast<const float2*>(bk) : make_float2(0.f, 0.f);
                const float2 zz = EPI_HAS_ADD ? unpack2(z2, staging) : make_float2(0.f, 0.f);
                lo = epilogue_value(lo, ChannelTerms{alpha, beta * b.x}, gamma, zz.x);
                hi = epilogue_value(hi, ChannelTerms{alpha, beta * b.y}, gamma, zz.y);
                return pack2(lo, hi, staging);
            };
#endif

            // ---- epilogue: each m64 block of rows is rounded into this warpgroup's staging area by stmatrix, then
            // leaves as BN / 64 TMA boxes of map_y issued by one thread (the warpgroup goes straight on to its next
            // tile; the copy engine clips rows past M and filters past K), or where K % 8 != 0 through a copy loop of
            // 16-byte chunks. (Stored straight from the accumulators, a quad of threads writes 16 bytes of a row,
            // half a sector: the 28² layer took 77 µs instead of 63.)
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int r0 = m0 + wg_off + i * 64;
                if (tma_out && leader) bulk_wait<true>();  // the boxes before have been read out of the staging area
#if EPILOGUE != EPI_NONE
                // (Z_SECOND) the second block's z, now that the staging area is free: the copy engine has read the
                // first block out (the wait above) or the copy loop's readers have passed their barrier
                if (Z_SECOND && i > 0 && epi_tma && leader) load_epilogue(m0, n0, i);
#endif
                named_sync(2 + wg, 128);  // ... and the warpgroup's last copy-out has read it
                // Four 8×8 matrices: accumulators 8j .. 8j + 7 are rows R and R + 8 (R = 16·w + lane/4) of 16-byte
                // chunks 2j and 2j + 1; lane 8·m + c gives row 16·w + c + 8·(m % 2) of chunk 2j + m / 2, at chunk
                // (chunk % 8) ^ c of its box's 128-byte row: eight rows, eight distinct bank groups
                auto fragment = [&](int j) {
                    const int m = lane / 8, c = lane % 8, row = 16 * w + c + 8 * (m % 2), chunk = 2 * j + m / 2;
                    return staging_addr + (chunk / 8) * BOX_BYTES + row * 128 + (((chunk % 8) ^ c) << 4);
                };
#if EPILOGUE != EPI_NONE
                if (epi_tma) {
                    if (i == 0 || Z_SECOND) {  // block i's z (and with the first, the tile's bias) have come
                        mbar_wait(epi_bar(wg), epi_phase);
                        epi_phase ^= 1;
                    }
#pragma unroll
                    for (int j = 0; j < BN / 16; ++j) {
                        // z where the result goes: ldmatrix_x4 gives each lane the pairs stmatrix_x4 takes from it
                        // (the second block's, loaded ahead, as it would give them)
                        uint32_t z2[4] = {0, 0, 0, 0};
                        if (EPI_HAS_ADD && (i == 0 || Z_SECOND)) ldmatrix_x4(z2, fragment(j));
                        if (Z_AHEAD && i == 1)
#pragma unroll
                            for (int q = 0; q < 4; ++q) z2[q] = z_ahead[Z_AHEAD ? j : 0][q];
                        stmatrix_x4(fragment(j), staged(i, 8 * j, z2[0]), staged(i, 8 * j + 2, z2[1]),
                                    staged(i, 8 * j + 4, z2[2]), staged(i, 8 * j + 6, z2[3]));
                        if (Z_AHEAD && !Z_IN_LOOP && i == 0) load_z_ahead(m0, n0, j);  // into the freed registers
                    }
                } else {
#else
                {
#endif
#pragma unroll
                    for (int j = 0; j < BN / 16; ++j)
                        stmatrix_x4(fragment(j), rounded(i, 8 * j), rounded(i, 8 * j + 2), rounded(i, 8 * j + 4),
                                    rounded(i, 8 * j + 6));
                }
                if (tma_out) fence_proxy_async();  // the staged rows, visible to the copy engine
                named_sync(2 + wg, 128);
                if (tma_out) {
                    if (leader && r0 < M) {
#pragma unroll
                        for (int b = 0; b < BN / 64; ++b)
                            if (n0 + 64 * b < K) tma_store_2d(map_y, staging_addr + b * BOX_BYTES, n0 + 64 * b, r0);
                        bulk_commit();
                    }
                    continue;
                }
                for (int e = tid % 128; e < 64 * (BN / 8); e += 128) {  // consecutive threads, consecutive chunks
                    const int row = e / (BN / 8), chunk = e % (BN / 8), m = r0 + row, k = n0 + chunk * 8;
                    if (m >= M || k >= K) continue;
                    const ELEM_OUT* src = staging + (chunk / 8) * (BOX_BYTES / 2) + row * 64 +
                                          ((chunk % 8) ^ (row % 8)) * 8;
                    ELEM_OUT* dst = y + (size_t)m * K + k;
                    if (whole_chunks && k + 8 <= K) {
                        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
                    } else {
                        for (int j = 0; j < 8 && k + j < K; ++j) dst[j] = src[j];
                    }
                }
#if EPILOGUE != EPI_NONE
                // The copy engine writes the next tile's z into what this loop read: every reader's reads first
                if (epi_tma && (i == MI - 1 || Z_SECOND)) fence_proxy_async(), named_sync(2 + wg, 128);
#endif
            }
        }
        if (tma_out && leader) bulk_wait<false>();  // the last boxes written before the block ends
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
