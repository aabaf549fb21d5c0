"""On a GPU: every CUDA variant × configuration against the float64 reference at ragged shapes, the example lab
kernels declared in a project, and worker isolation against real CUDA faults (needs a GPU)."""

import math
from dataclasses import replace
from pathlib import Path

import pytest

from gpubench.specs import project
from gpubench.specs import catalog
from gpubench.specs import files
from gpubench.specs import parse
from gpubench.core.dtypes import DType
from gpubench.core.errors import GpubenchError
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.execution.tasks import PointTask, ShapeTask, verify
from gpubench.measure.timing import TimingPolicy
from gpubench.execution.worker import Worker, WorkerOptions

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "lab" / "gpubench.toml"
CATALOG = catalog.Catalog.with_user(project.load(EXAMPLE).variants)
# Ragged for every tile; the fourth keeps K and N multiples of 4, which TMA-fed kernels require, with 33 k tiles
# (an odd count, the ring wrapped 8 times) and 9 column blocks (an odd count, for 2-block clusters). The fifth has
# 12 × 33 tiles of 256 × 128, more than an H100 or H200 has SMs, so persistent blocks walk up to 3 tiles each, with
# 3 k tiles per tile (the ring's phases run on across tiles). The last two have every dimension a multiple of 16
# bytes of 16-bit and of fp8 elements, which the 16-bit and fp8 TMA kernels require, and none of any tile: 2056 ×
# 3000 × 1040 is 17 (an odd count, for clusters along M) × 12 tiles of 128 × 256, more than the SMs, with 17 k tiles
# of 64 (9 of 128 for fp8); 24 × 40 × 48 is smaller than one tile and one k slot.
GEMM_SHAPES = [GemmShape(1000, 1500, 777), GemmShape(1, 512, 300), GemmShape(8191, 65, 129), GemmShape(33, 1, 7),
               GemmShape(333, 1100, 1028), GemmShape(3000, 4100, 68), GemmShape(2056, 3000, 1040),
               GemmShape(24, 40, 48)]
CONV_SHAPES = [
    conv_shape(1000, 1), conv_shape(777, 2), conv_shape(1000, 3),  # the lab's shape, SAME padding
    # the lab's stride 2 with rows of a multiple of 4 floats (sliding-stream's fast path): pad 0 with 499-wide
    # output rows (not 16-byte aligned), pad 1 with 500-wide ones; two images, two filters
    conv_shape(1000, 2, batch=2, out_channels=2), conv_shape(1000, 2, batch=2, out_channels=2, padding=1),
    conv_shape(33, 1, batch=2, in_channels=64, out_channels=32),
    conv_shape(29, 2, batch=3, in_channels=3, out_channels=32, kernel=5, padding=2),
    conv_shape(20, 1, batch=2, in_channels=64, out_channels=1, kernel=1, padding="valid"),
    conv_shape(17, 3, batch=1, in_channels=5, out_channels=7, kernel=5, padding="same"),
    # 3×3, stride 1, channels and filters that fill no Winograd slice or block, odd sizes, with and without padding
    conv_shape(23, 1, batch=3, in_channels=13, out_channels=70),
    conv_shape(19, 1, batch=2, in_channels=9, out_channels=33, padding="valid"),
    # channels a multiple of 8 (what 16-byte copies need, tc-implicit's `requires`) but of no tile's 16, 32, 64;
    # filters that fill no tile, odd or not a multiple of 8 (the output's element-wise path), ragged pixel counts:
    # 3×3 at stride 1 and 2, a 1×1 (a plain GEMM, C past one 128-channel slice) and a 5×5 at stride 2
    conv_shape(23, 1, batch=3, in_channels=24, out_channels=70),
    conv_shape(25, 2, batch=2, in_channels=40, out_channels=72, padding=1),
    conv_shape(13, 1, batch=5, in_channels=136, out_channels=8, kernel=1, padding="valid"),
    conv_shape(11, 2, batch=3, in_channels=8, out_channels=33, kernel=5, padding=2),
]


def precisions(v) -> list[tuple]:
    """The (dtype, layout) pairs a variant is checked in here: all it declares, except for the libraries, which
    tests/test_gpu_precision.py checks in every precision (here: fp32 in the default layout, where they take it)."""
    if v.code.runner.library_math and not v.code.runner.STEPS:
        return [(DType.FP32, v.scope.layouts[0])] if DType.FP32 in v.scope.dtypes else []
    return [(d, x) for d in v.scope.dtypes for x in v.scope.layouts]


