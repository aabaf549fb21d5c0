// INT8 tensor-core implicit-GEMM convolution with the fused epilogue: the source document's own step (MegEngine's
// int8 convolution on CUTLASS's pipeline), sm_80+: mma.sync m16n8k32 on s8, int32 accumulate.
//
// y[n,k,p] = epi( Σ_{c,r,s} x[n, c, oh·stride − pad + r, ow·stride − pad + s] · w[k, c, r, s] )
//
// As a GEMM: rows are output pixels (GEMM_M = N·OH·OW), columns filters (GEMM_N = K), the reduction over (r, s, c).
// The data lie in the document's interleaved layout, NC/32HW32 (cuDNN's NCHW_VECT_C with 32-channel vectors:
// x[N][C/32][H][W][32], w[K][C/32][R][S][32], y[N][K/32][OH][OW][32]), or in NHWC (-DLAYOUT_NHWC): either way the
// 32 channels of one pixel are 32 contiguous bytes, two 16-byte copies, and the k of one m16n8k32 step.
//
// The steps, as the article walks them:
// - Global → shared: a STAGES-deep cp.async ring, one barrier per slice of BK channels of one filter tap. The
//   article precomputes each step's address delta on the host because integer division is slow; here each thread
//   works out, once, at the block's start, its pixels' offsets and a bit mask of their in-image taps (divisions
//   there, none in the loop), and the loop walks (tap, channel) with a carry: the same division-free main loop.
// - Shared → registers: ldmatrix.x4 reads a 16×32-byte A fragment (four 8×16-byte matrices) and two 8×32-byte B
//   fragments per instruction. The rows sit XOR-swizzled by 16-byte chunk (include/mma_sync.cuh's Swizzled, the
//   article's "crosswise" layout): no padding and no bank conflicts, as the article's figures show.
// - Registers → tensor cores: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32, int32 accumulators (exact).
// - The epilogue: the accumulators go through shared memory (the article's "data exchange"), so that each thread
//   then holds 16 consecutive output bytes; there the epilogue is applied (include/epilogue.cuh: α·s[k]·acc +
//   β·bias[k] + γ·z, ReLU; int8 rounded half to even and saturated) as the residual is read and the output
//   written, both in whole 16-byte chunks: a warp's stores run along the pixels of one 32-channel plane, coalesced.
//
// Tiles (-DNAME=value): BM pixels × BN filters per block, BK channels per slice (32, 64 or 128 bytes), WM × WN per
// warp, STAGES-deep ring. Launch: grid cdiv(N·OH·OW, BM) · cdiv(K, BN), (BM/WM)·(BN/WN)·32 threads, dynamic shared
// memory max(ring, the int32 staged tile and the channel terms). Needs C % 32 == 0 (whole vectors) and R·S ≤ 32.

#include "../include/epilogue.cuh"
#include "../include/gemm_common.cuh"  // cp_async16
#include "../include/mma_sync.cuh"     // smem_addr, ldmatrix_x4, Swizzled

#include <type_traits>

#ifndef ELEM
#define ELEM int8_t
#endif
#ifndef ELEM_OUT
#define ELEM_OUT int8_t
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
constexpr int MT = WM / 16, NT = WN / 8;      // MMAs per warp and 32-channel step
constexpr int STAGE_BYTES = (BM + BN) * BK;
constexpr int CLD = BN + 8;                   // the staged tile's row stride in int32: 8 rows of a fragment, 32 banks
constexpr int CH = BK / 16;                   // 16-byte chunks in a slice's row
constexpr int ROWS_PER_PASS = THREADS / CH;
constexpr int A_ITERS = BM / ROWS_PER_PASS, B_ITERS = BN / ROWS_PER_PASS;
constexpr int V = 16 / sizeof(ELEM_OUT);      // outputs in one 16-byte store
constexpr bool INT_OUT = std::is_same<ELEM_OUT, int>::value;  // int32 out: the integer epilogue

static_assert(BM % WM == 0 && BN % WN == 0 && BN % 32 == 0, "warps tile the block; filters in whole vectors");
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp tile is whole 16×16 ldmatrix blocks");
static_assert(BK == 32 || BK == 64 || BK == 128, "BK: 32, 64 or 128 channels, one to four vectors");
static_assert(THREADS % CH == 0 && BM % ROWS_PER_PASS == 0 && BN % ROWS_PER_PASS == 0, "whole copy passes");
static_assert(STAGES >= 2, "a ring of at least two slices");

using Tile = Swizzled<BK / 2>;  // a row of BK bytes seen as BK/2 16-bit elements: the same 16-byte chunks

