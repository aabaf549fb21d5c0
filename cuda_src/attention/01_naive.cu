// Attention, the plain way: one thread block per query row, two passes over the keys, everything in fp32.
//
// O[b,h,i,:] = Σ_j p_j · V[b,kv,j,:] / Σ_j p_j,   p_j = exp(s_j − m),   s_j = Q[b,h,i,:]·K[b,kv,j,:] / √D,
// with m the row's largest score (kv = h / (H / H_kv); causal: j ≤ i only).
//
// Why two passes: a row's scores (S of them: 64 KiB of fp32 at S = 16k) do not fit in shared memory, and exp(s)
// without m overflows (fp32 at s = 88, a 16-bit P at s = 11). Pass 1 finds m: each thread takes every
// THREADS-th key, the block reduces the threads' maxima. Pass 2 takes the keys THREADS at a time: each thread
// computes one p_j into shared memory, then each thread owns output columns and adds p_j · V[j, d] for the chunk
// (consecutive threads read consecutive d: V's rows are read coalesced). The sum Σ p_j is reduced at the end.
//
// What it costs: each row reads all of K twice and V once, so K and V are read S times per head (from L2 at best),
// and the scores are computed twice. 02_flash_mma.cu reads each K/V tile once per 64 query rows and keeps the
// scores in registers.
//
// fp16, bf16 or fp8 (e4m3, with per-tensor scales Q_scale, K_scale, V_scale: null pointers read as 1) in; the
// output type out. Launch: grid (S, B·H), THREADS threads, no dynamic shared memory; any S and D ≤ MAX_D.

#include "attention_common.cuh"

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT __half
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef MAX_D
#define MAX_D 256
#endif

static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps");

extern "C" __global__ void __launch_bounds__(THREADS)
attention_naive(const ELEM* __restrict__ Q, const ELEM* __restrict__ K, const ELEM* __restrict__ V,
                ELEM_OUT* __restrict__ O, const float* __restrict__ Q_scale, const float* __restrict__ K_scale,
                const float* __restrict__ V_scale, int B, int H, int H_kv, int S, int D, int causal)
{
    __shared__ float q[MAX_D];
    __shared__ float p[THREADS];
    __shared__ float scratch[THREADS / 32];

    const int i = blockIdx.x, b = blockIdx.y / H, h = blockIdx.y % H;
    const ELEM* k = K + head_offset(b, kv_head(h, H, H_kv), H_kv, S, D);
    const ELEM* v = V + head_offset(b, kv_head(h, H, H_kv), H_kv, S, D);
    const size_t row = head_offset(b, h, H, S, D) + static_cast<size_t>(i) * D;
    // fp8's dequantisation: the scores carry Q's and K's scales, the output V's (1 where there are none)
    const float score_scale = scale_of(Q_scale) * scale_of(K_scale) * rsqrtf(static_cast<float>(D));
    const float v_scale = scale_of(V_scale);
    const int keys = keys_seen(i, S, causal);

    for (int d = threadIdx.x; d < D; d += THREADS) q[d] = to_float(Q[row + d]);
    __syncthreads();

    auto score = [&](int j) {
        const ELEM* kj = k + static_cast<size_t>(j) * D;
        float s = 0.f;
        for (int d = 0; d < D; ++d) s += q[d] * to_float(kj[d]);
        return s * score_scale;
    };

    // Pass 1: the row's largest score.
    float m = -INFINITY;
    for (int j = threadIdx.x; j < keys; j += THREADS) m = fmaxf(m, score(j));
    m = block_reduce(m, scratch, [](float a, float c) { return fmaxf(a, c); });

    // Pass 2: p_j = exp(s_j − m), THREADS keys at a time; their sum, and their weighted sum of V's rows.
    float sum = 0.f;
    float acc[(MAX_D + THREADS - 1) / THREADS] = {};  // this thread's output columns d = threadIdx.x + c·THREADS
    for (int j0 = 0; j0 < keys; j0 += THREADS) {
        const int j = j0 + threadIdx.x;
        const float pj = j < keys ? __expf(score(j) - m) : 0.f;
        sum += pj;
        __syncthreads();  // the previous chunk's p is no longer read
        p[threadIdx.x] = pj;
        __syncthreads();
        const int chunk = min(THREADS, keys - j0);
        for (int c = 0; c * THREADS + static_cast<int>(threadIdx.x) < D; ++c) {
            const int d = c * THREADS + threadIdx.x;
            float a = 0.f;
            for (int jj = 0; jj < chunk; ++jj) a += p[jj] * to_float(v[static_cast<size_t>(j0 + jj) * D + d]);
            acc[c] += a;
        }
    }
    sum = block_reduce(sum, scratch, [](float a, float c) { return a + c; });

    const float norm = v_scale / sum;
    for (int c = 0; c * THREADS + static_cast<int>(threadIdx.x) < D; ++c)
        store_float(O + row + c * THREADS + threadIdx.x, acc[c] * norm);
}