def cases(op, shapes):
    for v in CATALOG.variants(op, "cuda"):
        for dtype, layout in precisions(v):
            for c in v.space.configs_for(parse.LAB_BLOCK_SIZES):
                for s in shapes:
                    try:
                        s = replace(s, dtype=dtype, layout=layout)
                    except GpubenchError:  # channels that no 32-channel vector holds: the int8 kernels' own file
                        continue
                    if v.scope.unfit(s.dims()):  # e.g. Winograd at stride 2: skipped by the runner, nothing to check
                        continue
                    yield pytest.param(v, c, s, id=f"{v.name}-{c.label}-{s.label}-s{getattr(s, 'stride', '')}"
                                                   f"-{dtype}-{layout}")


def check(cuda, data, variant, config, shape):
    inputs, ref = data(shape)
    prepared = cuda.prepare(variant, config, shape, inputs)
    err = verify(cuda, prepared, ref, shape)
    assert math.isfinite(err), f"{variant.name} {config.label} {shape}: NaN/unwritten output"
    tol = cuda.tolerance(variant, shape)
    assert err <= tol, f"{variant.name} {config.label} {shape}: rel_err {err:.2e} over {tol:.2e}"
    prepared.release()


@pytest.mark.parametrize("variant,config,shape", list(cases("gemm", GEMM_SHAPES)))
def test_gemm(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)


@pytest.mark.parametrize("variant,config,shape", list(cases("conv", CONV_SHAPES)))
def test_conv(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)


def test_fp8_promotion_keeps_the_error_of_cublaslt_over_a_long_k(cuda, data):
    """fp8-tma adds the tensor cores' fp8 accumulators into float32 after every slot (p1): over K = 16384 its error
    stays within 5% of cuBLASLt's (the tensor cores' own accumulation, without p, is printed beside them)."""
    shape = GemmShape(256, 512, 16384, DType.FP8, GemmLayout.NT)
    inputs, ref = data(shape)
    errs, promoted = {}, []
    lt, ours = CATALOG.get("gemm", "cuda", "cublaslt"), CATALOG.get("gemm", "cuda", "fp8-tma")
    for v, c in [(lt, lt.space.configs[0])] + [(ours, c) for c in ours.space.configs]:
        prepared = cuda.prepare(v, c, shape, inputs)
        errs[f"{v.name} {c.label}"] = verify(cuda, prepared, ref, shape)
        prepared.release()
        if v is ours and c.values.get("PROMOTE") == 1:
            promoted.append(errs[f"{v.name} {c.label}"])
    print(errs)
    assert promoted and max(promoted) <= 1.05 * errs[f"cublaslt {lt.space.configs[0].label}"], errs


@pytest.mark.parametrize("promote", [1, 2, 4])
def test_fp8_alternating_sets_add_what_the_drained_set_adds(cuda, data, promote):
    """x2 (two fp8 sets, one window added into float32 while the next one's wgmmas run) changes when a window is
    added in, not what is added or in which order: its output is bit for bit that of x1 (one set, drained at each
    window's end), over 17 x 12 ragged tiles walked by persistent blocks and 17 k slots (an odd count of windows
    at p2, a partial last one at p4)."""
    base = {"BN": 128, "BK": 128, "STAGES": 6, "CLUSTER": 2, "PROMOTE": promote}
    assert_same_output(cuda, data, "fp8-tma", GemmShape(2056, 3000, 2080, DType.FP8, GemmLayout.NT),
                       [{**base, "SETS": sets} for sets in (1, 2)])


