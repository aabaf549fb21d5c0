// INT8 tensor-core implicit-GEMM convolution fed by TMA (sm_90a): int8 NHWC, int32 accumulate, the fused epilogue,
// output int32, float32 or int8 (requantised: rounded half to even, saturated).
//
// 14_tc_wgmma_tma.cu's machinery with int8 operands; what differs is what int8 asks for:
//  * A slice is BK = 128 channels of one filter tap: 128 bytes, one 128-byte swizzle row, as 14's 64 channels of
//    16 bits. A is one box of the im2col map of x (BM output pixels × BK channels: the copy engine walks the
//    pixels across rows and images and zero-fills the padding, the channels past C and the pixels past the last
//    image), B one box of the plain map of w as K × R·S·C (BN filters × the same BK channels, at column tap·C + c0).
//    Where C is not a multiple of BK, B's box runs into the next tap's channels: A is zero there, so those products
//    add exactly 0 (integers: no NaN to fear). At the first ResNet-50 stage (C = 64) that is half of every slice:
//    BK = 64 (rows of 64 bytes in TMA's 64-byte swizzle, hopper.cuh's smem_desc_rows<64>) makes each slice one
//    tap's 64 channels, half the wgmmas and half the bytes a tile.
//  * wgmma.m64nBNk32.s32.s8.s8 (hopper.cuh's wgmma_s8): BK/32 k32 steps a slice, the descriptor's start moving 32
//    bytes along the swizzled rows; int32 accumulators, exact. The integer wgmma reads K-major operands only: both
//    are (channels contiguous in NHWC x and in KRSC w).
//  * The epilogue (include/epilogue.cuh, gpubench/ops/epilogue.py): y = act(α·s[k]·acc + β·bias[k] + γ·z), per
//    tensor or per output channel (channel_scale), the ReLU after the residual; int32 outputs in integers (exact),
//    float and int8 ones in float32 steps, int8 rounded half to even and saturated. Each consumer warpgroup stages
//    its m64 blocks of int32 accumulators in shared memory of its own (rows padded by 8 ints: a half-warp's 8-byte
//    stores land in 32 distinct banks), then its threads read whole 16-byte chunks of output (4 int32 or float32,
//    16 int8) along a row, apply the epilogue and store them, with the residual read in the same chunks: coalesced
//    stores along NHWC rows (17_tc_int8_mma.cu's "data exchange"). First version: each chunk's residual was loaded
//    just before its use, and each element's bias and per-channel scale from global memory, so a thread waited for
//    memory once per chunk (2-16 chunks a block). Now the tile's BN bias values and scales are copied to shared
//    memory once, during its first slice (by BN of the warpgroup's threads, into one of two buffers, alternately,
//    so that no barrier guards the copy: the tile before last read the other one); the residual's rows of the tile
//    are asked into L2 then too (prefetch, no registers); and a thread loads the residual chunks of up to four of
//    its chunks at once, then applies the epilogue to them: one wait for L2 per four chunks. The arithmetic is
//    unchanged: bit for bit the first version's output. Then a requantised int8 output's two conversions an
//    element (its residual to float, its value to int8) left the conversion unit, which does an eighth of the
//    adder's work a clock, for the adder and byte permutes (epilogue.cuh's int8x16_load and int8x16_store), and a
//    thread reads its columns' terms once a block (its chunks all lie in the same columns): on an H200, 128x128
//    from 51.8 to 42.8 µs at ResNet-50's 28² layer, 256x64 from 106 to 99 µs at 56² (docs/evidence/
//    int8-attention-rounds.md, second series). Only where a thread holds 64 accumulators or fewer: with 128 either
//    change would spill registers, and those builds keep the first way.
//  * PING = 1 (14's PING, CUTLASS's "pingpong"): the two consumer warpgroups take the block's tiles in turn, each a
//    whole tile of BM ≤ 128 pixels. A tile's slices follow the other warpgroup's tile's in the ring, and its wgmmas
//    are issued once the other's are (named barriers 8 and 9), so they run while the other's epilogue stages and
//    stores: at ResNet-50's layers a tile is only 9-36 slices, so the epilogue is a large share of a shared tile's
//    time. A slot is read by one warpgroup (its "empty" barrier counts one arrive), which skips its ring cursor over
//    the other's (RingCursor::seek).
//  * CLUSTER = 2 (14's clusters): two blocks with neighbouring pixel tiles and the same filter tile form a cluster;
//    each loads half of the filter box (BN/2 rows) and multicasts it into both, so the pair reads 2·BM + BN rows a
//    slice from L2 instead of 2·(BM + BN). Why int8 might want it more than 14 did: at the same bytes a slice the
//    tensor cores finish a slice in half the time, so L2 has half as long to deliver it, and at ResNet-50's 28²
//    layer (C = K = 128: one filter tile) each 128-pixel tile re-reads all of w, about half the layer's L2 traffic.
//    On an H200 it did not pay: +4% at 56², 3-15% slower at 28², 14², 7² and stride 2, where the kernel is short
//    of cuDNN (docs/evidence/targets-explore-h200.md, its last section). Bit-exact all the same
//    (docs/evidence/gpu-tests-int8-attention-h200.txt). A slot is refilled only once its readers in both blocks
//    have released it (its "empty" barrier counts the cluster's reading warpgroups; each releases it in both
//    blocks). The cluster's second tile past M (the pixel tiles odd in number) loads no pixels, only its share of
//    filters, and stores nothing. With PING the two blocks walk the same tiles, so the same warpgroup of each reads
//    a slot (as gemm/11 does).
// The rest is 14's (with its u1 d1 q1 loop always on): persistent blocks walking the tiles gridDim apart, filter
// tiles fastest; one producer thread (its warpgroup stripped to 40 registers by setmaxnreg) keeping an mbarrier ring
// of STAGES slots full, walking (tap, channel chunk) with a carry; CONSUMERS consumer warpgroups (BM/CONSUMERS
// pixels each), the slot, phase and descriptors carried from slice to slice, the next slot's full barrier asked about
// while this slice's wgmmas run, one slice's wgmmas in flight. While the consumers write a tile out, the producer
// already loads the next tile's first slices. Not here (14 has them for 16-bit): SPLIT, TMA stores.
//  * WSTAGE = 1 (opt-in): each warp stages only its own 16 rows of an m64 block (16·w + lane/4, + 8), 8 at a time
//    (accumulators with (v >> 1) & 1 = 0, then 1), and reads them out itself, behind __syncwarp; one named barrier a
//    tile makes the tile's terms seen. Half the staging's bytes, so 128x128 tiles get a fifth ring slot. Same
//    arithmetic; WSTAGE = 0 builds are the machine code they were.
//  * CONSUMERS = 3 (14's three consumer warpgroups; 2 by default): tiles of BM = 192 pixels, 64 a warpgroup. At
//    ResNet-50's 14² layer 128x128 tiles asked L2 for bytes near its roofline (392 tiles × 18 slices × 32 KiB in
//    31.7 µs on an H200: 7.3 TB/s, some 89% of the 8.17 measured), so the kernel must move fewer bytes a
//    multiply-add: a 192x128 slice is 40 KiB for 1.5× the work (0.83× the bytes a MAC), and the tile count stays
//    even over 132 SMs (262 tiles at 14², two a SM; 132 at 7², one), where 256-row tiles make 196 (1.48 waves).
//    setmaxnreg shares 64K registers among 512 threads: a consumer gets 152 (64 int32 accumulators at BN = 128).
//    Only staging by warp fits beside a ring of 40 KiB slots (three warpgroups' whole m64 blocks would take 104 KB).
//    The staging's named barriers are 2 + wg (2, 3, 4), apart from PING's 8 and 9; PING stays with two warpgroups.
//
// Tiles (-DNAME=value): BM pixels (64 or 128 per consumer warpgroup, BM / CONSUMERS; PING: 64 or 128, a warpgroup's
// whole tile), BN filters (64 or 128), BK channels a slice (128 or 64), STAGES, PING (0 or 1), CLUSTER (1 or 2),
// WSTAGE (0 or 1), CONSUMERS (2 or 3). A consumer thread holds WG_M/64·BN/2 ≤ 128 int32 accumulators (≤ 64 with three
// consumers). Launch: a 1-D grid of whole clusters, at most one block per SM; 128·(CONSUMERS + 1) threads;
// STAGES·(BM + BN)·BK (the ring) + CONSUMERS·64·(BN + 8)·4 / (1 + WSTAGE) (staging) + 1024 (alignment) + 16·STAGES
// (mbarriers) + 16·CONSUMERS·BN (the epilogue's bias and scales, two buffers a consumer warpgroup) bytes of dynamic
// shared memory. Maps: map_x, im2col boxes of BM pixels × BK channels; map_w, K × R·S·C
// in boxes of BN/CLUSTER × BK, both swizzled in rows of BK bytes. Needs C % 16 == 0
// (TMA rows on 16-byte boundaries).

