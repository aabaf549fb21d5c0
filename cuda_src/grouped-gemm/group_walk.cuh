// The grouped GEMM kernels' tile scheduler: persistent blocks walk one global index over the output tiles of every
// group, and each warp maps its index to (group, row block, column block) by itself, from the groups' counts.
//
// A group's rows start at offsets[g] (in A's and D's rows, the layout's: a contiguous run or a masked slab) and
// counts[g] of them are valid. Its tiles are `rows`-row blocks from offsets[g] on (rows = BM·CM, the rows a
// cluster's blocks stack: every block of a cluster takes a tile of the same group and column block) times
// cdiv(N, BN) column blocks, cdiv(counts[g], rows) · cdiv(N, BN) units in all; an empty group has none. The groups'
// units are numbered one after another (group 0's first), so a unit never mixes groups: a tile's last rows may run
// past its group's count (into pad rows, the next group's rows, or past A), and the epilogue leaves those unwritten.
//
// There is no prefix sum in memory: each cluster's units rise (unit, unit + stride, ...), so a warp keeps a cursor
// (the group holding its unit, that group's first unit and its units) and moves it forward, 32 groups a step: each
// lane reads one group's count, a shuffle scan sums the units, a ballot finds the first group that ends past the
// unit. A block reads each count once (G/32 steps over the whole walk), whatever the number of tiles.
#pragma once

#include "../include/gemm_common.cuh"  // tile_coords

// One unit of the walk as a block sees it: its group, the first row of this block's BM rows (A's and D's row),
// how many of those rows are the group's (<= 0: none; past BM: all), and its first column.
struct GroupTile {
    int group, m0, valid, n0;
};

// Whole-warp: every lane of the warp calls each member together (the shuffles and the ballot use the full mask).
// ROWS: the rows of a unit (BM · the cluster's blocks along M); BLOCK_ROWS: a block's (BM); COLS: the columns of a
// unit (BN); BAND: gemm_common.cuh's bands of row blocks within a group (SWIZZLE). (Not BM, BN, SWIZZLE: the
// kernels' -D macros.)
template <int ROWS, int BLOCK_ROWS, int COLS, int BAND>
struct GroupWalk {
    const int* counts;
    const int* offsets;
    int G, N, tiles_n;
    int unit, stride;             // this cluster's unit (one global order over all groups), the step to its next
    int group = -1, first = 0;    // the group holding `unit`, its first unit
    int units = 0, count = 0;     // ... its units and valid rows

    __device__ GroupWalk(const int* counts_, const int* offsets_, int G_, int N_, int unit_, int stride_)
        : counts(counts_), offsets(offsets_), G(G_), N(N_), tiles_n((N_ + COLS - 1) / COLS), unit(unit_),
          stride(stride_) {}

    // Move the cursor to the group that holds `unit`; false once the unit is past every group's (the walk ends).
    __device__ bool locate()
    {
        const int lane = threadIdx.x % 32;
        while (unit >= first + units) {
            const int base = group + 1;  // the next 32 groups: base + lane
            if (base >= G) return false;
            const int g = base + lane;
            const int c = g < G ? counts[g] : 0;
            int end = (c + ROWS - 1) / ROWS * tiles_n;  // this lane's group's units, then (scanned) the sum to it
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const int below = __shfl_up_sync(0xffffffffu, end, d);
                if (lane >= d) end += below;
            }
            end += first + units;  // where this lane's group's units end in the global order
            const unsigned past = __ballot_sync(0xffffffffu, g < G && unit < end);
            if (past) {  // the first such lane's group holds the unit
                const int l = __ffs(past) - 1;
                const int e = __shfl_sync(0xffffffffu, end, l);
                count = __shfl_sync(0xffffffffu, c, l);
                group = base + l;
                units = (count + ROWS - 1) / ROWS * tiles_n;
                first = e - units;
            } else {  // all 32 end at or before the unit: past them (lane 31's end is the last one's)
                first = __shfl_sync(0xffffffffu, end, 31);
                units = 0;
                group = base + 31;
            }
        }
        return true;
    }

    __device__ void next() { unit += stride; }

    // This block's tile of the located unit: `rank` of the cluster's blocks stacked along M (0 without a cluster).
    __device__ GroupTile tile(int rank) const
    {
        const int row_blocks = (count + ROWS - 1) / ROWS;
        int block_m, block_n;
        tile_coords<BAND>(unit - first, row_blocks, tiles_n, block_m, block_n);
        const int row = block_m * ROWS + rank * BLOCK_ROWS;  // within the group
        return {group, offsets[group] + row, count - row, block_n * COLS};
    }
};
