// Warp-tiled GEMM, optionally double-buffered: C[M,N] = A[M,K] · B[K,N], row-major float32.
//
// The BM×BN block tile is split into WM×WN warp tiles and each warp's tile into TM×TN thread tiles. Keeping
// a warp's 32 threads on one compact WM×WN patch means that, per k, the warp reads only WM + WN distinct
// floats of shared memory (each a 16-byte vector shared by the threads of one row or column of the patch)
// instead of spreading its reads over the whole block tile: fewer shared-memory wavefronts per FMA.
//
// STAGES = 2 double-buffers the tiles through registers: the global loads of slice k+1 are issued before
// the FMAs of slice k and written to the other shared buffer after them, so their latency hides behind
// arithmetic and one barrier per slice suffices. STAGES = 1 loads, waits and computes in turn.
//
// Layouts (the reasons are in register_tile.cuh): A transposed in shared memory with rows padded by 4
// floats; a thread's TM rows and TN columns are float4 groups spread across the warp tile. Full interior
// tiles of 16-byte-aligned matrices load with float4s; edges load element by element with zeros outside.
// The grid is 1-D; tile_coords (gemm_common.cuh) orders the tiles, with SWIZZLE bands for L2 reuse.

#include "../include/gemm_common.cuh"

#ifndef BM
#define BM 128
#define BN 128
#define BK 8
#define WM 64
#define WN 32
#define TM 8
#define TN 8
#define STAGES 2
#define SWIZZLE 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // resident blocks per SM to ask of the register allocator (__launch_bounds__)
#endif

constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int TX = WN / TN, TY = WM / TM;  // a warp's threads along N and along M
constexpr int A_LD = BM + 4;
constexpr int A_VECS = BM * BK / 4 / THREADS, B_VECS = BK * BN / 4 / THREADS;  // float4s per thread per slice
static_assert(BM % WM == 0 && BN % WN == 0 && WM % TM == 0 && WN % TN == 0,
              "warp tiles divide the block tile and thread tiles the warp tile (else edges go uncomputed)");
static_assert(TX * TY == 32, "a warp tile holds exactly 32 thread tiles");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 groups");
static_assert(A_VECS * THREADS * 4 == BM * BK && B_VECS * THREADS * 4 == BK * BN, "whole float4s per thread");
static_assert(STAGES == 1 || STAGES == 2, "register double buffering has one or two buffers");

struct Slice {  // one thread's share of a BK-deep slice of A and B, in registers between load and store
    float4 a[A_VECS], b[B_VECS];
};

__device__ __forceinline__ float4 load4(const float* p, int row, int col, int rows, int cols, int ld, bool fast)
{
    if (fast) return *reinterpret_cast<const float4*>(p + (size_t)row * ld + col);
    float v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = (row < rows && col + q < cols) ? p[(size_t)row * ld + col + q] : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void load_slice(Slice& s, const float* A, const float* B, int M, int N, int K, int row0,
                                           int col0, int k0, bool aligned)
{
    const bool fast = aligned && row0 + BM <= M && col0 + BN <= N && k0 + BK <= K;  // uniform across the block
#pragma unroll
    for (int e = 0; e < A_VECS; ++e) {
        const int v = threadIdx.x + e * THREADS;
        s.a[e] = load4(A, row0 + v / (BK / 4), k0 + (v % (BK / 4)) * 4, M, K, K, fast);
    }
#pragma unroll
    for (int e = 0; e < B_VECS; ++e) {
        const int v = threadIdx.x + e * THREADS;
        s.b[e] = load4(B, k0 + v / (BN / 4), col0 + (v % (BN / 4)) * 4, K, N, N, fast);
    }
}

__device__ __forceinline__ void store_slice(const Slice& s, float* As, float* Bs)
{
#pragma unroll
    for (int e = 0; e < A_VECS; ++e) {
        const int v = threadIdx.x + e * THREADS, m = v / (BK / 4), k = (v % (BK / 4)) * 4;
        As[k * A_LD + m] = s.a[e].x;
        As[(k + 1) * A_LD + m] = s.a[e].y;
        As[(k + 2) * A_LD + m] = s.a[e].z;
        As[(k + 3) * A_LD + m] = s.a[e].w;
    }
#pragma unroll
    for (int e = 0; e < B_VECS; ++e) {
        const int v = threadIdx.x + e * THREADS;
        *reinterpret_cast<float4*>(Bs + (v / (BN / 4)) * BN + (v % (BN / 4)) * 4) = s.b[e];
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];  // STAGES × (As[BK][A_LD], then Bs[BK][BN])
    constexpr int STAGE_FLOATS = BK * (A_LD + BN);

    int tile_m, tile_n;
    tile_coords<SWIZZLE>((M + BM - 1) / BM, (N + BN - 1) / BN, tile_m, tile_n);
    const int row0 = tile_m * BM, col0 = tile_n * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm0 = (warp / WARPS_N) * WM + (lane / TX) * 4;  // this thread's first row ...
    const int wn0 = (warp % WARPS_N) * WN + (lane % TX) * 4;  // ... and column in the block tile
    const bool aligned = K % 4 == 0 && N % 4 == 0;

    float acc[TM][TN] = {};
    Slice s;
    load_slice(s, A, B, M, N, K, row0, col0, 0, aligned);
    store_slice(s, smem, smem + BK * A_LD);
    __syncthreads();

    const int slices = (K + BK - 1) / BK;
    for (int t = 0; t < slices; ++t) {
        const float* As = smem + (STAGES == 2 ? (t & 1) : 0) * STAGE_FLOATS;
        const float* Bs = As + BK * A_LD;
        const bool more = t + 1 < slices;
        if (STAGES == 2 && more) load_slice(s, A, B, M, N, K, row0, col0, (t + 1) * BK, aligned);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(As + k * A_LD + wm0 + g * (WM / (TM / 4)));
                a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(Bs + k * BN + wn0 + g * (WN / (TN / 4)));
                b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            float* next = smem + (STAGES == 2 ? ((t + 1) & 1) : 0) * STAGE_FLOATS;
            if (STAGES == 1) {
                __syncthreads();  // everyone is done reading the only buffer
                load_slice(s, A, B, M, N, K, row0, col0, (t + 1) * BK, aligned);
            }
            store_slice(s, next, next + BK * A_LD);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const float v[4] = {acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]};
            store_row4(C, N, M, row0 + wm0 + (i / 4) * (WM / (TM / 4)) + i % 4, col0 + wn0 + g * (WN / (TN / 4)), v,
                       N % 4 == 0);
        }
}
