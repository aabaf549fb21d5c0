// Hopper (sm_90a) building blocks shared by the tensor-core GEMMs (gemm/08_tf32.cu, gemm/09_tf32_tma.cu,
// gemm/10_wgmma_tma.cu), convolutions (conv/12-16) and attention (attention/03_fa3_wgmma.cu): warpgroup MMA
// (wgmma), its shared-memory descriptors, and the TMA + mbarrier pieces of an async pipeline.
#pragma once
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <type_traits>

// ---- wgmma ----------------------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t to_tf32(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// wgmma reads shared memory through the "async proxy": writes made by ordinary stores must be fenced for it.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Descriptor of a K-major operand in 128B-swizzled rows of 128 bytes (PTX ISA "matrix descriptor"):
// bits 0-13 start address >> 4; 16-29 leading byte offset >> 4 (unused for swizzled K-major: 1 by convention);
// 32-45 stride byte offset >> 4 = 1024 bytes from one 8-row group to the next; 62-63 swizzle mode 1 = 128B.
// Base offset (49-51) stays 0: every 8-row group starts 1024-byte aligned.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

// The same for rows of ROW bytes swizzled at their width (TMA's 64- or 32-byte swizzle): an 8-row group is 8·ROW
// bytes (the stride byte offset), the mode 2 (64B) or 3 (32B); each 8-row group starts 8·ROW-byte aligned.
template <int ROW>
__device__ __forceinline__ uint64_t smem_desc_rows(uint32_t addr)
{
    static_assert(ROW == 128 || ROW == 64 || ROW == 32, "swizzled rows of 128, 64 or 32 bytes");
    constexpr uint64_t mode = ROW == 128 ? 1 : ROW == 64 ? 2 : 3;
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(8 * ROW >> 4) << 32) | (mode << 62);
}

// Descriptor of an MN-major operand (M or N contiguous) in 128B-swizzled rows: each 128-byte row holds 64
// consecutive M (or N) elements of 16 bits at one k, 8 rows of consecutive k make a 1024-byte swizzle atom. Here
// the stride byte offset (32-45) steps from one 8-k atom to the next (1024 bytes) and the leading byte offset
// (16-29) from one 64-element column of atoms to the next (`lbo` bytes: one TMA box of 64 k rows, 8192).
__device__ __forceinline__ uint64_t smem_desc_mn(uint32_t addr, uint32_t lbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32) |
           (1ull << 62);
}

#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                "+f"(d[i + 6]), "+f"(d[i + 7])

// d[64×128] += a[64×8] (registers, TF32) · b[8×128] (shared memory, descriptor). Thread t of the warpgroup
// holds a = {(r, c), (r+8, c), (r, c+4), (r+8, c+4)} with r = 16·warp + lane/4, c = lane%4, and accumulator
// d[v] at row 16·warp + lane/4 + 8·((v>>1)&1), column 8·(v>>2) + 2·(lane%4) + (v&1).
__device__ __forceinline__ void wgmma_m64n128k8(float (&d)[64], const uint32_t* a, uint64_t b)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1;\n}"
        : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

#define ACC32(i) ACC8(i), ACC8(i + 8), ACC8(i + 16), ACC8(i + 24)
#define ACC64(i) ACC32(i), ACC32(i + 32)
#define ACC_N64 ACC32(0)              // the outputs of an n64 wgmma, as one macro argument
#define ACC_N128 ACC64(0)             // ... of an n128 one
#define ACC_N256 ACC64(0), ACC64(64)  // ... of an n256 one
#define ACC_N192 ACC64(0), ACC32(64)          // ... of an n192 one
#define ACC_N160 ACC64(0), ACC8(64), ACC8(72)  // ... of an n160 one (fp8-grouped's 160-column tiles)
#define ACC_N176 ACC64(0), ACC8(64), ACC8(72), ACC8(80)  // ... of an n176 one (fa3-wgmma's BN = 176)
#define ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define ACC_N232 ACC64(0), ACC32(64), ACC8(96), ACC8(104), ACC4(112)  // ... of an n232 one (4 rows of 58 pixels)
#define WGMMA_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WGMMA_D80 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}"
#define WGMMA_D88 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}"
#define WGMMA_D96 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define WGMMA_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WGMMA_D116 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115}"
#define WGMMA_D128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// One wgmma: INSTR's accumulators DREGS, then the two descriptors (operands IA, IB), scale-d from operand IP
// (0: d = a·b, 1: d += a·b), scale-a/-b 1, and for 16-bit types the transpose immediates (TRANS).
#define WGMMA_SS_ASM(INSTR, DREGS, IA, IB, IP, TRANS, OPS, ...)                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\n" INSTR " " DREGS ", %" IA ", %" IB       \
                 ", p, 1, 1" TRANS ";\n}"                                                                  \
                 : OPS : "l"(a), "l"(b), "r"(accumulate), ##__VA_ARGS__)

