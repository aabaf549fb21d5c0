// Hopper (sm_90a) building blocks shared by the tensor-core GEMMs (gemm/08_tf32.cu, gemm/09_tf32_tma.cu,
// gemm/10_wgmma_tma.cu), convolutions (conv/12-16) and attention (attention/03_fa3_wgmma.cu): warpgroup MMA
// (wgmma) and its shared-memory descriptors; with it come the mbarrier and cluster pieces of an async pipeline
// (hopper_sync.cuh) and TMA (hopper_tma.cuh).
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

// The pipeline's other halves: mbarriers, rings and clusters; TMA.
#include "hopper_sync.cuh"
#include "hopper_tma.cuh"
