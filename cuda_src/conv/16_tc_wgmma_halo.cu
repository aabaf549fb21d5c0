// Tensor-core implicit-GEMM convolution from a halo tile (sm_90a), stride 1: fp16 or bf16 NHWC, fp32 accumulate.
//
// 14_tc_wgmma_tma.cu copies one im2col box per filter tap, so every input pixel crosses from L2 into shared memory
// once per tap: 9 times for a 3×3 filter (at 56², 256×64 tiles: ~370 KB a tile, ~580 MB a call, docs/perf-notes.md),
// and at the layers with the least reuse those bytes set the pace and the power draw. Here a tile
// loads each input pixel once, and the taps are read out of shared memory by shifted wgmma descriptors. (Measured on
// the H100, docs/perf-notes.md: at 56² the same 256×64 tile ran at about 14's rate per row with ~5× fewer bytes;
// what made it faster than cuDNN there is SWAP, below.)
//  * The output is computed on a width padded to Wp = W + 2·pad (= OW + S − 1 at stride 1): padded pixel
//    q = oh·Wp + ow' with ow' in 0 .. Wp − 1; the columns ow' ≥ OW are computed and thrown away (3.4% of the
//    work at 56², 6.7% at 28²). Input pixel (oh + r − pad, ow' + s − pad), what tap (r, s) multiplies, is then row
//    q + r·Wp + s of the padded input seen as one long column of pixels: linear in q. A wgmma A operand (64
//    consecutive pixels × 16 channels, K-major) for tap (r, s) is the tap (0, 0) operand's descriptor with its
//    start moved r·Wp + s rows of 128 bytes further (64 channels of 16 bits: one 128-byte swizzle row a pixel).
//    (ow' + s may run past Wp into the next row: only for ow' ≥ OW, the columns thrown away.)
//  * The halo tile: one TMA box of a tiled 4-D map of x (C, W, H, N innermost first): 64 channels × Wp columns
//    (from w = −pad) × HR rows × 1 image, starting at the padded row of the tile's first pixel. The copy engine
//    zero-fills whatever lies outside x: the padding (negative coordinates too), channels past C (which meet
//    filter values of the next tap, as in 14: products of exactly 0), rows past H. HR = R + 1 + (BM + S − 3) / Wp
//    rows cover the tile's BM pixels from any column, plus (R − 1) rows and (S − 1) pixels of halo.
//  * Swizzle: the box lands 128B-swizzled (16-byte chunk c of pixel row j at chunk c ^ (j % 8)) in a 1024-byte
//    aligned slot. A shifted operand starts at a row that is no multiple of 8: DESC_BASE = 1 gives its descriptor
//    the PTX ISA's "matrix base offset" (bits 49-51) = (start address >> 7) % 8, the row of the 1024-byte pattern
//    it starts in; DESC_BASE = 0 leaves it 0. Measured (a GPU test computes both): 0 reads the operands right
//    (rel_err 2.1e-4 fp16), the formula wrong (1.3): the spec builds DESC_BASE = 0.
//  * Tiles of BM padded pixels within one image (a box holds one image's rows), `tiles_img` an image; the last one
//    of an image may hold fewer. Its blocks of rows past the image are computed all the same (from halo rows that
//    lie inside the box) and not stored: skipping their wgmmas behind a branch made ptxas serialize every wgmma
//    of the kernel ("wgmma.mma_async instructions are serialized due to ... divergent path", C7520), which ran
//    the 56² layer at 122 µs instead of 82 (H100, fp16, the sweeps at e6e4e8c and cadba7d).
//  * Filters (wgmma's B; A with SWAP): one BN × 64 box of the plain map of w seen as K × R·S·C a (tap, channel
//    chunk) slice, in a ring of STAGES slots beside the halo ring (HSTAGES slots of one halo box each). Where the
//    ring holds a tile's whole reduction (STAGES = R·S·⌈C/64⌉: at 56², C = 64, nine 8 KB boxes at BN = 64) the
//    filters stay resident: a block whose next tile has the same filter tile (filter tiles fastest, blocks gridDim
//    apart) reloads nothing, and the producer completes the slot's phase with a plain arrive.
//  * SWAP = 1 computes the transposed product (y^T = w · x^T): the filters are wgmma's M (BN / 64 m64 blocks, the
//    filter box as the A operand) and a warpgroup's BM / 2 pixels its N (the shifted halo descriptor as B, K-major:
//    pixel rows of channels, as the halo lies). At C = K = 64 (56²) the filters allow only n64 wgmmas the other
//    way round, whose rate 14's products-only probe put at 444 TFLOP/s against 603 for n128 (docs/perf-notes.md);
//    swapped, the same tile runs m64n128 (or m64n256 at BM = 512; m64n232 at BM = 464, 8 whole padded rows at 56²).
//    The epilogue stages each thread's accumulators with stmatrix .trans: 8×8 blocks of filters × pixels written
//    transposed, as 16-byte chunks of pixel rows (128 16-bit stores a thread at BM = 512 before; docs/perf-notes.md).
//  * PING = 1: the two consumer warpgroups take whole tiles of BM pixels in turn instead of sharing each one; tile
//    t's wgmmas are issued after tile t − 1's (named barriers 4 and 5), so one warpgroup's epilogue runs while the
//    other's wgmmas keep the tensor pipe busy (sharing, both were in their epilogues at once: the pipe was busy
//    51% of the cycles at 56²). Where a tile is whole padded rows (BM a multiple of Wp: 232 = 4 · 58 at 56²), it
//    leaves as one TMA box of map_y (64 filters × Wp columns × BM / Wp rows; the columns past OW and rows past OH
//    clipped by the copy engine), staged in the tile's own halo slot, which is released once the box has been read:
//    the copy loop it replaces took longer than the other warpgroup's wgmmas.
// The rest is 14's: persistent blocks (at most one per SM, walking the tiles gridDim apart), two consumer
// warpgroups (BM/2 pixels × BN filters each, m64nBNk16 wgmmas straight from shared memory, one slice in flight),
// one producer thread (setmaxnreg hands its warpgroup's registers over), each consumer's output staged 64 rows at a
// time and written as whole 16-byte chunks of output rows, the padded columns skipped.
//
// Tiles (-DNAME=value): BM padded pixels (128 or 256; with SWAP also 384, 464, 512; with PING, a warpgroup's whole
// tile, 128, 192, 232 or 256), BN filters (64, 128 or 256; 64 or 128 with SWAP; a warpgroup's pixels · BN ≤ 16384),
// STAGES filter slots, HSTAGES halo slots, DESC_BASE, SWAP, PING, PROBE (the probe's parts switched off). Maps:
// map_x, the 4-D tiled map of x in boxes of 64 × Wp × HR × 1; map_w, K × R·S·C in boxes of BN × 64; map_y, y in boxes
// of 64 × Wp × BM / Wp × 1. Launch: min(tiles, SMs) blocks, tiles = N·⌈OH·Wp / BM⌉·⌈K / BN⌉; 384 threads; 1024
// (alignment) + HSTAGES·⌈HR·Wp·128 / 1024⌉·1024 + STAGES·BN·128 + 2·128·BN (staging) + 16·(HSTAGES + STAGES)
// bytes of dynamic shared memory (the kernel traps if given less).

