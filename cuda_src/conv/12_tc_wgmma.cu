// Tensor-core implicit-GEMM convolution on Hopper's warpgroup MMA (sm_90a): fp16 or bf16 NHWC, fp32 accumulate.
//
// The GEMM and the loader are 11_tc_implicit.cu's (implicit_tiles.cuh: rows are output pixels, columns filters,
// the reduction walked tap by tap in 64-channel slices, im2col done by each thread's pixel offsets and tap masks,
// copied by cp.async). What changes is the consumer:
//  * the slices land in 128-byte rows swizzled exactly as wgmma's 128B-swizzle K-major layout expects (chunk j of
//    row r at j ^ (r % 8), each 8-row group 1024-byte aligned), so the tensor cores read both operands straight
//    from shared memory through descriptors: no ldmatrix, no fragments in registers, no shared-memory traffic
//    issued by the warps;
//  * each warpgroup (128 threads) owns 64 pixels × BN filters and issues four m64nBNk16 wgmmas per slice, which
//    run asynchronously: while they run, the same threads issue the copies of a later slice. wgmma_wait<1> lets
//    one slice's wgmmas run on past the next barrier, so a stage is refilled two slices after it was read
//    (hence STAGES ≥ 3, with STAGES − 2 slices in flight).
// Why not TMA: the A operand is an im2col gather. TMA's im2col mode needs a tensor map encoded in im2col form
// (cuTensorMapEncodeIm2col), which gpubench's tensor maps (backends/cuda/tma.py) do not make; tiled boxes per tap
// would need whole output rows per tile (W = 56, 28, 14, 7 do not divide 64-pixel tiles). That is the next step.
//
// Tiles (-DNAME=value): BM pixels per block (64 per warpgroup), BN filters (64, 128 or 256: one wgmma's N),
// STAGES-deep ring of 64-channel slices. Launch: grid cdiv(N·OH·OW, BM) · cdiv(K, BN), filter tiles fastest;
// 2·BM threads; max(ring, staged output) + 1024 bytes of dynamic shared memory (the ring is aligned up to 1024).

#include "../include/hopper.cuh"       // wgmma_ss (m64nNk16), wgmma_fence/commit/wait, fence_proxy_async, smem_desc (K-major, 128B swizzle)
#include "implicit_tiles.cuh"

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT __half
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int BK = 64;                      // one 128-byte swizzle row of 16-bit channels
constexpr int THREADS = 2 * BM;             // a warpgroup per 64 pixels
constexpr int A_BYTES = BM * BK * 2, STAGE_BYTES = (BM + BN) * BK * 2;
constexpr int CLD = BN + 8;                 // the staged output's row stride (conflict-free pair stores)

static_assert(BM == 64 || BM == 128 || BM == 256, "BM: 64 pixels per warpgroup, 1, 2 or 4 warpgroups");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: one wgmma's N, 64, 128 or 256");
static_assert(STAGES >= 3, "a stage is refilled two slices after it was read");

using Loader = ImplicitLoader<ELEM, BM, BN, BK, THREADS>;

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
conv_tc_wgmma(const ELEM* __restrict__ x, const ELEM* __restrict__ w, ELEM_OUT* __restrict__ y, int N, int C, int H,
              int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* ring = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);  // 128B swizzle: 1024-aligned
    const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, warp = (tid % 128) / 32;
    const int M = N * OH * OW;
    const int tiles_n = (K + BN - 1) / BN;
    const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;

    Loader loader(x, w, N, C, H, W, K, R, S, stride, pad, OH, OW, m0, n0, tid);
    auto load = [&](int stage) {
        ELEM* As = reinterpret_cast<ELEM*>(ring + stage * STAGE_BYTES);
        loader.load(As, As + BM * BK);
    };

    float acc[BN / 2];
#pragma unroll
    for (int v = 0; v < BN / 2; ++v) acc[v] = 0.f;

    const int slices = implicit_slices(C, R, S, BK);
#pragma unroll
    for (int st = 0; st < STAGES - 2; ++st) {
        if (st < slices) load(st);
        cp_async_commit();  // empty groups past the end keep the wait count exact
    }
    const uint32_t ring_addr = smem_addr(ring);
    for (int t = 0; t < slices; ++t) {
        cp_async_wait<STAGES - 3>();  // this thread's copies of slice t have landed ...
        fence_proxy_async();          // ... are made visible to the tensor cores' (async) reads ...
        __syncthreads();              // ... and so are everyone's; every warpgroup is done with slice t − 2
        if (t + STAGES - 2 < slices) load((t + STAGES - 2) % STAGES);
        cp_async_commit();

        const uint32_t a = ring_addr + (t % STAGES) * STAGE_BYTES + wg * 64 * BK * 2, b = ring_addr + (t % STAGES) *
                           STAGE_BYTES + A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)  // 16 channels = 32 bytes further along the swizzled rows
            wgmma_ss<ELEM, BN>(acc, smem_desc(a + 32 * kk), smem_desc(b + 32 * kk), 1);
        wgmma_commit();
        wgmma_wait<1>();  // slice t − 1's wgmmas are done (slice t's run on)
    }
    wgmma_wait<0>();
#pragma unroll
    for (int v = 0; v < BN / 2; ++v) asm volatile("" : "+f"(acc[v])::"memory");  // read only after the wait

    // ---- epilogue: round, stage the BM×BN tile in shared memory, write whole 16-byte chunks of output rows ------
    cp_async_wait<0>();
    __syncthreads();  // every warpgroup is done with the ring
    ELEM_OUT* Cs = reinterpret_cast<ELEM_OUT*>(ring);
    const int row = wg * 64 + warp * 16 + lane / 4, col = 2 * (lane % 4);
#pragma unroll
    for (int v = 0; v < BN / 2; v += 4) {
        ELEM_OUT* c = Cs + row * CLD + 8 * (v / 4) + col;
        *reinterpret_cast<uint32_t*>(c) = pack2(acc[v], acc[v + 1], c);
        *reinterpret_cast<uint32_t*>(c + 8 * CLD) = pack2(acc[v + 2], acc[v + 3], c);
    }
    __syncthreads();
    store_staged_tile<ELEM_OUT, BM, BN, CLD, THREADS>(Cs, y, m0, n0, M, K, tid);
}
