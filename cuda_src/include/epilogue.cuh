// The fused epilogue on the device: what gpubench/ops/epilogue.py defines, in the same order,
//
//     e = act(α · s[k] · acc + β · bias[k] + γ · z)        (act: ReLU for bias-relu and bias-relu-add)
//
// then stored in the output's type: rounded once to a float or half type; for int8 rounded half to even and
// saturated to [-128, 127] in one instruction (cvt.rni.sat.s8.f32, the float64 rule's rint and clip). The residual
// is added before the ReLU: the source document's BiasAddLinearCombinationRelu.
//
// The epilogue's kind is a compile-time choice, -DEPILOGUE=<index> (none 0, bias 1, bias-relu 2, bias-relu-add 3):
// the build of a kernel without one carries no code for it. α, β and γ arrive as float arguments; the bias and the
// per-channel scales as pointers (null where the problem has none: a per-tensor α).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#define EPI_NONE 0
#define EPI_BIAS 1
#define EPI_BIAS_RELU 2
#define EPI_BIAS_RELU_ADD 3

#ifndef EPILOGUE
#define EPILOGUE EPI_NONE
#endif

constexpr bool EPI_HAS_BIAS = EPILOGUE >= EPI_BIAS;
constexpr bool EPI_HAS_RELU = EPILOGUE >= EPI_BIAS_RELU;
constexpr bool EPI_HAS_ADD = EPILOGUE == EPI_BIAS_RELU_ADD;

struct EpilogueArgs {
    float alpha, beta, gamma;
    const float* bias;   // K values, or null (no bias)
    const float* scale;  // K per-channel factors of α, or null (per tensor)
};

// α·s[k] and β·bias[k] of output channel k: what a thread keeps for each of its columns before its rows.
struct ChannelTerms {
    float scale, shift;
};

__device__ __forceinline__ ChannelTerms channel_terms(const EpilogueArgs& e, int k)
{
    ChannelTerms t;
    t.scale = e.scale ? e.alpha * e.scale[k] : e.alpha;
    t.shift = 0.f;
    if constexpr (EPI_HAS_BIAS) t.shift = e.beta * e.bias[k];
    return t;
}

// e for one accumulator; z is read only where the epilogue adds it. Multiplies and adds stay apart (no FMA
// contraction) so each rounds where the definition's steps do; on int8 problems every one of them is exact.
__device__ __forceinline__ float epilogue_value(float acc, const ChannelTerms& t, float gamma, float z)
{
    float v = __fmul_rn(acc, t.scale);
    if constexpr (EPI_HAS_BIAS) v = __fadd_rn(v, t.shift);
    if constexpr (EPI_HAS_ADD) v = __fadd_rn(v, __fmul_rn(gamma, z));
    if constexpr (EPI_HAS_RELU) v = fmaxf(v, 0.f);
    return v;
}

// An int32 output's epilogue, in integers: its α, β and γ are whole numbers and its scaling per tensor
// (gpubench/ops/epilogue.py refuses anything else there), so every step is exact, whatever the accumulator's size.
__device__ __forceinline__ int32_t epilogue_value_int(int32_t acc, const EpilogueArgs& e, int k, int32_t z)
{
    long long v = static_cast<long long>(e.alpha) * acc;
    if constexpr (EPI_HAS_BIAS) v += static_cast<long long>(e.beta) * static_cast<long long>(e.bias[k]);
    if constexpr (EPI_HAS_ADD) v += static_cast<long long>(e.gamma) * z;
    if constexpr (EPI_HAS_RELU) v = v > 0 ? v : 0;
    return static_cast<int32_t>(v);
}

// The value stored in the output's type (the only rounding of a float output).
template <typename T>
__device__ __forceinline__ T epilogue_store(float v);

template <>
__device__ __forceinline__ float epilogue_store<float>(float v) { return v; }

template <>
__device__ __forceinline__ __half epilogue_store<__half>(float v) { return __float2half_rn(v); }

template <>
__device__ __forceinline__ __nv_bfloat16 epilogue_store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <>
__device__ __forceinline__ int32_t epilogue_store<int32_t>(float v) { return __float2int_rn(v); }

template <>
__device__ __forceinline__ int8_t epilogue_store<int8_t>(float v)
{
    int32_t r;
    asm("cvt.rni.sat.s8.f32 %0, %1;" : "=r"(r) : "f"(v));  // round half to even, then clamp to [-128, 127]
    return static_cast<int8_t>(r);
}

// A residual element as a float (z lies in the output's type) ...
template <typename T>
__device__ __forceinline__ float epilogue_load(T z) { return static_cast<float>(z); }

template <>
__device__ __forceinline__ float epilogue_load<__half>(__half z) { return __half2float(z); }

template <>
__device__ __forceinline__ float epilogue_load<__nv_bfloat16>(__nv_bfloat16 z) { return __bfloat162float(z); }

// ... and as an integer, for the integer epilogue (an int32 residual as it is).
template <typename T>
__device__ __forceinline__ int32_t epilogue_load_int(T z) { return static_cast<int32_t>(epilogue_load<T>(z)); }

template <>
__device__ __forceinline__ int32_t epilogue_load_int<int32_t>(int32_t z) { return z; }
