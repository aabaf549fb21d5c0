// Direct convolution streamed down tall strips, for the lab's memory-bound layer (3 channels, 3×3, strides 1, 2).
//
// sliding-vec reads each input row once per 4-row patch, so a patch's two halo rows are read again by the
// patch below: 1.5× the input bytes cross L2. Here a warp owns a strip 128 columns wide and OY rows tall
// (OY = 32: 1.06×) and walks down it one input row at a time. Each lane loads its 4 columns of a row as one
// float4 per channel; the two neighbouring columns arrive from the next lanes by shuffle. A row feeds the
// three output rows it touches, held in a rolling set of three accumulator rows, and once an output row has
// seen its last input row it is written at once, 16 bytes per lane, with a streaming store (evict-first: the
// output is not read again, so it should not displace input rows the strip below still needs from L2).
// Rows are prefetched PF ahead, so each thread keeps 3·PF 16-byte loads in flight with no shared memory,
// no barrier and few registers. The strip's two edge columns come from the neighbouring strips: by a scalar load
// in lanes 0 and 31 (2 more 32-byte sectors per 16), or, with HALO = 1, from lanes 0 and 31 loading the float4s
// beside the strip and storing nothing (the warp then covers 120 columns, and L2 sees no extra requests).
//
// The fast paths need C = 3, a 3×3 filter and W % 4 == 0, with stride 1 and pad 1 or stride 2 and pad 0 or 1
// (the lab's layers; strip_3x3_s2 below); any other shape takes a simple element-wise path over the same strip,
// slow but correct.

#ifndef TY
#define TY 4
#define OY 32
#define PF 6
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // > 1 caps registers so that this many blocks fit per SM (more warps, more loads in flight)
#endif
#ifndef HALO
#define HALO 0  // stride 1: 1 = the warp's edge lanes load the halo columns and store nothing (120 outputs a warp)
#endif

constexpr int TX = 32, THREADS = TX * TY, VX = 4;  // VX output columns per lane
constexpr int CH = 3;                                // channels of the fast path
static_assert(PF % 3 == 0 && PF <= OY + 2, "prefetch distance: a multiple of 3 (the accumulator rows rotate by 3)");

__device__ __forceinline__ float4 row4(const float* __restrict__ xc, int ih, int H, int W, int ow0)
{
    const bool inside = (unsigned)ih < (unsigned)H && (unsigned)ow0 < (unsigned)W;  // (ow0 < 0: a HALO lane)
    return inside ? __ldg(reinterpret_cast<const float4*>(xc + (size_t)ih * W + ow0)) : make_float4(0.f, 0.f, 0.f, 0.f);
}

// Filter k's 27 weights into registers, and the start of each of image n's 3 channel planes.
__device__ __forceinline__ void lab_operands(const float* __restrict__ x, const float* __restrict__ w, int n, int k,
                                             int H, int W, float (&wv)[CH][9], const float* (&xc)[CH])
{
#pragma unroll
    for (int c = 0; c < CH; ++c) {
#pragma unroll
        for (int t = 0; t < 9; ++t) wv[c][t] = __ldg(w + ((size_t)k * CH + c) * 9 + t);
        xc[c] = x + ((size_t)n * CH + c) * H * W;
    }
}

