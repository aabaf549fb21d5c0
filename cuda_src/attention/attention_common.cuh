// What the attention kernels share: element conversions for every input type (fp16, bf16, fp8 e4m3), fp8's scales
// and byte work, the query-head to key/value-head mapping of grouped-query attention, block-wide reductions, and
// the flash kernels' cp.async tile copy and their online softmax.
//
// Q, O are [B, H, S, D] and K, V [B, H_kv, S, D], each head's S×D rows contiguous (gpubench/ops/attention.py).
// Query head h reads key/value head h / (H / H_kv): with H_kv = H every head has its own, with H_kv = 1 all share one.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cstdint>

__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__nv_fp8_e4m3 x) { return static_cast<float>(x); }

__device__ __forceinline__ void store_float(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_float(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// A per-tensor scale (fp8's Q_scale, K_scale, V_scale): a null pointer, as fp16 and bf16 problems pass, reads as 1.
__device__ __forceinline__ float scale_of(const float* s) { return s ? *s : 1.f; }

constexpr float FP8_MAX = 448.f;  // e4m3's largest finite value (gpubench/core/dtypes.py's FP8_MAX)

// Four floats rounded to nearest e4m3, saturating at ±FP8_MAX, one byte each, `a` in the low byte.
__device__ __forceinline__ uint32_t pack4_e4m3(float a, float b, float c, float d)
{
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
    const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
    return lo | (hi << 16);
}

// A 4×4 block of bytes transposed: byte j of in[r] (low byte first) becomes byte r of out[j]. Each prmt
// (__byte_perm) picks 4 of the 8 bytes of two words: first rows 0 and 1 (2 and 3) interleaved byte by byte, then
// those pairs interleaved 16 bits at a time.
__device__ __forceinline__ void transpose4x4_bytes(const uint32_t (&in)[4], uint32_t (&out)[4])
{
    const uint32_t lo01 = __byte_perm(in[0], in[1], 0x5140);  // in0.b0 in1.b0 in0.b1 in1.b1
    const uint32_t hi01 = __byte_perm(in[0], in[1], 0x7362);  // in0.b2 in1.b2 in0.b3 in1.b3
    const uint32_t lo23 = __byte_perm(in[2], in[3], 0x5140);
    const uint32_t hi23 = __byte_perm(in[2], in[3], 0x7362);
    out[0] = __byte_perm(lo01, lo23, 0x5410);  // in0.b0 in1.b0 in2.b0 in3.b0
    out[1] = __byte_perm(lo01, lo23, 0x7632);  // in0.b1 in1.b1 in2.b1 in3.b1
    out[2] = __byte_perm(hi01, hi23, 0x5410);
    out[3] = __byte_perm(hi01, hi23, 0x7632);
}

// The first element of head (b, h) of a [B, heads, S, D] tensor: 64-bit, since B·H·S·D passes 2^31 at S = 16k.
__device__ __forceinline__ size_t head_offset(int b, int h, int heads, int S, int D)
{
    return (static_cast<size_t>(b) * heads + h) * S * static_cast<size_t>(D);
}

// The key/value head a query head reads (grouped-query attention).
__device__ __forceinline__ int kv_head(int h, int H, int H_kv) { return h / (H / H_kv); }

// The largest key a query row may see, plus one: all S keys, or (causal) the keys up to and including the row.
__device__ __forceinline__ int keys_seen(int row, int S, int causal) { return causal ? min(row + 1, S) : S; }

// x reduced over the block by `op` (every thread gets the result). `scratch` holds one float per warp.
template <typename Op>
__device__ float block_reduce(float x, float* scratch, Op op)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int o = 16; o > 0; o >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = scratch[0];
    for (int w = 1; w < warps; ++w) x = op(x, scratch[w]);
    return x;
}

// ---- the flash kernels' copies: 16-byte cp.async, rows past S zero-filled --------------------------------------

// 16 bytes global → shared, or 16 zero bytes where the row is past the end (the source is then not read).
__device__ __forceinline__ void copy16(void* dst, const void* src, bool inside)
{
    const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_groups() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Rows row0..row0+ROWS−1 of a head's [S, COLS] matrix into a shared tile whose rows lie LD elements apart; the
// whole block (THREADS threads) copies, 16 bytes a copy.
template <int ROWS, int COLS, int LD, int THREADS, typename T>
__device__ __forceinline__ void load_rows(T* tile, const T* head, int row0, int S)
{
    constexpr int PER_CHUNK = 16 / sizeof(T), CHUNKS = COLS / PER_CHUNK;  // elements a copy, copies a row
    static_assert(COLS % PER_CHUNK == 0 && LD % PER_CHUNK == 0, "rows of whole, aligned 16-byte chunks");
    for (int c = threadIdx.x; c < ROWS * CHUNKS; c += THREADS) {
        const int r = c / CHUNKS, col = (c % CHUNKS) * PER_CHUNK;
        const bool inside = row0 + r < S;
        copy16(tile + r * LD + col, head + static_cast<size_t>(inside ? row0 + r : 0) * COLS + col, inside);
    }
}

// ---- the flash kernels' online softmax ---------------------------------------------------------------------------

// One key tile of the online softmax, for a thread's two query rows g (i = 0) and g + 8 (i = 1) of an mma.sync
// m16n8 C fragment: s[nb] holds keys k0 + 8·nb + 2t and + 1 of both rows, so a row's scores lie in the four threads
// of a quad. Scores of keys past S (and, causal, past the row) become −inf; the rest are scaled into the log2
// domain (scale_log2 = log2(e)/√D, times fp8's Q_scale·K_scale) and exponentiated against the rows' new maxima m,
// which rescale the partial sums ℓ and the output rows o by exp2(m_old − m_new). s is left holding P.
template <int KBLOCKS, int DBLOCKS>
__device__ __forceinline__ void online_softmax_tile(float (&s)[KBLOCKS][4], float (&o)[DBLOCKS][4], float (&m)[2],
                                                    float (&l)[2], int row_g, int k0, int t, int S, int causal,
                                                    float scale_log2)
{
    for (int i = 0; i < 2; ++i) {
        const int row = row_g + 8 * i;
        float top = -INFINITY;
        for (int nb = 0; nb < KBLOCKS; ++nb) {
            for (int c = 0; c < 2; ++c) {
                const int key = k0 + nb * 8 + 2 * t + c;
                float& x = s[nb][2 * i + c];
                x = (key < S && !(causal && key > row)) ? x * scale_log2 : -INFINITY;
                top = fmaxf(top, x);
            }
        }
        top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
        top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
        const float m_new = fmaxf(m[i], top);  // finite: key 0 is in the first tile of every row
        const float alpha = exp2f(m[i] - m_new);  // 0 at the first tile (m = −inf)
        float sum = 0.f;
        for (int nb = 0; nb < KBLOCKS; ++nb) {
            for (int c = 0; c < 2; ++c) {
                float& x = s[nb][2 * i + c];
                x = exp2f(x - m_new);
                sum += x;
            }
        }
        l[i] = l[i] * alpha + sum;
        m[i] = m_new;
        for (int d = 0; d < DBLOCKS; ++d) {
            o[d][2 * i] *= alpha;
            o[d][2 * i + 1] *= alpha;
        }
    }
}
