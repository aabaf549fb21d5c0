// Attention in FlashAttention-3's shape, for Hopper (sm_90a): fp16 or bf16, D = 128, fp32 accumulators.
//
// 02_flash_mma.cu's algorithm (tiles of queries against streamed tiles of keys, the online softmax in registers,
// P handed to the second product without leaving them), rebuilt on what Hopper adds:
//  * Warp specialisation. A block has three warpgroups: two consumers, each owning 64 of the block's BM = 128
//    query rows, and a producer whose one thread issues every copy. The producer keeps a ring of STAGES slots, each
//    one tile of BN keys: K's rows and V's rows, each with its own "full" mbarrier (so that Q·Kᵀ may start before V
//    has landed) and one "empty" barrier that both consumers arrive on once they are done with the slot.
//  * TMA. Q, K, V and O are seen as 4-D tensors [B, heads, S, D] (the spec's tensor_maps), copied in boxes of
//    rows × 64 columns: 128 bytes a row, TMA's 128-byte swizzle, so D = 128 is two "panels" of 64 columns. A panel
//    of R rows is R·128 bytes of 8-row swizzle atoms 1024 bytes apart. Rows past S arrive as zeros (the map's S
//    bound; no row of another head is read), and the O store is clipped to S by the copy engine.
//  * wgmma. S = Q·Kᵀ is m64nBNk16, both operands K-major in shared memory (Q as [query][d], K as [key][d]: gemm
//    nt's layout), 8 k steps of 16 across the two panels. O += P·V is m64n128k16 with A from registers (wgmma_rs):
//    the accumulator of S holds columns 16j..16j+15 in registers 8j..8j+7, exactly the A fragment of k step j, so
//    P is S's registers rounded in pairs to 16 bits (the rounding of P the error model counts). V lies [key][d],
//    N-contiguous for this product: it is read MN-major (transposed by the tensor core, gemm nn's B), panels of
//    BN key rows BN·128 bytes apart.
//  * The online softmax on raw scores: m is the row's running maximum of Q·Kᵀ, and p = exp2(s·c − m·c) with
//    c = log2(e)/√D, one FFMA and one ex2 a score. ℓ sums the fp32 p of each thread's columns; the quad's four
//    partial sums are added once, at the end.
//  * Overlap (OVERLAP = 1, FA3's intra-warpgroup pipelining): tile i's Q·Kᵀ is issued, then tile i−1's P·V, and the
//    softmax of tile i runs while P·V is on the tensor cores. Only then does the warpgroup wait for P·V and round
//    the new P (P's registers are read by the P·V in flight, so the new P is made after that wait); O is rescaled
//    by exp2(c·(m_old − m_new)) at the next step, between its two issues. A thread holds S (BN/2 floats), O (64)
//    and P (BN/4) at once. OVERLAP = 0 runs the plain order (Q·Kᵀ, wait, softmax, P·V, wait): the fallback should
//    the overlap misbehave on some toolkit.
//  * Ping-pong (PINGPONG = 1, with OVERLAP; FA3's inter-warpgroup overlap): the two consumers take turns to issue
//    their products (two named barriers), so that one warpgroup's softmax runs under the other's wgmmas.
//  * The ring's slack. With OVERLAP, a step holds two slots (tile i's K and V, tile i−1's V for the P·V in flight),
//    so with STAGES = 2 the slot of tile i+1 is tile i−1's, given back only when that P·V completes, just before tile
//    i+1's Q·Kᵀ wants it: every step may wait a whole copy's latency. Two ways out, both FA3's: STAGES = 3 (it fits
//    for BN = 128: 225 KB), and KV_SPLIT = 1, separate "empty" barriers for K and V, K's given back as soon as its
//    Q·Kᵀ completes (FA3's two pipelines), so that tile i+1's K is copied a step ahead; V, wanted a step later than K,
//    still waits for its P·V, and the producer issues it a tile behind K (FA3's order: K i+1, then V i).
//  * Lazy rescaling (LAZY_RESCALE = 1): O is multiplied by alpha only where some row of the warp has a new maximum
//    (alpha ≠ 1); otherwise the product would change nothing. Past the first few tiles a row's maximum seldom grows,
//    so most steps skip 64 FMULs a thread, which sit between Q·Kᵀ's issue and P·V's.
//
// Tiles are visited from the last to the first, as FA3 does: the tiles that need masking (the ragged end past S,
// the causal diagonal) come first, where every row still meets a key it may see, so the running maximum is finite
// from the start (it is guarded anyway: a row that sees no key in its first tile, possible with BN = 64, keeps
// m = −inf, p = 0, ℓ = 0 until it does). Causal: a block visits the key tiles up to its last row only, and blocks
// run heaviest first (the grid's x reversed). GQA: query head h reads key/value head h / (H / H_kv).
//
// The epilogue: O / ℓ rounded to 16 bits into this warpgroup's 16 KB of Q (free once its last Q·Kᵀ has completed),
// in the swizzle the O map reads, then two TMA stores of 64 rows × 64 columns; rows past S are clipped. EARLY_EXIT
// = 1: the block leaves once the stores have read shared memory, not once they have landed.
//
// Parameters (-DNAME=value): BN (keys a tile: 64, 128, 176 or 192; FA3 takes 176 for D = 128 without a causal
// mask, fewer steps, each one's softmax and barrier costs spread over more keys), STAGES (ring slots), OVERLAP,
// PINGPONG, KV_SPLIT, LAZY_RESCALE and EARLY_EXIT (above).
// BM = 128 and HD = 128 are fixed: two consumer warpgroups of 64 rows, and the head size the spec's `requires`
// admits.
// Shared memory: 1024 (alignment) + BM·HD·2 (Q) + STAGES·2·BN·HD·2 (K and V) + 8·(4·STAGES + 1) (barriers).
// Launch: grid (cdiv(S, 128), B·H), 384 threads: consumer warpgroups 0 and 1, then the producer.