// d[64×N] (+)= A[64×K] · B[K×N] with both operands in shared memory (descriptors a, b), K = 32 bytes of T (k16
// for __half and __nv_bfloat16, k32 for e4m3), float32 accumulators: d[v] holds row 16·warp + lane/4 +
// 8·((v>>1)&1), column 8·(v>>2) + 2·(lane%4) + (v&1) of the warpgroup's tile. accumulate = 0 overwrites d.
// TA, TB = 1: that operand lies MN-major (see smem_desc_mn) and the tensor core transposes it as it reads; only
// 16-bit types may (fp8 wgmma takes K-major operands only).
template <typename T, int N, int TA = 0, int TB = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t a, uint64_t b, uint32_t accumulate)
{
    static_assert(N == 64 || N == 128 || N == 192 || N == 256 || (sizeof(T) == 2 && (N == 176 || N == 232)) ||
                      (sizeof(T) == 1 && N == 160),
                  "wgmma_ss: N 64, 128, 192 or 256 (and for 16-bit types 176, attention's 176-key tiles, and 232, "
                  "conv/16's whole rows of 58 pixels; for fp8 160, the grouped GEMM's 160-column tiles)");
    static_assert(sizeof(T) == 2 || (TA == 0 && TB == 0), "fp8 wgmma reads K-major operands only");
    if constexpr (N == 192) {
        if constexpr (sizeof(T) == 1)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3", WGMMA_D96, "96", "97", "98", "",
                         ACC_N192);
        else if constexpr (std::is_same_v<T, __half>)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16", WGMMA_D96, "96", "97", "98",
                         ", %99, %100", ACC_N192, "n"(TA), "n"(TB));
        else
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16", WGMMA_D96, "96", "97", "98",
                         ", %99, %100", ACC_N192, "n"(TA), "n"(TB));
    } else if constexpr (N == 160) {
        WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n160k32.f32.e4m3.e4m3", WGMMA_D80, "80", "81", "82", "",
                     ACC_N160);
    } else if constexpr (N == 176) {
        if constexpr (std::is_same_v<T, __half>)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16", WGMMA_D88, "88", "89", "90",
                         ", %91, %92", ACC_N176, "n"(TA), "n"(TB));
        else
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16", WGMMA_D88, "88", "89", "90",
                         ", %91, %92", ACC_N176, "n"(TA), "n"(TB));
    } else if constexpr (N == 232) {
        if constexpr (std::is_same_v<T, __half>)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n232k16.f32.f16.f16", WGMMA_D116, "116", "117", "118",
                         ", %119, %120", ACC_N232, "n"(TA), "n"(TB));
        else
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n232k16.f32.bf16.bf16", WGMMA_D116, "116", "117", "118",
                         ", %119, %120", ACC_N232, "n"(TA), "n"(TB));
    } else if constexpr (N == 256) {
        if constexpr (sizeof(T) == 1)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", WGMMA_D128, "128", "129", "130", "",
                         ACC_N256);
        else if constexpr (std::is_same_v<T, __half>)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", WGMMA_D128, "128", "129", "130",
                         ", %131, %132", ACC_N256, "n"(TA), "n"(TB));
        else
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", WGMMA_D128, "128", "129", "130",
                         ", %131, %132", ACC_N256, "n"(TA), "n"(TB));
    } else if constexpr (N == 64) {
        if constexpr (sizeof(T) == 1)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", WGMMA_D32, "32", "33", "34", "",
                         ACC_N64);
        else if constexpr (std::is_same_v<T, __half>)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", WGMMA_D32, "32", "33", "34",
                         ", %35, %36", ACC_N64, "n"(TA), "n"(TB));
        else
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", WGMMA_D32, "32", "33", "34",
                         ", %35, %36", ACC_N64, "n"(TA), "n"(TB));
    } else {
        if constexpr (sizeof(T) == 1)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", WGMMA_D64, "64", "65", "66", "",
                         ACC_N128);
        else if constexpr (std::is_same_v<T, __half>)
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", WGMMA_D64, "64", "65", "66",
                         ", %67, %68", ACC_N128, "n"(TA), "n"(TB));
        else
            WGMMA_SS_ASM("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", WGMMA_D64, "64", "65", "66",
                         ", %67, %68", ACC_N128, "n"(TA), "n"(TB));
    }
}

