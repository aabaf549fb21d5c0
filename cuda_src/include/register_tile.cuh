// The core shared by the register-tiled kernels (gemm_tiled, conv_implicit): a thread block computes a BM×BN
// tile of C = A·B, walking the reduction in steps of BK; each thread accumulates a TM×TN block in registers.
//
// Per k step a thread reads TM values of A and TN values of B from shared memory and does TM·TN FMAs, so the
// shared-memory traffic per FMA falls as 1/TM + 1/TN. The two layout choices below keep those reads to
// 16-byte, bank-conflict-free accesses:
//  * A is stored transposed (As[k][m]): a thread's TM values for one k are contiguous, read as float4s.
//    Rows are padded to BM+4 floats: the transposed stores of a warp (8 consecutive k of 4 rows) then fall in
//    32 distinct banks, and rows stay 16-byte aligned.
//  * A thread's TN columns are TN/4 groups of 4, the groups BN/(TN/4) apart (likewise for its TM rows). The 16
//    threads of a half-warp then read one contiguous 256-byte run of a Bs row with float4 loads; with TN
//    contiguous columns per thread they would collide in the same banks.
#pragma once

// Template parameters: MT×NT block tile, KT-deep slices, MR×NR accumulators per thread (the kernels'
// BM, BN, BK, TM, TN).
template <int MT, int NT, int KT, int MR, int NR>
struct RegisterTile {
    static_assert(MR % 4 == 0 && NR % 4 == 0, "thread tiles are made of float4 groups");
    static_assert(MT % MR == 0 && NT % NR == 0, "thread tiles must divide the block tile");
    static constexpr int THREADS = (MT / MR) * (NT / NR);
    static constexpr int A_STRIDE = MT + 4;
    static constexpr int M_GROUP_STEP = MT / (MR / 4);
    static constexpr int N_GROUP_STEP = NT / (NR / 4);

    float acc[MR][NR];
    int tx, ty;  // this thread's position in the (NT/NR) × (MT/MR) grid of thread tiles

    __device__ RegisterTile() : tx(threadIdx.x % (NT / NR)), ty(threadIdx.x / (NT / NR))
    {
#pragma unroll
        for (int i = 0; i < MR; ++i)
#pragma unroll
            for (int j = 0; j < NR; ++j) acc[i][j] = 0.0f;
    }

    // Position inside the block tile of accumulator row i and column j.
    __device__ int row(int i) const { return (i / 4) * M_GROUP_STEP + ty * 4 + (i % 4); }
    __device__ int col(int j) const { return (j / 4) * N_GROUP_STEP + tx * 4 + (j % 4); }

    // Stage one KT-deep slice: a_at(m, k) and b_at(k, n) take block-relative m, n and the global k, and return
    // 0 outside the matrices, so the multiply below needs no bounds checks.
    template <class AAt, class BAt>
    __device__ void stage(float (*As)[A_STRIDE], float (*Bs)[NT], int k0, AAt a_at, BAt b_at) const
    {
        // A: 8 consecutive threads read 8 consecutive k of one row (one 32-byte sector).
        for (int e = threadIdx.x; e < MT * KT; e += THREADS) As[e % KT][e / KT] = a_at(e / KT, k0 + e % KT);
        // B: consecutive threads read consecutive n of one row (coalesced), and store without conflicts.
        for (int e = threadIdx.x; e < KT * NT; e += THREADS) Bs[e / NT][e % NT] = b_at(k0 + e / NT, e % NT);
    }

    __device__ void multiply(const float (*As)[A_STRIDE], const float (*Bs)[NT])
    {
#pragma unroll
        for (int k = 0; k < KT; ++k) {
            float a[MR], b[NR];
#pragma unroll
            for (int g = 0; g < MR / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&As[k][g * M_GROUP_STEP + ty * 4]);
                a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < NR / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[k][g * N_GROUP_STEP + tx * 4]);
                b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < MR; ++i)
#pragma unroll
                for (int j = 0; j < NR; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    }

    // The whole reduction over K: stage(As, Bs, k0) fills one KT-deep slice of both tiles; then
    // store(m, n, value) for every accumulator inside the m_left × n_left corner (m, n block-relative).
    template <class Stage, class Store>
    __device__ void run_staged(int K, int m_left, int n_left, Stage stage_slice, Store store)
    {
        __shared__ __align__(16) float As[KT][A_STRIDE];
        __shared__ __align__(16) float Bs[KT][NT];
        for (int k0 = 0; k0 < K; k0 += KT) {
            stage_slice(As, Bs, k0);
            __syncthreads();
            multiply(As, Bs);
            __syncthreads();  // the next stage overwrites the tiles
        }
#pragma unroll
        for (int i = 0; i < MR; ++i)
#pragma unroll
            for (int j = 0; j < NR; ++j)
                if (row(i) < m_left && col(j) < n_left) store(row(i), col(j), acc[i][j]);
    }

    // The same with element-wise loaders: a_at(m, k) and b_at(k, n), zero outside the matrices.
    template <class AAt, class BAt, class Store>
    __device__ void run(int K, int m_left, int n_left, AAt a_at, BAt b_at, Store store)
    {
        run_staged(K, m_left, n_left, [&](float (*As)[A_STRIDE], float (*Bs)[NT], int k0) {
            stage(As, Bs, k0, a_at, b_at);
        }, store);
    }
};
