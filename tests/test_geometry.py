"""A kernel's launch as data (gpubench/specs/geometry.py): CUDA's limits, expressions resolved to three dimensions,
and the copy engine's rules for a TMA box."""

from gpubench.core.expr import parse
from gpubench.specs.geometry import MAX_GRID, Launch, LaunchSpec, Step, TensorMap
from gpubench.specs.variant import Config


def test_a_launch_inside_the_limits_passes():
    assert Launch((MAX_GRID[0], 1, 1), (32, 32, 1), 0).beyond_limits() is None


def test_each_limit_is_named_when_broken():
    assert "grid" in Launch((1, 65536, 1), (32, 1, 1)).beyond_limits()
    assert "1024 threads" in Launch((1, 1, 1), (33, 32, 1)).beyond_limits()  # 1,056 threads in a block
    assert "1024 threads" in Launch((1, 1, 1), (1, 1, 65)).beyond_limits()  # z past 64
    assert "empty" in Launch((0, 1, 1), (32, 1, 1)).beyond_limits()
    assert "shared" in Launch((1, 1, 1), (32, 1, 1), -1).beyond_limits()


def test_expressions_resolve_to_three_dimensions_over_the_dims_and_the_configuration():
    spec = LaunchSpec((parse("(N + BM - 1) / BM"), parse("M / 2")), (parse("BM"),), parse("BM * 4"))
    step = Step("k", ("a",), spec)
    launch = step.launch_for({"N": 1000, "M": 6}, Config("128", (("BM", 128),)))
    assert launch == Launch((8, 3, 1), (128, 1, 1), 512)
    assert spec.names() == {"N", "M", "BM"}


def test_a_tma_box_wider_than_the_swizzle_is_refused_and_a_fitting_one_is_not():
    shape = (parse("M"), parse("K"))
    too_wide = TensorMap("map_a", "ws", shape, (parse("BM"), parse("64")))  # 64 float32s: 256-byte rows
    assert "128 bytes" in too_wide.unfit({"M": 300, "K": 200, "BM": 128})  # past the 128-byte swizzle
    narrow = TensorMap("map_a", "ws", shape, (parse("BM"), parse("32")))
    assert narrow.unfit({"M": 300, "K": 200, "BM": 128}) is None
    too_tall = TensorMap("map_a", "ws", shape, (parse("512"), parse("32")))
    assert "1 to 256" in too_tall.unfit({"M": 300, "K": 200})


def test_a_map_whose_condition_fails_is_not_built_and_not_checked():
    gated = TensorMap("map_y", "ws", (parse("M"), parse("K")), (parse("512"), parse("32")), when=parse("K % 8 == 0",
                                                                                                  boolean=True))
    assert not gated.applies({"M": 10, "K": 12}) and gated.unfit({"M": 10, "K": 12}) is None
    assert gated.applies({"M": 10, "K": 16}) and gated.unfit({"M": 10, "K": 16}) is not None
