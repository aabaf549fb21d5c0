// The cp.async multi-stage, warp-tiled main loop shared by gemm/06_async.cu and conv/08_implicit_async.cu.
//
// A ring of ST shared-memory slots: while slice t is multiplied, the copies of slices t+1 .. t+ST-1 are in
// flight, moved by cp.async straight from global to shared memory (no registers, no store instructions;
// zero-filled beyond the operands' edges). Deeper rings hide more latency at the cost of shared memory.
//
// cp.async cannot transpose, so A stays row-major in shared memory (As[m][k], rows padded to KT+4 floats).
// A thread reads, for each of its MR rows, four consecutive k as one float4 and does four k steps of outer
// products from those registers: still one 16-byte read per four A values. Its rows are TY apart
// (row = i·TY + ty) so that the TY threads reading a k-quad together hit consecutive padded rows, which the
// +4 padding spreads over distinct banks. B is Bs[k][n]; a thread's NR columns are float4 groups spread across
// the warp tile, so a warp's B reads are contiguous 16-byte runs.
//
// Template parameters: MT×NT block tile, KT-deep slices, WM×WN warp tiles, MR×NR accumulators per thread,
// ST ring slots (the kernels' BM, BN, BK, WM, WN, TM, TN, STAGES).
#pragma once

#include "gemm_common.cuh"

template <int MT, int NT, int KT, int WMT, int WNT, int MR, int NR, int ST>
struct AsyncTile {
    static constexpr int WARPS_N = NT / WNT;
    static constexpr int THREADS = (MT / WMT) * WARPS_N * 32;
    static constexpr int TX = WNT / NR, TY = WMT / MR;
    static constexpr int A_LD = KT + 4;
    static constexpr int A_FLOATS = MT * A_LD;
    static constexpr int SLOT_FLOATS = A_FLOATS + KT * NT;
    static constexpr int SMEM_BYTES = ST * SLOT_FLOATS * 4;
    static constexpr int N_GROUP_STEP = WNT / (NR / 4);
    static_assert(TX * TY == 32 && NR % 4 == 0 && KT % 4 == 0 && ST >= 2, "tile shape");

    float acc[MR][NR];
    int wm0, wn0;  // this thread's first row and first column inside the block tile

    __device__ AsyncTile()
    {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        wm0 = (warp / WARPS_N) * WMT + lane / TX;
        wn0 = (warp % WARPS_N) * WNT + (lane % TX) * 4;
#pragma unroll
        for (int i = 0; i < MR; ++i)
#pragma unroll
            for (int j = 0; j < NR; ++j) acc[i][j] = 0.0f;
    }

    __device__ int row(int i) const { return wm0 + i * TY; }
    __device__ int col(int g) const { return wn0 + g * N_GROUP_STEP; }  // first column of float4 group g

    __device__ static float lane4(const float4& v, int q) { return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w; }

    __device__ void multiply(const float* As, const float* Bs)
    {
#pragma unroll
        for (int k = 0; k < KT; k += 4) {
            float4 a[MR];
#pragma unroll
            for (int i = 0; i < MR; ++i) a[i] = *reinterpret_cast<const float4*>(As + row(i) * A_LD + k);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                float b[NR];
#pragma unroll
                for (int g = 0; g < NR / 4; ++g) {
                    const float4 v = *reinterpret_cast<const float4*>(Bs + (k + q) * NT + col(g));
                    b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < MR; ++i)
#pragma unroll
                    for (int j = 0; j < NR; ++j) acc[i][j] = fmaf(lane4(a[i], q), b[j], acc[i][j]);
            }
        }
    }

    // The accumulators into C (ld floats per row, rows × ld clipped), the block's tile starting at (row0, col0).
    __device__ void store(float* C, int ld, int rows, int row0, int col0, bool vec_ok) const
    {
#pragma unroll
        for (int i = 0; i < MR; ++i)
#pragma unroll
            for (int g = 0; g < NR / 4; ++g) {
                const float v[4] = {acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]};
                store_row4(C, ld, rows, row0 + row(i), col0 + col(g), v, vec_ok);
            }
    }

    // copy(As, Bs, k0) queues the cp.async copies of one slice (As: MT rows of A_LD floats; Bs: KT rows of NT).
    template <class Copy>
    __device__ void run(float* smem, int K, Copy copy)
    {
        const int slices = (K + KT - 1) / KT;
#pragma unroll
        for (int s = 0; s < ST - 1; ++s) {  // prologue: one commit group per slot, empty ones keep the count
            if (s < slices) copy(smem + s * SLOT_FLOATS, smem + s * SLOT_FLOATS + A_FLOATS, s * KT);
            cp_async_commit();
        }
        for (int t = 0; t < slices; ++t) {
            cp_async_wait<ST - 2>();  // slice t has landed for this thread ...
            __syncthreads();          // ... and for all; slot t-1 is no longer being read
            const int next = t + ST - 1;
            float* slot = smem + (next % ST) * SLOT_FLOATS;
            if (next < slices) copy(slot, slot + A_FLOATS, next * KT);
            cp_async_commit();
            const float* As = smem + (t % ST) * SLOT_FLOATS;
            multiply(As, As + A_FLOATS);
        }
        cp_async_wait<0>();
    }
};

// Queue the cp.async copy of a ROWS×COLS window of a row-major matrix (ld floats per row; rows_left and
// cols_left to its edges, zeros beyond) into a shared tile with dst_ld floats per row: 16 bytes at a time
// when the matrix rows are 16-byte aligned, else 4 bytes at a time.
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void copy_window(float* dst, int dst_ld, const float* src, int ld, int rows_left,
                                            int cols_left, bool aligned)
{
#pragma unroll
    for (int v = threadIdx.x; v < ROWS * COLS / 4; v += THREADS) {
        const int r = v / (COLS / 4), c = (v % (COLS / 4)) * 4;
        if (aligned) {
            const int n = (r < rows_left) ? max(0, min(4, cols_left - c)) : 0;
            cp_async16(dst + r * dst_ld + c, n ? src + (size_t)r * ld + c : src, 4 * n);
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool in = r < rows_left && c + q < cols_left;
                cp_async4(dst + r * dst_ld + c + q, in ? src + (size_t)r * ld + c + q : src, in ? 4 : 0);
            }
        }
    }
}
