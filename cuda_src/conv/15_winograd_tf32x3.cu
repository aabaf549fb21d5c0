// Winograd F(4×4, 3×3), stride 1, in four kernels as conv/10_winograd_gemm.cu, with the E = 36 products over
// channels on the tensor cores at FP32's accuracy: each operand x is split into two TF32 numbers, big = x rounded
// to TF32 (10 mantissa bits) and small = x − big, and a·b is taken as
//   a_small·b_big + a_big·b_small + a_big·b_big
// (three mma.sync m16n8k8 TF32 instructions, fp32 accumulate; the dropped a_small·b_small is below 2⁻²² of a·b).
// Plain TF32 would leave ~2⁻¹¹ of each product; the three parts leave what FP32's own rounding does, so the
// output's rel_err stays that of the FFMA products (tests/test_gpu.py holds it to theirs).
//
// Why: on the ResNet layers the FFMA products are 70% of the call at 7² (0.106 of 0.150 ms, 22.6 TFLOP/s, a third
// of FFMA peak) and 60% at 28², and they sit below cuDNN's best FP32 plan there. The H100's TF32 tensor cores
// (mma.sync) do several times the FFMA pipe's work per cycle, so three of them per product still leave the
// products shorter than the transforms around them (docs/perf-notes.md has the prediction and the outcome).
//
// The transforms and the output are winograd_steps.cuh's, unchanged: U[e][k][c] (K × Cp, channels contiguous) is
// the row-major A operand, V[e][c][p] (Cp × Pp, tiles contiguous) the B operand, as the mma's "row.col" wants
// them after a plain copy, so the cp.async ring copies 16-byte rows with no transposes.
//
// Shared memory: A as [BM][BK + 4] and B as [BK][BN + 8]. A fragment read (lanes g = lane / 4 on rows, t = lane
// % 4 on k) then touches banks (g·(BK + 4) + t) mod 32, all 32 distinct for BK = 16 or 32, and a B read (t on k,
// g on columns) banks (t·(BN + 8) + g) mod 32 = 8t + g: conflict-free without swizzling.
//
// Compile-time parameters: BM×BN×BK block tile, WM×WN warp tile (WM/16 × WN/8 mma tiles per warp), STAGES ring
// slots, SPLIT partial sums over the channels (winograd_steps.cuh), MIN_BLOCKS for __launch_bounds__. PARTS = 1
// keeps only a_big·b_big (plain TF32): no configuration uses it; tests/test_gpu.py builds it to show that the
// error test tells the two apart.

#include <cstdint>

#include "../include/async_tile.cuh"  // copy_window and the cp.async helpers

#ifndef TILE
#define TILE 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef PARTS
#define PARTS 3
#endif
static_assert(PARTS == 1 || PARTS == 3, "three TF32 products per product, or one (plain TF32)");
#ifndef BM
#define BM 128
#define BN 64
#define BK 16
#define WM 64
#define WN 32
#define STAGES 4
#endif
#include "winograd_steps.cuh"  // ALPHA, E, the transform kernels, SPLIT

constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MF = WM / 16, NF = WN / 8;  // mma tiles per warp along the filters and along the output tiles
constexpr int A_LD = BK + 4, B_LD = BN + 8;
constexpr int A_FLOATS = BM * A_LD, SLOT_FLOATS = A_FLOATS + BK * B_LD;
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0, "warp tiles of whole mma tiles");
static_assert((BK == 16 || BK == 32) && STAGES >= 2, "BK of 16 or 32 (the conflict-free padding), 2+ slots");

// x = big + small: big is x rounded to TF32's 10 mantissa bits (half an ulp up in magnitude, then the 13 low bits
// cleared: two integer operations), small = x − big exactly (|small| ≤ 2⁻¹¹|x|), handed to the tensor cores as it
// is: they read its top 19 bits, so it loses at most 2⁻²¹|x|. The first version rounded both with cvt.rna.tf32.f32,
// which compiles to a compare, a select and integer work per value: ncu had the integer pipe 48% busy at 7², and
// this split made the products 4-14% faster with rel_err 3-6% higher (docs/perf-notes.md). Inputs are finite here;
// an infinite one would give small = NaN, a NaN stays NaN.
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small)
{
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = __float_as_uint(x - __uint_as_float(big));
}