@pytest.mark.parametrize("promote,sets", [(1, 2), (1, 1), (0, 1)])
def test_fp8_uniform_descriptors_add_what_the_plain_ones_add(cuda, data, promote, sets):
    """u1 (the warpgroup index broadcast, so the descriptors live in uniform registers) changes how each slot's
    descriptors are computed, not a product or its order: the output is bit for bit that of u0, promoted (p1 x2,
    p1 with one set) and not, at 128 x 128 and, promoted with one set, at 128 x 192. 17 x 23 ragged 128 x 128 tiles
    (odd counts both ways; persistent blocks walk up to 4 of them) and 17 k slots."""
    base = {"BN": 128, "BK": 128, "STAGES": 6, "CLUSTER": 2, "SWIZZLE": 8, "PROMOTE": promote, "SETS": sets}
    shape = GemmShape(2056, 2888, 2080, DType.FP8, GemmLayout.NT)
    assert_same_output(cuda, data, "fp8-tma", shape, [base, {**base, "UWG": 1}])
    if promote and sets == 1:
        wide = {**base, "BN": 192, "STAGES": 4, "BBOX": 96}
        assert_same_output(cuda, data, "fp8-tma", shape, [wide, {**wide, "UWG": 1}])


@pytest.mark.parametrize("promote,sets,bn", [(1, 1, 128), (1, 2, 128), (0, 1, 128), (1, 1, 192)])
def test_fp8_carried_ring_and_peek_add_what_the_plain_loop_adds(cuda, data, promote, sets, bn):
    """d1 (the ring's index, phase and descriptors carried from slot to slot) and q1 (the next slot's full barrier
    asked about while this slot runs, its wait skipped where the data had come) change how a slot finds its data,
    not a product or an add: bit for bit the output of d0, promoted (one set, two sets, 128 x 192; one set with the
    overlapped epilogue too) and not. 17 x 23 ragged tiles walked by persistent blocks (the carried ring runs on
    from tile to tile and wraps 2080 / 128 = 17 slots over a ring of 6 or 4), and a problem of one k slot."""
    base = {"BN": bn, "BK": 128, "STAGES": 6 if bn == 128 else 4, "CLUSTER": 2, "SWIZZLE": 8, "PROMOTE": promote,
            "SETS": sets, "UWG": 1, **({"BBOX": 96} if bn == 192 else {})}
    configs = [base, {**base, "CARRY": 1}, {**base, "CARRY": 1, "PEEK": 1}]
    if promote and sets == 1 and bn == 128:
        configs.append({**base, "CARRY": 1, "PEEK": 1, "OVERLAP": 1})
    for shape in (GemmShape(2056, 2888, 2080, DType.FP8, GemmLayout.NT),
                  GemmShape(200, 136, 48, DType.FP8, GemmLayout.NT)):
        assert_same_output(cuda, data, "fp8-tma", shape, configs)


@pytest.mark.parametrize("dtype,layout,shape", [
    (DType.BF16, GemmLayout.NN, (2056, 3000, 1040)), (DType.FP16, GemmLayout.NN, (200, 136, 48)),
    (DType.FP16, GemmLayout.NT, (4104, 2056, 64)), (DType.BF16, GemmLayout.TN, (4104, 2056, 136))])
def test_16bit_carried_ring_and_peek_store_what_the_plain_loop_stores(cuda, data, dtype, layout, shape):
    """d1 and q1 on the 16-bit loop (made for fp8: the ring's index, phase and descriptors carried from slot to
    slot; the next slot's full barrier asked about while this slot runs) change how a slot finds its data, not a
    product or its order: bit for bit the output of c2 g8 u1, with and without the overlapped epilogue and
    without the cluster (c1), in every layout (K-major and MN-major descriptors both carried). 17 x 12 ragged
    tiles (17 k slots: the carried ring wraps 4 times, and on from tile to tile), 33 x 9 tiles with one k slot
    and with 3 (blocks walk up to 3 tiles, the ring's phase carried across them), and 2 x 1 ragged tiles with
    less than one k slot."""
    base = {"BN": 256, "BK": 64, "STAGES": 4, "CLUSTER": 2, "SWIZZLE": 8, "UWG": 1}
    carried = {**base, "CARRY": 1}
    assert_same_output(cuda, data, "wgmma-tma", GemmShape(*shape, dtype, layout),
                       [base, carried, {**carried, "PEEK": 1}, {**carried, "PEEK": 1, "OVERLAP": 1},
                        {**carried, "PEEK": 1, "CLUSTER": 1}, {**base, "CLUSTER": 1}])


@pytest.mark.parametrize("dtype,layout,shape", [
    (DType.BF16, GemmLayout.NN, (2056, 3000, 1040)), (DType.FP16, GemmLayout.TN, (4104, 2056, 64))])
