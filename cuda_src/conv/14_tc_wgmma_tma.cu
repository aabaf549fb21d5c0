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
//    zeros): A is zero there (channels past C), so those products add exactly 0.
//  * Both land 128B-swizzled, as wgmma's K-major descriptors read them: no proxy fence, the copy engine and the
//    tensor cores are both the async proxy.
//  * CLUSTER = 2: two blocks with neighbouring pixel tiles and the same filter tile form a cluster; each loads
//    half of the filter box and multicasts it into both, so the pair reads BM·2 + BN rows a slice from L2 instead
//    of (BM + BN)·2. A slot is refilled only when the consumers of both blocks have released it (the "empty"
//    barrier counts the cluster's consumer warps).
// The rest is 13's: warpgroups 0 and 1 consume (BM/2 pixels × BN filters each, m64nBNk16 wgmmas straight from
// shared memory, one slice's wgmmas in flight), warpgroup 2 produces (setmaxnreg hands its registers over), an
// mbarrier ring of STAGES slots, the output staged in the ring and stored as whole 16-byte chunks of rows.
// Not persistent: one output tile per block.
//
// Tiles (-DNAME=value): BM pixels (128 or 256), BN filters (64, 128 or 256; BM·BN ≤ 32768: a consumer thread holds
// BM/2·BN/128 accumulators), STAGES, CLUSTER (1 or 2). Maps: map_x, im2col boxes of BM pixels × 64 channels;
// map_w, K × R·S·C in boxes of BN/CLUSTER × 64. Launch: grid cdiv(cdiv(N·OH·OW, BM), CLUSTER)·CLUSTER·cdiv(K, BN),
// filter tiles fastest (a cluster's CLUSTER blocks share one); 384 threads; max(ring, staged output) + 1024 +
// 16·STAGES bytes of dynamic shared memory.

#include "../include/hopper.cuh"  // wgmma_ss, smem_desc, mbarriers, ring_init, tma_load_2d, tma_load_im2col_4d
#include "implicit_tiles.cuh"     // store_staged_tile

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

constexpr int BK = 64;                        // one 128-byte swizzle row of 16-bit channels
constexpr int THREADS = 384;                  // two consumer warpgroups, then the producer
constexpr int WG_M = BM / 2, MI = WG_M / 64;  // a consumer's pixels, and its m64 wgmmas per k step
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int B_ROWS = BN / CLUSTER;          // the filter rows one block's TMA loads (for the whole cluster)
constexpr int CLD = BN + 8;                   // the staged output's row stride (conflict-free pair stores)
constexpr int RING_BYTES = STAGES * STAGE_BYTES > BM * CLD * 2 ? STAGES * STAGE_BYTES : BM * CLD * 2;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // 128·40 + 256·232 ≤ 64K

static_assert(BM == 128 || BM == 256, "BM: 64 or 128 pixels per consumer warpgroup");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: one wgmma's N, 64, 128 or 256");
static_assert(MI * BN <= 256, "a consumer thread holds MI · BN / 2 ≤ 128 accumulators");
static_assert(STAGES >= 2, "a ring of at least two slices");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1 or 2 blocks sharing the filter tile");
static_assert(B_ROWS % 8 == 0, "each block's share of the filter box is whole 8-row swizzle atoms");

