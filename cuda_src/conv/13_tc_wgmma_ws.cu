// Tensor-core implicit-GEMM convolution, warp-specialised (sm_90a): fp16 or bf16 NHWC, fp32 accumulate.
//
// 12_tc_wgmma.cu's threads both copy and multiply, and meet at a block-wide barrier every slice: a stage is refilled
// only two slices after it was read, and every warp waits for the slowest copy. Here the roles are split:
//  * warpgroup 0 (0 and 1 with PRODUCERS = 2), the producer, runs the im2col loader (implicit_tiles.cuh) alone, as far ahead as the ring
//    allows: it waits until consumers have released a stage ("empty" mbarrier), copies a slice into it with
//    cp.async, and has the hardware count its arrival on the stage's "full" mbarrier once its copies land
//    (cp.async.mbarrier.arrive.noinc);
//  * warpgroups 1 and 2, the consumers, each own BM/2 pixels × BN filters: they wait for a full stage, issue the
//    slice's wgmmas (both operands from 128B-swizzled shared memory), keep one slice's wgmmas in flight, and
//    release the stage before it as soon as those have finished reading it. No block-wide barrier in the loop.
// The producer gives registers back (setmaxnreg) to the consumers, whose accumulators are the block's output tile.
// PRODUCERS = 2 splits the copies over two warpgroups (the copies set the pace: docs/perf-notes.md).
// Not persistent: one output tile per block.
//
// PROBE (tools/gpu/tc_conv_probe.py; results wrong by design except 0): 0 the whole kernel, 1 copies only (the
// consumers wait and release but issue no wgmma), 2 products only (the producer arrives without copying), 3 no
// proxy fence before the wgmmas. Which of them sets the pace says where the next step must go.
//
// Tiles (-DNAME=value): BM pixels (128 or 256: 64 or 128 per consumer), BN filters (64, 128 or 256; BM/2 · BN ≤
// 128 · 128 accumulators a thread can hold), STAGES slices of 64 channels in the ring. Launch: grid
// cdiv(N·OH·OW, BM) · cdiv(K, BN), filter tiles fastest; 128 · PRODUCERS + 256 threads; max(ring, staged output) + 1024 + 16·STAGES
// bytes of dynamic shared memory.

#include "../include/hopper.cuh"       // wgmma_ss (m64nNk16), wgmma_fence/commit/wait, fence_proxy_async, smem_desc, mbarriers, named_sync
#include "implicit_tiles.cuh"

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
#ifndef PROBE
#define PROBE 0
#endif
#ifndef PRODUCERS
#define PRODUCERS 1
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 104
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 200
#endif

constexpr int BK = 64;                       // one 128-byte swizzle row of 16-bit channels
constexpr int P_THREADS = 128 * PRODUCERS;  // the producer warpgroups ...
constexpr int THREADS = P_THREADS + 256;    // ... then two consumers
constexpr int WG_M = BM / 2, MI = WG_M / 64;  // a consumer's pixels, and its m64 wgmmas per k step
constexpr int A_BYTES = BM * BK * 2, STAGE_BYTES = (BM + BN) * BK * 2;
constexpr int RING_BYTES = STAGES * STAGE_BYTES > BM * (BN + 8) * 2 ? STAGES * STAGE_BYTES : BM * (BN + 8) * 2;
constexpr int CLD = BN + 8;

static_assert(BM == 128 || BM == 256, "BM: 64 or 128 pixels per consumer warpgroup");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: one wgmma's N, 64, 128 or 256");
static_assert(MI * BN <= 256, "a consumer thread holds MI · BN / 2 ≤ 128 accumulators");
static_assert(STAGES >= 2, "a ring of at least two slices");
static_assert(PRODUCERS * PRODUCER_REGS + 2 * CONSUMER_REGS <= 512 && PRODUCER_REGS % 8 == 0 &&
              CONSUMER_REGS % 8 == 0, "setmaxnreg: multiples of 8 that fit 64K registers, 128 threads a warpgroup");