def test_overlapped_epilogue_stores_what_the_plain_one_stores(cuda, data, dtype, layout, shape):
    """o1 (a tile's C kept in registers and stored, one round per slot, while the next tile's first slots multiply)
    changes when C leaves, not what: its output is bit for bit that of o0, over persistent blocks that walk up to 3
    ragged tiles each, with 17 k slots, and with one (K = 64: the second round follows no slot of its own)."""
    base = {"BN": 256, "BK": 64, "STAGES": 4, "CLUSTER": 2, "SWIZZLE": 8}
    assert_same_output(cuda, data, "wgmma-tma", GemmShape(*shape, dtype, layout),
                       [{**base, "OVERLAP": overlap} for overlap in (0, 1)])


@pytest.mark.parametrize("dtype,layout,shape", [
    (DType.BF16, GemmLayout.NN, (2056, 3000, 1040)), (DType.FP16, GemmLayout.NT, (4104, 2056, 64)),
    (DType.BF16, GemmLayout.TN, (4104, 2056, 136))])
def test_four_block_clusters_store_what_one_block_stores(cuda, data, dtype, layout, shape):
    """c4 (four blocks along M, each loading a quarter of the B tile and multicasting it into all four) changes
    who loads B, not what is multiplied: its output is bit for bit that of c1 and c2, where the tile rows leave a
    cluster with blocks past M (17 rows: the last cluster has one row of four; 33 rows), persistent clusters walk
    up to 3 groups (33 × 9 tiles over at most 32 clusters), with 17 k slots, one, and three."""
    base = {"BN": 256, "BK": 64, "STAGES": 4, "SWIZZLE": 8, "OVERLAP": 1}
    assert_same_output(cuda, data, "wgmma-tma", GemmShape(*shape, dtype, layout),
                       [{**base, "CLUSTER": 1}, {**base, "CLUSTER": 2}, {**base, "CLUSTER": 4, "BLOCKS": 128}])


@pytest.mark.parametrize("dtype,layout,shape", [
    (DType.BF16, GemmLayout.NN, (2056, 2888, 1040)), (DType.FP16, GemmLayout.NT, (4104, 2056, 64)),
    (DType.BF16, GemmLayout.TN, (4104, 2056, 136))])
def test_tall_tiles_in_clusters_along_n_store_what_wide_tiles_store(cuda, data, dtype, layout, shape):
    """256 x 128 tiles (two m64 blocks a consumer warpgroup, clusters along N sharing the A tile by multicast)
    change the tile's shape and who loads what, not a product or its order along k: the output is bit for bit
    that of 128 x 256 (clusters along M sharing B), with and without clusters and uniform descriptors, where the
    tile columns leave a cluster with a block past N (23 and 17 columns of 128), persistent clusters walk up to 3
    groups (17 x 9 over 66), with 17 k slots, one, and three."""
    wide = {"BN": 256, "BK": 64, "STAGES": 4, "CLUSTER": 2, "SWIZZLE": 8, "OVERLAP": 1}
    tall = {**wide, "BM": 256, "BN": 128}
    assert_same_output(cuda, data, "wgmma-tma", GemmShape(*shape, dtype, layout),
                       [wide, tall, {**tall, "UWG": 1}, {**tall, "CLUSTER": 1, "SWIZZLE": 0, "OVERLAP": 0}])


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16])
@pytest.mark.parametrize("shape", [
    conv_shape(29, 1, batch=23, in_channels=72, out_channels=200, padding=1),
    conv_shape(95, 2, batch=9, in_channels=40, out_channels=130, padding=1)])
