// Hopper (sm_90a) TMA, part of hopper.cuh (include that): boxes of a tensor copied between global and shared
// memory by the copy engine, described by host-built tensor maps, and the bulk-copy groups and named barriers
// that order them.
#pragma once
#include <cstdint>

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
