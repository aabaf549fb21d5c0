// Direct convolution with 128-bit loads, for the lab's memory-bound layer at stride 1.
//
// Each thread computes a 4-wide, OY-tall patch of one output plane (image n, filter k = blockIdx.z). For a
// 3×3 filter at stride 1 with padding 1 (and W a multiple of 4), the patch's input rows are read as one
// float4 per row and channel, straight from global memory: the two extra columns a 4-wide patch needs come
// from the neighbouring lanes' float4s by warp shuffles, so a warp reads each input row segment exactly once,
// 16 bytes per thread, and a thread holds OY+2 such loads in flight per channel with no shared memory and no
// barrier. Every input row a patch needs is loaded once and used for each of the (up to three) outputs
// above it. Any other shape takes the generic path: the same patch with element-wise loads.

#ifndef TY
#define TY 4
#define OY 4
#endif

constexpr int TX = 32, THREADS = TX * TY, VX = 4;  // VX output columns per thread

__device__ __forceinline__ float4 load4_or_zero(const float* row, int col, bool ok)
{
    return ok ? __ldg(reinterpret_cast<const float4*>(row + col)) : make_float4(0.f, 0.f, 0.f, 0.f);
}

// 3×3, stride 1, pad 1, W % 4 == 0: rows as float4s, neighbours by shuffle. All 32 lanes run it (shuffles).
// G channels at a time (3 for the lab's input): every row of all G channels is loaded before any is used,
// so a thread has G·(OY+2) independent 16-byte loads in flight.
template <int G>
__device__ __forceinline__ void patch_3x3_s1(const float* __restrict__ x, const float* __restrict__ w,
                                             float (&acc)[OY][VX], int n, int k, int C, int H, int W, int oh0,
                                             int ow0, int lane)
{
    const bool col_ok = ow0 < W;
    for (int c0 = 0; c0 < C; c0 += G) {
        float4 rows[G][OY + 2];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const float* xc = x + ((size_t)n * C + c0 + g) * H * W;
#pragma unroll
            for (int j = 0; j < OY + 2; ++j) {
                const int ih = oh0 - 1 + j;
                rows[g][j] = load4_or_zero(xc + (size_t)ih * W, ow0, col_ok && (unsigned)ih < (unsigned)H);
            }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const float* xc = x + ((size_t)n * C + c0 + g) * H * W;
            float wv[9];
#pragma unroll
            for (int t = 0; t < 9; ++t) wv[t] = __ldg(w + ((size_t)k * C + c0 + g) * 9 + t);
#pragma unroll
            for (int j = 0; j < OY + 2; ++j) {
                const int ih = oh0 - 1 + j;
                const bool row_ok = (unsigned)ih < (unsigned)H;
                float left = __shfl_up_sync(0xffffffffu, rows[g][j].w, 1);
                float right = __shfl_down_sync(0xffffffffu, rows[g][j].x, 1);
                if (lane == 0) left = (row_ok && ow0 > 0 && col_ok) ? __ldg(xc + (size_t)ih * W + ow0 - 1) : 0.f;
                if (lane == 31) right = (row_ok && ow0 + 4 < W) ? __ldg(xc + (size_t)ih * W + ow0 + 4) : 0.f;
                const float in[6] = {left, rows[g][j].x, rows[g][j].y, rows[g][j].z, rows[g][j].w, right};
#pragma unroll
                for (int r = 0; r < 3; ++r) {  // input row j feeds output row i = j - r through filter row r
                    const int i = j - r;
                    if (i < 0 || i >= OY) continue;
#pragma unroll
                    for (int q = 0; q < VX; ++q)
                        acc[i][q] = fmaf(in[q + 2], wv[3 * r + 2],
                                         fmaf(in[q + 1], wv[3 * r + 1], fmaf(in[q], wv[3 * r], acc[i][q])));
                }
            }
        }
    }
}

__device__ __forceinline__ void patch_generic(const float* __restrict__ x, const float* __restrict__ w,
                                              float (&acc)[OY][VX], int n, int k, int C, int H, int W, int R,
                                              int S, int stride, int pad, int oh0, int ow0)
{
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((size_t)n * C + c) * H * W;
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) {
                const float wv = __ldg(w + (((size_t)k * C + c) * R + r) * S + s);
#pragma unroll
                for (int i = 0; i < OY; ++i) {
                    const int ih = (oh0 + i) * stride - pad + r;
                    if ((unsigned)ih >= (unsigned)H) continue;
#pragma unroll
                    for (int q = 0; q < VX; ++q) {
                        const int iw = (ow0 + q) * stride - pad + s;
                        if ((unsigned)iw < (unsigned)W) acc[i][q] = fmaf(__ldg(xc + (size_t)ih * W + iw), wv, acc[i][q]);
                    }
                }
            }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv_sliding_vec(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, int C,
                 int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    const int lane = threadIdx.x % TX;
    const int ow0 = (blockIdx.x * TX + lane) * VX;
    const int oh0 = (blockIdx.y * TY + threadIdx.x / TX) * OY;
    const int n = blockIdx.z / K, k = blockIdx.z % K;
    float acc[OY][VX] = {};
    // Uniform across the grid: every thread takes the same path.
    const bool fast = R == 3 && S == 3 && stride == 1 && pad == 1 && W % 4 == 0 && OW == W && OH == H;
    if (fast && C % 3 == 0) {
        patch_3x3_s1<3>(x, w, acc, n, k, C, H, W, oh0, ow0, lane);
    } else if (fast) {
        patch_3x3_s1<1>(x, w, acc, n, k, C, H, W, oh0, ow0, lane);
    } else {
        if (ow0 >= OW || oh0 >= OH) return;
        patch_generic(x, w, acc, n, k, C, H, W, R, S, stride, pad, oh0, ow0);
    }
    if (ow0 >= OW) return;
    float* yk = y + ((size_t)n * K + k) * OH * OW;
#pragma unroll
    for (int i = 0; i < OY; ++i) {
        if (oh0 + i >= OH) break;
        float* dst = yk + (size_t)(oh0 + i) * OW + ow0;
        if (fast) {
            *reinterpret_cast<float4*>(dst) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        } else {
#pragma unroll
            for (int q = 0; q < VX; ++q)
                if (ow0 + q < OW) dst[q] = acc[i][q];
        }
    }
}