#include "../include/epilogue.cuh"  // EpilogueArgs, channel_terms, epilogue_value(_int), epilogue_store, epilogue_load
#include "../include/hopper.cuh"    // wgmma_s8, smem_desc_rows, mbarriers, ring_init, RingCursor, TMA loads, clusters

#ifndef ELEM
#define ELEM int8_t
#endif
#ifndef ELEM_OUT
#define ELEM_OUT int8_t
#endif
#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef PING
#define PING 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef BK
#define BK 128  // channels a slice: one swizzled row of int8, 128 or 64 bytes
#endif
#ifndef WSTAGE
#define WSTAGE 0  // 1: each warp stages its own rows, 8 at a time (see the header)
#endif
#ifndef CONSUMERS
#define CONSUMERS 2  // consumer warpgroups: 2, or 3 (tiles of 192 pixels; see the header)
#endif

constexpr int THREADS = 128 * (CONSUMERS + 1);  // the consumer warpgroups, then the producer
// PING = 0: the consumer warpgroups share each tile (BM / CONSUMERS pixels each); PING = 1: the two take every other
// tile whole
constexpr int WG_M = PING ? BM : BM / CONSUMERS, MI = WG_M / 64;  // a consumer's pixels, its m64 wgmmas a k step
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int B_ROWS = BN / CLUSTER;         // the filter rows one block's TMA loads (for the whole cluster)
constexpr int RING_BYTES = STAGES * STAGE_BYTES;
constexpr int CLD = BN + 8;                  // a staged row of int32, padded (see the header)
// WSTAGE = 0: a consumer warpgroup stages its whole m64 block (64 rows); 1: each of its warps 8 of its 16 rows at a
// time, so 4 warps x 8 rows
constexpr int STAGED_ROWS = WSTAGE ? 8 : 64, STAGING_BYTES = 64 * CLD * 4 / (WSTAGE ? 2 : 1);
constexpr int V = 16 / sizeof(ELEM_OUT);     // outputs in one 16-byte chunk
constexpr bool INT_OUT = std::is_same_v<ELEM_OUT, int>;  // int32 out: the integer epilogue
constexpr bool INT8_OUT = std::is_same_v<ELEM_OUT, int8_t>;  // requantised: rounded and saturated to int8
// setmaxnreg: the producer keeps 40 registers a thread, the consumers share the rest of 64K (at most 232; 152 with
// three)
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8 > 232
                                  ? 232 : (65536 - 128 * PRODUCER_REGS) / (128 * CONSUMERS) / 8 * 8;