#include "attention_common.cuh"         // kv_head
#include "../include/hopper.cuh"        // wgmma_ss, wgmma_rs, descriptors, mbarriers, ring_init, RingSlot, TMA
#include "../include/mma_sync.cuh"      // pack2

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT ELEM
#endif
#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef OVERLAP
#define OVERLAP 1
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef KV_SPLIT
#define KV_SPLIT 0
#endif
#ifndef LAZY_RESCALE
#define LAZY_RESCALE 0
#endif
#ifndef EARLY_EXIT
#define EARLY_EXIT 0
#endif

constexpr int HD = 128;                      // the head size, D
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 query rows each
constexpr int BM = 64 * CONSUMERS;           // query rows a block
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int PANEL_COLS = 64;               // columns of D in one 128-byte swizzled row
constexpr int PANELS = HD / PANEL_COLS;
constexpr int Q_PANEL = 64 * 128;            // one consumer's 64 rows of one panel (a TMA box), bytes
constexpr int Q_WG = PANELS * Q_PANEL;       // one consumer's Q rows
constexpr int KV_PANEL = BN * 128;           // BN key rows of one panel
constexpr int KV_TILE = PANELS * KV_PANEL;   // a slot's K (or V) tile
constexpr int QK_STEPS = HD / 16;            // k steps of Q·Kᵀ (16 columns of D each)
constexpr int PV_STEPS = BN / 16;            // k steps of P·V (16 keys each)
constexpr float SCALE_LOG2 = 1.4426950408889634f * 0.08838834764831845f;  // log2(e) / √128
// setmaxnreg gives the producer warpgroup's registers to the consumers (gemm/10_wgmma_tma.cu): of the 64 K
// registers, 128·24 stay with the producer and (65536 − 128·24) / 256 = 244 a consumer thread, 240 in steps of 8.
constexpr int PRODUCER_REGS = 24;
constexpr int CONSUMER_REGS = 240;

static_assert(BN == 64 || BN == 128 || BN == 176 || BN == 192,
              "BN: 64, 128, 176 or 192 keys a tile (wgmma n64 .. n192, S's BN/2 registers; a multiple of 16 for P·V's "
              "k steps and of 8 for the 1024-byte swizzle atoms of a panel)");