def test_split_last_wave_adds_the_second_half_in_every_call(cuda, data, shape, dtype):
    """tc-wgmma-tma split1 shares each tile past the last full wave between two blocks by slices, where those
    tiles are at most half the blocks. On 132 SMs, 256x128 tiles: 76 × 2 = 152 tiles (20 halved, 18 slices: 9 and 9;
    200 filters, the second filter tile ragged) and 81 × 2 = 162 at stride 2 (30 halved, 9 slices: 4 and 5; 130
    filters, not a multiple of 8). The second halves' sums missing, misplaced or added to the wrong tile fail the
    check; the flags live in a workspace that is not zeroed between calls, so the third call in a row is the one
    verified (with the same inputs each call, a flag left set would be read with the last call's equal sums: this
    shows calls in a row finish and add, not that each flag is cleared)."""
    shape = replace(shape, dtype=dtype, layout=ConvLayout.NHWC)
    ours = CATALOG.get("conv", "cuda", "tc-wgmma-tma")
    dims = shape.dims()

    def halves_some(c) -> bool:  # the kernel halves the tiles past the last full wave only where they are few enough
        tiles = -(-dims["N"] * dims["OH"] * dims["OW"] // c.values["BM"]) * -(-dims["K"] // c.values["BN"])
        past = tiles % cuda.sms
        return tiles > cuda.sms and 0 < 2 * past <= cuda.sms

    split = [c for c in ours.space.configs if c.values.get("SPLIT") and halves_some(c)]
    if not split:
        pytest.skip(f"no split1 configuration halves a tile of this shape on {cuda.sms} SMs")
    inputs, ref = data(shape)
    for c in split:
        prepared = cuda.prepare(ours, c, shape, inputs)
        prepared.run()
        prepared.run()
        err = verify(cuda, prepared, ref, shape)
        prepared.release()
        assert err <= cuda.tolerance(ours, shape), (c.label, err)


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16])
@pytest.mark.parametrize("shape", [
    conv_shape(29, 1, batch=23, in_channels=72, out_channels=200, padding=1),
    conv_shape(95, 2, batch=9, in_channels=40, out_channels=130, padding=1)])
def test_tma_ping_tiles_in_turn_and_tma_stores_clip(cuda, data, shape, dtype):
    """tc-wgmma-tma's PING configurations (the two consumer warpgroups taking whole tiles in turn) and its output
    through TMA boxes of map_y, on shapes whose tiles persistent blocks walk several at a time: 29² × 23 images
    (19,343 pixels: 152 tiles of 128 × 2 filter tiles = 304 tiles on 132 SMs, so blocks take 3 tiles (an odd
    count: the first warpgroup takes two) or 2; K = 200, a multiple of 8: TMA boxes, the last one of each tile
    clipped to 8 filters, the last tile's rows clipped to 15), and stride 2 with K = 130 (no map_y: the copy loop).
    The automatic checks' shapes give a block one tile at most. Every configuration of the spec, and PING (which
    the spec's list leaves out: measured, not faster) with and without the TMA store; the third call in a row is
    verified, output poisoned with NaN."""
    shape = replace(shape, dtype=dtype, layout=ConvLayout.NHWC)
    ours = CATALOG.get("conv", "cuda", "tc-wgmma-tma")
    ping = [ours.space.config({"BM": 128, "BN": 128, "STAGES": 6, "CLUSTER": 1, "PING": 1, "TMA_STORE": store})
            for store in (1, 0)]
    inputs, ref = data(shape)
    for c in list(ours.space.configs) + ping:
        prepared = cuda.prepare(ours, c, shape, inputs)
        prepared.run()
        prepared.run()
        err = verify(cuda, prepared, ref, shape)
        prepared.release()
        assert math.isfinite(err) and err <= cuda.tolerance(ours, shape), (c.label, err)


@pytest.mark.parametrize("dtype,shape", [
    (DType.FP16, conv_shape(29, 1, batch=47, in_channels=136, out_channels=200, padding=1)),
    (DType.BF16, conv_shape(95, 2, batch=9, in_channels=40, out_channels=130, padding=1))])
