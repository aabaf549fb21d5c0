"""Every kernel file compiles with nvcc for sm_80 and sm_90 (CI has nvcc but no GPU), tiling spills nothing, and a
compile error is one line naming the file and nvcc's first error."""

import itertools
import random
import re
from pathlib import Path

import pytest

from gpubench.execution import nvcc
from gpubench.specs import catalog
from gpubench.specs import parse
from gpubench.core.errors import CompileError

pytestmark = [pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found"), pytest.mark.slow]

ARCHS = ("sm_80", "sm_90")
BUILTIN = catalog.builtin()
CATALOG = catalog.Catalog(BUILTIN)
KERNELS = catalog.kernels_dir()
# Kernel files that no spec names, and who compiles them instead.
OUTSIDE_SPECS = {"probes.cu": "the CUDA backend: the timer's wait kernel and the ceilings' microbenchmarks",
                 "conv/epilogue_pass.cu": "the CUDA backend: the epilogue of cuDNN's unfused sequence"}


def rel(path) -> str:
    return Path(path).resolve().relative_to(KERNELS).as_posix()


def spec_builds():
    """(file, defines, arch) for every configuration the specs can ask for, files relative to cuda_src/.

    A variant pinned to an architecture (wgmma needs sm_90a) is built for that one; the rest for sm_80 and sm_90.
    A kernel told its precision or layout by a define is built in every one it takes.
    """
    seen = {}
    for v in BUILTIN:
        for c in v.space.configs_for(parse.LAB_BLOCK_SIZES + (1,)):
            for arch in (v.code.program.arch,) if v.code.program and v.code.program.arch else ARCHS:
                for problem in parse.sample_problems(v):
                    for source, defines, a, _ in v.builds(c, arch, problem):
                        seen[(rel(source), defines, a)] = None
    return sorted(seen)


def builds():
    """What CI compiles: every spec build, and each file outside the specs for every architecture."""
    return spec_builds() + [(name, (), arch) for name in sorted(OUTSIDE_SPECS) for arch in ARCHS]


# The tensor-core kernels whose every build ptxas reports on (spills, serialized wgmmas: below). Such a report is a
# whole compile with compile_cubin's own flags, so those builds are compiled there, once, not again by test_compiles.
TC_GEMMS = ["wgmma-tma", "fp8-tma", "int8-wgmma-tma"]
# (tc-int8-mma: mma.sync, no wgmma to serialize; its report, as the int8 wgmma ones', checks that no output type,
# layout or epilogue spills)
TC_CONVS = ["tc-wgmma", "tc-wgmma-ws", "tc-wgmma-tma", "tc-wgmma-halo", "tc-int8-mma", "tc-wgmma-int8"]
TC_ATTENTION = ["fa3-wgmma"]
TC_GROUPED = ["wgmma-grouped", "fp8-grouped"]


def reported_builds() -> set:
    return {(rel(source), defines, arch)
            for op, names in (("gemm", TC_GEMMS), ("conv", TC_CONVS), ("attention", TC_ATTENTION),
                              ("grouped-gemm", TC_GROUPED)) for name in names
            for v in [CATALOG.get(op, "cuda", name)] for c in v.space.configs
            for source, defines, arch, _ in v.builds(c, "sm_90")}


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A kernel cache of the test's own (the others share the session's: tests/conftest.py)."""
    monkeypatch.setenv("GPUBENCH_CACHE", str(tmp_path))


def test_every_build_is_compiled_once():
    """test_compiles leaves out the builds that the ptxas reports below compile, and those are spec builds: the
    reports look at what the specs run, and every spec build is compiled by one test or the other."""
    reported = reported_builds()
    assert reported and reported <= set(builds())


def test_every_file_is_covered():
    """Each kernel file under cuda_src/ is built by a spec or named in OUTSIDE_SPECS (and that list is not
    stale): a new kernel that nothing compiles fails here."""
    files = {rel(p) for p in KERNELS.rglob("*.cu")}
    by_specs = {src for src, _, _ in spec_builds()}
    assert files - by_specs == set(OUTSIDE_SPECS), "kernel files neither in a spec nor in OUTSIDE_SPECS"
    assert not by_specs & set(OUTSIDE_SPECS)


@pytest.mark.parametrize("source,params,arch", [b for b in builds() if b not in reported_builds()],
                         ids=lambda x: x if isinstance(x, str) else "-".join(f"{k}{v}" for k, v in x) or "default")
def test_compiles(source, params, arch):
    cubin = nvcc.compile_cubin(source, arch, dict(params))
    assert cubin.stat().st_size > 0


def test_second_compile_is_a_cache_hit(tmp_path, fresh_cache):
    first = nvcc.compile_cubin("gemm/01_global.cu", "sm_90", {"BLOCK": 16})
    assert first.parent == tmp_path / "kernels"
    mtime = first.stat().st_mtime_ns
    again = nvcc.compile_cubin("gemm/01_global.cu", "sm_90", {"BLOCK": 16})
    assert again == first and again.stat().st_mtime_ns == mtime
    assert nvcc.compile_cubin("gemm/01_global.cu", "sm_90", {"BLOCK": 8}) != first


def test_an_edited_header_is_a_new_key(tmp_path, fresh_cache):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "k.cu").write_text('#include "h.cuh"\nextern "C" __global__ void k(float* x) { x[0] = V; }\n')
    (src / "h.cuh").write_text("#define V 1.0f\n")
    first = nvcc.compile_cubin(src / "k.cu", "sm_90", {})
    (src / "h.cuh").write_text("#define V 2.0f\n")
    assert nvcc.compile_cubin(src / "k.cu", "sm_90", {}) != first


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("config", CATALOG.get("gemm", "cuda", "tiled").space.configs, ids=lambda c: c.label)
def test_tiled_spills_no_registers(config, arch):
    usage = nvcc.resource_usage("gemm/03_tiled.cu", arch, config.values)
    assert {u.kernel for u in usage} == {"gemm_tiled"}
    for u in usage:
        assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), u


@pytest.mark.parametrize("name", ["warptile", "dbuf", "swizzle", "async", "tf32", "implicit-async", "sliding-tiled",
                                  "sliding-rows", "sliding-vec", "tc-implicit"])
def test_faster_kernels_spill_nothing(name):
    """(The wgmma convolutions are checked in every precision below, with their wgmmas: one ptxas run a build.)"""
    v = next(v for v in BUILTIN if v.name == name and v.backend == "cuda")
    for c in v.space.configs:
        for u in nvcc.resource_usage(v.code.program.source, v.code.program.arch or "sm_90", c.values):
            assert (u.spill_stores, u.spill_loads) == (0, 0), (c.label, u)


def configs_of(op: str, names: list[str]) -> list:
    """(variant, configuration) for each configuration of these variants: one test each, so that the workers share
    the slow ones."""
    return [pytest.param(v, c, id=f"{v.name}-{c.label}") for v in (CATALOG.get(op, "cuda", n) for n in names)
            for c in v.space.configs]


@pytest.mark.parametrize("variant,config", configs_of("gemm", TC_GEMMS))
def test_tensor_core_gemms_spill_nothing_and_keep_their_wgmmas_in_flight(variant, config):
    """Each configuration in each precision and layout: fp8-tma's two alternating fp8 sets (x2) need 192
    accumulator registers a consumer thread, past the 168 that __launch_bounds__(384, 1) gives the whole kernel;
    they fit only because ptxas allocates the code after setmaxnreg.inc (232) within that budget. int8-wgmma-tma's
    t1 holds its 128 int32 accumulators beside the staging's addresses, and its epilogue's test of N (TMA or not)
    must leave the slot loop's wgmmas asynchronous."""
    for source, defines, arch, _ in variant.builds(config, "sm_90"):
        for u in nvcc.resource_usage(source, arch, dict(defines)):
            assert not u.wgmma_serialized, (config.label, defines, u)
            assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), (config.label, defines, u)