static_assert(STAGES >= 2, "STAGES: a ring of one slot cannot overlap copies with products");
static_assert(OVERLAP == 0 || OVERLAP == 1, "OVERLAP: 0 or 1");
static_assert(PINGPONG == 0 || (PINGPONG == 1 && OVERLAP == 1), "PINGPONG: 0, or 1 with OVERLAP = 1");
static_assert(KV_SPLIT == 0 || KV_SPLIT == 1, "KV_SPLIT: 0 or 1");
static_assert(LAZY_RESCALE == 0 || LAZY_RESCALE == 1, "LAZY_RESCALE: 0 or 1");
static_assert(EARLY_EXIT == 0 || EARLY_EXIT == 1, "EARLY_EXIT: 0 or 1");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536, "the register file");
static_assert(sizeof(ELEM) == 2 && sizeof(ELEM_OUT) == 2, "16-bit inputs and output");

__device__ __forceinline__ float exp2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));  // 2^-inf = +0: masked scores vanish
    return y;
}

// Keep registers that a wgmma in flight reads (P) where they are until after the wait that completes it.
template <int N>
__device__ __forceinline__ void hold_operand(uint32_t (&p)[N][4])
{
#pragma unroll
    for (int j = 0; j < N; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(p[j][r])::"memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention_fa3_wgmma(const TensorMap* __restrict__ map_q, const TensorMap* __restrict__ map_k,
                    const TensorMap* __restrict__ map_v, const TensorMap* __restrict__ map_o, int B, int H, int H_kv,
                    int S, int causal)
{
    extern __shared__ uint8_t smem_raw[];
    // The swizzle repeats every 1024 bytes and TMA writes it relative to 1024-byte boundaries: align ourselves.
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    const uint32_t pad = (1024 - (raw & 1023)) & 1023;
    const uint32_t sQ = raw + pad, sK = sQ + BM * HD * 2, sV = sK + STAGES * KV_TILE;
    const uint32_t bars = sV + STAGES * KV_TILE;
    auto full_k = [&](int s) { return bars + 8 * s; };                // ring_init's "full": K of slot s has come
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };      // ... its "empty": both consumers are done
    auto full_v = [&](int s) { return bars + 8 * (2 * STAGES + s); };  // V of slot s has come
    // KV_SPLIT: "empty" speaks for K only, and V of slot s has its own (both consumers are done with it).
    auto empty_v = [&](int s) { return bars + 8 * (3 * STAGES + s); };
    const uint32_t q_bar = bars + 8 * 4 * STAGES;                     // the block's Q has come

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int q_tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heaviest causal blocks first
    const int q0 = q_tile * BM, b = blockIdx.y / H, h = blockIdx.y % H, h_kv = kv_head(h, H, H_kv);
    const int tiles = ((causal ? min(S, q0 + BM) : S) + BN - 1) / BN;  // key tiles this block visits

    if (tid == 0) {
        mbar_init(q_bar, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_v(s), 1);
            if (KV_SPLIT) mbar_init(empty_v(s), CONSUMERS);
        }
    }
    ring_init<STAGES, 1>(bars, CONSUMERS);  // full_k(s), empty(s); its fence and barrier cover the inits above

    if (warp >= 4 * CONSUMERS) {
        // ---- producer: one thread issues every copy; the warpgroup hands its registers to the consumers ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_q);
            tma_acquire(map_k);
            tma_acquire(map_v);
            // Box coordinates innermost first: (column of D, row of S, head, batch).
            mbar_expect_bytes(q_bar, BM * HD * 2);
            for (int wg = 0; wg < CONSUMERS; ++wg)
                for (int p = 0; p < PANELS; ++p)
                    tma_load_4d(sQ + wg * Q_WG + p * Q_PANEL, map_q, p * PANEL_COLS, q0 + 64 * wg, h, b, q_bar);
            // K's tile into its slot once free, and V's (KV_SPLIT: each waits for its own "empty" barrier).
            auto load_k = [&](const RingSlot<STAGES>& r, int tile) {
                mbar_sleep(empty(r.slot), r.phase ^ 1);
                mbar_expect_bytes(full_k(r.slot), KV_TILE);
                for (int p = 0; p < PANELS; ++p)
                    tma_load_4d(sK + r.slot * KV_TILE + p * KV_PANEL, map_k, p * PANEL_COLS, tile * BN, h_kv, b,
                                full_k(r.slot));
            };
            auto load_v = [&](const RingSlot<STAGES>& r, int tile) {
                if (KV_SPLIT) mbar_sleep(empty_v(r.slot), r.phase ^ 1);
                mbar_expect_bytes(full_v(r.slot), KV_TILE);
                for (int p = 0; p < PANELS; ++p)
                    tma_load_4d(sV + r.slot * KV_TILE + p * KV_PANEL, map_v, p * PANEL_COLS, tile * BN, h_kv, b,
                                full_v(r.slot));
            };
            RingSlot<STAGES> ring;
            if (KV_SPLIT) {
                // FA3's order, V a tile behind K: each step's consumers want the next tile's K before this one's V,
                // and the next K's slot comes free (its Q·Kᵀ done) before this V's (its P·V done).
                RingSlot<STAGES> ring_v;
                load_k(ring, tiles - 1);
                for (int tile = tiles - 2; tile >= 0; --tile, ring_v.advance()) {
                    ring.advance();
                    load_k(ring, tile);
                    load_v(ring_v, tile + 1);
                }
                load_v(ring_v, 0);
            } else {
                for (int tile = tiles - 1; tile >= 0; --tile, ring.advance()) {
                    load_k(ring, tile);
                    load_v(ring, tile);
                }
            }
        }
        return;
    }

    // ---- consumers: warpgroup wg owns query rows q0 + 64·wg .. + 63 ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int wg = warpgroup_of<true>(warp), w = warp % 4, g = lane / 4, t = lane % 4;
    const bool leader = tid % 128 == 0;
    const int row_lo = q0 + 64 * wg;
    const int row = row_lo + 16 * w + g;  // this thread's rows: row (i = 0) and row + 8 (i = 1)
    // The keys a row may see end at `limit` (exclusive): S, or the row itself plus one where causal.
    const int limit[2] = {causal ? min(S, row + 1) : S, causal ? min(S, row + 9) : S};

    // Descriptors are sums: k step j adds its byte offset / 16 to the panel's first descriptor.
    const uint64_t desc_q = smem_desc(sQ + wg * Q_WG);
    auto qk_offset = [](int j) { return (uint32_t)(((j / 4) * Q_PANEL + (j % 4) * 32) >> 4); };
    auto k_offset = [](int j) { return (uint32_t)(((j / 4) * KV_PANEL + (j % 4) * 32) >> 4); };

    float s_acc[1][BN / 2];  // S of the current tile: row 16w + g + 8·((v>>1)&1), key 8·(v>>2) + 2t + (v&1)
    float o_acc[1][HD / 2];  // O, the same layout over D
    uint32_t p_frag[PV_STEPS][4];  // P, 16 bits a value: the A fragments of P·V's k steps
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];

    // S = Q·K_slotᵀ, in flight once this returns.
    auto issue_qk = [&](int s) {
        const uint64_t desc_k = smem_desc(sK + s * KV_TILE);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < QK_STEPS; ++j)
            wgmma_ss<ELEM, BN>(s_acc[0], desc_q + qk_offset(j), desc_k + k_offset(j), j > 0);
        wgmma_commit();
    };
    // O (+)= P·V_slot, in flight once this returns (accumulate = 0: the first tile's product overwrites O).
    auto issue_pv = [&](int s, bool accumulate) {
        const uint64_t desc_v = smem_desc_mn(sV + s * KV_TILE, KV_PANEL);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < PV_STEPS; ++j)
            wgmma_rs<ELEM, HD, 1>(o_acc[0], p_frag[j], desc_v + ((j * 16 * 128) >> 4), accumulate || j > 0);
        wgmma_commit();
    };
    // The online softmax of the tile of keys n0.. in s_acc: scores past a row's limit to −inf (only where the tile
    // reaches past S or, causal, past this warpgroup's first row), the running maximum and sum, s_acc ← p, and
    // alpha, the factor by which O's earlier sums shrink.
    auto softmax = [&](int n0) {
        if (n0 + BN > S || (causal && n0 + BN - 1 > row_lo)) {
#pragma unroll
            for (int v = 0; v < BN / 2; ++v)
                if (n0 + 8 * (v >> 2) + 2 * t + (v & 1) >= limit[(v >> 1) & 1]) s_acc[0][v] = -INFINITY;
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            float top = -INFINITY;
#pragma unroll
            for (int v = 2 * i; v < BN / 2; v += 4) top = fmaxf(top, fmaxf(s_acc[0][v], s_acc[0][v + 1]));
            top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));  // the row's four threads
            top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
            const float m_new = fmaxf(m[i], top);
            const float shift = m_new == -INFINITY ? 0.f : m_new * SCALE_LOG2;  // a row with no key seen yet
            alpha[i] = exp2_approx(fmaf(m[i], SCALE_LOG2, -shift));           // 0 while m was −inf
            m[i] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int v = 2 * i; v < BN / 2; v += 4) {
                s_acc[0][v] = exp2_approx(fmaf(s_acc[0][v], SCALE_LOG2, -shift));
                s_acc[0][v + 1] = exp2_approx(fmaf(s_acc[0][v + 1], SCALE_LOG2, -shift));
                sum += s_acc[0][v] + s_acc[0][v + 1];
            }
            l[i] = l[i] * alpha[i] + sum;
        }
    };
    // LAZY_RESCALE: a warp whose rows all kept their maximum (alpha = exp2(0) = 1 exactly) skips the 64 multiplies by
    // one, the same O bit for bit; past the first tiles a row's maximum seldom grows.
    auto rescale_o = [&]() {
        if (LAZY_RESCALE && !__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
        for (int v = 0; v < HD / 2; ++v) o_acc[0][v] *= alpha[(v >> 1) & 1];
    };
    auto round_p = [&]() {
#pragma unroll
        for (int j = 0; j < PV_STEPS; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                p_frag[j][r] = pack2(s_acc[0][8 * j + 2 * r], s_acc[0][8 * j + 2 * r + 1], (ELEM*)nullptr);
    };
    // Slot s goes back to the producer once this warpgroup's wgmmas have read it: K's and V's both at once
    // (release_v, after P·V), or with KV_SPLIT K's as soon as Q·Kᵀ has completed (release_k) and V's after P·V.
    auto release_k = [&](int s) {
        if (KV_SPLIT && leader) mbar_arrive(empty(s));
    };
    auto release_v = [&](int s) {
        if (leader) mbar_arrive(KV_SPLIT ? empty_v(s) : empty(s));
    };

    mbar_wait(q_bar, 0);
    RingSlot<STAGES> ring;  // the slot of the tile being read
    int tile = tiles - 1;
#if OVERLAP
    // PINGPONG: the two consumer warpgroups take turns to issue their wgmmas (named barrier TURN + wg, 256 threads:
    // the warpgroup whose turn it is waits, the other arrives once it has issued), so that one's softmax runs while
    // the other's products keep the tensor cores busy. Warpgroup 0 goes first. Each warpgroup takes tiles + 1 turns;
    // warpgroup 1's last hand-over is left out, as no turn of warpgroup 0 waits for it.
    constexpr int TURN = 3;  // (1 and 2: the epilogue's barriers)
    auto take_turn = [&]() {
        if (PINGPONG) named_sync(TURN + wg, 256);
    };
    auto pass_turn = [&](bool last) {
        if (PINGPONG && !(last && wg == 1)) named_arrive(TURN + 1 - wg, 256);
    };
    if (PINGPONG && wg == 1) named_arrive(TURN, 256);

    // The first tile alone: S, its softmax, P. Then each step issues the next tile's Q·Kᵀ and this tile's P·V
    // together, and runs the next tile's softmax while P·V multiplies. O is rescaled by a tile's alpha one step
    // later, between the next step's two issues (Q·Kᵀ on the tensor cores, O not in flight), as FA3 does.
    mbar_wait(full_k(ring.slot), ring.phase);
    take_turn();
    issue_qk(ring.slot);
    pass_turn(false);
    wgmma_hold<0>(s_acc);
    release_k(ring.slot);
    softmax(tile * BN);
    round_p();
#pragma unroll 1
    for (int i = 1; i < tiles; ++i) {
        const RingSlot<STAGES> prev = ring;
        ring.advance();
        --tile;
        mbar_wait(full_k(ring.slot), ring.phase);
        take_turn();
        issue_qk(ring.slot);
        if (i > 1) rescale_o();  // the alpha of tile i − 1's softmax (O held tiles up to i − 2)
        mbar_wait(full_v(prev.slot), prev.phase);
        issue_pv(prev.slot, i > 1);
        pass_turn(false);
        wgmma_hold<1>(s_acc);  // Q·Kᵀ done (groups complete in order); P·V still in flight
        release_k(ring.slot);
        softmax(tile * BN);
        wgmma_hold<0>(o_acc);
        hold_operand(p_frag);
        release_v(prev.slot);
        round_p();
    }
    if (tiles > 1) rescale_o();
    mbar_wait(full_v(ring.slot), ring.phase);
    take_turn();
    issue_pv(ring.slot, tiles > 1);
    pass_turn(true);
    wgmma_hold<0>(o_acc);
    hold_operand(p_frag);
    release_v(ring.slot);
#else
    // The plain order: each tile's Q·Kᵀ, its softmax, then its P·V, each waited for.
#pragma unroll 1
    for (int i = 0; i < tiles; ++i, --tile, ring.advance()) {
        mbar_wait(full_k(ring.slot), ring.phase);
        issue_qk(ring.slot);
        wgmma_hold<0>(s_acc);
        release_k(ring.slot);
        softmax(tile * BN);
        if (i > 0) rescale_o();
        round_p();
        mbar_wait(full_v(ring.slot), ring.phase);
        issue_pv(ring.slot, i > 0);
        wgmma_hold<0>(o_acc);
        hold_operand(p_frag);
        release_v(ring.slot);
    }
#endif

    // ---- epilogue: O / ℓ into this warpgroup's Q rows (its Q·Kᵀ are done), as the O map's swizzled boxes ----
    float inv[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        float sum = l[i];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        inv[i] = 1.f / sum;
    }
    uint8_t* const stage = smem_raw + pad + wg * Q_WG;
#pragma unroll
    for (int v = 0; v < HD / 2; v += 2) {
        // Accumulators v, v + 1: row r8 of the 64, columns 8·(v>>2) + 2t + {0, 1}: panel v / 32, 16-byte chunk
        // (v>>2) % 8 of its 128-byte row, swizzled as TMA reads it: chunk ^ (r8 % 8).
        const int r8 = 16 * w + g + 8 * ((v >> 1) & 1), chunk = (v >> 2) % 8;
        const float k = inv[(v >> 1) & 1];
        *reinterpret_cast<uint32_t*>(stage + (v / 32) * Q_PANEL + r8 * 128 + ((chunk ^ (r8 & 7)) << 4) + t * 4) =
            pack2(o_acc[0][v] * k, o_acc[0][v + 1] * k, (ELEM_OUT*)nullptr);
    }
    fence_proxy_async();  // our stores, before the copy engine reads them
    named_sync(1 + wg, 128);
    if (leader) {
        for (int p = 0; p < PANELS; ++p)
            tma_store_4d(map_o, sQ + wg * Q_WG + p * Q_PANEL, p * PANEL_COLS, row_lo, h, b);
        bulk_commit();
        // The block may not leave while the copy engine still reads its shared memory. EARLY_EXIT = 0 waits for
        // the stores to complete in global memory as well; 1 only until they have read the staging rows, as CUTLASS's
        // epilogues do (the grid's end makes them visible), so the next block may start on this SM that much sooner.
        bulk_wait<EARLY_EXIT == 1>();
    }
}