def test_tc_conv_carried_ring_and_peek_store_what_the_plain_loop_stores(cuda, data, dtype, shape):
    """tc-wgmma-tma's u1 (the warpgroup index uniform), d1 (the consumers' ring slot, phase and descriptors carried
    from slice to slice, the producer's filter tap and channel chunk walked instead of divided) and q1 (the next
    slice's full barrier asked about while this slice's wgmmas run) change how a slice finds its data, not a product
    or its order: bit for bit the output of the plain loop, for 256x128 (u1, u1 d1, u1 d1 q1) and with u1 d1 q1 for
    192x128 on three consumer warpgroups with the copy loop, 128x128 s6, 128x128 ping1 (a warpgroup's ring jumps
    over the other's tiles), split1 (units of half a tile's slices: 13 and 14) and 128x128 c2 (the slot released in
    both blocks of the cluster). 29² × 47 images with C = 136 and K = 200: 27 slices a tile (3 channel chunks, the
    last one mostly zeros), so a ring of 4 or 6 wraps in the middle of every tile, and 310 to 618 tiles on 132 SMs
    (blocks walk 2 to 5 tiles, the ring running on from one to the next); stride 2 with C = 40 and K = 130: 9
    slices a tile, 162 to 324 tiles, no map_y (the copy loop). The third call in a row is the one verified, output
    poisoned with NaN."""
    shape = replace(shape, dtype=dtype, layout=ConvLayout.NHWC)
    dims = shape.dims()
    slices = dims["R"] * dims["S"] * -(-dims["C"] // 64)
    carried = {"UWG": 1, "CARRY": 1, "PEEK": 1}
    tall = {"BM": 256, "BN": 128, "STAGES": 4, "CLUSTER": 1}
    square = {"BM": 128, "BN": 128, "STAGES": 6, "CLUSTER": 1}
    three = {"BM": 192, "BN": 128, "STAGES": 4, "CLUSTER": 1, "CONSUMERS": 3, "TMA_STORE": 0}
    groups = [[tall, {**tall, "UWG": 1}, {**tall, "UWG": 1, "CARRY": 1}, {**tall, **carried}]]
    groups += [[base, {**base, **carried}]
               for base in (three, square, {**square, "PING": 1}, {**tall, "SPLIT": 1}, {**square, "CLUSTER": 2})]
    for configs in groups:
        base = configs[0]
        tiles = -(-dims["N"] * dims["OH"] * dims["OW"] // base["BM"]) * -(-dims["K"] // base["BN"])
        assert slices % base["STAGES"] and tiles > cuda.sms, (base, slices, tiles)  # what the docstring says
        assert_same_output(cuda, data, "tc-wgmma-tma", shape, configs, calls_before=2)


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16])
@pytest.mark.parametrize("shape", [
    conv_shape(61, 1, batch=9, in_channels=64, out_channels=40, padding=1),
    conv_shape(29, 1, batch=7, in_channels=136, out_channels=200, padding=1),
    conv_shape(18, 1, batch=5, in_channels=64, out_channels=72, kernel=5, padding=2)])
def test_halo_tiles_walked_with_resident_or_streamed_filters(cuda, data, shape, dtype):
    """tc-wgmma-halo on shapes that make persistent blocks walk several tiles: 61² × 9 images (Wp = 63, 61 padded
    rows of pixels an image: 16 tiles of 256, the last one 3 rows short, 144 tiles for 132 SMs; C = 64 and 9
    slots, so the filter taps stay resident and the blocks' second tiles reload none of them); 29² × 7 with
    C = 136 (three 64-channel chunks, the last one mostly past C: zero-filled by the copy engine) and K = 200 (a
    ragged filter tile); a 5×5 filter with pad 2 (shifts up to 4·Wp + 4 rows). Every configuration, output poisoned
    with NaN, against float64."""
    shape = replace(shape, dtype=dtype, layout=ConvLayout.NHWC)
    ours = CATALOG.get("conv", "cuda", "tc-wgmma-halo")
    inputs, ref = data(shape)
    for c in ours.space.configs:
        prepared = cuda.prepare(ours, c, shape, inputs)
        prepared.run()  # a second call reuses nothing from the first
        err = verify(cuda, prepared, ref, shape)
        prepared.release()
        assert math.isfinite(err) and err <= cuda.tolerance(ours, shape), (c.label, err)


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16])
@pytest.mark.parametrize("shape", [
    conv_shape(27, 1, batch=5, in_channels=64, out_channels=72, padding=1),
    conv_shape(56, 1, batch=3, in_channels=64, out_channels=64, padding=1)])
def test_halo_whole_row_tiles_leave_as_tma_boxes(cuda, data, shape, dtype):
    """tc-wgmma-halo's PING configurations with 64 filters a tile store tiles of whole padded rows (BM a multiple
    of Wp = W + 2) as TMA boxes staged in the tile's halo slot, not through the copy loop the other shapes take:
    27² (Wp = 29: 8 rows a 232-pixel tile, the 4th tile of an image 3 rows deep, the rows past OH clipped by the
    copy engine; 72 filters: the second filter tile's box clipped to 8 channels) and the 56² layer's own geometry
    (Wp = 58: 4 rows a tile, 14 tiles an image). Output poisoned with NaN, against float64."""
    shape = replace(shape, dtype=dtype, layout=ConvLayout.NHWC)
    ours = CATALOG.get("conv", "cuda", "tc-wgmma-halo")
    wp = shape.dims()["W"] + 2 * shape.dims()["pad"]
    boxed = [c for c in ours.space.configs if c.values.get("PING") and c.values["BN"] == 64 and c.values["BM"] % wp == 0]
    assert boxed, f"no configuration stores whole rows of {wp} padded pixels"
    inputs, ref = data(shape)
    for c in boxed:
        prepared = cuda.prepare(ours, c, shape, inputs)
        prepared.run()
        err = verify(cuda, prepared, ref, shape)
        prepared.release()
        assert math.isfinite(err) and err <= cuda.tolerance(ours, shape), (c.label, err)


