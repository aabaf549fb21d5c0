// Attention in FlashAttention-2's shape: tiles of queries against streamed tiles of keys on the tensor cores
// (mma.sync m16n8k16, fp32 accumulate), with the online softmax; fp16 or bf16, sm_80+.
//
// A block owns BR = 64 query rows of one head (4 warps × 16 rows) and walks the keys BC = 64 at a time:
//   S = Q·Kᵀ          16×64 per warp, in registers (Q's fragments loaded once, K's tile from shared memory);
//   m_new = max(m, rowmax(S)),  P = exp(S − m_new),  ℓ = ℓ·exp(m − m_new) + rowsum(P),  O = O·exp(m − m_new) + P·V
// and at the end O / ℓ. The scores never leave registers: the C fragment of two adjacent 16×8 products (rows g
// and g+8, columns 2t..2t+1) is exactly the A fragment of a 16×16 product (include/mma_sync.cuh), so P becomes
// the left operand of P·V by rounding pairs of floats to the input type: the rounding of P the error model counts
// (gpubench/ops/attention.py). The running maximum is what keeps exp(S − m) ≤ 1: a 16-bit P overflows at 11.
// Exponentials are exp2 of scores pre-multiplied by log2(e)/√D (one FFMA fewer each, as FA2 does).
//
// Memory: K and V tiles come through a two-stage cp.async ring (the next tile's copy in flight while this one
// multiplies); rows past S are zero-filled by the copy (src-size 0) and their scores masked to −inf. Shared rows
// are padded by 16 bytes, so that ldmatrix's 8 rows of a phase fall in 8 distinct bank groups. V is read by
// ldmatrix .trans: it lies [key][dim] but the product wants it [dim][key].
//
// Causal: a query block sees key tiles up to its last row only (the others are skipped, not masked), the diagonal
// tile is masked per element, and blocks run heaviest first (the grid's x is reversed), so the long rows start
// early and the short ones fill the tail. GQA: query head h reads key/value head h / (H / H_kv).
//
// Launch: grid (cdiv(S, 64), B·H), 128 threads, (64 + 4·64)·(HD + 8)·2 bytes of dynamic shared memory; D == HD.

#include "attention_common.cuh"  // head_offset, kv_head, load_rows and cp.async's commit, wait_groups
#include "../include/mma_sync.cuh"  // ldmatrix_x4, mma_16816, pack2, smem_addr

#ifndef ELEM
#define ELEM __half
#endif
#ifndef ELEM_OUT
#define ELEM_OUT __half
#endif
#ifndef HD
#define HD 128
#endif

constexpr int BR = 64, BC = 64, WARPS = 4, THREADS = WARPS * 32;
constexpr int LD = HD + 8;  // a shared row, in elements: 16 bytes of padding
constexpr int KSTEPS = HD / 16, DBLOCKS = HD / 8, KBLOCKS = BC / 8;