// d[64×N] (+)= A[64×16] · B[16×N] with A in registers (16-bit T) and B in shared memory (descriptor b; TB = 1:
// MN-major, transposed as read). Thread t of the warpgroup holds A as mma.sync m16n8k16's A fragment of its warp's
// 16 rows: a[0] = (r, c..c+1), a[1] = (r+8, c..c+1), a[2] = (r, c+8..c+9), a[3] = (r+8, c+8..c+9), r = 16·warp +
// lane/4, c = 2·(lane%4). That is exactly where an m64nNk16 accumulator keeps columns 16j.. 16j+15: registers
// 8j .. 8j+7 in pairs (attention/03_fa3_wgmma.cu feeds its softmax's P to the second product this way). The
// registers must not change until the wgmma has completed (a wait).
template <typename T, int N, int TB = 0>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b, uint32_t accumulate)
{
    static_assert(sizeof(T) == 2 && (N == 64 || N == 128), "wgmma_rs: 16-bit types, N 64 or 128");
    if constexpr (N == 64) {
        if constexpr (std::is_same_v<T, __half>)
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                         "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " WGMMA_D32
                         ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}"
                         : ACC_N64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(TB));
        else
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                         "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " WGMMA_D32
                         ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}"
                         : ACC_N64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(TB));
    } else {
        if constexpr (std::is_same_v<T, __half>)
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                         "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " WGMMA_D64
                         ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}"
                         : ACC_N128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(TB));
        else
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                         "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WGMMA_D64
                         ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}"
                         : ACC_N128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(TB));
    }
}

// ---- int8: wgmma s8 × s8 → s32 ----------------------------------------------------------------------------
// The integer wgmma takes only K-major operands (no transpose bits) and no scale-a/-b immediates: its operands are
// the two descriptors and scale-d. k32: 32 bytes of k a wgmma, as fp8's. Its accumulators are int32, held in the same
// places as the float ones above (row 16·warp + lane/4 + 8·((v>>1)&1), column 8·(v>>2) + 2·(lane%4) + (v&1)). No
// .satfinite: the sums of int8 products stay far inside int32 for any K gpubench draws (K·127² < 2³¹ up to K 133k).
#define IACC8(i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), \
                 "+r"(d[i + 6]), "+r"(d[i + 7])
#define IACC32(i) IACC8(i), IACC8(i + 8), IACC8(i + 16), IACC8(i + 24)
#define IACC64(i) IACC32(i), IACC32(i + 32)
#define WGMMA_S8_ASM(SHAPE, DREGS, IA, IB, IP, ...)                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned." SHAPE ".s32.s8.s8 " DREGS ", %" IA ", %" IB ", p;\n}"    \
                 : __VA_ARGS__ : "l"(a), "l"(b), "r"(accumulate))

