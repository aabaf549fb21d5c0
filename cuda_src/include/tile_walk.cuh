// The persistent tile walk of the Hopper GEMMs with clusters (gemm/10_wgmma_tma.cu, gemm/11_wgmma_int8.cu): which
// TILE_M × TILE_N tiles of C a block computes, one after another, where CLUSTER_BLOCKS blocks share one operand tile
// by TMA multicast.
#pragma once
#include "gemm_common.cuh"  // tile_coords
#include "hopper.cuh"       // cluster_rank

// A cluster takes groups of CM × CN tiles: CLUSTER_BLOCKS stacked in M with the same columns, so the same B tile
// (where TILE_N >= TILE_M), or side by side in N with the same rows of A (where TILE_M > TILE_N: SHARE_A). Cluster
// c takes groups c, c + clusters, ... (in bands of GROUP group rows: tile_coords); each block the tile at its rank
// in each. (Template parameters, not the kernels' -D macros BM, BN, CLUSTER, SWIZZLE.)
template <int TILE_M, int TILE_N, int CLUSTER_BLOCKS, int GROUP>
struct TileWalk {
    static constexpr bool SHARE_A = TILE_M > TILE_N;
    static constexpr int CM = SHARE_A ? 1 : CLUSTER_BLOCKS, CN = SHARE_A ? CLUSTER_BLOCKS : 1;
    int groups_m, groups_n, groups, group, stride, rank;
    __device__ TileWalk(int M, int N)
        : groups_m(((M + TILE_M - 1) / TILE_M + CM - 1) / CM), groups_n(((N + TILE_N - 1) / TILE_N + CN - 1) / CN),
          groups(groups_m * groups_n), group(blockIdx.x / CLUSTER_BLOCKS), stride(gridDim.x / CLUSTER_BLOCKS),
          rank(CLUSTER_BLOCKS > 1 ? cluster_rank() : 0) {}
    __device__ bool more() const { return group < groups; }
    __device__ void next() { group += stride; }
    // The block's j-th group from the current one: whether there is one, and its tile's origin.
    __device__ bool has(int j) const { return group + j * stride < groups; }
    __device__ void origin_of(int g, int& m0, int& n0) const
    {
        int group_m, group_n;
        tile_coords<GROUP>(g, groups_m, groups_n, group_m, group_n);
        m0 = (group_m * CM + (SHARE_A ? 0 : rank)) * TILE_M;
        n0 = (group_n * CN + (SHARE_A ? rank : 0)) * TILE_N;
    }
    __device__ void origin(int& m0, int& n0) const { origin_of(group, m0, n0); }
};