static_assert(HD % 16 == 0 && HD <= 256, "head dim: whole 16-deep k steps");
static_assert(BR == WARPS * 16, "a warp owns 16 query rows");

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// Rows row0..row0+63 of a head's [S, HD] matrix into a padded shared tile; the whole block copies.
__device__ __forceinline__ void load_tile(ELEM* tile, const ELEM* head, int row0, int S)
{
    load_rows<64, HD, LD, THREADS>(tile, head, row0, S);
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_flash_mma(const ELEM* __restrict__ Q, const ELEM* __restrict__ K, const ELEM* __restrict__ V,
                    ELEM_OUT* __restrict__ O, int B, int H, int H_kv, int S, int causal)
{
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* q_tile = reinterpret_cast<ELEM*>(smem);
    ELEM* k_tiles = q_tile + BR * LD;  // two stages
    ELEM* v_tiles = k_tiles + 2 * BC * LD;

    const int qb = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heaviest causal blocks first
    const int q0 = qb * BR, b = blockIdx.y / H, h = blockIdx.y % H;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const ELEM* q_head = Q + head_offset(b, h, H, S, HD);
    const ELEM* k_head = K + head_offset(b, kv_head(h, H, H_kv), H_kv, S, HD);
    const ELEM* v_head = V + head_offset(b, kv_head(h, H, H_kv), H_kv, S, HD);
    const int tiles = (causal ? min(S, q0 + BR) + BC - 1 : S + BC - 1) / BC;
    const float scale_log2 = 1.4426950408889634f * rsqrtf(static_cast<float>(HD));

    load_tile(q_tile, q_head, q0, S);
    load_tile(k_tiles, k_head, 0, S);
    load_tile(v_tiles, v_head, 0, S);
    commit();

    uint32_t qf[KSTEPS][4];  // this warp's 16 query rows as A fragments, loaded once the first group lands
    float o[DBLOCKS][4] = {};  // 16 rows × HD: rows g and g+8, columns 8·d + 2t, +1
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // rows g and g+8 (log2 domain), partial sums
    const int row_g = q0 + warp * 16 + g;  // this thread's two rows: row_g and row_g + 8

    for (int tile = 0; tile < tiles; ++tile) {
        const int stage = tile % 2, k0 = tile * BC;
        if (tile + 1 < tiles) {  // the next tile's copy, in flight while this one multiplies
            load_tile(k_tiles + (1 - stage) * BC * LD, k_head, k0 + BC, S);
            load_tile(v_tiles + (1 - stage) * BC * LD, v_head, k0 + BC, S);
            commit();
            wait_groups<1>();
        } else {
            wait_groups<0>();
        }
        __syncthreads();
        if (tile == 0) {
            for (int kk = 0; kk < KSTEPS; ++kk)
                ldmatrix_x4(qf[kk], smem_addr(q_tile + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8));
        }
        const ELEM* k_tile = k_tiles + stage * BC * LD;
        const ELEM* v_tile = v_tiles + stage * BC * LD;

        // S = Q·Kᵀ: K's tile is [key][dim], the B operand's [n][k]; one ldmatrix_x4 gives two key blocks' b.
        float s[KBLOCKS][4] = {};
        for (int kk = 0; kk < KSTEPS; ++kk) {
            for (int nb = 0; nb < KBLOCKS; nb += 2) {
                uint32_t r[4];
                ldmatrix_x4(r, smem_addr(k_tile + (nb * 8 + lane % 8 + (lane / 16) * 8) * LD + kk * 16 +
                                         ((lane / 8) % 2) * 8));
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816<ELEM>(s[nb], qf[kk], b0);
                mma_16816<ELEM>(s[nb + 1], qf[kk], b1);
            }
        }

        online_softmax_tile(s, o, m, l, row_g, k0, t, S, causal, scale_log2);  // attention_common.cuh

        // O += P·V: P's fragments straight from S's registers (rounded to the input type), V's by ldmatrix .trans.
        for (int j = 0; j < BC / 16; ++j) {
            const uint32_t pa[4] = {pack2(s[2 * j][0], s[2 * j][1], (ELEM*)nullptr),
                                    pack2(s[2 * j][2], s[2 * j][3], (ELEM*)nullptr),
                                    pack2(s[2 * j + 1][0], s[2 * j + 1][1], (ELEM*)nullptr),
                                    pack2(s[2 * j + 1][2], s[2 * j + 1][3], (ELEM*)nullptr)};
            for (int d = 0; d < DBLOCKS; d += 2) {
                uint32_t r[4];
                ldmatrix_x4_trans(r, smem_addr(v_tile + (j * 16 + lane % 8 + ((lane / 8) % 2) * 8) * LD + d * 8 +
                                               (lane / 16) * 8));
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816<ELEM>(o[d], pa, b0);
                mma_16816<ELEM>(o[d + 1], pa, b1);
            }
        }
        __syncthreads();  // this stage is refilled by the next iteration's copy
    }

    // O / ℓ, ℓ summed over the quad; rows past S are not stored.
    for (int i = 0; i < 2; ++i) {
        float sum = l[i];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int row = row_g + 8 * i;
        if (row >= S) continue;
        ELEM_OUT* out = O + head_offset(b, h, H, S, HD) + static_cast<size_t>(row) * HD;
        const float inv = 1.f / sum;
        for (int d = 0; d < DBLOCKS; ++d)
            *reinterpret_cast<uint32_t*>(out + d * 8 + 2 * t) =
                pack2(o[d][2 * i] * inv, o[d][2 * i + 1] * inv, (ELEM_OUT*)nullptr);
    }
}