constexpr int PING_BARRIER = 8;  // PING's named barriers 8 and 9: "your turn" to warpgroup 0 and 1 (2 + wg: staging)

static_assert(std::is_same_v<ELEM, int8_t>, "int8 operands");
static_assert(WSTAGE == 0 || WSTAGE == 1, "WSTAGE: 0 (a warpgroup stages an m64 block) or 1 (a warp, 8 rows at once)");
static_assert(PING == 0 || PING == 1, "PING: 0 (the warpgroups share a tile) or 1 (they take tiles in turn)");
static_assert(CONSUMERS == 2 || CONSUMERS == 3, "CONSUMERS: two or three consumer warpgroups");
static_assert(PING == 0 || CONSUMERS == 2, "PING: two consumer warpgroups taking tiles in turn");
static_assert(PING || BM % CONSUMERS == 0, "BM: whole m64 blocks for each consumer warpgroup");
static_assert(WG_M == 64 || WG_M == 128,
              "BM: 64 or 128 pixels per consumer warpgroup (BM/CONSUMERS without PING, BM with it)");
static_assert(CONSUMERS == 2 || WG_M * BN <= 8192, "152 registers a thread with three consumers: MI·BN/2 ≤ 64 "
                                                   "int32 accumulators");
static_assert(BN == 64 || BN == 128, "BN: 64 or 128 filters (one wgmma's N)");
static_assert(WG_M * BN <= 16384, "a consumer thread holds MI·BN/2 ≤ 128 int32 accumulators");
static_assert(STAGES >= 2, "a ring of at least two slices");
static_assert(BK == 128 || BK == 64, "BK: 128 or 64 channels a slice (rows of the 128- or 64-byte swizzle)");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1 or 2 blocks sharing the filter tile");
static_assert(B_ROWS % 8 == 0, "each block's share of the filter box is whole 8-row swizzle atoms");