// Where things lie, per layout: pixel (h, w) of image n at channel vector cv of x is at
//   n·IMG + (h·W + w)·PIX + cv·CV  (+ the 32 channels inside the vector)
// and filter k's tap t, vector cv at k·FK + t·FT + cv·FV. NC/32HW32 keeps each vector's plane apart (CV = H·W·32),
// NHWC keeps a pixel's channels together (PIX = C).
struct Strides {
    long long IMG, PIX, CV, FK, FT, FV;
    __device__ Strides(int C, int H, int W, int R, int S)
    {
        IMG = (long long)C * H * W;
        FK = (long long)C * R * S;
#if defined(LAYOUT_NHWC)
        PIX = C, CV = 32, FT = C, FV = 32;
#else
        PIX = 32, CV = (long long)H * W * 32, FT = 32, FV = (long long)R * S * 32;
#endif
    }
};

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
conv_int8_mma(const int8_t* __restrict__ x, const int8_t* __restrict__ w, const float* __restrict__ bias,
              const ELEM_OUT* __restrict__ z, const float* __restrict__ channel_scale, ELEM_OUT* __restrict__ y,
              float alpha, float beta, float gamma, int N, int C, int H, int W, int K, int R, int S, int stride,
              int pad, int OH, int OW)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int P = OH * OW, M = N * P;
    const int tiles_n = (K + BN - 1) / BN;
    const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const Strides st(C, H, W, R, S);

    // ---- the loader's precomputation: this thread's chunk column, its pixels' offsets and in-image taps ---------
    const int chunk = tid % CH, row0 = tid / CH;
    long long x_off[A_ITERS], w_off[B_ITERS];
    uint32_t taps_in[A_ITERS];
#pragma unroll
    for (int i = 0; i < A_ITERS; ++i) {
        const int m = m0 + row0 + i * ROWS_PER_PASS;
        x_off[i] = 0;
        taps_in[i] = 0;
        if (m < M) {
            const int img = m / P, p = m % P;
            const int ih0 = (p / OW) * stride - pad, iw0 = (p % OW) * stride - pad;
            x_off[i] = img * st.IMG + ((long long)ih0 * W + iw0) * st.PIX;
            for (int r = 0; r < R; ++r)
                for (int s = 0; s < S; ++s)
                    if ((unsigned)(ih0 + r) < (unsigned)H && (unsigned)(iw0 + s) < (unsigned)W)
                        taps_in[i] |= 1u << (r * S + s);
        }
    }
#pragma unroll
    for (int j = 0; j < B_ITERS; ++j) {
        const int k = n0 + row0 + j * ROWS_PER_PASS;
        w_off[j] = k < K ? k * st.FK : -1;
    }
    // The slice walk: tap (r, s) and channels c .. c + BK, channels innermost; this thread's chunk is 16 channels of
    // vector (c + 16·chunk) / 32. Padding, channels past C and filters past K arrive as zeros (cp.async's zero-fill).
    int r = 0, s = 0, c = 0;
    auto load = [&](int stage) {
        int8_t* As = reinterpret_cast<int8_t*>(smem) + stage * STAGE_BYTES;
        int8_t* Bs = As + BM * BK;
        const int tap = r * S + s, cc = c + chunk * 16;
        const bool chan_in = cc < C;
        const long long in_vec = (cc / 32) * st.CV + cc % 32;  // a power-of-two division: a shift
        const long long at_x = ((long long)r * W + s) * st.PIX + in_vec;
        const long long at_w = tap * st.FT + (cc / 32) * st.FV + cc % 32;
#pragma unroll
        for (int i = 0; i < A_ITERS; ++i) {
            const bool in = chan_in && (taps_in[i] >> tap & 1u);
            cp_async16(As + 2 * Tile::at(row0 + i * ROWS_PER_PASS, chunk), in ? x + x_off[i] + at_x : x, in ? 16 : 0);
        }
#pragma unroll
        for (int j = 0; j < B_ITERS; ++j) {
            const bool in = chan_in && w_off[j] >= 0;
            cp_async16(Bs + 2 * Tile::at(row0 + j * ROWS_PER_PASS, chunk), in ? w + w_off[j] + at_w : w, in ? 16 : 0);
        }
        c += BK;
        if (c >= C) {
            c = 0;
            if (++s == S) {
                s = 0;
                ++r;
            }
        }
    };

    // ---- the consumer: each warp's ldmatrix addresses (rows fixed per lane; the swizzle key is the lane's) -------
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int a_row = wm0 + (lane & 15), a_xor = (lane >> 4) ^ Tile::key(lane & 15);
    const int b_row = wn0 + (lane & 7) + ((lane >> 4) << 3), b_xor = ((lane >> 3) & 1) ^ Tile::key(lane & 7);
    const uint32_t smem_base = smem_addr(smem);

    int acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

    const int slices = R * S * ((C + BK - 1) / BK);
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < slices) load(t);
        cp_async_commit();  // an empty group past the end keeps the wait count below exact
    }
    for (int t = 0; t < slices; ++t) {
        cp_async_wait<STAGES - 2>();  // slice t has landed (this thread's copies) ...
        __syncthreads();              // ... and everyone's; and stage (t − 1) % STAGES is no longer read
        if (t + STAGES - 1 < slices) load((t + STAGES - 1) % STAGES);
        cp_async_commit();

        const uint32_t As = smem_base + (t % STAGES) * STAGE_BYTES, Bs = As + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) {  // one m16n8k32 step: 32 channels, two 16-byte chunks of a row
            uint32_t a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) ldmatrix_x4(a[i], As + (a_row + i * 16) * BK + (((2 * kk) ^ a_xor) << 4));