// d += a · b, m16n8k8, TF32 inputs, fp32 accumulate.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- M[e] = U[e] · V[e]: grid.x the BM×BN tiles of one product, grid.y the element e (and partial sum) ------

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
winograd_products_tc(const float* __restrict__ U, const float* __restrict__ V, float* __restrict__ Mw, int N,
                     int C, int K, int OH, int OW)
{
    extern __shared__ __align__(16) float smem[];
    const int P = N * ((OH + TILE - 1) / TILE) * ((OW + TILE - 1) / TILE), Cp = pad4(C), Pp = pad4(P);
    const int e = blockIdx.y % E, split = blockIdx.y / E;
    const ChannelSlice cs = channel_slice(Cp, split, BK);
    const float* A = U + (size_t)e * K * Cp + cs.begin;     // K × (its channels), rows Cp apart
    const float* B = V + ((size_t)e * Cp + cs.begin) * Pp;  // (its channels) × Pp
    float* Out = Mw + ((size_t)split * E + e) * K * Pp;     // K × Pp, in this partial sum's copy of M
    const int tiles_n = (Pp + BN - 1) / BN;
    const int row0 = blockIdx.x / tiles_n * BM, col0 = blockIdx.x % tiles_n * BN;
    const int depth = cs.end - cs.begin, slices = (depth + BK - 1) / BK;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    float acc[MF][NF][4] = {};

    auto copy = [&](int slice) {  // zeros past the channel slice's end, the last filters and the last tiles
        float* As = smem + (slice % STAGES) * SLOT_FLOATS;
        const int k0 = slice * BK;
        copy_window<BM, BK, THREADS>(As, A_LD, A + (size_t)row0 * Cp + k0, Cp, K - row0, depth - k0, true);
        copy_window<BK, BN, THREADS>(As + A_FLOATS, B_LD, B + (size_t)k0 * Pp + col0, Pp, depth - k0, Pp - col0,
                                     true);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // one commit group per slot, empty ones keep the count
        if (s < slices) copy(s);
        cp_async_commit();
    }
    for (int it = 0; it < slices; ++it) {
        cp_async_wait<STAGES - 2>();  // slice `it` has landed for this thread ...
        __syncthreads();              // ... and for all; the slot refilled next is no longer being read
        if (it + STAGES - 1 < slices) copy(it + STAGES - 1);
        cp_async_commit();
        const float* As = smem + (it % STAGES) * SLOT_FLOATS + (wm + g) * A_LD + t;
        const float* Bs = smem + (it % STAGES) * SLOT_FLOATS + A_FLOATS + t * B_LD + wn + g;
#pragma unroll
        for (int k = 0; k < BK; k += 8) {
            uint32_t a_big[MF][4], a_small[MF][4], b_big[NF][2], b_small[NF][2];
#pragma unroll
            for (int i = 0; i < MF; ++i) {  // rows g and g + 8, k = t and t + 4
                const float* a = As + i * 16 * A_LD + k;
                split_tf32(a[0], a_big[i][0], a_small[i][0]);
                split_tf32(a[8 * A_LD], a_big[i][1], a_small[i][1]);
                split_tf32(a[4], a_big[i][2], a_small[i][2]);
                split_tf32(a[8 * A_LD + 4], a_big[i][3], a_small[i][3]);
            }
#pragma unroll
            for (int j = 0; j < NF; ++j) {  // column g, k = t and t + 4
                const float* b = Bs + k * B_LD + j * 8;
                split_tf32(b[0], b_big[j][0], b_small[j][0]);
                split_tf32(b[4 * B_LD], b_big[j][1], b_small[j][1]);
            }
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < NF; ++j) {  // the small cross terms first, while the sum is still small
                    if (PARTS == 3) {
                        mma_tf32(acc[i][j], a_small[i], b_big[j]);
                        mma_tf32(acc[i][j], a_big[i], b_small[j]);
                    }
                    mma_tf32(acc[i][j], a_big[i], b_big[j]);
                }
        }
    }
    cp_async_wait<0>();

    // The accumulators: row g (and g + 8) of each mma tile, columns 2t and 2t + 1. Pp is a multiple of 4 and the
    // column even, so a pair is either inside or past the row's end, and 8-byte aligned.
#pragma unroll
    for (int i = 0; i < MF; ++i)
#pragma unroll
        for (int j = 0; j < NF; ++j) {
            const int r = row0 + wm + i * 16 + g, c = col0 + wn + j * 8 + 2 * t;
            if (c >= Pp) continue;
            if (r < K) *reinterpret_cast<float2*>(Out + (size_t)r * Pp + c) = make_float2(acc[i][j][0], acc[i][j][1]);
            if (r + 8 < K)
                *reinterpret_cast<float2*>(Out + (size_t)(r + 8) * Pp + c) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
