// Winograd convolution F(TILE×TILE, 3×3), stride 1, as four kernels: the transforms run on their own and the
// E = ALPHA² products over channels are one batched GEMM (Lavin and Gray's formulation, 2016).
//
// conv/09_winograd.cu fuses everything into one kernel, and there the products run at 36-49% of FFMA peak: the
// input transform needs ALPHA² registers per patch next to the accumulators, so blocks of 9·2ⁿ warps hit the
// register file's cap, with one block per SM and two warps per scheduler (docs/perf-notes.md). Here each step
// gets the whole SM to itself, at the price of writing the transformed input V and the products M to device
// memory and reading them back (on the 28² and 14² ResNet layers at N = 32, 19-29 MB each, most of it L2-sized):
//   winograd_filter_t  U[e][k][c] = (G g Gᵀ)ₑ for every filter k and channel c
//   winograd_input_t   V[e][c][p] = (Bᵀ d B)ₑ for every channel c and output tile p (its ALPHA×ALPHA patch d)
//   winograd_products  M[e][k][p] = Σ_c U[e][k][c] · V[e][c][p]: E independent GEMMs (K × Cp) · (Cp × Pp), the
//                      warp-tiled cp.async main loop of gemm/06_async.cu (async_tile.cuh), grid.y = e
//   winograd_output_t  y[n][k][tile] = Aᵀ M[·][k][p] A: the TILE×TILE outputs of tile p
// Channels and tiles are padded to multiples of 4 (Cp, Pp) with zeros, so every GEMM row starts on a 16-byte
// boundary and the copies are always 16 bytes: the padding adds nothing to the sums.
//
// Compile-time parameters: TILE (2 or 4), and the GEMM's BM×BN×BK block tile, WM×WN warp tile, TM×TN thread
// tile and STAGES ring slots (as for gemm/06_async.cu). Layout: NCHW input, KCRS filters, NKHW output (float32).

#include "../include/async_tile.cuh"

#ifndef TILE
#define TILE 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef BM
#define BM 64
#define BN 128
#define BK 16
#define WM 32
#define WN 32
#define TM 4
#define TN 8
#define STAGES 3
#endif
#include "winograd_transforms.cuh"  // ALPHA, E and the 1-D transforms

__device__ __forceinline__ int pad4(int n) { return (n + 3) / 4 * 4; }

// ---- U[e][k][c]: one thread per (filter, channel), channels fastest so the E stores are coalesced ----------

extern "C" __global__ void __launch_bounds__(256)
winograd_filter_t(const float* __restrict__ w, float* __restrict__ U, int K, int C)
{
    const int Cp = pad4(C);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)K * Cp) return;
    const int c = idx % Cp, k = idx / Cp;
    float u[ALPHA][ALPHA] = {};
    if (c < C) {
        filter_tile(w + ((size_t)k * C + c) * 9, u);
    }
    const size_t plane = (size_t)K * Cp;
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) U[(i * ALPHA + j) * plane + idx] = u[i][j];
}

// ---- V[e][c][p]: one thread per (channel, tile), tiles fastest ----------------------------------------------

extern "C" __global__ void __launch_bounds__(256)
winograd_input_t(const float* __restrict__ x, float* __restrict__ V, int N, int C, int H, int W, int pad, int OH,
                 int OW)
{
    const int TH = (OH + TILE - 1) / TILE, TW = (OW + TILE - 1) / TILE, P = N * TH * TW;
    const int Cp = pad4(C), Pp = pad4(P);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)Cp * Pp) return;
    const int p = idx % Pp, c = idx / Pp;
    float d[ALPHA][ALPHA] = {};
    if (c < C && p < P) {
        const int n = p / (TH * TW), r = p % (TH * TW);
        const int h0 = (r / TW) * TILE - pad, w0 = (r % TW) * TILE - pad;
        const float* src = x + ((size_t)n * C + c) * H * W;
#pragma unroll
        for (int i = 0; i < ALPHA; ++i)
#pragma unroll
            for (int j = 0; j < ALPHA; ++j) {
                const int h = h0 + i, ww = w0 + j;
                d[i][j] = (h >= 0 && h < H && ww >= 0 && ww < W) ? src[(size_t)h * W + ww] : 0.0f;
            }
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) {  // Bᵀ d: each column
            float col[ALPHA];
#pragma unroll
            for (int i = 0; i < ALPHA; ++i) col[i] = d[i][j];
            input_line(col);
#pragma unroll
            for (int i = 0; i < ALPHA; ++i) d[i][j] = col[i];
        }
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) input_line(d[i]);  // (Bᵀ d) B: each row
    }
    const size_t plane = (size_t)Cp * Pp;
