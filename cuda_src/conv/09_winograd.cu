// Winograd convolution F(TILE×TILE, 3×3), stride 1, for layers with many channels (Lavin and Gray, 2016).
//
// An output tile of TILE×TILE pixels needs an ALPHA×ALPHA input patch d (ALPHA = TILE + 2). With
//     U = G g Gᵀ (filter g),   V = Bᵀ d B (input),   Y = Aᵀ (U ⊙ V) A (output),
// a tile and channel pair costs ALPHA² multiplications instead of 9·TILE²: 16 instead of 36 for F(2×2), 36
// instead of 144 for F(4×4). Summed over channels, each of the E = ALPHA² transform elements is a GEMM of its
// own:  Mₑ[k][p] = Σ_c Uₑ[c][k] · Vₑ[c][p]  (k: filters, p: tiles). The price is rounding: the transforms'
// coefficients (up to 8, and 1/24 in G, for F(4×4)) add error that direct methods do not have, which is why
// every run stores its rel_err next to theirs.
//
// Two kernels per call (the variant's spec launches both, and times the first on its own too):
//  * winograd_filter: U for every (c, k), stored Uₑ[c][k] with C and K zero-padded to multiples of BC and BK,
//    so the main loop's copies need no bounds checks. Filters change between calls in training, so this is
//    part of the timed call, as it is in cuDNN's.
//  * winograd_conv: a block owns BK filters × BP tiles for all E elements, fused end to end. For each slice
//    of BC channels, U's slice arrives by cp.async while the input patches are loaded into registers and
//    transformed into shared memory; the E products accumulate in registers (8 filters × 16 tiles per thread);
//    the output transform runs from shared memory at the end. Only U and the output touch device memory
//    besides the input, read once per BK filters.
//
// Compile-time parameters: TILE (2 or 4), BK filters and BP tiles per block, BC channels per slice, TP tiles per
// thread. The block has E·(BK/8)·(BP/TP) threads; keep it a multiple of 128 where registers are many: each of the
// SM's four schedulers has a quarter of the register file, so 9 warps are capped as if they were 12.

#include "../include/gemm_common.cuh"

#ifndef TILE
#define TILE 2
#define BK 64
#define BP 32
#define BC 8
#define TP 16
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#include "winograd_transforms.cuh"  // ALPHA, E and the 1-D transforms

constexpr int TK = 8;                          // a thread's accumulators per element: 8 filters × TP tiles
constexpr int KG = BK / TK, PG = BP / TP;      // threads per element along k and along p
constexpr int THREADS = E * KG * PG;
constexpr int U_FLOATS = E * BC * BK, V_FLOATS = E * BC * BP;
constexpr int STAGE_FLOATS = U_FLOATS + V_FLOATS;  // two stages: one multiplied while the next is filled
constexpr int PATCHES = (BC * BP + THREADS - 1) / THREADS;  // input patches a thread transforms per slice
constexpr int COPIES = U_FLOATS / 4 / THREADS;              // 16-byte copies of U a thread issues per slice
constexpr int KH = BK / 2;                     // filters staged per epilogue pass (a thread's two float4 halves)
constexpr int OUT_LD = BP + 4;                 // staging rows padded so float4 writes spread over banks
static_assert(TP % 4 == 0 && BK % TK == 0 && BP % TP == 0 && (U_FLOATS / 4) % THREADS == 0, "tile shape");
static_assert(E * KH * OUT_LD <= 2 * STAGE_FLOATS, "the output staging reuses the two stages' shared memory");
static_assert(THREADS <= 1024, "block size");

// ---- the filter transform ---------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256)
winograd_filter(const float* __restrict__ w, float* __restrict__ U, int K, int C)
{
    const int KP = (K + BK - 1) / BK * BK, CP = (C + BC - 1) / BC * BC;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= KP * CP) return;
    const int k = idx % KP, c = idx / KP;  // k fastest: the E stores below are coalesced
    float u[ALPHA][ALPHA];
    if (k < K && c < C) {
        filter_tile(w + ((size_t)k * C + c) * 9, u);
    } else {
#pragma unroll
        for (int i = 0; i < ALPHA; ++i)
#pragma unroll
            for (int j = 0; j < ALPHA; ++j) u[i][j] = 0.0f;  // padding: contributes nothing to the products
    }
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) U[((size_t)(i * ALPHA + j) * CP + c) * KP + k] = u[i][j];
}

