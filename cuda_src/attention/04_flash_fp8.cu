// Attention in fp8: flash-mma's loop (02_flash_mma.cu) with both products on mma.sync m16n8k32 e4m3 (sm_89+), fp32
// accumulate, a bf16 output. Read 02 first: the tiles, the cp.async ring, the online softmax, the causal skip and
// the masking of ragged S are its own; only what fp8 changes is said here.
//
// Q, K, V are e4m3 with a per-tensor scale each (Q_scale, K_scale, V_scale). What changes:
// - The scales: Q·Kᵀ runs on the stored values, and Q_scale·K_scale joins 1/√D and log2(e) in the one factor the
//   scores are multiplied by; V_scale comes off at the end, with ℓ.
// - P is rounded to e4m3 for P·V after being scaled by FP8_MAX (448), as gpubench/ops/attention.py's rounded_p
//   (and cuDNN's scale_s) does: P ≤ 1 alone would leave e4m3's upper exponents unused and flush probabilities
//   below 2⁻⁹ to zero. The factor comes off at the end too: O = V_scale · acc / (448 · ℓ), ℓ summed from the
//   unrounded P in fp32, as the reference sums it. This rounding is the u_P of the error model's tolerance.
// - V: P·V reduces over the keys, so its B operand ("col") wants each column's keys contiguous, but V lies
//   [key][dim]. flash-mma reads it with ldmatrix .trans, which moves 16-bit elements only; here the block
//   transposes each V tile in shared memory, 4×4 bytes a thread with byte permutes, once per tile.
//
// The fragments (PTX ISA, mma.m16n8k32 with 8-bit A and B; lane = 4g + t; four bytes a register, low k first):
//   A 16×32: a0 = row g, k 4t..4t+3;  a1 = row g+8, same k;  a2, a3: the same rows at k + 16.
//   B 32×8:  b0 = column g, k 4t..4t+3;  b1: k + 16.
//   C 16×8 (f32): as m16n8k16's: c0, c1 = row g, columns 2t, 2t+1;  c2, c3 = row g+8.
// ldmatrix (.b16) hands lane (g, t) the 16-bit pair t of row g of an 8×8 block: of an 8-row × 16-byte block of
// bytes, that is bytes 4t..4t+3 of row g, one A or B register. So Q's A fragments and K's B fragments come by
// ldmatrix_x4 from row-major tiles exactly as in flash-mma (both Q and K rows run along D, the k of Q·Kᵀ).
//
// P's A fragment, without a shuffle. After Q·Kᵀ lane (g, t) holds, in s[nb], keys 8nb + 2t and 8nb + 2t + 1 of rows
// g (c0, c1) and g+8 (c2, c3). In 16 consecutive keys (blocks 2h, 2h+1) that is the keys {2t, 2t+1, 2t+8, 2t+9},
// while A's register wants k 4t..4t+3. The product sums over k, so it is the same P·V whatever key each k slot
// stands for, as long as A's and B's slot k stand for the same key: let slot 4t + i (i = 0..3) of every 16 hold key
//     σ(4t + i) = 2t + (i & 1) + 8·(i >> 1),
// and A's register is the four scores the lane already has, (s[2h][0], s[2h][1], s[2h+1][0], s[2h+1][1]) for row g.
// The transpose writes V's keys in that same order: vt[d][16h + 4t + i] = V[16h + σ(4t + i)][d], so B's fragments
// come by ldmatrix_x4 from vt as K's do from its tile.
//
// Launch: grid (cdiv(S, 64), B·H), 128 threads, (64 + 4·64)·(HD + 16) + HD·(64 + 16) bytes of dynamic shared
// memory; D == HD.

#include "attention_common.cuh"  // head_offset, kv_head, scale_of, FP8_MAX, pack4_e4m3, transpose4x4_bytes, load_rows
#include "../include/mma_sync.cuh"  // ldmatrix_x4, pack2, smem_addr

#ifndef ELEM
#define ELEM __nv_fp8_e4m3
#endif
#ifndef ELEM_OUT
#define ELEM_OUT __nv_bfloat16
#endif
#ifndef HD
#define HD 128
#endif

