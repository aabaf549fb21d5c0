// im2col: unfold the input into the column matrix of a convolution, so that the convolution becomes a GEMM.
//
// cols[n][c·R·S + r·S + s][oh·OW + ow] = x[n][c][oh·stride − pad + r][ow·stride − pad + s] (0 in the padding).
// Rows follow the KCRS filter layout, so filters[K][C·R·S] · cols[n] is image n's output, already NCHW.
// Grid: x over output pixels (a warp writes 32 consecutive floats of one row: coalesced), y over the C·R·S
// rows, z over images. The matrix holds R·S/stride² times the input: this pass is what im2col pays.
//
// im2col_gemm is then the lab's tiled GEMM (gemm/03_tiled.cu, included: the same code and tile parameters),
// one product per image along grid z: y[n][K][OH·OW] = w[K][C·R·S] · cols[n][C·R·S][OH·OW].
// The variants.toml entry launches the two as one call: im2col as a `before` step into the `cols` workspace.

#include "../gemm/03_tiled.cu"

constexpr int UNFOLD_THREADS = 256;  // the spec's block for im2col

extern "C" __global__ void __launch_bounds__(UNFOLD_THREADS)
im2col(const float* __restrict__ x, float* __restrict__ cols, int N, int C, int H, int W, int R, int S, int stride,
       int pad, int OH, int OW)
{
    const int p = blockIdx.x * UNFOLD_THREADS + threadIdx.x;
    const int P = OH * OW;
    if (p >= P) return;
    const int row = blockIdx.y, n = blockIdx.z;
    const int c = row / (R * S), r = (row / S) % R, s = row % S;
    const int ih = (p / OW) * stride - pad + r, iw = (p % OW) * stride - pad + s;
    const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
    const size_t rows = (size_t)C * R * S;
    cols[((size_t)n * rows + row) * P + p] = inside ? x[(((size_t)n * C + c) * H + ih) * W + iw] : 0.0f;
}

extern "C" __global__ void __launch_bounds__(Tile::THREADS)
im2col_gemm(const float* __restrict__ w, const float* __restrict__ cols, float* __restrict__ y, int C, int K, int R,
            int S, int OH, int OW)
{
    // The sizes as ints and only the image offsets widened, as gemm/03_tiled.cu's own callers pass them: with
    // the sizes computed in size_t the tile loop compiled 35% slower on an H100 (6.63 against 4.86 ms at the
    // lab's 4096² layer, 128x128x8/8x8), with the same register count.
    const int pixels = OH * OW, rows = C * R * S;
    const size_t n = blockIdx.z;
    tiled_product(w, cols + n * (long long)rows * pixels, y + n * (long long)K * pixels, K, pixels, rows);
}
