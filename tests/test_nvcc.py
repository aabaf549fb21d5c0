"""Every kernel file compiles with nvcc for sm_80 and sm_90 (CI has nvcc but no GPU), and tiling spills nothing."""

import re

import pytest

from gpubench import nvcc, registry
from gpubench.errors import CompileError

pytestmark = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")

ARCHS = ("sm_80", "sm_90")


def builds():
    """(file, defines, arch) for every configuration the registry can ask for, and every other file in cuda_src/.

    A variant pinned to an architecture (wgmma needs sm_90a) is built for that one; the rest for sm_80 and sm_90.
    """
    seen = {}
    for v in registry.VARIANTS:
        if not v.source:
            continue
        for c in v.configs_for(registry.LAB_BLOCK_SIZES + (1,)):
            for arch in (v.arch,) if v.arch else ARCHS:
                seen[(v.source, c.params, arch)] = None
                gemm = v.options.get("gemm")
                if gemm and gemm != "cublas":
                    seen[(registry.get("gemm", "cuda", gemm).source, c.params, arch)] = None
    for path in nvcc.cuda_src_dir().glob("*.cu"):
        if not any(src == path.name for src, _, _ in seen):
            for arch in ARCHS:
                seen[(path.name, (), arch)] = None
    return sorted(seen)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE", str(tmp_path))


def test_every_file_is_covered():
    files = {src for src, _, _ in builds()}
    assert files == {p.name for p in nvcc.cuda_src_dir().glob("*.cu")}


@pytest.mark.parametrize("source,params,arch", builds(), ids=lambda x: x if isinstance(x, str) else
                         "-".join(f"{k}{v}" for k, v in x) or "default")
def test_compiles(source, params, arch):
    cubin = nvcc.compile_cubin(source, arch, dict(params))
    assert cubin.stat().st_size > 0


def test_second_compile_is_a_cache_hit(tmp_path):
    first = nvcc.compile_cubin("gemm_global.cu", "sm_90", {"BLOCK": 16})
    mtime = first.stat().st_mtime_ns
    again = nvcc.compile_cubin("gemm_global.cu", "sm_90", {"BLOCK": 16})
    assert again == first and again.stat().st_mtime_ns == mtime
    assert nvcc.compile_cubin("gemm_global.cu", "sm_90", {"BLOCK": 8}) != first


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("config", registry.get("gemm", "cuda", "tiled").configs, ids=lambda c: c.label)
def test_tiled_spills_no_registers(config, arch):
    usage = nvcc.resource_usage("gemm_tiled.cu", arch, config.values)
    assert {u.kernel for u in usage} == {"gemm_tiled", "gemm_tiled_batched"}
    for u in usage:
        assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), u


@pytest.mark.parametrize("name", ["warptile", "dbuf", "swizzle", "async", "tf32", "implicit-async", "sliding-tiled",
                                  "sliding-rows", "sliding-vec"])
def test_faster_kernels_spill_nothing(name):
    v = next(v for v in registry.VARIANTS if v.name == name and v.backend == "cuda")
    for c in v.configs:
        for u in nvcc.resource_usage(v.source, v.arch or "sm_90", c.values):
            assert (u.spill_stores, u.spill_loads) == (0, 0), (c.label, u)


def test_compile_error_names_the_file_and_shows_nvcc(tmp_path, monkeypatch):
    bad = tmp_path / "broken.cu"
    bad.write_text('extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }\n')
    with pytest.raises(CompileError) as e:
        nvcc.compile_cubin(bad, "sm_90", {})
    text = str(e.value)
    assert "broken.cu" in text and re.search(r"undefined_name", text) and "error" in text