#pragma unroll
            for (int j = 0; j < NT / 2; ++j) {
                uint32_t q[4];
                ldmatrix_x4(q, Bs + (b_row + j * 16) * BK + (((2 * kk) ^ b_xor) << 4));
                b[2 * j][0] = q[0];
                b[2 * j][1] = q[1];
                b[2 * j + 1][0] = q[2];
                b[2 * j + 1][1] = q[3];
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                                 "{%8, %9}, {%0, %1, %2, %3};\n"
                                 : "+r"(acc[i][j][0]), "+r"(acc[i][j][1]), "+r"(acc[i][j][2]), "+r"(acc[i][j][3])
                                 : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]),
                                   "r"(b[j][1]));
        }
    }

    // ---- epilogue: stage the int32 tile, then epilogue and store in 16-byte chunks ------------------------------
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with the ring
    int* Cs = reinterpret_cast<int*>(smem);
    float2* terms = reinterpret_cast<float2*>(Cs + BM * CLD);  // α·s[k] and β·bias[k] of the tile's BN filters
    const int g = lane / 4, t2 = (lane % 4) * 2;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            int* cp = Cs + (wm0 + i * 16 + g) * CLD + wn0 + j * 8 + t2;  // the fragment's c0 c1 / c2 c3 rows
            *reinterpret_cast<int2*>(cp) = make_int2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<int2*>(cp + 8 * CLD) = make_int2(acc[i][j][2], acc[i][j][3]);
        }
    const EpilogueArgs e{alpha, beta, gamma, bias, channel_scale};
    for (int k = tid; k < BN; k += THREADS)
        if (n0 + k < K) {
            const ChannelTerms ct = channel_terms(e, n0 + k);
            terms[k] = make_float2(ct.scale, ct.shift);
        }
    __syncthreads();

    // A chunk: V outputs of one pixel (row), consecutive filters. NC/32HW32: chunks ordered 32-channel plane, pixel,
    // chunk, so a warp's stores walk consecutive pixels of one plane (32·sizeof bytes each): contiguous. NHWC: pixel,
    // then chunk along K (a row of y is K consecutive outputs).
    constexpr int CPV = 32 / V;  // chunks in one 32-channel vector
    for (int v = tid; v < BM * (BN / V); v += THREADS) {
#if defined(LAYOUT_NHWC)
        const int row = v / (BN / V), col = (v % (BN / V)) * V;
#else
        const int col = (v / (CPV * BM)) * 32 + (v % CPV) * V, row = (v / CPV) % BM;
#endif
        const int m = m0 + row, k = n0 + col;
        if (m >= M || k >= K) continue;
#if defined(LAYOUT_NHWC)
        const long long at = (long long)m * K + k;
        const bool whole = K % V == 0;  // 16-byte aligned rows and no filter past K in the chunk
#else
        const int img = m / P, p = m % P;  // once per chunk: a division the loop above never makes
        const long long at = (((long long)img * (K / 32) + k / 32) * P + p) * 32 + k % 32;
        const bool whole = true;  // K % 32 == 0 in this layout
#endif
        alignas(16) ELEM_OUT out[V];
        alignas(16) ELEM_OUT zv[V];
        if (EPI_HAS_ADD && whole) *reinterpret_cast<uint4*>(zv) = *reinterpret_cast<const uint4*>(z + at);
#pragma unroll
        for (int q = 0; q < V; ++q) {
            if (!whole && k + q >= K) break;
            const int a = Cs[row * CLD + col + q];
            const ELEM_OUT zq = EPI_HAS_ADD ? (whole ? zv[q] : z[at + q]) : ELEM_OUT(0);
            if constexpr (INT_OUT) {
                out[q] = epilogue_value_int(a, e, k + q, epilogue_load_int<ELEM_OUT>(zq));
            } else {
                const ChannelTerms ct{terms[col + q].x, terms[col + q].y};
                out[q] = epilogue_store<ELEM_OUT>(epilogue_value(static_cast<float>(a), ct, gamma,
                                                                 epilogue_load<ELEM_OUT>(zq)));
            }
        }
        if (whole) {
            *reinterpret_cast<uint4*>(y + at) = *reinterpret_cast<const uint4*>(out);
        } else {
            for (int q = 0; q < V && k + q < K; ++q) y[at + q] = out[q];
        }
    }
}