#include "../include/hopper.cuh"    // wgmma_ss, smem_desc, mbarriers, tma_load_2d, tma_load_4d
#include "../include/mma_sync.cuh"  // smem_addr, pack2

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
#define BN 64
#endif
#ifndef STAGES
#define STAGES 9
#endif
#ifndef HSTAGES
#define HSTAGES 2
#endif
#ifndef DESC_BASE
#define DESC_BASE 0
#endif
#ifndef SWAP
#define SWAP 0
#endif
#ifndef PING
#define PING 0
#endif
#ifndef PROBE
#define PROBE 0  // tools/gpu/tc_conv_probe.py only, results wrong: bits 1 no epilogue, 2 no tap shifts,
                 // 4 no copy-out (staged, not stored), 8 nothing staged (copied out all the same)
#endif

constexpr int CONSUMERS = 2;
constexpr int BK = 64;                         // channels a slice: one 128-byte swizzle row of 16-bit values
constexpr int THREADS = 128 * (CONSUMERS + 1);
// PING = 0: both consumer warpgroups share each tile (BM / 2 pixels each); PING = 1: each takes every other tile
// of BM pixels whole, the two alternating on the tensor pipe (one's epilogue under the other's wgmmas)
constexpr int WG_M = PING ? BM : BM / CONSUMERS;  // a consumer warpgroup's padded pixels of a tile
constexpr int TILE_WGS = PING ? 1 : CONSUMERS;    // consumer warpgroups that read a tile's slots
// SWAP = 0: wgmma's M is pixels (MI m64 blocks of the warpgroup's pixels), N the BN filters. SWAP = 1: M is the
// filters (MI = BN / 64 blocks), N the warpgroup's pixels, the product transposed (y^T = w · x^T).
constexpr int MI = SWAP ? BN / 64 : WG_M / 64, NW = SWAP ? WG_M : BN;
constexpr int B_BYTES = BN * BK * 2;
constexpr int STAGING_BYTES = 64 * BN * 2;
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;