#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
conv_tc_wgmma_tma(const TensorMap* __restrict__ map_x, const TensorMap* __restrict__ map_w,
                  ELEM_OUT* __restrict__ y, int N, int C, int H, int W, int K, int R, int S, int stride, int pad,
                  int OH, int OW)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* ring = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);  // 128B swizzle: 1024-aligned
    const uint32_t ring_addr = smem_addr(ring), bars = ring_addr + RING_BYTES;
    auto full = [&](int s) { return bars + 8 * s; };              // "slot s holds its slice"
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };  // "every consumer warp of the cluster is done"
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int P = OH * OW, M = N * P;
    // Blocks in cluster-sized groups; a group takes one filter tile (filter tiles fastest, as in 12 and 13) and
    // CLUSTER neighbouring pixel tiles, one per block.
    const int tiles_n = (K + BN - 1) / BN, group = blockIdx.x / CLUSTER;
    const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;
    const int m0 = ((group / tiles_n) * CLUSTER + rank) * BM, n0 = (group % tiles_n) * BN;
    const int cslices = (C + BK - 1) / BK, slices = R * S * cslices;

    ring_init<STAGES, CLUSTER>(bars, 8 * CLUSTER);  // full: the local producer's arrive (+ bytes); empty: warps

    if (warp >= 8) {  // ---- the producer: one thread issues two TMA copies a slice -------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (warp == 8 && lane == 0) {
            tma_acquire(map_x);
            tma_acquire(map_w);
            // The input pixel under the tile's first output pixel (tap (0, 0)); the map walks on from there. A
            // tile wholly past M (the second of a cluster at the end) loads no pixels, only its share of filters.
            const int img = m0 / P, p = m0 % P;
            const int w0 = (p % OW) * stride - pad, h0 = (p / OW) * stride - pad;
            const bool pixels = m0 < M;
            const uint16_t mask = CLUSTER > 1 ? (1u << CLUSTER) - 1 : 0;
            for (int t = 0; t < slices; ++t) {
                const int s = t % STAGES, tap = t / cslices, c0 = (t - tap * cslices) * BK, r = tap / S;
                mbar_wait(empty(s), ((t / STAGES) & 1) ^ 1);  // slice t − STAGES released (a fresh barrier passes)
                mbar_expect_bytes(full(s), (pixels ? A_BYTES : 0) + B_BYTES);  // all of B, half from the peer
                const uint32_t a = ring_addr + s * STAGE_BYTES;
                if (pixels) tma_load_im2col_4d(a, map_x, c0, w0, h0, img, tap - r * S, r, full(s));
                tma_load_2d(a + A_BYTES + rank * B_ROWS * BK * 2, map_w, tap * C + c0, n0 + rank * B_ROWS, full(s),
                            mask);
            }
        }
    } else {  // ---- the consumers -------------------------------------------------------------------------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int wg = warp / 4, w = warp % 4;
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
        float acc[MI][BN / 2];
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int v = 0; v < BN / 2; ++v) acc[i][v] = 0.f;

        for (int t = 0; t < slices; ++t) {
            const int s = t % STAGES;
            mbar_wait(full(s), (t / STAGES) & 1);
            const uint32_t a = ring_addr + s * STAGE_BYTES + wg * WG_M * BK * 2, b = ring_addr + s * STAGE_BYTES +
                               A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)  // 16 channels = 32 bytes further along the swizzled rows
#pragma unroll
                for (int i = 0; i < MI; ++i)
                    wgmma_ss<ELEM, BN>(acc[i], smem_desc(a + i * 64 * BK * 2 + 32 * kk), smem_desc(b + 32 * kk), 1);
            wgmma_commit();
            wgmma_wait<1>();                  // slice t − 1's wgmmas are done ...
            if (t > 0) release((t - 1) % STAGES);  // ... so its slot may be refilled
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int v = 0; v < BN / 2; ++v) asm volatile("" : "+f"(acc[i][v])::"memory");  // read after the wait

        // ---- epilogue: round, stage the BM×BN tile in the ring, write whole 16-byte chunks of output rows -------
        // Every slice has been consumed here, so no copy (ours or the peer's multicast) still writes the ring.
        named_sync(1, 256);
        ELEM_OUT* Cs = reinterpret_cast<ELEM_OUT*>(ring);
        const int col = 2 * (lane % 4);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            const int row = wg * WG_M + i * 64 + w * 16 + lane / 4;
#pragma unroll
            for (int v = 0; v < BN / 2; v += 4) {
                ELEM_OUT* c = Cs + row * CLD + 8 * (v / 4) + col;
                *reinterpret_cast<uint32_t*>(c) = pack2(acc[i][v], acc[i][v + 1], c);
                *reinterpret_cast<uint32_t*>(c + 8 * CLD) = pack2(acc[i][v + 2], acc[i][v + 3], c);
            }
        }
        named_sync(1, 256);
        store_staged_tile<ELEM_OUT, BM, BN, CLD, 256>(Cs, y, m0, n0, M, K, tid);
    }
    // No block may leave while its peer can still multicast into its shared memory or arrive on its barriers.
    if (CLUSTER > 1) cluster_sync();
}
