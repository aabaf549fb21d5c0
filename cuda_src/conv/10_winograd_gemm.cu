// Winograd convolution F(TILE×TILE, 3×3), stride 1, as four kernels: the transforms run on their own and the
// E = ALPHA² products over channels are one batched GEMM (Lavin and Gray's formulation, 2016). The transform
// kernels live in winograd_steps.cuh (conv/15_winograd_tf32x3.cu shares them); this file adds the products.
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
// tile and STAGES ring slots (as for gemm/06_async.cu); SPLIT partial sums over the channels (grid.y = E·SPLIT,
// winograd_steps.cuh), for layers whose E GEMMs make too few blocks to fill the SMs evenly.
// Layout: NCHW input, KCRS filters, NKHW output (float32).

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
#include "winograd_steps.cuh"  // ALPHA, E, the transform kernels, SPLIT

// ---- M[e] = U[e] · V[e]: grid.x the BM×BN tiles of one product, grid.y the element e (and partial sum) ------

using Tile = AsyncTile<BM, BN, BK, WM, WN, TM, TN, STAGES>;

extern "C" __global__ void __launch_bounds__(Tile::THREADS, MIN_BLOCKS)
winograd_products(const float* __restrict__ U, const float* __restrict__ V, float* __restrict__ Mw, int N, int C,
                  int K, int OH, int OW)
{
    extern __shared__ __align__(16) float smem[];
    const int P = N * ((OH + TILE - 1) / TILE) * ((OW + TILE - 1) / TILE), Cp = pad4(C), Pp = pad4(P);
    const int e = blockIdx.y % E, split = blockIdx.y / E;
    const ChannelSlice cs = channel_slice(Cp, split, BK);
    const float* A = U + (size_t)e * K * Cp + cs.begin;           // K × (its channels), rows Cp apart
    const float* B = V + ((size_t)e * Cp + cs.begin) * Pp;        // (its channels) × Pp
    float* Out = Mw + ((size_t)split * E + e) * K * Pp;           // K × Pp, in this partial sum's copy of M
    const int tiles_n = (Pp + BN - 1) / BN;
    const int row0 = blockIdx.x / tiles_n * BM, col0 = blockIdx.x % tiles_n * BN;

    Tile tile;
    const int depth = cs.end - cs.begin;
    tile.run(smem, depth, [&](float* As, float* Bs, int k0) {
        copy_window<BM, BK, Tile::THREADS>(As, Tile::A_LD, A + (size_t)row0 * Cp + k0, Cp, K - row0, depth - k0, true);
        copy_window<BK, BN, Tile::THREADS>(Bs, BN, B + (size_t)k0 * Pp + col0, Pp, depth - k0, Pp - col0, true);
    });
    tile.store(Out, Pp, K, row0, col0, true);
}