// d[64×N] (+)= A[64×32] · B[32×N], int8 operands from shared memory (K-major descriptors), int32 accumulators.
// accumulate = 0 overwrites d.
template <int N>
__device__ __forceinline__ void wgmma_s8(int32_t (&d)[N / 2], uint64_t a, uint64_t b, uint32_t accumulate)
{
    static_assert(N == 64 || N == 128 || N == 256, "wgmma_s8: N 64, 128 or 256");
    if constexpr (N == 64)
        WGMMA_S8_ASM("m64n64k32", WGMMA_D32, "32", "33", "34", IACC32(0));
    else if constexpr (N == 128)
        WGMMA_S8_ASM("m64n128k32", WGMMA_D64, "64", "65", "66", IACC64(0));
    else
        WGMMA_S8_ASM("m64n256k32", WGMMA_D128, "128", "129", "130", IACC64(0), IACC64(64));
}

// wgmma_hold's wait for int32 accumulators.
template <int PENDING, int MI, int R>
__device__ __forceinline__ void wgmma_hold(int32_t (&acc)[MI][R])
{
    wgmma_wait<PENDING>();
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v = 0; v < R; ++v) asm volatile("" : "+r"(acc[i][v])::"memory");
}

// Wait for every wgmma in flight, and keep the compiler from reading the accumulators before that wait (it
// cannot see that the asynchronous wgmmas write them).
template <int MI>
__device__ __forceinline__ void wgmma_drain(float (&acc)[MI][64])
{
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v = 0; v < 64; ++v) asm volatile("" : "+f"(acc[i][v])::"memory");
}

// The same for one warpgroup's accumulators, MI blocks of N/2 registers (gemm/10_wgmma_tma.cu: MI = 2 at 256 ×
// 128), after a wait that leaves `PENDING` commit groups in flight.
template <int PENDING, int MI, int R>
__device__ __forceinline__ void wgmma_hold(float (&acc)[MI][R])
{
    wgmma_wait<PENDING>();
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v = 0; v < R; ++v) asm volatile("" : "+f"(acc[i][v])::"memory");
}

// stmatrix (sm_90): a warp stores 8×8 matrices of 16-bit values, each thread holding two neighbouring values of
// row lane/4 of each (columns 2·(lane%4), +1: the accumulator fragment of an m64nNk16 wgmma, 8 columns at a time),
// packed in one register a matrix. .trans stores each matrix transposed: fragment column c becomes the 16-byte row
// whose address lane 8·i + c gives (i: the matrix). x4: four matrices (lanes 0-31 give rows), x2: two (lanes 0-15).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t addr, uint32_t r0, uint32_t r1)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1)
                 : "memory");
}
// The same without .trans, four matrices: each lands as the fragment holds it, row lane/4 of matrix i at the
// address lane 8·i + lane/4 gives (conv/14's epilogue: accumulator rows into 16-byte chunks of output rows).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

// Store a warpgroup's accumulators of the transposed product (C^T = B^T · A^T, as both TF32 kernels compute it):
// accumulator (row r, column c) of tile i is C(m0 + 128i + c, n0 + r), with n0 the warpgroup's first column. For
// one register the warp writes 4 rows of C × 8 consecutive columns: four full 32-byte sectors.
template <int MI>
__device__ __forceinline__ void store_transposed(const float (&acc)[MI][64], float* __restrict__ C, int M, int N,
                                                 int m0, int n0)
{
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int n_base = n0 + 16 * warp + lane / 4, m_base = m0 + 2 * (lane % 4);
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v = 0; v < 64; ++v) {
            const int m = m_base + 128 * i + 8 * (v >> 2) + (v & 1), n = n_base + 8 * ((v >> 1) & 1);
            if (m < M && n < N) C[(size_t)m * N + n] = acc[i][v];
        }
}