@pytest.mark.parametrize("source", ["conv/11_tc_implicit.cu", "conv/12_tc_wgmma.cu", "conv/13_tc_wgmma_ws.cu",
                                    "conv/14_tc_wgmma_tma.cu", "conv/16_tc_wgmma_halo.cu"])
def test_a_kernel_of_several_precisions_is_built_in_each(source):
    """The tensor-core convolutions take fp16 and bf16 through -DELEM: CI compiles both element types, not only the
    kernel's default."""
    elems = {dict(defines).get("ELEM") for src, defines, _ in spec_builds() if src == source}
    assert elems == {"__half", "__nv_bfloat16"}


def test_gpubench_check_builds_each_precision(monkeypatch):
    """`gpubench check` compiles what CI compiles: tc-implicit once per element type, not only its default."""
    from gpubench.usecases import commands
    seen = []
    monkeypatch.setattr(nvcc, "compile_all", lambda jobs: seen.extend(jobs) or [])
    commands.check_kernels([CATALOG.get("conv", "cuda", "tc-implicit")], ["sm_90"], parse.LAB_BLOCK_SIZES)
    assert {dict(defines).get("ELEM") for _, defines, _, _ in seen} == {"__half", "__nv_bfloat16"}


def test_compile_error_is_one_line_naming_the_file_and_the_first_error(tmp_path, fresh_cache):
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
    assert nvcc.launch_bounds("gemm/02_shared.cu", "sm_90", {"BLOCK": 8}) == {"gemm_shared": 64}


# --- the spec's constraints against the kernels' static_asserts ------------------------------------------------

# One variant per kernel file and set of constraints (a family's variants share both).
CONSTRAINED = list({(v.code.program.source, v.space.constraints): v for v in BUILTIN if v.space.constraints and v.space.search}.values())


def _search_space(v):
    names = [k for k, _ in v.space.search]
    for values in itertools.product(*(vals for _, vals in v.space.search)):
        yield v.space.config(dict(zip(names, values)))


def _breaking(v, constraint: str):
    """A configuration that breaks this constraint, and no other where one exists: one or two parameters of the
    variant's own configuration changed to a value of the search space or one between its values. Some
    constraints cannot be broken alone (every tile that breaks the float4 grouping also breaks the warp's 32
    threads); for those, one that breaks it among others."""
    base = dict(v.space.configs[0].values)
    wider = {k: sorted({*vals, *(x + x // 2 for x in vals), *(x // 2 for x in vals if x > 1)}) for k, vals in v.space.search}
    fallback = None
    for a, b in itertools.combinations_with_replacement(sorted(wider), 2):
        for x, y in itertools.product(wider[a], wider[b]):
            config = v.space.config({**base, a: x, b: y} if a != b else {**base, a: x})
            broken = v.space.broken_constraints(config)
            if broken == [constraint]:
                return config
            if fallback is None and constraint in broken and not set(broken) & LAUNCH_LIMITS:
                fallback = config
    return fallback


# Constraints that stand for a limit of registers, the launch or the device rather than a static_assert.
LAUNCH_LIMITS = {
    "shared <= 232448",  # Hopper's largest dynamic shared memory per block: refused at launch, not at compile time
    "threads == 128 or threads == 256 or threads == 512",  # the block sizes the tuner tries, not a kernel rule
    "TM * TN <= 128",  # past 128 accumulators per thread the tile spills (test_faster_kernels_spill_nothing)
}


@pytest.mark.parametrize("variant", CONSTRAINED, ids=lambda v: v.name)
def test_each_constraint_is_a_static_assert_of_the_kernel(variant):
    """A configuration breaking one constraint alone must be refused by nvcc with a static_assert: the spec's
    constraints say in data what the kernel asserts, so a constraint the kernel does not enforce (or an assert the
    spec forgot, below) is a drift between the two."""
    for text in (c.text for c in variant.space.constraints):
        if text in LAUNCH_LIMITS:
            continue
        config = _breaking(variant, text)
        assert config is not None, f"no configuration breaks {text!r}"
        with pytest.raises(CompileError) as e:
            nvcc.compile_cubin(variant.code.program.source, "sm_90", config.values, includes=variant.code.program.includes)
        assert "static assertion failed" in e.value.log or "static_assert" in e.value.log, (text, config.label)


@pytest.mark.parametrize("variant", CONSTRAINED, ids=lambda v: v.name)
def test_configurations_meeting_every_constraint_compile(variant):
    """The other way round: a sample of the search space that meets every constraint compiles, so the tuner
    never proposes what the kernel's asserts refuse."""
    valid = [c for c in _search_space(variant) if not variant.space.broken_constraints(c)]
    assert valid
    for config in random.Random(0).sample(valid, min(4, len(valid))):
        nvcc.compile_cubin(variant.code.program.source, "sm_90", config.values, includes=variant.code.program.includes)


@pytest.mark.parametrize("variant,config", configs_of("conv", TC_CONVS))
def test_tensor_core_convolutions_spill_nothing_and_keep_their_wgmmas_in_flight(variant, config):
    """ptxas serializes every wgmma of a kernel (each waits for the one before) where one is issued behind a
    branch it cannot prove uniform (C7520): tc-wgmma-halo's first version skipped the m64 blocks past an image that
    way and ran the 56² layer 1.5× slower than the same work unskipped. Every configuration, both precisions; the
    same report says that nothing spills."""
    for source, defines, arch, _ in variant.builds(config, "sm_90"):
        for u in nvcc.resource_usage(source, arch, dict(defines)):
            assert not u.wgmma_serialized, (config.label, defines, u)
            assert (u.spill_stores, u.spill_loads) == (0, 0), (config.label, defines, u)


@pytest.mark.parametrize("variant,config", configs_of("attention", TC_ATTENTION))
def test_tensor_core_attention_spills_nothing_and_keeps_its_wgmmas_in_flight(variant, config):
    """fa3-wgmma holds S, O and P at once (BN/2 + 64 + BN/4 registers a consumer thread) within the 240 that
    setmaxnreg gives the consumers; its wgmmas in a loop of a runtime trip count must stay asynchronous."""
    for source, defines, arch, _ in variant.builds(config, "sm_90"):
        for u in nvcc.resource_usage(source, arch, dict(defines)):
            assert not u.wgmma_serialized, (config.label, defines, u)
            assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), (config.label, defines, u)


@pytest.mark.parametrize("name", ["flash-mma", "flash-fp8"])
def test_the_mma_sync_attention_kernels_spill_nothing(name):
    """Each thread holds its 16 rows' O (HD/2 floats), a tile's scores (32) and Q's fragments through the key loop;
    flash-fp8 adds the V transpose's words and P's e4m3 packing, in every precision the kernel is built in."""
    v = CATALOG.get("attention", "cuda", name)
    for c in v.space.configs:
        for source, defines, arch, _ in v.builds(c, "sm_90"):
            for u in nvcc.resource_usage(source, arch, dict(defines)):
                assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), (defines, u)


@pytest.mark.parametrize("variant,config", configs_of("grouped-gemm", TC_GROUPED))
def test_the_grouped_gemm_kernel_spills_nothing_and_keeps_its_wgmmas_in_flight(variant, config):
    """The grouped kernel's slot loop sits inside a walk whose trip count comes from the groups' counts (read on the
    device, found by shuffles and a ballot): its wgmmas must stay asynchronous, and its accumulators (fp8: the
    tensor cores' and the promoted float32 ones) with the packed outputs must fit the consumers' registers, in
    every precision and layout."""
    for source, defines, arch, _ in variant.builds(config, "sm_90"):
        for u in nvcc.resource_usage(source, arch, dict(defines)):
            assert not u.wgmma_serialized, (config.label, defines, u)
            assert (u.spill_stores, u.spill_loads, u.stack_bytes) == (0, 0, 0), (config.label, defines, u)


@pytest.mark.parametrize("config", [c for c in CATALOG.get("grouped-gemm", "cuda", "fp8-grouped").space.configs
                                    if c.values.get("NEXT") == 1], ids=lambda c: c.label)
def test_the_next_tiles_first_slot_stays_in_flight_while_the_tile_is_stored(config):
    """n1 issues the next tile's first slot, then stores the tile it finished. ptxas waits for those wgmmas where
    the code's paths next meet (C7517): that wait must come after the tile's stores (the TMA stores and the rows
    stored from registers), or the slot is done before the store begins and n1 overlaps nothing, as the first n1
    build did (its wait landed right after the early wgmmas)."""
    variant = CATALOG.get("grouped-gemm", "cuda", "fp8-grouped")
    for source, defines, arch, _ in variant.builds(config, "sm_90"):
        if "LAYOUT_CONTIGUOUS_BLOCK" not in dict(defines):
            continue
        ptx, waits = nvcc.injected_waits(source, arch, dict(defines))
        stores = [n for n, line in enumerate(ptx, 1)
                  if "cp.async.bulk.tensor.2d.global.shared" in line or "st.global" in line]
        assert waits and stores and min(waits) > max(stores), (config.label, waits, stores[-4:])



@pytest.mark.parametrize("config", [c for c in CATALOG.get("grouped-gemm", "cuda", "fp8-grouped").space.configs
                                    if c.values.get("AHEAD") == 1], ids=lambda c: c.label)
def test_the_next_tile_is_found_while_the_first_slots_wgmmas_run(config):
    """h1 walks to the next tile between its first slot's issue and that slot's wait. The walk touches no register
    of the wgmmas', so ptxas must neither inject a wait of its own (C7517) into the block-scaled builds nor
    serialise their wgmmas: either would end the slot's wgmmas before the walk, and h1 would overlap nothing (a
    walk that reads an accumulator, planted, is serialised)."""
    variant = CATALOG.get("grouped-gemm", "cuda", "fp8-grouped")
    block_builds = 0
    for source, defines, arch, _ in variant.builds(config, "sm_90"):
        if not {"LAYOUT_CONTIGUOUS_BLOCK", "LAYOUT_MASKED_BLOCK"} & set(dict(defines)):
            continue
        block_builds += 1
        _, waits = nvcc.injected_waits(source, arch, dict(defines))
        assert waits == [], (config.label, dict(defines), waits)
        assert not any(u.wgmma_serialized for u in nvcc.resource_usage(source, arch, dict(defines))), config.label
    assert block_builds == 2, config.label

def test_a_wgmma_behind_a_branch_is_reported_serialized(tmp_path):
    """The check above can fail: a wgmma issued only where a runtime value allows is what ptxas serializes."""
    include = (KERNELS / "include" / "hopper.cuh").as_posix()
    (tmp_path / "k.cu").write_text(
        f'#include "{include}"\n'
        'extern "C" __global__ void k(float* out, int rows) {\n'
        '    float acc[32] = {};\n'
        '    wgmma_fence();\n'
        '    if (threadIdx.x / 128 * 64 < rows) wgmma_ss<__half, 64>(acc, smem_desc(0), smem_desc(4096), 1);\n'
        '    wgmma_commit();\n    wgmma_wait<0>();\n'
        '    for (int v = 0; v < 32; ++v) out[threadIdx.x * 32 + v] = acc[v];\n}\n')
    (usage,) = nvcc.resource_usage(tmp_path / "k.cu", "sm_90a", {})
    assert usage.wgmma_serialized


def test_the_int8_kernel_is_built_in_every_output_layout_and_epilogue():
    """tc-int8-mma's binaries: int32, float and int8 outputs, NC/32HW32 and NHWC, each epilogue compiled in."""
    kinds = {(d.get("ELEM_OUT"), next(k for k in d if k.startswith("LAYOUT_")), d.get("EPILOGUE"))
             for src, defines, _ in spec_builds() if src == "conv/17_tc_int8_mma.cu" for d in [dict(defines)]}
    assert kinds == {(o, x, e) for o in ("int", "float", "int8_t") for x in ("LAYOUT_NCHW_VECT_C", "LAYOUT_NHWC")
                     for e in range(4)}


@pytest.mark.parametrize("out,acc", [("int8_t", "int"), ("int", "int"), ("float", "int"), ("__half", "float"),
                                     ("__nv_bfloat16", "float"), ("float", "float")])
@pytest.mark.parametrize("epilogue", range(4))
def test_the_unfused_epilogue_pass_compiles_for_every_output(out, acc, epilogue):
    """cuda_src/conv/epilogue_pass.cu, as the CUDA backend compiles it for cuDNN's unfused sequence."""
    cubin = nvcc.compile_cubin("conv/epilogue_pass.cu", "sm_90", {"ACC": acc, "ELEM_OUT": out, "EPILOGUE": epilogue})
    assert cubin.stat().st_size > 0