static_assert(WG_M == 64 || WG_M == 128 || (SWAP && (WG_M == 192 || WG_M == 232 || WG_M == 256)),
              "BM: 64 or 128 padded pixels per consumer warpgroup (with SWAP also 192, 232 or 256: one wgmma's N)");
static_assert(PING == 0 || PING == 1, "PING: warpgroups sharing each tile (0) or taking turns with whole tiles (1)");
static_assert(SWAP ? BN == 64 || BN == 128 : BN == 64 || BN == 128 || BN == 256,
              "BN: one wgmma's N, 64, 128 or 256; with SWAP one or two m64 blocks of filters");
static_assert(MI * NW <= 256, "a consumer thread holds MI · NW / 2 ≤ 128 accumulators");
static_assert(SWAP == 0 || SWAP == 1, "SWAP: pixels as wgmma's M (0) or N (1)");
static_assert(STAGES >= 2 && HSTAGES >= 1, "a filter ring of at least two slots, at least one halo slot");
static_assert(DESC_BASE == 0 || DESC_BASE == 1, "DESC_BASE: the descriptor's base offset 0, or (addr >> 7) % 8");

// The K-major 128B-swizzled descriptor of an operand that starts at any 128-byte row of a 1024-aligned pattern.
__device__ __forceinline__ uint64_t halo_desc(uint32_t addr)
{
    return smem_desc(addr) | (DESC_BASE ? (uint64_t)((addr >> 7) & 7) << 49 : 0ull);
}