// Stage a warpgroup's accumulators of the transposed product for a TMA store: rows 64q .. 64q+63 of the tile
// (accumulator columns, C's rows) × the warpgroup's 64 columns of C, as two 8 KB boxes of 64 rows × 32 floats in
// TMA's 128-byte swizzle (chunk (n/4) ^ (row % 8)), at `stage` (1024-byte aligned). For one register a warp writes
// 4 rows × 8 columns that land in 32 different banks.
template <int MI>
__device__ __forceinline__ void stage_transposed(const float (&acc)[MI][64], int q, uint8_t* stage)
{
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int i = q / 2, v0 = 32 * (q % 2);
#pragma unroll
    for (int v = v0; v < v0 + 32; ++v) {
        const int m = 8 * ((v - v0) >> 2) + 2 * (lane % 4) + (v & 1);      // row of C within the 64
        const int n = 16 * warp + lane / 4 + 8 * ((v >> 1) & 1);          // column of C within the 64
        const int c = n % 32;
        *reinterpret_cast<float*>(stage + (n / 32) * 8192 + m * 128 + (((c >> 2) ^ (m & 7)) << 4) + (c & 3) * 4) =
            acc[i][v];
    }
}

// A thread's warpgroup, from its warp. UNIFORM: broadcast from lane 0, which the compiler then knows to be the same in
// every lane of the warp, so what is built from it (the wgmma descriptors) can live in uniform registers: no R2UR
// move before each wgmma (gemm/10's and conv/14's UWG).
template <bool UNIFORM>
__device__ __forceinline__ int warpgroup_of(int warp)
{
    return UNIFORM ? __shfl_sync(0xffffffffu, warp / 4, 0) : warp / 4;
}

// ---- mbarriers (PTX ISA "mbarrier"): a phase completes when its arrivals are in and its byte count is met ----

