// Pieces shared by the faster GEMM kernels (gemm/05_warptile.cu, gemm/06_async.cu).
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

// One k step of a warp-tiled product (gemm/07_fp32_tma.cu): the thread's ROWS_T values of A from
// the k-major row a_row (float4 groups ROW_GAP floats apart) times its COLS_T values of B from b_row (groups
// COL_GAP apart), accumulated. Both rows are in shared memory, offset to the thread's first element. (The
// parameters are not called TM, TN: those are the kernels' -D macros.) gemm/05_warptile.cu spells the same loop out:
// routed through this function its tuned configuration compiled to 247 registers instead of 253 and ran 3% slower
// on the H100 (commit a5882de), while gemm/07_fp32_tma.cu ran 2-3% faster with it.
template <int ROWS_T, int COLS_T, int ROW_GAP, int COL_GAP>
__device__ __forceinline__ void outer_product(float (&acc)[ROWS_T][COLS_T], const float* a_row, const float* b_row)
{
    float a[ROWS_T], b[COLS_T];
#pragma unroll
    for (int g = 0; g < ROWS_T / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(a_row + g * ROW_GAP);
        a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < COLS_T / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(b_row + g * COL_GAP);
        b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < ROWS_T; ++i)
#pragma unroll
        for (int j = 0; j < COLS_T; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// The thread's accumulators of such a product into C: row r0 + (i/4)·ROW_GAP + i%4, columns c0 + g·COL_GAP .. +3.
template <int ROWS_T, int COLS_T, int ROW_GAP, int COL_GAP>
__device__ __forceinline__ void store_thread_tile(float* C, int N, int M, int r0, int c0,
                                                  const float (&acc)[ROWS_T][COLS_T], bool vec_ok)
{
#pragma unroll
    for (int i = 0; i < ROWS_T; ++i)
#pragma unroll
        for (int g = 0; g < COLS_T / 4; ++g) {
            const float v[4] = {acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]};
            store_row4(C, N, M, r0 + (i / 4) * ROW_GAP + i % 4, c0 + g * COL_GAP, v, vec_ok);
        }
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