// ---- the fused convolution --------------------------------------------------------------------------------

struct Patches {  // the input patches one thread loads and transforms for every slice of channels
    float d[PATCHES][ALPHA][ALPHA];
    long long base[PATCHES];  // offset of the patch's top-left element in x, channel `first` of the slice
    unsigned rows[PATCHES], cols[PATCHES];  // bit i set: patch row / column i lies inside the image
    int channel[PATCHES];     // the patch's channel within a slice (-1: no patch for this thread)
    int slot[PATCHES];        // where its transform goes: channel * BP + tile, inside Vs

    __device__ void locate(int tid, int p0, int P, int TH, int TW, int C, int H, int W, int pad)
    {
#pragma unroll
        for (int j = 0; j < PATCHES; ++j) {
            const int q = tid + j * THREADS, p = p0 + q % BP;
            channel[j] = (q < BC * BP && p < P) ? q / BP : -1;
            slot[j] = q;
            const int n = p / (TH * TW), r = p % (TH * TW);
            const int h0 = (r / TW) * TILE - pad, w0 = (r % TW) * TILE - pad;
            rows[j] = cols[j] = 0;
#pragma unroll
            for (int i = 0; i < ALPHA; ++i) {
                rows[j] |= unsigned(h0 + i >= 0 && h0 + i < H) << i;
                cols[j] |= unsigned(w0 + i >= 0 && w0 + i < W) << i;
            }
            base[j] = ((long long)n * C + q / BP) * H * W + (long long)h0 * W + w0;
        }
    }

    __device__ void load(const float* __restrict__ x, int first, int C, int H, int W)
    {
#pragma unroll
        for (int j = 0; j < PATCHES; ++j) {
            const bool live = channel[j] >= 0 && first + channel[j] < C;
            const float* src = x + base[j] + (long long)first * H * W;
#pragma unroll
            for (int r = 0; r < ALPHA; ++r)
#pragma unroll
                for (int s = 0; s < ALPHA; ++s)
                    d[j][r][s] = (live && (rows[j] >> r & 1) && (cols[j] >> s & 1)) ? src[r * W + s] : 0.0f;
        }
    }

    __device__ void transform_into(float* Vs)  // Vs[e][c][p]
    {
#pragma unroll
        for (int j = 0; j < PATCHES; ++j) {
            if (slot[j] >= BC * BP) continue;
#pragma unroll
            for (int s = 0; s < ALPHA; ++s) {
                float col[ALPHA];
#pragma unroll
                for (int r = 0; r < ALPHA; ++r) col[r] = d[j][r][s];
                input_line(col);
#pragma unroll
                for (int r = 0; r < ALPHA; ++r) d[j][r][s] = col[r];
            }
#pragma unroll
            for (int r = 0; r < ALPHA; ++r) {
                input_line(d[j][r]);
#pragma unroll
                for (int s = 0; s < ALPHA; ++s) Vs[(r * ALPHA + s) * BC * BP + slot[j]] = d[j][r][s];
            }
        }
    }
};

__device__ __forceinline__ void copy_filters(float* Us, const float* __restrict__ U, int first, int k0, int CP,
                                             int KP)
{
#pragma unroll
    for (int r = 0; r < COPIES; ++r) {
        const int i = threadIdx.x + r * THREADS;
        const int k4 = i % (BK / 4), c = (i / (BK / 4)) % BC, e = i / (BK / 4 * BC);
        cp_async16(Us + (e * BC + c) * BK + k4 * 4, U + ((size_t)e * CP + first + c) * KP + k0 + k4 * 4, 16);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
winograd_conv(const float* __restrict__ x, const float* __restrict__ U, float* __restrict__ y, int N, int C,
              int H, int W, int K, int pad, int OH, int OW)
{
    extern __shared__ __align__(16) float smem[];  // two stages of [Us: E][BC][BK] [Vs: E][BC][BP]
    const int tid = threadIdx.x;
    const int TH = (OH + TILE - 1) / TILE, TW = (OW + TILE - 1) / TILE, P = N * TH * TW;
    const int p0 = blockIdx.x * BP, k0 = blockIdx.y * BK;
    const int KP = gridDim.y * BK, CP = (C + BC - 1) / BC * BC, slices = CP / BC;

    // This thread's part of the products: element e, filters kg*4 + {0..3} and KH + kg*4 + {0..3}, tiles
    // j*4*PG + pg*4 + {0..3}. The eight threads of a quarter warp read 128 contiguous bytes of Us (no conflicts).
    const int e = tid / (KG * PG), kg = tid % KG, pg = (tid / KG) % PG;
    float acc[TK][TP];
#pragma unroll
    for (int i = 0; i < TK; ++i)
#pragma unroll
        for (int j = 0; j < TP; ++j) acc[i][j] = 0.0f;

    Patches in;
    in.locate(tid, p0, P, TH, TW, C, H, W, pad);
    copy_filters(smem, U, 0, k0, CP, KP);
    cp_async_commit();
    in.load(x, 0, C, H, W);
    in.transform_into(smem + U_FLOATS);
    cp_async_wait<0>();
    __syncthreads();

    for (int t = 0; t < slices; ++t) {
        float* stage = smem + (t & 1) * STAGE_FLOATS;
        float* next = smem + ((t + 1) & 1) * STAGE_FLOATS;
        const bool more = t + 1 < slices;
        if (more) {  // the next slice's copies and loads are in flight during this slice's products
            copy_filters(next, U, (t + 1) * BC, k0, CP, KP);
            cp_async_commit();
            in.load(x, (t + 1) * BC, C, H, W);
        }
        const float* us = stage + e * BC * BK;
        const float* vs = stage + U_FLOATS + e * BC * BP;
#pragma unroll
        for (int c = 0; c < BC; ++c) {
            float a[TK], b[TP];
            *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(us + c * BK + kg * 4);
            *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(us + c * BK + KH + kg * 4);
#pragma unroll
            for (int j = 0; j < TP / 4; ++j)
                *reinterpret_cast<float4*>(b + 4 * j) =
                    *reinterpret_cast<const float4*>(vs + c * BP + j * 4 * PG + pg * 4);
#pragma unroll
            for (int i = 0; i < TK; ++i)
#pragma unroll
                for (int j = 0; j < TP; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            in.transform_into(next + U_FLOATS);
            cp_async_wait<0>();
        }
        __syncthreads();
    }

    // Output transform, half of the filters at a time: stage Mₑ[k][p] in shared memory, then each thread takes
    // (k, p) pairs, gathers the E values of its pair and writes the TILE×TILE outputs.
    float* Ms = smem;  // [E][KH][OUT_LD]
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (h) __syncthreads();  // the first half's reads are done
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int j = 0; j < TP / 4; ++j)
                *reinterpret_cast<float4*>(Ms + (e * KH + kg * 4 + q) * OUT_LD + j * 4 * PG + pg * 4) =
                    make_float4(acc[h * 4 + q][4 * j], acc[h * 4 + q][4 * j + 1], acc[h * 4 + q][4 * j + 2],
                                acc[h * 4 + q][4 * j + 3]);
        __syncthreads();
        for (int idx = tid; idx < KH * BP; idx += THREADS) {
            const int pl = idx % BP, kl = idx / BP, k = k0 + h * KH + kl, p = p0 + pl;
            if (k >= K || p >= P) continue;
            float t[TILE][ALPHA];
#pragma unroll
            for (int s = 0; s < ALPHA; ++s) {
                float col[ALPHA], out[TILE];
#pragma unroll
                for (int r = 0; r < ALPHA; ++r) col[r] = Ms[((r * ALPHA + s) * KH + kl) * OUT_LD + pl];
                output_line(col, out);
#pragma unroll
                for (int r = 0; r < TILE; ++r) t[r][s] = out[r];
            }
            const int n = p / (TH * TW), rem = p % (TH * TW), oh0 = (rem / TW) * TILE, ow0 = (rem % TW) * TILE;
            float* dst = y + (((size_t)n * K + k) * OH + oh0) * OW + ow0;
#pragma unroll
            for (int r = 0; r < TILE; ++r) {
                float o[TILE];
                output_line(t[r], o);
#pragma unroll
                for (int s = 0; s < TILE; ++s)
                    if (oh0 + r < OH && ow0 + s < OW) dst[r * OW + s] = o[s];
            }
        }
    }
}