constexpr int BR = 64, BC = 64, WARPS = 4, THREADS = WARPS * 32;
constexpr int LD = HD + 16;   // a Q, K or V row in shared memory, bytes: 16 of padding, so that ldmatrix's 8 rows
constexpr int LDT = BC + 16;  // fall in 8 bank groups; LDT: a row (one dim, BC keys) of the transposed V tile
constexpr int KSTEPS = HD / 32, DBLOCKS = HD / 8, KBLOCKS = BC / 8;

static_assert(sizeof(ELEM) == 1, "e4m3 in: one byte an element");
static_assert(HD % 32 == 0 && HD <= 256, "head dim: whole 32-deep k steps");
static_assert(BR == WARPS * 16 && BC % 32 == 0, "a warp owns 16 query rows; whole k steps of keys");

// d += a · b on the tensor cores: m16n8k32, e4m3 × e4m3, fp32 accumulate.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The V tile as it lies ([BC keys][LD]) into vt ([HD dims][LDT]), keys in σ's order (above). A thread's block is
// four keys σ(4t..4t+3) of one 16-key group × four dims: a 32-bit read per key, a 32-bit write per dim.
__device__ __forceinline__ void transpose_v(ELEM* vt, const ELEM* v)
{
    constexpr int QUADS = BC / 4;  // 4-key slots a row of vt
    for (int c = threadIdx.x; c < QUADS * (HD / 4); c += THREADS) {
        const int quad = c % QUADS, d = (c / QUADS) * 4;  // slots 4·quad..4·quad+3 of dims d..d+3
        const int key0 = (quad / 4) * 16 + 2 * (quad % 4);  // σ(4t) in its group: quad = 4h + t
        uint32_t rows[4], cols[4];
        for (int i = 0; i < 4; ++i)
            rows[i] = *reinterpret_cast<const uint32_t*>(v + (key0 + (i & 1) + 8 * (i >> 1)) * LD + d);
        transpose4x4_bytes(rows, cols);
        for (int j = 0; j < 4; ++j) *reinterpret_cast<uint32_t*>(vt + (d + j) * LDT + 4 * quad) = cols[j];
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_flash_fp8(const ELEM* __restrict__ Q, const ELEM* __restrict__ K, const ELEM* __restrict__ V,
                    ELEM_OUT* __restrict__ O, const float* __restrict__ Q_scale, const float* __restrict__ K_scale,
                    const float* __restrict__ V_scale, int B, int H, int H_kv, int S, int causal)
{
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* q_tile = reinterpret_cast<ELEM*>(smem);
    ELEM* k_tiles = q_tile + BR * LD;      // two stages
    ELEM* v_tiles = k_tiles + 2 * BC * LD;  // two stages, as V lies
    ELEM* vt = v_tiles + 2 * BC * LD;       // this tile's V, transposed

    const int qb = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heaviest causal blocks first
    const int q0 = qb * BR, b = blockIdx.y / H, h = blockIdx.y % H;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const ELEM* q_head = Q + head_offset(b, h, H, S, HD);
    const ELEM* k_head = K + head_offset(b, kv_head(h, H, H_kv), H_kv, S, HD);
    const ELEM* v_head = V + head_offset(b, kv_head(h, H, H_kv), H_kv, S, HD);
    const int tiles = (causal ? min(S, q0 + BR) + BC - 1 : S + BC - 1) / BC;
    const float scale_log2 =
        1.4426950408889634f * scale_of(Q_scale) * scale_of(K_scale) * rsqrtf(static_cast<float>(HD));

    load_rows<BR, HD, LD, THREADS>(q_tile, q_head, q0, S);
    load_rows<BC, HD, LD, THREADS>(k_tiles, k_head, 0, S);
    load_rows<BC, HD, LD, THREADS>(v_tiles, v_head, 0, S);
    commit();

    uint32_t qf[KSTEPS][4];  // this warp's 16 query rows as A fragments, loaded once the first group lands
    float o[DBLOCKS][4] = {};  // 16 rows × HD: rows g and g+8, columns 8·d + 2t, +1
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // rows g and g+8 (log2 domain), partial sums
    const int row_g = q0 + warp * 16 + g;  // this thread's two rows: row_g and row_g + 8

    for (int tile = 0; tile < tiles; ++tile) {
        const int stage = tile % 2, k0 = tile * BC;
        if (tile + 1 < tiles) {  // the next tile's copy, in flight while this one multiplies
            load_rows<BC, HD, LD, THREADS>(k_tiles + (1 - stage) * BC * LD, k_head, k0 + BC, S);
            load_rows<BC, HD, LD, THREADS>(v_tiles + (1 - stage) * BC * LD, v_head, k0 + BC, S);
            commit();
            wait_groups<1>();
        } else {
            wait_groups<0>();
        }
        __syncthreads();
        if (tile == 0) {
            for (int kk = 0; kk < KSTEPS; ++kk)
                ldmatrix_x4(qf[kk], smem_addr(q_tile + (warp * 16 + lane % 16) * LD + kk * 32 + (lane / 16) * 16));
        }
        const ELEM* k_tile = k_tiles + stage * BC * LD;
        transpose_v(vt, v_tiles + stage * BC * LD);  // read by P·V, after the barrier below

        // S = Q·Kᵀ: one ldmatrix_x4 gives two key blocks' b (keys, then k + 16).
        float s[KBLOCKS][4] = {};
        for (int kk = 0; kk < KSTEPS; ++kk) {
            for (int nb = 0; nb < KBLOCKS; nb += 2) {
                uint32_t r[4];
                ldmatrix_x4(r, smem_addr(k_tile + (nb * 8 + lane % 8 + (lane / 16) * 8) * LD + kk * 32 +
                                         ((lane / 8) % 2) * 16));
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_e4m3(s[nb], qf[kk], b0);
                mma_e4m3(s[nb + 1], qf[kk], b1);
            }
        }

        online_softmax_tile(s, o, m, l, row_g, k0, t, S, causal, scale_log2);  // as flash-mma's
        __syncthreads();  // vt is whole

        // O += P·V, 32 keys a step: P·448 in e4m3, in σ's key order (blocks 4j, 4j+1, then 4j+2, 4j+3); b from vt.
        for (int j = 0; j < BC / 32; ++j) {
            auto p4 = [&](int nb, int c) {  // row g (c = 0) or g + 8 (c = 2): blocks nb and nb + 1
                return pack4_e4m3(FP8_MAX * s[nb][c], FP8_MAX * s[nb][c + 1], FP8_MAX * s[nb + 1][c],
                                  FP8_MAX * s[nb + 1][c + 1]);
            };
            const uint32_t pa[4] = {p4(4 * j, 0), p4(4 * j, 2), p4(4 * j + 2, 0), p4(4 * j + 2, 2)};
            for (int d = 0; d < DBLOCKS; d += 2) {
                uint32_t r[4];
                ldmatrix_x4(r, smem_addr(vt + (d * 8 + lane % 8 + (lane / 16) * 8) * LDT + j * 32 +
                                         ((lane / 8) % 2) * 16));
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_e4m3(o[d], pa, b0);
                mma_e4m3(o[d + 1], pa, b1);
            }
        }
        __syncthreads();  // this stage is refilled, and vt rewritten, by the next iteration
    }

    // O · V_scale / (448 · ℓ), ℓ summed over the quad; rows past S are not stored.
    const float v_scale = scale_of(V_scale) / FP8_MAX;
    for (int i = 0; i < 2; ++i) {
        float sum = l[i];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int row = row_g + 8 * i;
        if (row >= S) continue;
        ELEM_OUT* out = O + head_offset(b, h, H, S, HD) + static_cast<size_t>(row) * HD;
        const float norm = v_scale / sum;
        for (int d = 0; d < DBLOCKS; ++d)
            *reinterpret_cast<uint32_t*>(out + d * 8 + 2 * t) =
                pack2(o[d][2 * i] * norm, o[d][2 * i + 1] * norm, (ELEM_OUT*)nullptr);
    }
}