static_assert(PRODUCERS == 1 || PRODUCERS == 2, "one or two producer warpgroups");

using Loader = ImplicitLoader<ELEM, BM, BN, BK, P_THREADS>;

extern "C" __global__ void __launch_bounds__(THREADS, 1)
conv_tc_wgmma_ws(const ELEM* __restrict__ x, const ELEM* __restrict__ w, ELEM_OUT* __restrict__ y, int N, int C,
                 int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* ring = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);  // 128B swizzle: 1024-aligned
    const uint32_t ring_addr = smem_addr(ring), full = ring_addr + RING_BYTES, empty = full + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    const int M = N * OH * OW;
    const int tiles_n = (K + BN - 1) / BN;
    const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const int slices = implicit_slices(C, R, S, BK);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, P_THREADS);  // every producer thread's copies
            mbar_init(empty + 8 * s, 256);        // every consumer thread done reading
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg <= PRODUCERS - 1) {  // ---- the producer --------------------------------------------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        Loader loader(x, w, N, C, H, W, K, R, S, stride, pad, OH, OW, m0, n0, tid);
        for (int t = 0; t < slices; ++t) {
            const int s = t % STAGES;
            if (t >= STAGES) mbar_wait(empty + 8 * s, (t / STAGES - 1) & 1);  // slice t − STAGES released
            ELEM* As = reinterpret_cast<ELEM*>(ring + s * STAGE_BYTES);
            if (PROBE == 2) {
                mbar_arrive(full + 8 * s);
                continue;
            }
            loader.load(As, As + BM * BK);
            cp_async_arrive(full + 8 * s);
        }
        cp_async_wait<0>();
        return;
    }

    // ---- the consumers ---------------------------------------------------------------------------------------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg - PRODUCERS, ctid = tid - P_THREADS, lane = tid % 32, warp = (tid % 128) / 32;
    float acc[MI][BN / 2];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v = 0; v < BN / 2; ++v) acc[i][v] = 0.f;

    for (int t = 0; t < slices; ++t) {
        const int s = t % STAGES;
        mbar_wait(full + 8 * s, (t / STAGES) & 1);
        if (PROBE != 3) fence_proxy_async();  // the producer's copies, visible to this thread, made so to wgmma
        const uint32_t a = ring_addr + s * STAGE_BYTES + cw * WG_M * BK * 2, b = ring_addr + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();
        if (PROBE != 1) {
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
                for (int i = 0; i < MI; ++i)
                    wgmma_ss<ELEM, BN>(acc[i], smem_desc(a + i * 64 * BK * 2 + 32 * kk), smem_desc(b + 32 * kk), 1);
        }
        wgmma_commit();
        wgmma_wait<1>();                                        // slice t − 1's wgmmas are done ...
        if (t > 0) mbar_arrive(empty + 8 * ((t - 1) % STAGES));  // ... so its stage may be refilled
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v = 0; v < BN / 2; ++v) asm volatile("" : "+f"(acc[i][v])::"memory");  // read only after the wait

    // ---- epilogue: round, stage the BM×BN tile in the ring, write whole 16-byte chunks of output rows -----------
    named_sync(1, 256);  // both consumers are done with the ring (and so is the producer: every slice was consumed)
    ELEM_OUT* Cs = reinterpret_cast<ELEM_OUT*>(ring);
    const int col = 2 * (lane % 4);
#pragma unroll
    for (int i = 0; i < MI; ++i) {
        const int row = cw * WG_M + i * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int v = 0; v < BN / 2; v += 4) {
            ELEM_OUT* c = Cs + row * CLD + 8 * (v / 4) + col;
            *reinterpret_cast<uint32_t*>(c) = pack2(acc[i][v], acc[i][v + 1], c);
            *reinterpret_cast<uint32_t*>(c + 8 * CLD) = pack2(acc[i][v + 2], acc[i][v + 3], c);
        }
    }
    named_sync(1, 256);
    store_staged_tile<ELEM_OUT, BM, BN, CLD, 256>(Cs, y, m0, n0, M, K, ctid);
}