#include "../include/cluster_dims.cuh"  // CLUSTER_DIMS

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
conv_tc_wgmma_int8(const TensorMap* __restrict__ map_x, const TensorMap* __restrict__ map_w, ELEM_OUT* __restrict__ y,
                   const float* __restrict__ bias, const ELEM_OUT* __restrict__ z,
                   const float* __restrict__ channel_scale, float alpha, float beta, float gamma, int N, int C, int H,
                   int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad_bytes = (1024 - raw % 1024) % 1024;  // 128B swizzle: the ring 1024-byte aligned
    const uint32_t ring_addr = raw + pad_bytes, bars = ring_addr + RING_BYTES + CONSUMERS * STAGING_BYTES;
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its slice"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "the cluster's readers are done with it"
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int P = OH * OW, M = N * P;
    // Groups of CLUSTER neighbouring pixel tiles and one filter tile (filter tiles fastest), one tile a block of the
    // cluster (a tile wholly past M where the pixel tiles are odd in number); clusters walk them gridDim/CLUSTER apart.
    // (Written out as 14's walk: tile_walk.cuh's, whose indices are signed, changed the CLUSTER = 1 code.)
    const int tiles_n = (K + BN - 1) / BN, groups = ((M + BM - 1) / BM + CLUSTER - 1) / CLUSTER * tiles_n;
    const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;
    auto origin = [&](int g, int& m0, int& n0) {
        m0 = ((g / tiles_n) * CLUSTER + rank) * BM, n0 = (g % tiles_n) * BN;
    };
    const int cslices = (C + BK - 1) / BK, slices = R * S * cslices;

    // empty: the warpgroups reading a slot (one with PING, else all CONSUMERS), in every block of the cluster (each
    // multicasts into it)
    ring_init<STAGES, CLUSTER>(bars, (PING ? 1 : CONSUMERS) * CLUSTER);

    if (warp >= 4 * CONSUMERS) {  // ---- the producer: one thread issues two TMA copies a slice ----------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_x);
            tma_acquire(map_w);
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;  // B's share multicast into every block
            RingSlot<STAGES> ring;
            for (int g = blockIdx.x / CLUSTER; g < groups; g += gridDim.x / CLUSTER) {
                int m0, n0;
                origin(g, m0, n0);
                // The input pixel under the tile's first output pixel at tap (0, 0); the map walks on from there. A
                // tile wholly past M (a cluster's second at the end) loads no pixels, only its share of filters.
                const int img = m0 / P, p = m0 % P;
                const int w0 = (p % OW) * stride - pad, h0 = (p / OW) * stride - pad;
                const bool pixels = CLUSTER == 1 || m0 < M;
                // Slice t: channels c0.. of tap (r, col), walked: channel chunks, then the taps of a row, then rows.
                int c0 = 0, r = 0, col = 0;
                for (int t = 0; t < slices; ++t) {
                    const int s = ring.slot;
                    mbar_sleep(empty(s), ring.phase ^ 1);  // released (a fresh barrier passes)
                    mbar_expect_bytes(full(s), (pixels ? A_BYTES : 0) + B_BYTES);  // all of B, half from the peer
                    const uint32_t a = ring_addr + s * STAGE_BYTES;
                    if (pixels) tma_load_im2col_4d(a, map_x, c0, w0, h0, img, col, r, full(s));
                    tma_load_2d(a + A_BYTES + rank * B_ROWS * BK, map_w, (r * S + col) * C + c0,
                                n0 + rank * B_ROWS, full(s), mask);
                    ring.advance();
                    c0 += BK;
                    if (c0 >= C) {
                        c0 = 0;
                        if (++col == S) col = 0, ++r;
                    }
                }
            }
        }
        // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
        if (CLUSTER > 1) cluster_sync();
        return;
    }

    // ---- the consumers -----------------------------------------------------------------------------------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int wg = warpgroup_of<true>(warp), w = warp % 4;
    const bool leader = tid % 128 == 0;
    int* const staged = reinterpret_cast<int*>(smem_raw + pad_bytes + RING_BYTES + wg * STAGING_BYTES) +
                        (WSTAGE ? w * STAGED_ROWS * CLD : 0);  // WSTAGE: the warp's own
    // The tile's bias values and per-channel scales in shared memory, by column: buffer p of this warpgroup (see the
    // header); epilogue.cuh's functions read them through an EpilogueArgs whose pointers are the buffer's (its "k"
    // the column in the tile). (A build without the epilogue may still have per-channel scales.)
    float* const tile_terms = reinterpret_cast<float*>(smem_raw + pad_bytes + RING_BYTES + CONSUMERS * STAGING_BYTES +
                                                       16 * STAGES) + wg * 4 * BN;
    auto terms_of = [&](int p) {
        float* const b = tile_terms + 2 * BN * p;
        return EpilogueArgs{alpha, beta, gamma, b, channel_scale ? b + BN : nullptr};
    };
    // Slot 0's descriptors at k step 0 (A: this warpgroup's first m64 block); a slot, a block and a k step only move
    // the start address (16-byte units).
    constexpr uint32_t A_BLOCK = 64 * BK >> 4, KSTEP = 32 >> 4;
    const int wg_off = PING ? 0 : wg * WG_M;  // this warpgroup's first pixel in a tile it works on
    RingCursor<STAGES, (STAGE_BYTES >> 4), (STAGE_BYTES >> 4)> ring(smem_desc_rows<BK>(ring_addr + wg_off * BK),
                                                                    smem_desc_rows<BK>(ring_addr + A_BYTES));
    bool ready = false;  // slot ring.slot's data seen to have come (asked while the slice before ran)
    int held = 0;        // the slot whose wgmmas may still be in flight
    // j: the block's j-th tile, all of them (PING = 0) or every other one (PING = 1, see the header). With CLUSTER,
    // the cluster's blocks walk the same groups, so warpgroup wg of each reads the slots its peers multicast into.
    for (int j = PING ? wg : 0; blockIdx.x / CLUSTER + j * (gridDim.x / CLUSTER) < groups; j += 1 + PING) {
        const int g = blockIdx.x / CLUSTER + j * (gridDim.x / CLUSTER);
        int m0, n0;
        origin(g, m0, n0);
        if (PING) ring.seek(j * slices), ready = false;  // the tile's first slice, counted as the producer counts
        // PING: this tile's wgmmas go after the other warpgroup's tile's are issued. Not only an order: a slot's
        // full barrier tells its phase by parity, so a warpgroup may wait on a slot only once its use before (a slot
        // of the other's tile) has been filled, or a fresh phase of the wrong parity would pass it at once.
        if (PING && j > 0) named_sync(PING_BARRIER + wg, 256);
        int32_t acc[MI][BN / 2];
        for (int t = 0; t < slices; ++t) {
            const int s = ring.slot;
            const uint64_t da = ring.desc_a, db = ring.desc_b;
            if (!ready) mbar_sleep(full(s), ring.phase);
            ring.advance();
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 32; ++kk)
#pragma unroll
                for (int i = 0; i < MI; ++i)  // the tile's first k step overwrites the accumulators
                    wgmma_s8<BN>(acc[i], da + i * A_BLOCK + kk * KSTEP, db + kk * KSTEP, t > 0 || kk > 0);
            wgmma_commit();
            ready = mbar_test(full(ring.slot), ring.phase);
            wgmma_wait<1>();                                // the slice before's wgmmas are done ...
            if (t > 0 && leader) mbar_arrive_each_block<CLUSTER>(empty(held));  // ... so its slot may be refilled
            held = s;
            if (t == 0) {  // under the first slice's wgmmas: the tile's bias and scales, its residual rows into L2
                const int c = tid % 128, k = n0 + c;
                if (c < BN) {
                    float* const b = tile_terms + 2 * BN * ((j / (1 + PING)) & 1);
                    if (EPI_HAS_BIAS) b[c] = k < K ? bias[k] : 0.f;
                    if (channel_scale) b[BN + c] = k < K ? channel_scale[k] : 1.f;
                }
                // row c of the warpgroup's pixels: its filters n0 .. min(n0 + BN, K) - 1, 128-byte lines and the last
                const int m = m0 + wg_off + c, bytes = (min(n0 + BN, K) - n0) * (int)sizeof(ELEM_OUT);
                if (EPI_HAS_ADD && c < WG_M && m < M) {
                    const char* const row = reinterpret_cast<const char*>(z + (size_t)m * K + n0);
                    for (int o = 0; o < bytes; o += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + o));
                    asm volatile("prefetch.global.L2 [%0];" ::"l"(row + bytes - 1));
                }
            }
        }
        if (PING && blockIdx.x / CLUSTER + (j + 1) * (gridDim.x / CLUSTER) < groups)
            named_arrive(PING_BARRIER + 1 - wg, 256);  // the other warpgroup's turn
        wgmma_hold<0>(acc);
        if (leader) mbar_arrive_each_block<CLUSTER>(empty(held));

        // ---- epilogue: each m64 block through this warpgroup's staging (WSTAGE: each warp's 16 rows of it through
        // the warp's own, 8 at a time), then out in 16-byte chunks of a row
        constexpr bool TERMS_HELD = MI * BN / 2 <= (CONSUMERS == 3 && INT8_OUT ? 32 : 64);  // (see below)
        constexpr bool ADDER = INT8_OUT && MI * BN / 2 <= 64;
        ChannelTerms ct[V];
        if constexpr (WSTAGE) {
            // No barrier guards a warp's staging but __syncwarp, so one a tile makes the terms that the warpgroup's
            // threads copied during the first slice seen by all (and the tile before last done with the other buffer)
            named_sync(2 + wg, 128);
            if constexpr (!INT_OUT && TERMS_HELD) {
#pragma unroll
                for (int q = 0; q < V; ++q)
                    ct[q] = channel_terms(terms_of((j / (1 + PING)) & 1), (tid % (BN / V)) * V + q);
            }
        }
        auto stage_sync = [&] {
            if constexpr (WSTAGE) __syncwarp();
            else named_sync(2 + wg, 128);
        };
