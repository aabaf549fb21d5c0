import re

import pytest

from gpubench import nvcc, registry
from gpubench.errors import GpubenchError
from gpubench.problems import GemmShape, conv_shape


def test_names_are_unique_per_op_and_backend():
    keys = [(v.op, v.backend, v.name) for v in registry.VARIANTS]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("op", registry.OPS)
@pytest.mark.parametrize("backend", registry.BACKENDS)
def test_every_op_and_backend_has_one_baseline(op, backend):
    assert sum(v.baseline for v in registry.variants(op, backend)) == 1


@pytest.mark.parametrize("v", [v for v in registry.VARIANTS if v.source], ids=lambda v: f"{v.op}-{v.name}")
def test_kernel_symbol_is_in_its_file(v):
    text = (nvcc.cuda_src_dir() / v.source).read_text()
    assert re.search(rf'extern "C" __global__ void(\s+__launch_bounds__\([^)]*\))?\s+{re.escape(v.kernel)}\(', text)
    gemm = v.options.get("gemm")
    if gemm and gemm != "cublas":
        g = registry.get("gemm", "cuda", gemm)
        assert f"{g.kernel}_batched(" in (nvcc.cuda_src_dir() / g.source).read_text()


GEMM_SHAPES = [GemmShape(1000, 1500, 777), GemmShape(1, 512, 300), GemmShape(8191, 65, 129)]
CONV_SHAPES = [conv_shape(1000, 3), conv_shape(33, 1, batch=2, in_channels=64, out_channels=32, kernel=5)]


def expected_threads(p: dict) -> int:
    if "BLOCK" in p:
        return p["BLOCK"] ** 2
    if "TX" in p:
        return p["TX"] * p["TY"]
    if "OY" in p:
        return 32 * p["TY"]
    if "WM" in p:
        return registry.warp_threads(p)
    if "TM" in p:
        return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return 2 * p["BN"]  # tf32: one warpgroup of 128 threads per 64 columns


@pytest.mark.parametrize("v", [v for v in registry.VARIANTS if v.launch], ids=lambda v: f"{v.op}-{v.name}")
def test_launch_covers_every_output(v):
    for config in v.configs_for(registry.LAB_BLOCK_SIZES):
        p = config.values
        for s in GEMM_SHAPES if v.op == "gemm" else CONV_SHAPES:
            launch = v.launch(s, p)
            assert launch.threads == expected_threads(p) <= 1024
            if v.op == "conv" and ("BLOCK" in p or "OY" in p):  # 2-D tiles of one output plane per grid.z
                if "BLOCK" in p:
                    w, h = p["BLOCK"], p["BLOCK"]
                elif v.name == "sliding-vec":
                    w, h = 128, p["TY"] * p["OY"]
                else:
                    w, h = p.get("TX", 32) * p.get("OX", 1), p["TY"] * p["OY"]
                assert launch.grid[0] * w >= s.out_width and launch.grid[1] * h >= s.out_height
                assert launch.grid[2] == s.batch * s.out_channels
                continue
            rows, cols = (s.m, s.n) if v.op == "gemm" else (s.out_channels, s.batch * s.out_pixels)
            bm, bn = (p["BLOCK"], p["BLOCK"]) if "BLOCK" in p else (p["BM"], p["BN"])
            if "WM" in p:  # a 1-D grid of tiles, mapped by the kernel itself
                assert launch.grid == (registry.cdiv(rows, bm) * registry.cdiv(cols, bn), 1, 1)
            else:
                assert launch.grid[0] * bn >= cols and launch.grid[1] * bm >= rows


def test_dynamic_shared_memory_fits_hopper():
    for v in registry.VARIANTS:
        if v.launch:
            for c in v.configs_for(registry.LAB_BLOCK_SIZES):
                for s in GEMM_SHAPES if v.op == "gemm" else CONV_SHAPES:
                    assert v.launch(s, c.values).shared_bytes <= 227 * 1024, (v.name, c.label)


def test_select_defaults_to_the_lab_set_and_keeps_registry_order():
    assert [v.name for v in registry.select("gemm", "cuda", None)] == ["global", "shared", "tiled", "cublas"]
    assert [v.name for v in registry.select("gemm", "cuda", ["cublas", "global"])] == ["global", "cublas"]


def test_unknown_variant_lists_the_allowed_ones():
    with pytest.raises(GpubenchError, match=r"unknown gemm variant 'fast'.*allowed are global, shared"):
        registry.select("gemm", "cuda", ["fast"])


def test_block_axis_follows_the_block_sizes():
    v = registry.get("gemm", "cuda", "global")
    assert [c.label for c in v.configs_for((8, 24))] == ["8", "24"]
    assert registry.get("gemm", "cuda", "tiled").configs_for((8,)) == registry.TILED_CONFIGS
