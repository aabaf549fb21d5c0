// Warp-level tensor-core pieces (sm_80+): ldmatrix, the m16n8k16 MMA in fp16 and bf16 with fp32 accumulators,
// and the XOR swizzle that lets ldmatrix read a row-major shared tile without bank conflicts.
//
// The fragments follow PTX's mma.m16n8k16 layouts (lane l, g = l / 4, t = l % 4):
//   A (16×16, row-major):  a0 = row g,   k 2t..2t+1;  a1 = row g+8, same k;  a2, a3: the same rows at k + 8.
//   B (16×8,  "col"):      b0 = col g,   k 2t..2t+1;  b1: k + 8.
//   C (16×8,  fp32):       c0, c1 = row g, cols 2t, 2t+1;  c2, c3 = row g+8.
// ldmatrix gives exactly these when the tile sits in shared memory with k contiguous in each row: A as [m][k]
// and B as [n][k] (a filter is one such row: KRSC is K-major).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8×8 matrices of 16-bit elements: lanes 8q..8q+7 give the row addresses of matrix q, and every lane gets
// its two elements of each matrix in r[q].
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// d += a · b on the tensor cores, m16n8k16, fp32 accumulate. The element type picks the instruction.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                         const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Two fp32 values rounded (to nearest) into the output type, as one 32-bit word.
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half*)
{
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16*)
{
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}
// The other way: one 32-bit word of two 16-bit values (an ldmatrix fragment's pair) as two floats, exactly.
__device__ __forceinline__ float2 unpack2(uint32_t w, __half*)
{
    return __half22float2(*reinterpret_cast<const __half2*>(&w));
}
__device__ __forceinline__ float2 unpack2(uint32_t w, __nv_bfloat16*)
{
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}
__device__ __forceinline__ void store1(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store1(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// A shared tile of ROWS rows of COLS 16-bit elements (COLS/8 chunks of 16 bytes each), chunk j of row r stored at
// chunk j ^ f(r). ldmatrix reads one chunk column of 8 consecutive rows at a time; f spreads those 8 chunks over
// 8 distinct 16-byte bank groups (a 128-byte row repeats every row, a 64-byte one every two, a 32-byte one every
// four), so each ldmatrix phase and each 16-byte cp.async of a warp is conflict-free, with no padding.
template <int COLS>
struct Swizzled {
    static_assert(COLS == 16 || COLS == 32 || COLS == 64, "rows of 32, 64 or 128 bytes");
    static constexpr int CHUNKS = COLS / 8;
    static constexpr int ROWS_PER_LINE = 8 / CHUNKS;  // rows that share one 128-byte line of banks

    __device__ __forceinline__ static int key(int row) { return (row / ROWS_PER_LINE) % CHUNKS; }
    // Element offset of (row, chunk).
    __device__ __forceinline__ static int at(int row, int chunk) { return row * COLS + ((chunk ^ key(row)) << 3); }
};

// When this thread's cp.async copies issued so far have landed, count one arrival on the mbarrier at `bar` (a
// shared-memory address). .noinc: the arrival is one of those the barrier was initialised to expect.
__device__ __forceinline__ void cp_async_arrive(uint32_t bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