#pragma unroll
        for (int p = 0; p < MI * (1 + WSTAGE); ++p) {
            const int i = p / (1 + WSTAGE), h = p % (1 + WSTAGE);  // block i; WSTAGE: the warp's rows 16·w + 8·h ..
            const int r0 = m0 + wg_off + 64 * i + (WSTAGE ? 16 * w + 8 * h : 0);  // staged row r: output row r0 + r
            stage_sync();  // the rows before have been read out of the staging
#pragma unroll
            for (int v = 0; v < BN / 2; v += 2) {  // accumulators v, v + 1: row 16·w + lane/4 (+8), columns c, c + 1
                if (WSTAGE && ((v >> 1) & 1) != h) continue;
                const int row = (WSTAGE ? 0 : 16 * w) + lane / 4 + (WSTAGE ? 0 : 8 * ((v >> 1) & 1)),
                          col = 8 * (v >> 2) + 2 * (lane % 4);
                *reinterpret_cast<int2*>(staged + row * CLD + col) = make_int2(acc[i][v], acc[i][v + 1]);
            }
            stage_sync();
            const bool whole = K % V == 0;  // output rows of whole 16-byte chunks: aligned, none past K in a chunk
            const EpilogueArgs et = terms_of((j / (1 + PING)) & 1);  // the tile's terms, by column
            // Chunk c = me + T·n (consecutive threads, consecutive chunks) of the staging's STAGED_ROWS · BN / V,
            // read by its T threads (the warpgroup's 128, or WSTAGE: the warp's 32), n in groups of ZB whose residual
            // chunks are loaded together before any is used. A row is BN / V chunks, which divides T, so a thread's
            // chunks all lie in the same V columns: their terms are read once (the columns tid % (BN / V) · V ..).
            constexpr int T = WSTAGE ? 32 : 128;
            const int me = WSTAGE ? lane : tid % 128;
            constexpr int CHUNKS = STAGED_ROWS * (BN / V) / T, ZB = CHUNKS < 4 ? CHUNKS : 4;
            static_assert(CHUNKS * T == STAGED_ROWS * (BN / V) && CHUNKS % ZB == 0, "whole groups of chunks a thread");
            static_assert(T % (BN / V) == 0, "a thread's chunks share their columns");
            // Held in registers, and int8 chunks converted through the adder, where a thread's accumulators leave
            // room (64 or fewer); a thread of 128 reads its terms from the tile's shared buffer at each output and
            // converts through the conversion unit, as before both: with either, its build spills. (WSTAGE: read
            // once a tile, above.) Three consumers (152 registers) with 64 accumulators: an int8 output's builds
            // spill with the terms held (bias-relu-add: 32 bytes), so there an int8 chunk reads its 16 columns' terms
            // just before its adder-only conversion (ADDER: TERMS_HELD's ct, or cs).
            if constexpr (!INT_OUT && TERMS_HELD && !WSTAGE) {
#pragma unroll
                for (int q = 0; q < V; ++q) ct[q] = channel_terms(et, (tid % (BN / V)) * V + q);
            }
#pragma unroll 1
            for (int g0 = 0; g0 < CHUNKS; g0 += ZB) {
                uint4 zc[ZB];
#pragma unroll
                for (int n = 0; n < ZB; ++n) {
                    const int c = me + T * (g0 + n), row = c / (BN / V), col = (c % (BN / V)) * V;
                    zc[n] = make_uint4(0, 0, 0, 0);
                    if (EPI_HAS_ADD && whole && r0 + row < M && n0 + col < K)
                        zc[n] = __ldg(reinterpret_cast<const uint4*>(z + (size_t)(r0 + row) * K + n0 + col));
                }
#pragma unroll
                for (int n = 0; n < ZB; ++n) {
                    const int c = me + T * (g0 + n), row = c / (BN / V), col = (c % (BN / V)) * V;
                    const int m = r0 + row, k = n0 + col;
                    if (m >= M || k >= K) continue;
                    const size_t at = (size_t)m * K + k;
                    alignas(16) int sums[V];  // the chunk's accumulators, read 16 bytes at a time (rows 16-byte aligned)
                    alignas(16) ELEM_OUT out[V];
                    alignas(16) ELEM_OUT zv[V];
#pragma unroll
                    for (int q = 0; q < V; q += 4)
                        *reinterpret_cast<int4*>(sums + q) = *reinterpret_cast<const int4*>(staged + row * CLD + col + q);
                    if constexpr (ADDER) {  // requantised, whole chunks: epilogue.cuh's adder-only conversions
                        if (whole) {
                            if constexpr (TERMS_HELD) {
                                *reinterpret_cast<uint4*>(y + at) = epilogue_int8x16(sums, ct, gamma, zc[n]);
                            } else {  // the chunk's terms read here, from the tile's shared buffer
                                ChannelTerms cs[V];
#pragma unroll
                                for (int q = 0; q < V; ++q) cs[q] = channel_terms(et, col + q);
                                *reinterpret_cast<uint4*>(y + at) = epilogue_int8x16(sums, cs, gamma, zc[n]);
                            }
                            continue;
                        }
                    }
                    *reinterpret_cast<uint4*>(zv) = zc[n];
#pragma unroll
                    for (int q = 0; q < V; ++q) {
                        if (!whole && k + q >= K) break;
                        const int a = sums[q];
                        const ELEM_OUT zq = EPI_HAS_ADD ? (whole ? zv[q] : z[at + q]) : ELEM_OUT(0);
                        if constexpr (INT_OUT)
                            out[q] = epilogue_value_int(a, et, col + q, epilogue_load_int<ELEM_OUT>(zq));
                        else
                            out[q] = epilogue_store<ELEM_OUT>(
                                epilogue_value(static_cast<float>(a), TERMS_HELD ? ct[q] : channel_terms(et, col + q),
                                               gamma, epilogue_load<ELEM_OUT>(zq)));
                    }
                    if (whole) {
                        *reinterpret_cast<uint4*>(y + at) = *reinterpret_cast<const uint4*>(out);
                    } else {
                        for (int q = 0; q < V && k + q < K; ++q) y[at + q] = out[q];
                    }
                }
            }
        }
    }
    if (CLUSTER > 1) cluster_sync();  // (as the producer's: no block leaves while its peer may write into it)
}
