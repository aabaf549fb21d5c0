// The lab's matrix multiplication in half precision: c = a · b with a m×n, b n×k and c m×k, row-major (the
// lab's naming), inputs and output of the element type ELEM (and ELEM_OUT), products summed in float32.
//
// gpubench compiles each precision a spec declares with -DELEM=<its C type> -DELEM_OUT=<its output's>
// (dtype_define = "ELEM" in gpubench.toml): __half for fp16, __nv_bfloat16 for bf16, float for fp32. The
// kernels convert through the overloads below, so one source serves every element type.
//
//   gpu_matrix_mult_sm_half: the lab's shared-memory tiles (BLOCK_SIZE × BLOCK_SIZE threads, one per element of c)
//   wmma_gemm:               the same product on tensor cores through WMMA (16×16×16 fragments, fp32 accumulator)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT ELEM
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// Round a float32 to the element type, to nearest even (the conversion every tensor-core epilogue does).
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// The lab's shared-memory kernel on ELEM: tiles staged in the element type (half the bytes of float32), each
// product widened to float32 and summed there; one rounding to ELEM_OUT at the end. Edges staged as zeros.
extern "C" __global__ void gpu_matrix_mult_sm_half(const ELEM *a, const ELEM *b, ELEM_OUT *c, int m, int n, int k)
{
    __shared__ ELEM tile_a[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ ELEM tile_b[BLOCK_SIZE][BLOCK_SIZE];

    int row = blockIdx.y * BLOCK_SIZE + threadIdx.y;
    int col = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    const ELEM zero = from_float<ELEM>(0.0f);
    float sum = 0.0f;
    for (int t = 0; t < n; t += BLOCK_SIZE) {
        int ia = t + threadIdx.x, ib = t + threadIdx.y;
        tile_a[threadIdx.y][threadIdx.x] = (row < m && ia < n) ? a[(size_t)row * n + ia] : zero;
        tile_b[threadIdx.y][threadIdx.x] = (ib < n && col < k) ? b[(size_t)ib * k + col] : zero;
        __syncthreads();
        for (int i = 0; i < BLOCK_SIZE; ++i)
            sum += to_float(tile_a[threadIdx.y][i]) * to_float(tile_b[i][threadIdx.x]);
        __syncthreads();  // the next step overwrites the tiles
    }
    if (row < m && col < k)
        c[(size_t)row * k + col] = from_float<ELEM_OUT>(sum);
}

// WMMA: a block of 4 warps computes a 64×64 tile of c, each warp a 32×32 quarter as 2×2 fragments of 16×16
// with float32 accumulators. Each step stages a 64×16 slice of a and a 16×64 slice of b in shared memory (zeros
// past the edges, so any m, n, k work; WMMA itself needs whole 16×16 tiles), then every warp multiplies its
// fragments. The result goes through shared memory so that the store can check the edges and round to ELEM_OUT.
#define WM 64
#define WN 64
#define WK 16
#define WPAD 8  // rows padded by 16 bytes: a multiple of 8 elements, as WMMA's ldm must be, and fewer bank conflicts

extern "C" __global__ void __launch_bounds__(128) wmma_gemm(const ELEM *a, const ELEM *b, ELEM_OUT *c, int m, int n, int k)
{
    using namespace nvcuda;
    __shared__ __align__(32) ELEM sa[WM][WK + WPAD];
    __shared__ __align__(32) ELEM sb[WK][WN + WPAD];
    __shared__ __align__(32) float sc[WM][WN + 4];

    const int warp = threadIdx.x / 32, wy = warp / 2, wx = warp % 2;
    const int row0 = blockIdx.y * WM, col0 = blockIdx.x * WN;
    const ELEM zero = from_float<ELEM>(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int t = 0; t < n; t += WK) {
        for (int e = threadIdx.x; e < WM * WK; e += blockDim.x) {  // a's slice: rows row0.., columns t..
            int r = e / WK, q = e % WK, gr = row0 + r, gq = t + q;
            sa[r][q] = (gr < m && gq < n) ? a[(size_t)gr * n + gq] : zero;
        }
        for (int e = threadIdx.x; e < WK * WN; e += blockDim.x) {  // b's slice: rows t.., columns col0..
            int r = e / WN, q = e % WN, gr = t + r, gq = col0 + q;
            sb[r][q] = (gr < n && gq < k) ? b[(size_t)gr * k + gq] : zero;
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, ELEM, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, ELEM, wmma::row_major> fb[2];
        for (int i = 0; i < 2; ++i)
            wmma::load_matrix_sync(fa[i], &sa[wy * 32 + i * 16][0], WK + WPAD);
        for (int j = 0; j < 2; ++j)
            wmma::load_matrix_sync(fb[j], &sb[0][wx * 32 + j * 16], WN + WPAD);
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
                wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        __syncthreads();  // the next step overwrites the slices
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&sc[wy * 32 + i * 16][wx * 32 + j * 16], acc[i][j], WN + 4, wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < WM * WN; e += blockDim.x) {
        int r = e / WN, q = e % WN, gr = row0 + r, gq = col0 + q;
        if (gr < m && gq < k)
            c[(size_t)gr * k + gq] = from_float<ELEM_OUT>(sc[r][q]);
    }
}
