"""On a GPU: the hand INT8 GEMM (int8-wgmma-tma, wgmma s8 in nt) exactly the int64 reference, in every configuration
(clusters multicasting an operand, C stored from the accumulators or staged and copied out by TMA), on shapes that
are multiples of no tile (M, N) and whose K fills no 128-byte slot, the output poisoned first (verify): a block that
left a tile or a row unwritten, a slot's products added twice or not at all, or a box of C staged in the wrong
swizzle, shows as a non-zero error. cuBLASLt's int8 on the same shapes is exact too (the baseline it is timed
against).
Run: python3 -m pytest -q -m gpu tests/test_gpu_int8_gemm.py -n 0"""

import math

import pytest

from gpubench.core.dtypes import DType
from gpubench.execution.tasks import verify
from gpubench.ops.gemm import GemmLayout, GemmShape
from gpubench.specs import catalog

pytestmark = pytest.mark.gpu

CATALOG = catalog.Catalog(catalog.builtin())
OURS = CATALOG.get("gemm", "cuda", "int8-wgmma-tma")

# K a multiple of 16 (TMA's 16-byte rows), none of M, N or K a multiple of 64 or 128 past that. 1000 × 1030 × 4112:
# 8 × 5 tiles of 128 × 256 (fewer than the SMs, one tile a block) with 33 slots of 128 k (the last one 16 k, the rest
# zero-filled), N even but not a multiple of 4 (8-byte stores; t1 and t2 have no map of C there and store as t0);
# 1000 × 1036 × 4112: the same with N % 4 == 0, so t1 and t2 copy C out by TMA, the last box column 12 wide, and 9
# tile columns of 128 (an odd count: 256 × 128 c2's last cluster has a tile past N); 4112 × 3000 × 1040: 33 × 12
# tiles, more than the SMs, so persistent blocks walk up to 4 tiles each and the ring's phases run on across tiles,
# and 33 tile rows (c2 along M: the last cluster's second tile lies past M, computed on zeros, stored nowhere), the
# boxes of C ragged in both M and N; 777 × 1001 × 48: odd M and N (the one-int32 stores of an odd N), less than one
# slot of k; 24 × 40 × 16: smaller than one tile (t1: boxes clipped to 24 × 32 and 24 × 8, the others wholly outside
# C; t2: the same for the first two warps' boxes, 16 and 8 rows).
SHAPES = [(1000, 1030, 4112), (1000, 1036, 4112), (4112, 3000, 1040), (777, 1001, 48), (24, 40, 16)]


def check(cuda, data, variant, config, shape):
    inputs, ref = data(shape)
    prepared = cuda.prepare(variant, config, shape, inputs)
    err = verify(cuda, prepared, ref, shape)
    prepared.release()
    assert math.isfinite(err), f"{variant.name} {config.label} {shape.full_label}: unwritten output"
    assert err == 0.0, f"{variant.name} {config.label} {shape.full_label}: rel_err {err:.3e}, not exact"


# Paths the kernel takes that the spec's timed list leaves out: C copied out by TMA without clusters, by warpgroup
# (t1) and by warp (t2); ping1 with it (each warpgroup its own staging and a whole tile's rows), alone and in 2-block
# clusters; ping1 on 64 × 256 tiles in a cluster.
MORE = tuple(OURS.space.config(values) for values in (
    {"BM": 128, "BN": 256, "STAGES": 4, "SWIZZLE": 8, "TMASTORE": 1},
    {"BM": 128, "BN": 256, "STAGES": 4, "SWIZZLE": 8, "TMASTORE": 2},
    {"BM": 128, "BN": 128, "STAGES": 6, "SWIZZLE": 8, "PING": 1, "TMASTORE": 1},
    {"BM": 128, "BN": 128, "STAGES": 6, "SWIZZLE": 8, "PING": 1, "CLUSTER": 2, "TMASTORE": 2},
    {"BM": 64, "BN": 256, "STAGES": 4, "PING": 1, "CLUSTER": 2, "TMASTORE": 1}))


def test_the_extra_configurations_are_valid_and_new():
    assert not [c.label for c in MORE if OURS.space.broken_constraints(c)]
    assert not {c.label for c in MORE} & {c.label for c in OURS.space.configs}


@pytest.mark.parametrize("config", OURS.space.configs + MORE, ids=lambda c: c.label)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_hand_int8_gemm_is_exact(cuda, data, config, mnk):
    check(cuda, data, OURS, config, GemmShape(*mnk, DType.INT8, GemmLayout.NT))


@pytest.mark.parametrize("mnk", [s for s in SHAPES if all(d % 2 == 0 for d in s)], ids=lambda s: "x".join(map(str, s)))
def test_cublaslt_int8_is_exact_on_the_same_shapes(cuda, data, mnk):
    lt = CATALOG.get("gemm", "cuda", "cublaslt")
    check(cuda, data, lt, lt.space.configs[0], GemmShape(*mnk, DType.INT8, GemmLayout.NT))


def test_a_layout_other_than_nt_is_not_offered():
    """The integer wgmma reads K-major operands only: the variant declares nt alone, so nn and tn never reach it."""
    assert list(OURS.scope.layouts) == [GemmLayout.NT] and list(OURS.scope.dtypes) == [DType.INT8]