// Stage one filter block's accumulators of the swapped product (filters × pixels) as pixel rows: n blocks j0 ..
// j1 − 1 (8 pixels each) go to rows 8·(j − j0) .. of `row_bytes` bytes at `base`, filter chunk chunk0 (+1 for the
// block's filters 8-15) at chunk ^ (row % 8). stmatrix .trans writes each 8×8 matrix (accumulators 4j, 4j + 1: row
// lane/4, pixels 2·(lane%4), +1) transposed, the address of row c given by lane 8·matrix + c; four matrices (n blocks
// j, j + 1) an instruction, two for an odd last one. A matrix's 8 rows land in 8 distinct chunks: no bank conflicts.
template <int N_PIXELS, typename T>
__device__ __forceinline__ void stage_pixel_rows(const float (&a)[N_PIXELS / 2], uint32_t base, int row_bytes,
                                                 int chunk0, int j0, int j1, T* as)
{
    const int lane = threadIdx.x % 32, c = lane % 8;
#pragma unroll
    for (int j = j0; j < j1; j += 2) {
        const int mi = j + 1 < j1 ? lane / 8 : lane / 8 % 2;  // x2: lanes 0-15 count
        const int row = 8 * (j + mi / 2 - j0) + c;
        const uint32_t at = base + row * row_bytes + (((chunk0 + mi % 2) ^ c) * 16);
        const uint32_t lo = pack2(a[4 * j], a[4 * j + 1], as), hi = pack2(a[4 * j + 2], a[4 * j + 3], as);
        if (j + 1 < j1)
            stmatrix_x4_trans(at, lo, hi, pack2(a[4 * j + 4], a[4 * j + 5], as), pack2(a[4 * j + 6], a[4 * j + 7], as));
        else
            stmatrix_x2_trans(at, lo, hi);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
conv_tc_wgmma_halo(const TensorMap* __restrict__ map_x, const TensorMap* __restrict__ map_w,
                   const TensorMap* __restrict__ map_y, ELEM_OUT* __restrict__ y, int N, int C, int H, int W, int K, int R, int S, int pad, int OH,
                   int OW)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    // Geometry (the spec's `shared` computes the same sizes): padded width, pixels an image, halo rows and bytes.
    const int Wp = W + 2 * pad, PI = OH * Wp, HR = R + 1 + (BM + S - 3) / Wp;
    const int halo_bytes = HR * Wp * BK * 2, halo_slot = (halo_bytes + 1023) / 1024 * 1024;
    const int tiles_img = (PI + BM - 1) / BM, tiles_n = (K + BN - 1) / BN, tiles = N * tiles_img * tiles_n;
    const int cslices = (C + BK - 1) / BK, taps = R * S, slices = taps * cslices;

    const uint32_t base = smem_addr(smem_raw), pad_bytes = (1024 - base % 1024) % 1024;
    unsigned char* const halo_ptr = smem_raw + pad_bytes;  // 128B swizzle: every slot 1024-aligned
    const uint32_t halo_addr = base + pad_bytes, b_addr = halo_addr + HSTAGES * halo_slot;
    const uint32_t bars = b_addr + STAGES * B_BYTES + CONSUMERS * STAGING_BYTES;
    {
        uint32_t given;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
        if (bars + 16 * (HSTAGES + STAGES) > base + given) __trap();  // a launch that disagrees with this layout
    }
    auto hfull = [&](int s) { return bars + 8 * s; };                    // "halo slot s holds its box"
    auto hempty = [&](int s) { return bars + 8 * (HSTAGES + s); };       // "both consumer warpgroups are done"
    auto bfull = [&](int s) { return bars + 8 * (2 * HSTAGES + s); };
    auto bempty = [&](int s) { return bars + 8 * (2 * HSTAGES + STAGES + s); };
    // tile g: filter tiles fastest; its image, first padded pixel, first padded row and first filter
    auto tile = [&](int g, int& img, int& q0, int& hp0, int& n0) {
        const int mt = g / tiles_n;
        n0 = (g - mt * tiles_n) * BN;
        img = mt / tiles_img;
        q0 = (mt - img * tiles_img) * BM;
        hp0 = q0 / Wp;
    };

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    if (tid == 0) {  // full: the producer's arrive (+ bytes); empty: one arrive per consumer warp
        for (int s = 0; s < HSTAGES; ++s) mbar_init(hfull(s), 1), mbar_init(hempty(s), 4 * TILE_WGS);
        for (int s = 0; s < STAGES; ++s) mbar_init(bfull(s), 1), mbar_init(bempty(s), 4 * TILE_WGS);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    // Both roles count halo boxes (`hit`) and filter slices (`bit`) from one tile to the next: slot it % SLOTS,
    // phase (it / SLOTS) & 1.
    if (warp >= 4 * CONSUMERS) {  // ---- the producer: one thread, one halo box a channel chunk, one filter box a slice
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_acquire(map_x);
            tma_acquire(map_w);
            const bool resident = slices == STAGES;  // slot s holds slice s of every tile
            uint32_t hit = 0, bit = 0;
            int held_n0 = -1;
            for (int g = blockIdx.x; g < tiles; g += gridDim.x) {
                int img, q0, hp0, n0;
                tile(g, img, q0, hp0, n0);
                for (int cc = 0; cc < cslices; ++cc, ++hit) {
                    const int hs = hit % HSTAGES;
                    mbar_wait(hempty(hs), ((hit / HSTAGES) & 1) ^ 1);
                    mbar_expect_bytes(hfull(hs), halo_bytes);  // the whole box counts, zero-filled parts too
                    tma_load_4d(halo_addr + hs * halo_slot, map_x, cc * BK, -pad, hp0 - pad, img, hfull(hs));
                    for (int tap = 0; tap < taps; ++tap, ++bit) {
                        const int bs = bit % STAGES;
                        mbar_wait(bempty(bs), ((bit / STAGES) & 1) ^ 1);
                        if (resident && n0 == held_n0) {
                            mbar_arrive(bfull(bs));  // the slot still holds this slice: a phase without bytes
                        } else {
                            mbar_expect_bytes(bfull(bs), B_BYTES);
                            tma_load_2d(b_addr + bs * B_BYTES, map_w, tap * C + cc * BK, n0, bfull(bs));
                        }
                    }
                }
                held_n0 = n0;
            }
        }
    } else {  // ---- the consumers -------------------------------------------------------------------------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warp / 4, w = warp % 4;
        ELEM_OUT* staging = reinterpret_cast<ELEM_OUT*>(halo_ptr + HSTAGES * halo_slot + STAGES * B_BYTES +
                                                        wg * STAGING_BYTES);
        const uint32_t staging_addr = smem_addr(staging);
        const bool whole_chunks = K % 8 == 0;
        // PING's tiles of whole padded rows (BM a multiple of Wp: 4 rows of 58 at 56²) leave as one TMA box of
        // map_y (64 filters × Wp columns × BM / Wp rows, the columns past OW and rows past OH clipped), staged in
        // the tile's own halo slot once its wgmmas are done: one instruction instead of a copy loop whose index
        // arithmetic took longer than the other warpgroup's wgmmas (docs/perf-notes.md)
        const bool rows_out = PING && SWAP && BN == 64 && BM % Wp == 0 && whole_chunks;
        if (rows_out && tid % 128 == 0) tma_acquire(map_y);
        const int wg_off = PING ? 0 : wg * WG_M;  // this warpgroup's first pixel in a tile it works on
        // t: the block's t-th tile (g = blockIdx.x + t·gridDim.x), all of them (PING = 0) or every other one
        for (int t = PING ? wg : 0; blockIdx.x + t * gridDim.x < tiles; t += PING ? 2 : 1) {
            int img, q0, hp0, n0;
            tile(blockIdx.x + t * gridDim.x, img, q0, hp0, n0);
            const int rows = min(BM, PI - q0);  // padded pixels of the tile inside its image
            // This warpgroup's first pixel, as a row of the halo box for tap (0, 0)
            const int row0 = q0 - hp0 * Wp + wg_off;
            // the tile's first halo box and filter slice, counted over the block's tiles as the producer does
            uint32_t hit = t * cslices, bit = t * slices;
            // PING: tile t's wgmmas go after tile t − 1's (the other warpgroup's) are issued
            if (PING && t > 0) named_sync(4 + wg, 256);
            float acc[MI][NW / 2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < NW / 2; ++v) acc[i][v] = 0.f;

            int held_b = -1, held_h = -1;  // the slots the slice in flight reads, released once it is done
            for (int cc = 0; cc < cslices; ++cc, ++hit) {
                const int hs = hit % HSTAGES;
                mbar_wait(hfull(hs), (hit / HSTAGES) & 1);
                const uint32_t halo = halo_addr + hs * halo_slot;
                for (int tap = 0; tap < taps; ++tap, ++bit) {
                    const int bs = bit % STAGES, r = tap / S, s = tap - r * S;
                    mbar_wait(bfull(bs), (bit / STAGES) & 1);
                    const int shift = PROBE & 2 ? 0 : r * Wp + s;  // probe 2: every tap at the unshifted rows
                    const uint32_t a = halo + (row0 + shift) * (BK * 2), b = b_addr + bs * B_BYTES;
                    wgmma_fence();
#pragma unroll
                    for (int kk = 0; kk < BK / 16; ++kk)  // 16 channels = 32 bytes further along the rows
#pragma unroll
                        for (int i = 0; i < MI; ++i) {  // (every block, also one past the image: see above)
                            if constexpr (SWAP)  // filters i·64 .. i·64 + 63 × the warpgroup's WG_M pixels
                                wgmma_ss<ELEM, NW>(acc[i], smem_desc(b + i * 64 * BK * 2 + 32 * kk),
                                                   halo_desc(a + 32 * kk), 1);
                            else       // pixels i·64 .. i·64 + 63 × the BN filters
                                wgmma_ss<ELEM, NW>(acc[i], halo_desc(a + i * 64 * BK * 2 + 32 * kk),
                                                   smem_desc(b + 32 * kk), 1);
                        }
                    wgmma_commit();
                    wgmma_wait<1>();  // the slice before's wgmmas are done: its slots may be refilled
                    if (lane == 0) {
                        if (held_b >= 0) mbar_arrive(bempty(held_b));
                        if (held_h >= 0) mbar_arrive(hempty(held_h));
                    }
                    held_b = bs, held_h = tap == taps - 1 ? hs : -1;
                }
                if (HSTAGES == 1 && cc + 1 < cslices) {
                    // One halo slot: the next chunk's box can only land in it once this chunk's wgmmas are done,
                    // and the release above waits for the next slice, which waits for that box: release it now.
                    // (Left out, C = 136 on a 1×1 filter hung the GPU: docs/perf-notes.md.)
                    wgmma_wait<0>();
                    if (lane == 0) {
                        mbar_arrive(bempty(held_b));
                        mbar_arrive(hempty(held_h));
                    }
                    held_b = held_h = -1;
                }
            }
            if (PING && blockIdx.x + (t + 1) * gridDim.x < tiles) named_arrive(5 - wg, 256);  // the other's turn
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int v = 0; v < NW / 2; ++v) asm volatile("" : "+f"(acc[i][v])::"memory");  // after the wait
            if (lane == 0 && held_b >= 0) {
                mbar_arrive(bempty(held_b));
                if (!rows_out) mbar_arrive(hempty(held_h));
            }
            if constexpr (PROBE & 1) {  // tools/gpu/tc_conv_probe.py: the tile without its epilogue; one value
                if (acc[0][0] == 1.2345f && N < 0) y[0] = acc[0][0];  // kept, so ptxas keeps every wgmma
                if (rows_out && lane == 0) mbar_arrive(hempty(held_h));  // (else the next box never comes)
                continue;
            }

            if (rows_out) {  // (held_h is this tile's last halo slot: its wgmmas are done, its release waits)
                const uint32_t out = halo_addr + (t * cslices + cslices - 1) % HSTAGES * halo_slot;
                // pixel p's 8 filters 16w + 8h .. as chunk (2w + h) ^ (p % 8) of its 128-byte row: the box's 128B
                // swizzle (the slot is 1024-aligned)
                stage_pixel_rows<NW>(acc[0], out, 128, 2 * w, 0, NW / 8, staging);
                fence_proxy_async();  // the staged rows, visible to the copy engine
                named_sync(2 + wg, 128);
                if (tid % 128 == 0) {
                    tma_store_4d(map_y, out, n0, 0, hp0, img);
                    bulk_commit();
                    bulk_wait<true>();  // the box has been read out of the slot: the producer may refill it
                    mbar_arrive_n(hempty(held_h), 4);
                }
                continue;
            }

            // ---- epilogue (14's): each block of 64 pixels rounded into the staging area (64 pixel rows × BN
            // filters, 16-byte chunks XOR-swizzled by row % 8), then written as whole 16-byte chunks of output rows;
            // padded columns and pixels past the image are skipped.
#pragma unroll
            for (int pb = 0; pb < (WG_M + 63) / 64; ++pb) {
                constexpr int CH = BN / 8, RSTEP = 128 / CH;  // 16-byte chunks a row; rows a pass of 128 threads
                const int nrows = min(64, WG_M - pb * 64);       // 40 in the last block of a 232-pixel warpgroup
                if (wg_off + pb * 64 >= rows) continue;  // no pixel of this image (uniform in the warpgroup)
                named_sync(2 + wg, 128);  // the warpgroup's last copy-out has read the staging area
                if constexpr (PROBE & 8) {
                } else if constexpr (SWAP) {
                    // filter block i: filters i·64 + 16·w + lane/4 (+8) at chunk 8i + 2w (+1) of the pixel rows
#pragma unroll
                    for (int i = 0; i < MI; ++i)
                        stage_pixel_rows<NW>(acc[i], staging_addr, BN * 2, 8 * i + 2 * w, 8 * pb,
                                             min(8 * pb + 8, NW / 8), staging);
                } else {
#pragma unroll
                    for (int v = 0; v < BN / 2; v += 2) {
                        // Accumulators v, v + 1: row 16·w + lane/4 (+8 where v % 4 = 2), columns 8·(v/4) +
                        // 2·(lane%4) + {0, 1}: stored at chunk (v/4) ^ (row % 8) of the row
                        const int row = w * 16 + lane / 4 + 8 * ((v / 2) % 2), chunk = (v / 4) ^ (row % 8);
                        ELEM_OUT* c = staging + row * BN + chunk * 8 + 2 * (lane % 4);
                        *reinterpret_cast<uint32_t*>(c) = pack2(acc[pb][v], acc[pb][v + 1], c);
                    }
                }
                named_sync(2 + wg, 128);
                // Each thread copies one chunk column (filters k .. k + 7) of every RSTEP-th row: its first row's
                // (oh, ow) by one division, the next ones by stepping (a division per row cost more than the
                // stores)
                const int chunk = tid % CH, k = n0 + chunk * 8, qb = q0 + wg_off + pb * 64;
                if (k >= K || (PROBE & 4)) continue;
                int row = (tid % 128) / CH, oh = (qb + row) / Wp, ow = qb + row - oh * Wp;
                for (; row < nrows; row += RSTEP, ow += RSTEP) {
                    while (ow >= Wp) ow -= Wp, ++oh;
                    if (oh >= OH) break;  // past the image's last padded pixel
                    if (ow >= OW) continue;
                    const ELEM_OUT* src = staging + row * BN + (chunk ^ (row % 8)) * 8;
                    ELEM_OUT* dst = y + ((size_t)(img * OH + oh) * OW + ow) * K + k;
                    if (whole_chunks && k + 8 <= K) {
                        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
                    } else {
                        for (int j = 0; j < 8 && k + j < K; ++j) dst[j] = src[j];
                    }
                }
            }
        }
        if (rows_out && tid % 128 == 0) bulk_wait<false>();  // the last boxes written before the block ends
    }
}