def test_halo_descriptors_need_the_base_offset_the_spec_gives_them(cuda, data):
    """The shifted wgmma descriptors start at pixel rows that are no multiple of 8 inside the 1024-byte swizzle
    pattern. The spec's DESC_BASE is the one that reads them right; the other one must read them wrong (else the
    field would not matter and the test would show nothing)."""
    shape = conv_shape(33, 1, batch=2, in_channels=64, out_channels=64, padding=1, dtype=DType.FP16,
                       layout=ConvLayout.NHWC)
    ours = CATALOG.get("conv", "cuda", "tc-wgmma-halo")
    inputs, ref = data(shape)
    c = ours.space.configs[0]
    errs = {}
    for base in (0, 1):
        config = replace(c, params=tuple((k, base if k == "DESC_BASE" else v) for k, v in c.params))
        prepared = cuda.prepare(ours, config, shape, inputs)
        errs[base] = verify(cuda, prepared, ref, shape)
        prepared.release()
    print("rel_err by DESC_BASE:", errs)
    chosen = c.values["DESC_BASE"]
    assert errs[chosen] <= cuda.tolerance(ours, shape), errs
    assert not errs[1 - chosen] <= cuda.tolerance(ours, shape), errs


def test_winograd_tf32x3_keeps_the_error_of_the_fp32_products(cuda, data):
    """winograd-tf32x3 takes each product as three TF32 products of split operands: on a 14² layer with 256
    channels (a 2,304-long sum per output) its rel_err stays within 1.5× of winograd-gemm's (the same transforms,
    the products on FFMA), in every configuration; the same kernel with one TF32 product (PARTS = 1, plain TF32)
    is more than 10× over, so the comparison tells FP32's accuracy from TF32's."""
    shape = conv_shape(14, 1, batch=4, in_channels=256, out_channels=256, padding=1)
    inputs, ref = data(shape)

    def errors(name, configs):
        v = CATALOG.get("conv", "cuda", name)
        out = []
        for c in configs(v):
            prepared = cuda.prepare(v, c, shape, inputs)
            out.append(verify(cuda, prepared, ref, shape))
            prepared.release()
        return out

    ffma = max(errors("winograd-gemm", lambda v: v.space.configs))
    split = errors("winograd-tf32x3", lambda v: v.space.configs)
    plain = errors("winograd-tf32x3", lambda v: [v.space.config({**v.space.configs[0].values, "PARTS": 1})])[0]
    print(f"winograd-gemm {ffma:.2e}, winograd-tf32x3 {max(split):.2e}, plain TF32 {plain:.2e}")
    assert max(split) <= 1.5 * ffma, (ffma, split)
    assert plain > 10 * ffma, (ffma, plain)


def assert_same_output(cuda, data, name, shape, configs, calls_before=0):
    """Each configuration of the variant passes the check on the shape, and all write the same bytes. The call
    verified (output poisoned first) follows `calls_before` calls of the same configuration."""
    import cupy as cp

    inputs, ref = data(shape)
    ours = CATALOG.get(shape.op, "cuda", name)
    outs = []
    for values in configs:
        config = ours.space.config(values)
        prepared = cuda.prepare(ours, config, shape, inputs)
        for _ in range(calls_before):
            prepared.run()
        err = verify(cuda, prepared, ref, shape)
        assert err <= cuda.tolerance(ours, shape), (config.label, err)
        outs.append(cp.asnumpy(prepared.output).copy())
        prepared.release()
    assert all(o.tobytes() == outs[0].tobytes() for o in outs[1:])