__device__ __forceinline__ void mbar_init(uint32_t bar, int arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// Arrive and announce `bytes` of TMA data that will complete this phase (the producer's half of the deal).
__device__ __forceinline__ void mbar_expect_bytes(uint32_t bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// Arrive on a barrier of this block (release semantics at CTA scope).
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrive `count` times at once (the releases of several warps, made by one thread after a wait they share).
__device__ __forceinline__ void mbar_arrive_n(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Block until the phase of parity `parity` has completed. A fresh barrier counts its (imaginary) previous phase,
// parity 1, as complete: a producer waiting on "slot free" with parity 1 passes the first time round.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {  // try_wait itself suspends the thread for a while before it answers "not yet"
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// Whether the phase of parity `parity` has completed, without waiting (acquire semantics where it has, as a
// wait's): a consumer asks about its next slot before it waits for its own wgmmas, as cuBLASLt's loop does.
__device__ __forceinline__ bool mbar_test(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}

// The same wait with a suspend-time hint (10 ms, as CUTLASS's barriers give): the thread sleeps until the phase
// completes (or the hint runs out) instead of asking again, so waiting warps issue fewer instructions.
__device__ __forceinline__ void mbar_sleep(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
            "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity), "r"(10000000) : "memory");
    } while (!done);
}

// A place in an mbarrier ring of RING_SLOTS slots, carried from one slot to the next (gemm/10's and conv/14's
// CARRY): the slot and the parity of its phase, a compare and two selects a slot where `it % RING_SLOTS` and
// `(it / RING_SLOTS) & 1` would be computed from a count (a multiply-high where RING_SLOTS is not a power of two).
template <int RING_SLOTS>
struct RingSlot {
    int slot = 0;
    uint32_t phase = 0;
    // On to the next slot; true where the ring wrapped to slot 0 (a new phase).
    __device__ __forceinline__ bool advance()
    {
        const bool wrap = slot == RING_SLOTS - 1;
        slot = wrap ? 0 : slot + 1;
        phase ^= wrap;
        return wrap;
    }
    // Straight to the it-th slot of the ring's life (a consumer that skips the slots of others' tiles).
    __device__ __forceinline__ void seek(uint32_t it)
    {
        slot = it % RING_SLOTS;
        phase = (it / RING_SLOTS) & 1;
    }
};

// The same with the wgmma descriptors of the slot's operands at their first k step, which move A_STEP and B_STEP
// (16-byte units: the bytes from one slot to the next) a slot and go back to slot 0's at the wrap: a consumer's
// descriptors, sums ready before the full barrier answers, where rebuilding them from the slot's address would come
// between that answer and the first wgmma.
template <int RING_SLOTS, uint32_t A_STEP, uint32_t B_STEP>
struct RingCursor : RingSlot<RING_SLOTS> {
    uint64_t first_a, first_b;  // slot 0's
    uint64_t desc_a, desc_b;
    __device__ __forceinline__ RingCursor(uint64_t a, uint64_t b) : first_a(a), first_b(b), desc_a(a), desc_b(b) {}
    __device__ __forceinline__ void advance()
    {
        const bool wrap = RingSlot<RING_SLOTS>::advance();
        desc_a = wrap ? first_a : desc_a + A_STEP;
        desc_b = wrap ? first_b : desc_b + B_STEP;
    }
    __device__ __forceinline__ void seek(uint32_t it)
    {
        RingSlot<RING_SLOTS>::seek(it);
        desc_a = first_a + this->slot * A_STEP;
        desc_b = first_b + this->slot * B_STEP;
    }
};

// Arrive on the barrier at the same shared-memory offset in cluster block `rank` (this block included). Release
// semantics at CTA scope, the default, as for a local arrive: the arrive only says "done reading this slot", and
// the reads (wgmmas) have completed before it. (.release.cluster, which orders this thread's memory operations
// cluster-wide first, made 2-block clusters slower than single blocks: docs/perf-notes.md.)
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
    asm volatile(
        "{\n.reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(bar), "r"(rank) : "memory");
}

// The same arrive with release semantics at cluster scope: what gemm/09_tf32_tma.cu used to do, kept so that its
// PROBE = 5 can measure the cost.
__device__ __forceinline__ void mbar_arrive_cluster_release(uint32_t bar, uint32_t rank)
{
    asm volatile(
        "{\n.reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}" ::"r"(bar), "r"(rank) : "memory");
}

// One arrive on the barrier at this offset in each of the cluster's CLUSTER_BLOCKS blocks (1, 2 or 4; this block
// included): a consumer warpgroup's "done with this slot" to every producer that multicasts into it. Written out,
// not looped (a loop here made ptxas serialise gemm/09's wgmmas).
template <int CLUSTER_BLOCKS>
__device__ __forceinline__ void mbar_arrive_each_block(uint32_t bar)
{
    static_assert(CLUSTER_BLOCKS == 1 || CLUSTER_BLOCKS == 2 || CLUSTER_BLOCKS == 4, "clusters of 1, 2 or 4 blocks");
    if (CLUSTER_BLOCKS == 1) {
        mbar_arrive(bar);
    } else {
        mbar_arrive_cluster(bar, 0);
        mbar_arrive_cluster(bar, 1);
        if (CLUSTER_BLOCKS == 4) {
            mbar_arrive_cluster(bar, 2);
            mbar_arrive_cluster(bar, 3);
        }
    }
}

// A flag in global memory between blocks of one grid: the writer's earlier stores (each thread's, fenced, then
// gathered by a barrier) are visible to whoever acquires the value it releases (conv/14_tc_wgmma_tma.cu's SPLIT).
__device__ __forceinline__ void flag_release(uint32_t* flag, uint32_t value)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ uint32_t flag_acquire(const uint32_t* flag)
{
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    return v;
}

// ---- clusters ---------------------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// Every thread of every block in the cluster: barriers initialised here are visible there, and no block leaves
// while a neighbour may still write into its shared memory.
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// A ring's barriers at `bars`: RING_SLOTS "full" ones (the producer's one arrive, plus the bytes it announces), then
// RING_SLOTS "empty" ones (`releases` arrives: one per consumer warpgroup of the cluster). Thread 0 initialises them
// and makes them visible to the copy engine and the cluster's other blocks before any thread goes on.
template <int RING_SLOTS, int CLUSTER_BLOCKS>  // (not STAGES, CLUSTER: the kernels' -D macros)
__device__ __forceinline__ void ring_init(uint32_t bars, int releases)
{
    if (threadIdx.x == 0) {
        for (int s = 0; s < RING_SLOTS; ++s) {
            mbar_init(bars + 8 * s, 1);
            mbar_init(bars + 8 * (RING_SLOTS + s), releases);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER_BLOCKS > 1)
        cluster_sync();
    else
        __syncthreads();
}

// ---- TMA: a 2-D box of a tensor, described by a host-built CUtensorMap, copied into shared memory ----------

// The driver's CUtensorMap: 128 opaque bytes. gpubench keeps it in global memory (the backend copies it there and
// passes a pointer, like any array), which every launch API handles alike.
struct alignas(64) TensorMap {
    uint64_t opaque[16];
};

// The copy engine reads descriptors through its own proxy: order the host's copy of `map` before our TMA loads.
__device__ __forceinline__ void tma_acquire(const TensorMap* map)
{
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(map) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// Copy the box at (x, y) of `map` out of shared memory at `src` (clipped to the array), in this thread's bulk
// group; commit the group once its copies are issued.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, uint32_t src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(src) : "memory");
}
// The same for a 4-D box at (c, w, h, n), innermost first (conv/16's output rows: channels × columns × rows × 1)
__device__ __forceinline__ void tma_store_4d(const TensorMap* map, uint32_t src, int c, int w, int h, int n)
{
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Wait until this thread's bulk stores have read their shared memory (READ = true) or finished altogether.
template <bool READ>
__device__ __forceinline__ void bulk_wait()
{
    if (READ)
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    else
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Wait until at most PENDING of this thread's bulk groups are still reading their shared memory (a staging area
// used in turns: the group before may go on reading its buffer while the next one is written).
template <int PENDING>
__device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
}

// A barrier for `threads` threads (whole warps) under id 1..15, leaving the block's __syncthreads (id 0) alone.
__device__ __forceinline__ void named_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Arrive at named barrier `id` without waiting: with named_sync(id, threads) on the other side, a signal from one
// group of warps to another (here `threads` counts both groups).
__device__ __forceinline__ void named_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Copy the box at (x = inner coordinate, y) into `dst`; its bytes count towards `bar`'s phase. With `mask` != 0
// the same bytes land at the same offsets in every cluster block of the mask (and count on each one's barrier).
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, int x, int y, uint32_t bar,
                                            uint16_t mask = 0)
{
    const uint64_t m = reinterpret_cast<uint64_t>(map);
    if (mask == 0)
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
            ::"r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar) : "memory");
    else
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
            " [%0], [%1, {%2, %3}], [%4], %5;"
            ::"r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}

// Copy `bytes` (a multiple of 16) of global memory at `src` into shared memory at `dst`, both 16-byte aligned, as
// one bulk copy (no tensor map) whose bytes count towards `bar`'s phase (conv/14's epilogue: a tile's bias values).
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, int bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Copy one im2col box of a 4-D NHWC map (cuTensorMapEncodeIm2col; conv/14_tc_wgmma_tma.cu) into `dst`: the
// pixels-per-column pixels that start at input pixel (w, h) of image n, walked as the map's bounding box and
// traversal stride say (one output pixel after another, across rows and images), each seen through the filter tap
// (offset_w, offset_h), channels c .. c + channels-per-pixel. Whatever falls outside the tensor (padding, channels
// past C, images past N) arrives as zeros; the box's full byte count goes to `bar`.
__device__ __forceinline__ void tma_load_im2col_4d(uint32_t dst, const TensorMap* map, int c, int w, int h, int n,
                                                   uint16_t offset_w, uint16_t offset_h, uint32_t bar)
{
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(offset_w),
        "h"(offset_h) : "memory");
}

// Copy the box at (c, w, h, n) of a tiled 4-D map of an NHWC tensor (innermost first, as cuTensorMapEncodeTiled
// takes them) into `dst`: box[0] channels × box[1] columns × box[2] rows × box[3] images, dense in that order
// (conv/16_tc_wgmma_halo.cu: one halo tile). Coordinates may be negative or run past the tensor: those elements
// arrive as zeros, and the box's full byte count still goes to `bar`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const TensorMap* map, int c, int w, int h, int n,
                                            uint32_t bar)
{
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6];"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar) : "memory");
}
