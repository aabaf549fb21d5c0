// What the attention kernels share: element conversions for every input type (fp16, bf16, fp8 e4m3), the
// query-head to key/value-head mapping of grouped-query attention, and block-wide reductions.
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
