"""On a GPU: the grouped GEMM kernels' tile scheduler (cuda_src/grouped-gemm/group_walk.cuh) on its own. A probe
kernel walks the units as the persistent blocks do and writes down every block tile it is given; the tiles must be
each group's row blocks × column blocks exactly once (none of an empty group, none mixing groups), the units
numbered group after group, every lane of a warp told the same. Apart from the GEMM, so that a scheduling slip is
named as one."""

import numpy as np
import pytest

from gpubench.ops.grouped_gemm import GroupedLayout, GroupedShape, cdiv
from gpubench.specs import catalog

pytestmark = pytest.mark.gpu

WALK = catalog.kernels_dir() / "grouped-gemm" / "group_walk.cuh"
PROBE = """#include "%s"
// One warp a block, as a consumer warp walks: tiles[(unit · RANKS + rank) · 4 ..] = group, m0, valid, n0 of each
// rank's tile; seen[unit] counts the visits; trouble counts lanes that disagree and groups that go backwards.
extern "C" __global__ void walk_probe(const int* counts, const int* offsets, int G, int N, int* tiles, int* seen,
                                      int* trouble)
{
    constexpr int RANKS = P_ROWS / P_BLOCK_ROWS;
    GroupWalk<P_ROWS, P_BLOCK_ROWS, P_COLS, P_BAND> walk(counts, offsets, G, N, blockIdx.x, gridDim.x);
    int last = -1;
    for (; walk.locate(); walk.next()) {
        for (int rank = 0; rank < RANKS; ++rank) {
            const GroupTile t = walk.tile(rank);
            const bool same = __all_sync(0xffffffffu, t.group == __shfl_sync(0xffffffffu, t.group, 0) &&
                                                        t.m0 == __shfl_sync(0xffffffffu, t.m0, 0) &&
                                                        t.valid == __shfl_sync(0xffffffffu, t.valid, 0) &&
                                                        t.n0 == __shfl_sync(0xffffffffu, t.n0, 0));
            if (threadIdx.x == 0) {
                int* row = tiles + 4 * (walk.unit * RANKS + rank);
                row[0] = t.group, row[1] = t.m0, row[2] = t.valid, row[3] = t.n0;
                if (!same) atomicAdd(trouble, 1);
            }
        }
        if (threadIdx.x == 0) {
            atomicAdd(seen + walk.unit, 1);
            if (walk.group < last) atomicAdd(trouble, 1);
        }
        last = walk.group;
    }
}
"""

# 70 groups with every fifth empty; 1000 small groups, most of them empty; 100 groups with rows only in the last
MANY = tuple(0 if g % 5 == 0 else 37 * g % 300 for g in range(70))
SPARSE = tuple(int(x) for x in np.random.default_rng(3).integers(-60, 50, 1000).clip(0))
LAST_ONLY = (0,) * 99 + (300,)
# (group rows, N, layout, the kernel's unit rows and block rows (a 2-block cluster: 256, 128), columns, band)
CASES = [(MANY, 264, "contiguous", 128, 128, 256, 0), (MANY, 264, "contiguous", 128, 128, 256, 8),
         (MANY, 264, "masked", 256, 128, 256, 8), (SPARSE, 128, "contiguous", 128, 128, 128, 8),
         (SPARSE, 200, "masked", 256, 128, 128, 0), (LAST_ONLY, 512, "contiguous", 128, 128, 256, 8),
         ((100, 0, 77, 130), 200, "masked", 256, 128, 256, 8),
         ((2500, 0, 3000), 4096, "contiguous", 128, 128, 256, 16)]  # bands of 16 (g16): two a group, the last partial
BLOCKS = (1, 7, 132)


def expected(shape: GroupedShape, rows: int, block_rows: int, cols: int) -> tuple[list, list]:
    """Each group's tiles (group, m0, valid rows, n0), and the group of each unit in the walk's order."""
    tiles, unit_groups = [], []
    for g, (start, m) in enumerate(zip(shape.offsets, shape.group_m)):
        units = cdiv(m, rows) * cdiv(shape.n, cols)
        unit_groups += [g] * units
        tiles += [(g, start + b * rows + r * block_rows, m - b * rows - r * block_rows, n * cols)
                  for b in range(cdiv(m, rows)) for n in range(cdiv(shape.n, cols)) for r in range(rows // block_rows)]
    return sorted(tiles), unit_groups


@pytest.mark.parametrize("blocks", BLOCKS)
@pytest.mark.parametrize("group_m,n,layout,rows,block_rows,cols,band", CASES,
                         ids=[f"{len(c[0])}groups-n{c[1]}-{c[2]}-rows{c[3]}-cols{c[5]}-band{c[6]}" for c in CASES])
def test_the_walk_gives_every_tile_of_every_group_once(cuda, tmp_path, group_m, n, layout, rows, block_rows, cols,
                                                        band, blocks):
    cp = cuda.cp
    shape = GroupedShape(group_m, n, 64, layout=GroupedLayout(layout))
    source = tmp_path / "walk_probe.cu"
    source.write_text(PROBE % WALK.as_posix())
    fn = cuda.function(source, "walk_probe", {"P_ROWS": rows, "P_BLOCK_ROWS": block_rows, "P_COLS": cols,
                                              "P_BAND": band})
    room = (cdiv(shape.rows, rows) + shape.groups) * cdiv(n, cols)  # more units than there can be
    counts = cp.asarray(np.array(shape.group_m, dtype=np.int32))
    offsets = cp.asarray(np.array(shape.offsets, dtype=np.int32))
    tiles = cp.full(4 * room * (rows // block_rows), -1, dtype=cp.int32)
    seen, trouble = cp.zeros(room, dtype=cp.int32), cp.zeros(1, dtype=cp.int32)
    fn(*(np.uintp(a.data.ptr) for a in (counts, offsets)), np.int32(shape.groups), np.int32(n),
       *(np.uintp(a.data.ptr) for a in (tiles, seen, trouble)), block=(32, 1, 1), grid=(blocks, 1))
    cp.cuda.Device().synchronize()
    want, unit_groups = expected(shape, rows, block_rows, cols)
    units = len(unit_groups)
    assert int(trouble.get()[0]) == 0, "lanes disagreed, or a block's groups went backwards"
    assert seen.get().tolist() == [1] * units + [0] * (room - units), "each unit once, none past the last"
    got = tiles.get().reshape(-1, 4)[:units * (rows // block_rows)]
    assert got[::rows // block_rows, 0].tolist() == unit_groups, "the units run group after group"
    assert sorted(map(tuple, got.tolist())) == want
