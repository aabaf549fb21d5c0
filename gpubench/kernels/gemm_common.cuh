// Pieces shared by the faster GEMM kernels (gemm_warptile.cu, gemm_async.cu).
#pragma once

// Which BM×BN tile of C this block computes, from a 1-D grid. With GROUP > 0 the tiles are visited in
// bands of G = GROUP tile-rows, column by column inside a band: the blocks resident at one time then touch G row
// panels of A and few column panels of B, which stay in L2, instead of one row panel and every panel of B.
// GROUP = 0 is plain row-major order. pid is the tile's place in that order.
template <int GROUP>
__device__ __forceinline__ void tile_coords(int pid, int tiles_m, int tiles_n, int& tile_m, int& tile_n)
{
    if (GROUP == 0) {
        tile_m = pid / tiles_n;
        tile_n = pid % tiles_n;
        return;
    }
    const int band = GROUP * tiles_n;
    const int first = (pid / band) * GROUP;
    const int rows = min(tiles_m - first, GROUP);
    tile_m = first + (pid % band) % rows;
    tile_n = (pid % band) / rows;
}

// One block per tile: the block's own.
template <int GROUP>
__device__ __forceinline__ void tile_coords(int tiles_m, int tiles_n, int& tile_m, int& tile_n)
{
    tile_coords<GROUP>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
}

// C[r][c..c+3] = v, clipped to the M×N matrix. One 16-byte store when all four are inside and aligned.
__device__ __forceinline__ void store_row4(float* C, int N, int M, int r, int c, const float (&v)[4], bool vec_ok)
{
    if (r >= M) return;
    float* dst = C + (size_t)r * N + c;
    if (vec_ok && c + 3 < N) {
        *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
        return;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if (c + j < N) dst[j] = v[j];
}

// Asynchronous global→shared copies (sm_80+): the data skips registers, and the copy of the next tiles runs
// while this tile is computed. src_bytes < size zero-fills the rest: that is how ragged edges read zeros.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }
