"""Every kernel file compiles with nvcc for sm_80 and sm_90 (CI has nvcc but no GPU), tiling spills nothing, and a
compile error is one line naming the file and nvcc's first error."""

import re

import pytest

from gpubench import nvcc, registry
from gpubench.errors import CompileError

pytestmark = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")

ARCHS = ("sm_80", "sm_90")
BUILTIN = registry.builtin()
CATALOG = registry.Catalog(BUILTIN)


def builds():
    """(file, defines, arch) for every configuration the specs can ask for, and every other file in kernels/.

    A variant pinned to an architecture (wgmma needs sm_90a) is built for that one; the rest for sm_80 and sm_90.
    """
    seen = {}
    for v in BUILTIN:
        for c in v.configs_for(registry.LAB_BLOCK_SIZES + (1,)):
            for arch in (v.arch,) if v.arch else ARCHS:
                for source, defines, a, _ in v.builds(c, arch):
                    seen[(source.name, defines, a)] = None
    for path in registry.kernels_dir().glob("*.cu"):
        if not any(src == path.name for src, _, _ in seen):
            for arch in ARCHS:
                seen[(path.name, (), arch)] = None
    return sorted(seen)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE", str(tmp_path))


def test_every_file_is_covered():
    files = {src for src, _, _ in builds()}
    assert files == {p.name for p in registry.kernels_dir().glob("*.cu")}


@pytest.mark.parametrize("source,params,arch", builds(), ids=lambda x: x if isinstance(x, str) else
                         "-".join(f"{k}{v}" for k, v in x) or "default")
def test_compiles(source, params, arch):
    cubin = nvcc.compile_cubin(source, arch, dict(params))
    assert cubin.stat().st_size > 0


def test_second_compile_is_a_cache_hit(tmp_path):
    first = nvcc.compile_cubin("gemm_global.cu", "sm_90", {"BLOCK": 16})
    assert first.parent == tmp_path / "kernels"
    mtime = first.stat().st_mtime_ns
    again = nvcc.compile_cubin("gemm_global.cu", "sm_90", {"BLOCK": 16})
    assert again == first and again.stat().st_mtime_ns == mtime
    assert nvcc.compile_cubin("gemm_global.cu", "sm_90", {"BLOCK": 8}) != first


def test_an_edited_header_is_a_new_key(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "k.cu").write_text('#include "h.cuh"\nextern "C" __global__ void k(float* x) { x[0] = V; }\n')
    (src / "h.cuh").write_text("#define V 1.0f\n")
    first = nvcc.compile_cubin(src / "k.cu", "sm_90", {})
    (src / "h.cuh").write_text("#define V 2.0f\n")
    assert nvcc.compile_cubin(src / "k.cu", "sm_90", {}) != first


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("config", CATALOG.get("gemm", "cuda", "tiled").configs, ids=lambda c: c.label)
def test_tiled_spills_no_registers(config, arch):
    usage = nvcc.resource_usage("gemm_tiled.cu", arch, config.values)
    assert {u.kernel for u in usage} == {"gemm_tiled", "gemm_tiled_batched"}
    for u in usage:
        assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), u


@pytest.mark.parametrize("name", ["warptile", "dbuf", "swizzle", "async", "tf32", "implicit-async", "sliding-tiled",
                                  "sliding-rows", "sliding-vec"])
def test_faster_kernels_spill_nothing(name):
    v = next(v for v in BUILTIN if v.name == name and v.backend == "cuda")
    for c in v.configs:
        for u in nvcc.resource_usage(v.source, v.arch or "sm_90", c.values):
            assert (u.spill_stores, u.spill_loads) == (0, 0), (c.label, u)


def test_compile_error_is_one_line_naming_the_file_and_the_first_error(tmp_path):
    bad = tmp_path / "broken.cu"
    bad.write_text('extern "C" __global__ void broken(float* x) {\n  x[0] = undefined_name;\n}\n')
    with pytest.raises(CompileError) as e:
        nvcc.compile_cubin(bad, "sm_90", {"BLOCK": 16})
    text = str(e.value)
    assert "\n" not in text and "broken.cu" in text and "-DBLOCK=16" in text
    assert re.search(r"broken.cu\(2\): error: identifier \"undefined_name\" is undefined", text)
    assert "undefined_name" in e.value.log  # nvcc's whole output is kept, and written to a file named in the line
    log = re.search(r"nvcc's whole output: (\S+)", text).group(1)
    assert "undefined_name" in open(log).read()


def test_launch_bounds_are_read_from_the_ptx():
    assert nvcc.launch_bounds("gemm_shared.cu", "sm_90", {"BLOCK": 8}) == {"gemm_shared": 64}