__device__ void strip_3x3_s1(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ yk,
                             int n, int k, int H, int W, int oh0, int ow0, int lane)
{
    float wv[CH][9];
    const float* xc[CH];
    lab_operands(x, w, n, k, H, W, wv, xc);

    float4 ring[PF][CH];  // input rows j .. j+PF-1 of the strip (input row oh0 - 1 + j) sit in slot j % PF
#pragma unroll
    for (int j = 0; j < PF; ++j)
#pragma unroll
        for (int c = 0; c < CH; ++c) ring[j][c] = row4(xc[c], oh0 - 1 + j, H, W, ow0);

    // Output rows j-2, j-1, j sit in slots (j-2)%3, (j-1)%3, j%3. The loop is unrolled PF rows at a time (PF a
    // multiple of 3), so every slot index is a constant, but no further: unrolled all the way down the strip,
    // the compiler hoists every load it can and spills them.
    float acc[3][VX] = {};
#pragma unroll 1
    for (int j0 = 0; j0 < OY + 2; j0 += PF) {
#pragma unroll
        for (int u = 0; u < PF; ++u) {
            const int j = j0 + u, ih = oh0 - 1 + j;
            if (j >= OY + 2) break;
            float in[CH][VX + 2];
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                const float4 v = ring[u][c];
                float left = __shfl_up_sync(0xffffffffu, v.w, 1), right = __shfl_down_sync(0xffffffffu, v.x, 1);
                const bool row_ok = (unsigned)ih < (unsigned)H;
                if (!HALO && lane == 0)  // with HALO the edge lanes only feed their neighbours: no extra loads
                    left = row_ok && ow0 > 0 && ow0 < W ? __ldg(xc[c] + (size_t)ih * W + ow0 - 1) : 0.f;
                if (!HALO && lane == 31) right = row_ok && ow0 + 4 < W ? __ldg(xc[c] + (size_t)ih * W + ow0 + 4) : 0.f;
                in[c][0] = left, in[c][1] = v.x, in[c][2] = v.y, in[c][3] = v.z, in[c][4] = v.w, in[c][5] = right;
                if (j + PF < OY + 2) ring[u][c] = row4(xc[c], ih + PF, H, W, ow0);  // refill the slot just read
            }
#pragma unroll
            for (int r = 0; r < 3; ++r) {  // input row j feeds output row j - r through filter row r
                const int slot = (u - r + 3) % 3;  // (j - r) % 3, as j0 is a multiple of 3
                if (j - r < 0 || j - r >= OY) continue;
#pragma unroll
                for (int c = 0; c < CH; ++c)
#pragma unroll
                    for (int q = 0; q < VX; ++q)
                        acc[slot][q] = fmaf(in[c][q + 2], wv[c][3 * r + 2],
                                            fmaf(in[c][q + 1], wv[c][3 * r + 1], fmaf(in[c][q], wv[c][3 * r], acc[slot][q])));
            }
            const int done = j - 2, slot = (u + 1) % 3;  // row j-2 has seen its last input row: store, reset
            if (done >= 0) {
                if (done < OY && oh0 + done < H && ow0 < W && !(HALO && (lane == 0 || lane == 31)))
                    __stcs(reinterpret_cast<float4*>(yk + (size_t)(oh0 + done) * W + ow0),
                           make_float4(acc[slot][0], acc[slot][1], acc[slot][2], acc[slot][3]));
#pragma unroll
                for (int q = 0; q < VX; ++q) acc[slot][q] = 0.f;
            }
        }
    }
}

// Stride 2 (the lab's stride-2 layer). Output row o reads input rows 2o - pad + r, r = 0, 1, 2, so walking down
// the strip, input row q (counted from the strip's first, 2·oh0 - pad) feeds output row q/2 through filter row
// q % 2 and, when q is even, also finishes output row q/2 - 1 through filter row 2: two accumulator rows
// alternate. A lane's 4 outputs read 8 input columns (two float4 per channel) and one more, the last column of
// the lane to the left (pad 1) or the first of the lane to the right (pad 0), by shuffle. Rows are loaded 2
// ahead: 12 float4 per thread in flight. The output rows of the lab's layer (4095 wide) are not 16-byte
// aligned, so they are stored as 4 floats unless OW % 4 == 0.
__device__ void strip_3x3_s2(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ yk,
                             int n, int k, int H, int W, int pad, int OH, int OW, int oh0, int ow0, int lane)
{
    float wv[CH][9];
    const float* xc[CH];
    lab_operands(x, w, n, k, H, W, wv, xc);

    const int iw0 = 2 * ow0, ih0 = 2 * oh0 - pad, rows = 2 * OY + 1;  // input rows ih0 .. ih0 + 2·OY
    float4 ring[2][CH][2];                                               // input row q sits in slot q % 2
    auto load = [&](float4 (&dst)[CH][2], int ih) {
#pragma unroll
        for (int c = 0; c < CH; ++c) dst[c][0] = row4(xc[c], ih, H, W, iw0), dst[c][1] = row4(xc[c], ih, H, W, iw0 + 4);
    };
    load(ring[0], ih0);
    load(ring[1], ih0 + 1);

    // Unrolled 4 rows at a time, so that both the ring slot (q % 2) and the accumulator row ((q / 2) % 2) are
    // constants.
    float acc[2][VX] = {};
#pragma unroll 1
    for (int q0 = 0; q0 < rows; q0 += 4) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int q = q0 + u, ih = ih0 + q;
            if (q >= rows) break;
            float in[CH][2 * VX + 1];  // input columns iw0 - pad .. iw0 + 8 - pad
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                const float4 a = ring[u % 2][c][0], b = ring[u % 2][c][1];
                const bool row_ok = (unsigned)ih < (unsigned)H;
                // (both branches index `in` with constants: a run-time offset would put it in local memory)
                if (pad) {
                    float left = __shfl_up_sync(0xffffffffu, b.w, 1);
                    if (lane == 0) left = row_ok && iw0 > 0 && iw0 <= W ? __ldg(xc[c] + (size_t)ih * W + iw0 - 1) : 0.f;
                    in[c][0] = left, in[c][1] = a.x, in[c][2] = a.y, in[c][3] = a.z, in[c][4] = a.w;
                    in[c][5] = b.x, in[c][6] = b.y, in[c][7] = b.z, in[c][8] = b.w;
                } else {
                    float right = __shfl_down_sync(0xffffffffu, a.x, 1);
                    if (lane == 31) right = row_ok && iw0 + 8 < W ? __ldg(xc[c] + (size_t)ih * W + iw0 + 8) : 0.f;
                    in[c][0] = a.x, in[c][1] = a.y, in[c][2] = a.z, in[c][3] = a.w;
                    in[c][4] = b.x, in[c][5] = b.y, in[c][6] = b.z, in[c][7] = b.w, in[c][8] = right;
                }
            }
            if (q + 2 < rows) load(ring[u % 2], ih + 2);  // refill the slot just read

            const int out = (u / 2) % 2;  // accumulator row of output q/2 (q0 is a multiple of 4)
            auto apply = [&](float (&a)[VX], int r) {
#pragma unroll
                for (int c = 0; c < CH; ++c)
#pragma unroll
                    for (int v = 0; v < VX; ++v)
                        a[v] = fmaf(in[c][2 * v + 2], wv[c][3 * r + 2],
                                    fmaf(in[c][2 * v + 1], wv[c][3 * r + 1], fmaf(in[c][2 * v], wv[c][3 * r], a[v])));
            };
            if (q / 2 < OY) apply(acc[out], u % 2);
            if (u % 2 == 0 && q >= 2) {  // output row q/2 - 1 gets its filter row 2 and is done: store, reset
                float(&done)[VX] = acc[out ^ 1];
                apply(done, 2);
                const int oh = oh0 + q / 2 - 1;
                if (oh < OH && ow0 < OW) {
                    float* dst = yk + (size_t)oh * OW + ow0;
                    if (OW % 4 == 0)
                        __stcs(reinterpret_cast<float4*>(dst), make_float4(done[0], done[1], done[2], done[3]));
                    else
#pragma unroll
                        for (int v = 0; v < VX; ++v)
                            if (ow0 + v < OW) __stcs(dst + v, done[v]);
                }
#pragma unroll
                for (int v = 0; v < VX; ++v) done[v] = 0.f;
            }
        }
    }
}

