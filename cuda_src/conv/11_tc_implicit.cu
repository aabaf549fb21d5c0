// Tensor-core implicit-GEMM convolution, fp16 or bf16 in NHWC, fp32 accumulate (sm_80+: mma.sync m16n8k16).
//
// y[n,oh,ow,k] = Σ_{r,s,c} x[n, oh·stride − pad + r, ow·stride − pad + s, c] · w[k,r,s,c]
//
// As a GEMM: rows are output pixels (GEMM_M = N·OH·OW), columns are filters (GEMM_N = K), the reduction runs over
// (r, s, c) (GEMM_K = R·S·C). In NHWC the output is then an M×K row-major matrix, and the filters (KRSC) are the
// B operand already K-major: filter k's reduction is one contiguous row. Only A, the activations, needs the
// im2col mapping, and the loader does it (implicit_tiles.cuh): the reduction is walked tap by tap, BK channels at
// a time, so a slice is 16-byte copies of whole input pixels' channels; each thread keeps its pixels' offsets and
// a bit mask of their in-image taps, so padding and ragged edges cost one bit test, not a division.
//
// The pipeline (CUTLASS's shape): global → shared by a STAGES-deep cp.async ring, one barrier per slice; shared →
// registers by ldmatrix from an XOR-swizzled layout (include/mma_sync.cuh: no padding, no bank conflicts);
// registers → tensor cores by mma.sync. Each warp owns a WM×WN tile of the output (WM/16 × WN/8 MMAs per 16-deep
// k step). The epilogue rounds to the output type, stages the tile in shared memory and writes whole 16-byte
// chunks of output rows (every store coalesced), falling back to single elements at a ragged K.
//
// Tiles (-DNAME=value): BM pixels × BN filters per block, BK channels per slice (16, 32 or 64), WM × WN per warp,
// STAGES-deep ring. Launch: grid cdiv(N·OH·OW, BM) · cdiv(K, BN) (filter tiles fastest, so blocks that share
// pixels run together), (BM/WM)·(BN/WN)·32 threads, max(ring, staged output) bytes of dynamic shared memory.

#include "implicit_tiles.cuh"  // the loader (im2col in its addressing) and the staged output's store

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT __half
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
constexpr int MT = WM / 16, NT = WN / 8;  // MMAs per warp and k step
constexpr int STAGE_ELEMS = (BM + BN) * BK;
constexpr int CLD = BN + 8;               // the staged output's row stride: 8 rows of a fragment hit 32 banks

static_assert(BM % WM == 0 && BN % WN == 0, "the warps tile the block");
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp tile is whole 16×16 ldmatrix blocks");
static_assert(BK == 16 || BK == 32 || BK == 64, "BK: 16, 32 or 64 channels (a 32-, 64- or 128-byte row)");
static_assert(STAGES >= 2, "a ring of at least two slices");

using Loader = ImplicitLoader<ELEM, BM, BN, BK, THREADS>;
using Tile = Loader::Tile;

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
conv_tc_implicit(const ELEM* __restrict__ x, const ELEM* __restrict__ w, ELEM_OUT* __restrict__ y, int N, int C,
                 int H, int W, int K, int R, int S, int stride, int pad, int OH, int OW)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    ELEM* smem = reinterpret_cast<ELEM*>(smem_raw);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int M = N * OH * OW;
    const int tiles_n = (K + BN - 1) / BN;
    const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;

    Loader loader(x, w, N, C, H, W, K, R, S, stride, pad, OH, OW, m0, n0, tid);
    auto load = [&](int stage) { loader.load(smem + stage * STAGE_ELEMS, smem + stage * STAGE_ELEMS + BM * BK); };

    // ---- the consumer: each warp's ldmatrix addresses (rows fixed per lane; the swizzle key is the lane's) -------
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int a_row = wm0 + (lane & 15), a_xor = (lane >> 4) ^ Tile::key(lane & 15);
    const int b_row = wn0 + (lane & 7) + ((lane >> 4) << 3), b_xor = ((lane >> 3) & 1) ^ Tile::key(lane & 7);
    const uint32_t smem_base = smem_addr(smem);

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    const int slices = implicit_slices(C, R, S, BK);
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (st < slices) load(st);
        cp_async_commit();  // an empty group past the end keeps the wait count below exact
    }

    for (int t = 0; t < slices; ++t) {
        cp_async_wait<STAGES - 2>();  // slice t has landed (this thread's copies) ...
        __syncthreads();              // ... and everyone's; and stage (t − 1) % STAGES is no longer read
        if (t + STAGES - 1 < slices) load((t + STAGES - 1) % STAGES);
        cp_async_commit();

        const uint32_t As = smem_base + (t % STAGES) * STAGE_ELEMS * 2, Bs = As + BM * BK * 2;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i)
                ldmatrix_x4(a[i], As + ((a_row + i * 16) * BK + (((2 * kk) ^ a_xor) << 3)) * 2);
#pragma unroll
            for (int j = 0; j < NT / 2; ++j) {
                uint32_t q[4];
                ldmatrix_x4(q, Bs + ((b_row + j * 16) * BK + (((2 * kk) ^ b_xor) << 3)) * 2);
                b[2 * j][0] = q[0];
                b[2 * j][1] = q[1];
                b[2 * j + 1][0] = q[2];
                b[2 * j + 1][1] = q[3];
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) mma_16816<ELEM>(acc[i][j], a[i], b[j]);
        }
    }

    // ---- epilogue: round, stage the BM×BN tile in shared memory, write whole 16-byte chunks of output rows ------
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with the ring
    ELEM_OUT* Cs = reinterpret_cast<ELEM_OUT*>(smem_raw);
    const int g = lane / 4, t2 = (lane % 4) * 2;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            ELEM_OUT* c = Cs + (wm0 + i * 16 + g) * CLD + wn0 + j * 8 + t2;
            *reinterpret_cast<uint32_t*>(c) = pack2(acc[i][j][0], acc[i][j][1], c);
            *reinterpret_cast<uint32_t*>(c + 8 * CLD) = pack2(acc[i][j][2], acc[i][j][3], c);
        }
    __syncthreads();
    store_staged_tile<ELEM_OUT, BM, BN, CLD, THREADS>(Cs, y, m0, n0, M, K, tid);
}
