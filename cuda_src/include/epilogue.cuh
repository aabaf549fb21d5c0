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

// ---- requantised int8 chunks through the float adder, not the conversion unit ----------------------------------
// An SM converts between 32-bit integers and floats at 16 values a clock, an eighth of its float adds (the CUDA
// C++ Programming Guide's throughput table). A requantised int8 epilogue converts twice an output (its residual
// in, its value out): at an int8 tensor-core convolution's 128x128 tile, by those rates, some two thousand clocks
// of each SM sub-partition's conversion unit, near half the tile's wgmmas at ResNet-50's 28² layer at the tensor
// cores' peak, left exposed wherever no other tile's wgmmas run under it. These two take the same
// exact steps with adds and byte permutes: a float of exponent 2^23 holds a small whole number in its low mantissa
// bits, one unit in its last place.

// Sixteen int8 residuals as floats. Byte b, biased to b + 128 (XOR 0x80) and placed under the exponent of 2^23
// (PRMT: the byte, two zero bytes, 0x4B), is the float 2^23 + 128 + b exactly; less 2^23 + 128, b.
__device__ __forceinline__ void int8x16_load(uint4 chunk, float (&z)[16])
{
    const uint32_t words[4] = {chunk.x ^ 0x80808080u, chunk.y ^ 0x80808080u, chunk.z ^ 0x80808080u,
                               chunk.w ^ 0x80808080u};
#pragma unroll
    for (int q = 0; q < 16; ++q)
        z[q] = __fsub_rn(__uint_as_float(__byte_perm(words[q / 4], 0x4B000000u, 0x7440 | (q % 4))), 8388736.f);
}

// Sixteen values rounded half to even and saturated to int8, packed: each clamped to [-128, 127] first (rounding
// is monotone and the bounds are whole numbers, so this equals cvt.rni.sat's round-then-saturate), then added to
// 1.5·2^23: the adder rounds the sum to a whole number, to nearest even, and keeps it, two's complement, in the low
// byte. (A NaN, which no exactly checked problem makes, saturates to -128 here, to 0 through cvt.)
__device__ __forceinline__ uint4 int8x16_store(const float (&v)[16])
{
    uint32_t b[16];
#pragma unroll
    for (int q = 0; q < 16; ++q) b[q] = __float_as_uint(__fadd_rn(fminf(fmaxf(v[q], -128.f), 127.f), 12582912.f));
    uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; ++w)  // low bytes of 4w, 4w + 1 into bytes 0, 1; of 4w + 2, 4w + 3 into bytes 2, 3
        words[w] = __byte_perm(__byte_perm(b[4 * w], b[4 * w + 1], 0x0040),
                               __byte_perm(b[4 * w + 2], b[4 * w + 3], 0x0040), 0x5410);
    return make_uint4(words[0], words[1], words[2], words[3]);
}

// A 16-byte chunk of a requantised int8 output: the epilogue's float steps on each of its 16 accumulators
// (epilogue_value, with the 16 columns' terms), its residual chunk z read and its result stored by the two above.
// (Pointers, not arrays of 16, so that a kernel built for another output type still compiles the call it skips.)
__device__ __forceinline__ uint4 epilogue_int8x16(const int* acc, const ChannelTerms* t, float gamma, uint4 z)
{
    float zf[16], v[16];
    if constexpr (EPI_HAS_ADD) int8x16_load(z, zf);
#pragma unroll
    for (int q = 0; q < 16; ++q)
        v[q] = epilogue_value(static_cast<float>(acc[q]), t[q], gamma, EPI_HAS_ADD ? zf[q] : 0.f);
    return int8x16_store(v);
}