#pragma unroll
    for (int i = 0; i < ALPHA; ++i)
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) V[(i * ALPHA + j) * plane + idx] = d[i][j];
}

// ---- M[e] = U[e] · V[e]: grid.x the BM×BN tiles of one product, grid.y the element e ----------------------

using Tile = AsyncTile<BM, BN, BK, WM, WN, TM, TN, STAGES>;

extern "C" __global__ void __launch_bounds__(Tile::THREADS, MIN_BLOCKS)
winograd_products(const float* __restrict__ U, const float* __restrict__ V, float* __restrict__ Mw, int N, int C,
                  int K, int OH, int OW)
{
    extern __shared__ __align__(16) float smem[];
    const int P = N * ((OH + TILE - 1) / TILE) * ((OW + TILE - 1) / TILE), Cp = pad4(C), Pp = pad4(P);
    const int e = blockIdx.y;
    const float* A = U + (size_t)e * K * Cp;   // K × Cp
    const float* B = V + (size_t)e * Cp * Pp;  // Cp × Pp
    float* Out = Mw + (size_t)e * K * Pp;      // K × Pp
    const int tiles_n = (Pp + BN - 1) / BN;
    const int row0 = blockIdx.x / tiles_n * BM, col0 = blockIdx.x % tiles_n * BN;

    Tile tile;
    tile.run(smem, Cp, [&](float* As, float* Bs, int k0) {
        copy_window<BM, BK, Tile::THREADS>(As, Tile::A_LD, A + (size_t)row0 * Cp + k0, Cp, K - row0, Cp - k0, true);
        copy_window<BK, BN, Tile::THREADS>(Bs, BN, B + (size_t)k0 * Pp + col0, Pp, Cp - k0, Pp - col0, true);
    });
    tile.store(Out, Pp, K, row0, col0, true);
}

// ---- y from M: one thread per (filter, tile), tiles fastest so the E loads are coalesced -------------------

extern "C" __global__ void __launch_bounds__(256)
winograd_output_t(const float* __restrict__ Mw, float* __restrict__ y, int N, int K, int OH, int OW)
{
    const int TH = (OH + TILE - 1) / TILE, TW = (OW + TILE - 1) / TILE, P = N * TH * TW, Pp = pad4(P);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)K * P) return;
    const int p = idx % P, k = idx / P;
    const size_t plane = (size_t)K * Pp;
    const float* m = Mw + (size_t)k * Pp + p;
    float t[TILE][ALPHA];  // Aᵀ M: each column
#pragma unroll
    for (int j = 0; j < ALPHA; ++j) {
        float col[ALPHA], out[TILE];
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) col[i] = m[(i * ALPHA + j) * plane];
        output_line(col, out);
#pragma unroll
        for (int i = 0; i < TILE; ++i) t[i][j] = out[i];
    }
    const int n = p / (TH * TW), r = p % (TH * TW), oh0 = (r / TW) * TILE, ow0 = (r % TW) * TILE;
    float* dst = y + (((size_t)n * K + k) * OH + oh0) * OW + ow0;
#pragma unroll
    for (int i = 0; i < TILE; ++i) {  // (Aᵀ M) A: each row, clipped to the image
        float o[TILE];
        output_line(t[i], o);
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            if (oh0 + i < OH && ow0 + j < OW) dst[i * OW + j] = o[j];
    }
}