__device__ void strip_generic(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ yk,
                              int n, int k, int C, int H, int W, int R, int S, int stride, int pad, int OH, int OW,
                              int oh0, int ow0)
{
    for (int i = 0; i < OY && oh0 + i < OH; ++i)
        for (int q = 0; q < VX; ++q) {
            const int oh = oh0 + i, ow = ow0 + q;
            if (ow >= OW) break;
            float acc = 0.f;
            for (int c = 0; c < C; ++c)
                for (int r = 0; r < R; ++r) {
                    const int ih = oh * stride - pad + r;
                    if ((unsigned)ih >= (unsigned)H) continue;
                    for (int s = 0; s < S; ++s) {
                        const int iw = ow * stride - pad + s;
                        if ((unsigned)iw < (unsigned)W)
                            acc = fmaf(__ldg(x + (((size_t)n * C + c) * H + ih) * W + iw),
                                       __ldg(w + (((size_t)k * C + c) * R + r) * S + s), acc);
                    }
                }
            yk[(size_t)oh * OW + ow] = acc;
        }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
conv_sliding_stream(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N, int C,
                    int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    const int lane = threadIdx.x % TX;
    // With HALO, stride 1 takes 120 columns a warp, its lanes' float4s starting 4 columns to the left.
    const int ow0 = (blockIdx.x * TX + lane) * VX, ow0_halo = blockIdx.x * (TX - 2) * VX + (lane - 1) * VX;
    const int oh0 = (blockIdx.y * TY + threadIdx.x / TX) * OY;
    const int n = blockIdx.z / K, k = blockIdx.z % K;
    float* yk = y + ((size_t)n * K + k) * OH * OW;
    // Uniform across the grid: every thread takes the same path (the fast one shuffles across the warp).
    const bool lab_3x3 = C == CH && R == 3 && S == 3 && W % 4 == 0;
    if (lab_3x3 && stride == 1 && pad == 1 && OW == W && OH == H)
        strip_3x3_s1(x, w, yk, n, k, H, W, oh0, HALO ? ow0_halo : ow0, lane);
    else if (HALO && blockIdx.x * TX * VX >= OW)  // the grid is sized for 120 columns a warp; these have none
        return;
    else if (lab_3x3 && stride == 2 && (pad == 0 || pad == 1))
        strip_3x3_s2(x, w, yk, n, k, H, W, pad, OH, OW, oh0, ow0, lane);
    else if (oh0 < OH)
        strip_generic(x, w, yk, n, k, C, H, W, R, S, stride, pad, OH, OW, oh0, ow0);
}