def test_poisoned_output_fails_verification(cuda, data):
    """The check itself can fail: a run that writes nothing leaves NaN, which never passes."""
    shape = GEMM_SHAPES[0]
    inputs, ref = data(shape)
    tiled = CATALOG.get("gemm", "cuda", "tiled")
    prepared = cuda.prepare(tiled, tiled.space.configs[0], shape, inputs)
    prepared.run = lambda: None
    assert verify(cuda, prepared, ref, shape) == math.inf


def test_small_inputs_are_placed_with_their_values(cuda):
    """A small input comes back at the place whose chain answered soonest, with the same values; the chain's
    time is a few microseconds (a miss a line), so the probe measures the buffer, not nothing."""
    import cupy as cp

    from gpubench.backends.cuda import placement

    array = cp.arange(1024, dtype=cp.float32)
    placed, tried = placement.place(cp, array, cuda._line_latency_us)
    assert len(tried) == placement.CANDIDATES and all(1.0 < us < 50.0 for us in tried)
    assert (placed is array) == (tried[0] == min(tried))
    assert cp.array_equal(placed, array)


def test_copies_spread_apart_keep_the_values_and_each_start_a_page(cuda):
    """spread's copies of a small call's buffers, a page apart on the GPU, hold the inputs' values."""
    import cupy as cp

    from gpubench.backends.cuda import placement

    array = cp.arange(777, dtype=cp.float16)
    copies = [placement.apart(cp, array) for _ in range(7)]
    assert all(cp.array_equal(c, array) for c in copies)
    assert all(placement.address(c) % placement.PAGE == 0 for c in copies)
    assert len({placement.address(c) // placement.PAGE for c in copies}) == 7


def test_the_launch_floor_is_an_empty_launch_of_a_few_microseconds(cuda):
    floors = [cuda.launch_floor_us() for _ in range(3)]
    assert all(0.5 < us < 50.0 for us in floors)
    assert max(floors) / min(floors) < 1.1  # one process's floor is steady: what tells the processes apart


def test_a_gpu_worker_is_chosen_among_candidates_and_serves(cuda):  # cuda: skipped where there is no GPU
    from gpubench.execution import launch_floor

    with Worker(WorkerOptions("cuda", candidates=launch_floor.CANDIDATES)) as worker:
        assert worker.start()["device"]
        assert len(worker.floors_us) in (launch_floor.CANDIDATES, launch_floor.BATCHES * launch_floor.CANDIDATES)
        assert worker.floors_us[0] == min(worker.floors_us)
        assert worker.environment()["device"]


FAULTS = r"""
extern "C" __global__ void out_of_bounds(const float* A, const float* B, float* C, int M, int N, int K)
{
    C[(size_t)1 << 40] = 1.0f;  // far outside any allocation: an illegal address, sticky for the context
}
extern "C" __global__ void forever(const float* A, const float* B, float* C, int M, int N, int K)
{
    while (clock64() >= 0) { }  // clock64 is volatile: the loop cannot be optimised away
}
"""


def test_faulting_kernels_cost_one_point_each(cuda, tmp_path):
    (tmp_path / "faults.cu").write_text(FAULTS)
    tables = [{"name": n, "op": "gemm", "source": "faults.cu", "kernel": n, "args": ["A", "B", "C", "M", "N", "K"],
               "grid": ["1"], "block": ["32"]} for n in ("out_of_bounds", "forever")]
    mine = {v.name: v for v in files.parse_specs({"variant": tables}, "gpubench.toml", tmp_path)}
    good = CATALOG.get("gemm", "cuda", "cublas")
    order = [good, mine["out_of_bounds"], good, mine["forever"], good]
    policy = TimingPolicy(warmup=1, reps=5, min_reps=5, budget_s=0.0)
    task = ShapeTask("t", GemmShape(256, 256, 256), 0,
                     tuple(PointTask(i, v, v.space.configs[0], policy) for i, v in enumerate(order)))
    got = []
    with Worker(WorkerOptions("cuda", timeout_s=20)) as worker:
        worker.run(task, got.append)
        kinds = [i.kind for i in worker.incidents]
    assert [(p.variant, p.status) for p in got] == [("cublas", "ok"), ("out_of_bounds", "error"), ("cublas", "ok"),
                                                    ("forever", "timeout"), ("cublas", "ok")]
    assert "illegal" in got[1].reason.lower() or "died" in got[1].reason
    assert kinds[-1] == "timeout" and len(kinds) == 2
