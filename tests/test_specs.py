"""Kernel specs: the built-in variants load from cuda_src/<op>/variants.toml, and bad specs are refused in one
line that names the file, the entry and what is allowed."""

import re
from dataclasses import replace

import ml_dtypes
import pytest

from gpubench import ops
from gpubench.core import expr
from gpubench.execution import nvcc
from gpubench.specs import catalog
from gpubench.specs import files as spec_files
from gpubench.specs import parse as specs
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout
from gpubench.core.errors import GpubenchError
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.ops.epilogue import Epilogue, Fused
from gpubench.specs.catalog import Catalog
from gpubench.specs.parse import SpecError
from gpubench.specs.files import parse_specs
from gpubench.specs.runners import Arrays, KernelRunner, PythonGpuRunner, PythonRunner
from gpubench.specs.geometry import SAMPLE_SMS, SMS, Launch
from gpubench.specs.variant import Axis

BUILTIN = catalog.builtin()
CATALOG = Catalog(BUILTIN)


def test_names_are_unique_per_op_and_backend():
    keys = [(v.op, v.backend, v.name) for v in BUILTIN]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("op", ops.names())
@pytest.mark.parametrize("backend", specs.BACKENDS)
def test_every_op_and_backend_has_one_baseline_per_precision(op, backend):
    """A point is compared with the library that computes its precision and layout: cuBLAS, or cuBLASLt for fp8 and
    int8; never two for one precision and layout, and for the lab's ops (fp32 problems first) one for fp32."""
    libraries = [v for v in CATALOG.variants(op, backend) if v.entry.baseline]
    taken = [(d, x) for v in libraries for d in v.scope.dtypes for x in v.scope.layouts]
    assert libraries and len(taken) == len(set(taken))
    assert "fp32" in {d for d, _ in taken} or op not in ("gemm", "conv")


def test_labels_keep_their_historic_form():
    """Saved runs match points by configuration label, so the spec's templates reproduce the old labels."""
    assert [c.label for c in CATALOG.get("gemm", "cuda", "tiled").space.configs] == ["128x128x8/8x8", "64x64x8/4x4"]
    assert CATALOG.get("gemm", "cuda", "dbuf").space.configs[0].label == "128x128x8 w64x32 t8x8 s2"
    assert CATALOG.get("gemm", "cuda", "swizzle").space.configs[0].label == "128x128x8 w64x32 t8x8 s2 g8"
    tuned = CATALOG.get("gemm", "cuda", "tuned")
    assert tuned.space.config({**tuned.space.configs[0].values, "MIN_BLOCKS": 2}).label.endswith(" g8 b2")
    assert [c.label for c in CATALOG.get("conv", "cuda", "sliding").space.configs_for((8, 24))] == ["8", "24"]


def test_block_axis_passes_the_block_size_as_its_define():
    v = CATALOG.get("gemm", "cuda", "global")
    assert v.space.axis == Axis.BLOCK and [c.values for c in v.space.configs_for((8, 24))] == [{"BLOCK": 8}, {"BLOCK": 24}]


def test_defaults_reach_every_configuration():
    v = CATALOG.get("gemm", "cuda", "dbuf")
    assert v.space.configs[0].values["SWIZZLE"] == 0 and v.space.configs[0].values["MIN_BLOCKS"] == 1


def test_select_defaults_to_the_lab_set_and_keeps_catalog_order():
    assert [v.name for v in CATALOG.select("gemm", "cuda", None)] == ["global", "shared", "tiled", "cublas", "cublaslt"]
    assert [v.name for v in CATALOG.select("gemm", "cuda", ["cublas", "global"])] == ["global", "cublas"]


def test_unknown_variant_lists_the_allowed_ones():
    with pytest.raises(GpubenchError, match=r"unknown gemm variant 'fast'.*allowed are global, shared"):
        CATALOG.select("gemm", "cuda", ["fast"])


def test_im2col_is_the_unfold_as_a_before_step_then_a_gemm():
    """No launch is hand-written in a backend: both im2col variants unfold through the spec's `before` step into
    the `cols` workspace; `im2col` then launches the tiled GEMM's product, `im2col-cublas` calls cuBLAS on it."""
    ours, cublas = CATALOG.get("conv", "cuda", "im2col"), CATALOG.get("conv", "cuda", "im2col-cublas")
    for v in (ours, cublas):
        assert [s.kernel for s in v.code.kernels.before] == ["im2col"] and [name for name, _ in v.code.kernels.workspace] == ["cols"]
    assert isinstance(ours.code.runner, KernelRunner) and ours.code.program.kernel == "im2col_gemm"
    assert [s.kernel for s in cublas.code.steps()] == ["im2col"] and cublas.code.runner.columns == "cols"
    assert [c.values for c in ours.space.configs] == [c.values for c in CATALOG.get("gemm", "cuda", "tiled").space.configs]
    shape = conv_shape(99, 2, batch=3, in_channels=5, out_channels=7)
    assert ours.code.workspace_sizes(shape.dims(), ours.space.configs[0]) == {"cols": 3 * shape.gemm_k * shape.out_pixels}


# --- the spec against the kernel ------------------------------------------------------------------------------

KERNELS = [(v, c) for v in BUILTIN if isinstance(v.code.runner, KernelRunner) for c in v.space.configs_for(specs.LAB_BLOCK_SIZES)]


@pytest.mark.slow
@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
@pytest.mark.parametrize("v,c", KERNELS, ids=lambda x: getattr(x, "name", None) or x.label)
def test_spec_block_matches_the_kernels_launch_bounds(v, c, tmp_path, monkeypatch):
    """The spec's block (an expression) and the kernel's __launch_bounds__ (C++) must agree: read from the PTX."""
    # the op's own ragged sample, in the variant's first precision and layout (a kernel told its element type)
    sample = ops.get(v.op).sample_in(v.scope.dtypes[0], v.scope.layouts[0])
    bounds = nvcc.launch_bounds(v.code.program.source, v.code.program.arch or "sm_90", v.code.defines(c, sample.dtype, sample.layout), v.code.program.includes)
    dims = sample.dims()
    for step in v.code.steps():  # a Winograd variant's filter transform as well as its main kernel
        assert bounds[step.kernel] == step.launch_for({**dims, SMS: SAMPLE_SMS}, c).threads, step.kernel


@pytest.mark.parametrize("v", [v for v in BUILTIN if v.code.program and v.code.program.source], ids=lambda v: f"{v.op}-{v.name}")
def test_kernel_symbol_is_in_its_file(v):
    from gpubench.specs.launch import source_with_includes

    text = source_with_includes(v.code.program.source)  # the file and the headers it includes from beside it
    for symbol in [step.kernel for step in v.code.steps()]:
        # attributes such as __launch_bounds__(...) or a macro for __cluster_dims__ may sit between void and the name
        assert re.search(rf'extern "C" __global__ void(\s+\w+(\([^)]*\))?)*\s+{re.escape(symbol)}\(', text)


def test_launch_is_evaluated_from_the_problem_and_the_configuration():
    v = CATALOG.get("conv", "cuda", "sliding-tiled")
    s = conv_shape(1000, 2, batch=2, in_channels=3, out_channels=5)
    launch = v.code.launch_for(s.dims(), v.space.configs[0])  # TX=32, TY=8, OX=2, OY=4
    assert launch.grid == (-(-s.out_width // 64), -(-s.out_height // 32), 10)
    assert launch.block == (256, 1, 1)
    assert launch.shared_bytes == 4 * (31 * 2 + 3) * (63 * 2 + 3)


# --- bad specs ------------------------------------------------------------------------------------------------


GOOD = {"name": "mine", "op": "gemm", "source": "k.cu", "kernel": "k", "args": ["A", "B", "C", "M", "N", "K"],
        "axis": "block", "grid": ["cdiv(N, BLOCK)", "cdiv(M, BLOCK)"], "block": ["BLOCK", "BLOCK"]}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* A, float* B, float* C, int M, int N, int K) {}\n')
    (tmp_path / "f.py").write_text("def f(A, B, C, M, N, K):\n    pass\n")

    def parse(**changes):
        table = {**GOOD, **changes}
        table = {k: v for k, v in table.items() if v is not None}
        return parse_specs({"variant": [table]}, str(tmp_path / "gpubench.toml"), tmp_path)

    return parse


def test_a_good_spec_loads(project):
    (v,) = project()
    assert (v.name, v.op, v.backend, v.code.runner, v.space.axis, v.space.define) == ("mine", "gemm", "cuda", KernelRunner(), "block",
                                                                      "BLOCK")
    assert v.entry.origin.endswith("gpubench.toml") and not v.entry.builtin


def test_a_kernel_may_be_defined_in_a_header_the_source_includes(project, tmp_path):
    """A header shared by two kernel files holds a step's kernel; one the source does not
    include, or includes only as a system header, does not count."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "steps.cuh").write_text('#include "../more.cuh"\n')
    (tmp_path / "more.cuh").write_text('extern "C" __global__ void pre(float* A, int M) {}\n')
    (tmp_path / "stray.cuh").write_text('extern "C" __global__ void stray(float* A, int M) {}\n')
    (tmp_path / "h.cu").write_text('#include "inc/steps.cuh"\n#include <stray.cuh>\n'
                                   'extern "C" __global__ void k(float* A, float* B, float* C, int M, int N, int K) {}\n')
    step = {"args": ["A", "M"], "grid": ["1"], "block": ["32"]}
    (v,) = project(source="h.cu", before=[{"kernel": "pre", **step}])
    assert v.code.kernels.before[0].kernel == "pre"
    with pytest.raises(SpecError, match="kernel 'stray' is not defined in h.cu or the headers it includes"):
        project(source="h.cu", before=[{"kernel": "stray", **step}])


def test_the_labs_names_map_onto_gpubench_s(project):
    (v,) = project(args=["a", "b", "c", "m", "n", "k"])  # the lab's a is m×n, b is n×k: its n is our K
    assert v.code.program.args == ("A", "B", "C", "M", "K", "N")


def test_constraints_hold_for_python_variants_too(project):
    with pytest.raises(SpecError, match="breaks the constraint 'T > 5'"):
        project(source="f.py", kernel="f", axis=None, grid=None, block=None, configs=[{"T": 1}],
                constraints=["T > 5"])


def test_a_python_function_is_a_cpu_variant(project):
    (v,) = project(source="f.py", kernel="f", axis=None, grid=None, block=None)
    assert (v.backend, v.code.runner, v.code.launch) == ("cpu", PythonRunner(), None)


def test_a_python_function_on_the_cuda_backend_is_a_gpu_function_and_never_goes_to_nvcc(project):
    (v,) = project(source="f.py", kernel="f", axis=None, grid=None, block=None, backend="cuda",
                   options={"arrays": "torch", "tf32": True}, configs=[{"BM": 64}, {"BM": 128}])
    assert (v.backend, v.code.runner, v.code.launch) == ("cuda", PythonGpuRunner(Arrays.TORCH, True), None)
    assert v.code.runner.tf32 and v.scope.dtypes == ("tf32",) and [c.label for c in v.space.configs] == ["BM=64", "BM=128"]
    assert v.builds(v.space.configs[0], "sm_90") == []
    assert v.record()["runner"] == "python-cuda"


def test_a_python_function_of_several_precisions_is_told_which_by_a_keyword(project):
    with pytest.raises(SpecError, match="dtypes fp32, tf32: name the keyword that tells the function which"):
        project(source="f.py", kernel="f", axis=None, grid=None, block=None, backend="cuda", dtypes=["fp32", "tf32"])
    (v,) = project(source="f.py", kernel="f", axis=None, grid=None, block=None, backend="cuda",
                   dtypes=["fp32", "tf32", "bf16"], dtype_define="precision", configs=[{"BM": 64}])
    assert v.code.call_keywords(v.space.configs[0], "fp32", "nn") == {"BM": 64, "precision": "fp32"}
    assert v.code.call_keywords(v.space.configs[0], "bf16", "nn") == {"BM": 64, "precision": "bf16"}


def test_a_gpu_function_takes_no_launch(project):
    with pytest.raises(SpecError, match="before, workspace and tensor_maps are for CUDA kernel variants only"):
        project(source="f.py", kernel="f", axis=None, grid=None, block=None, backend="cuda", workspace={"T": "M"})


@pytest.mark.parametrize("changes,match", [
    ({"colour": "red"}, "unknown field\\(s\\) colour; allowed are"),
    ({"name": None}, "name is required"),
    ({"name": "has space"}, "name must be letters"),
    ({"name": "_private"}, r"name must be letters, digits and \. _ \+ -, starting with a letter or digit"),
    ({"op": "fft"}, "op must be one of gemm, conv"),
    ({"source": "missing.cu"}, "source missing.cu does not exist"),
    ({"source": None}, "source is missing"),
    ({"kernel": "nosuch"}, "kernel 'nosuch' is not defined in k.cu or the headers it includes"),
    ({"args": ["A", "B", "C", "M", "N"]}, "args: missing K"),
    ({"args": ["A", "B", "C", "M", "N", "N", "K"]}, "N appear\\(s\\) more than once"),
    ({"args": ["A", "B", "C", "M", "N", "Q"]}, "unknown name\\(s\\) Q; allowed for gemm"),
    ({"args": ["a", "b", "c", "M", "N", "K"]}, "mix of gpubench's names and the lab's"),
    ({"args": None}, "args is missing"),
    ({"grid": ["cdiv(N, BLOCK"]}, "grid: 'cdiv\\(N, BLOCK' does not parse"),
    ({"grid": ["cdiv(N, TILE)"]}, "grid: .*unknown symbol\\(s\\) TILE"),
    ({"grid": ["N ** 2"]}, "not allowed"),
    ({"grid": ["1", "1", "1", "1"]}, "1 to 3 expressions"),
    ({"block": ["BLOCK * 64"]}, "a block of \\(1536, 1, 1\\) threads is past CUDA's limits"),
    ({"block": ["1", "1", "65"]}, "a block of \\(1, 1, 65\\) threads is past CUDA's limits .* 1024 × 1024 × 64"),
    ({"grid": ["2147483648"]}, "a grid of \\(2147483648, 1, 1\\) blocks is past CUDA's limits"),
    ({"grid": ["1", "65536"]}, "a grid of \\(1, 65536, 1\\) blocks is past CUDA's limits"),
    ({"grid": ["1", "1", "65536"]}, "a grid of \\(1, 1, 65536\\) blocks is past"),
    ({"name": "k\n"}, "name must be letters"),
    ({"name": "k\t"}, "name must be letters"),
    ({"name": "ké"}, "name must be letters"),
    ({"kernel": "k\n"}, "kernel is missing or not an identifier"),
    ({"arch": "sm_90\n"}, "arch must look like sm_80"),
    ({"axis": None, "configs": [{"BLOCK": 16, "label": "a\nb"}]}, "a label printable text"),
    ({"block": ["BLOCK - 8"]}, "empty grid or block"),
    ({"shared": "cdiv(N, BLOCK - BLOCK)"}, "divides by zero"),
    ({"axis": "diagonal"}, "axis must be one of"),
    ({"axis": None, "configs": [{"BLOCK": 16}], "label": "{TILE}"}, "label '\\{TILE\\}' must name parameters"),
    ({"configs": [{"BLOCK": 16}]}, "exclude each other"),
    ({"axis": None, "configs": [{"BLOCK": 1.5}]}, "every value must be an integer"),
    ({"axis": None, "configs": "tiles"}, "names the set 'tiles'"),
    ({"axis": None, "configs": [{"N": 16}], "grid": ["1"], "block": ["32"]}, "would hide a problem dimension"),
    ({"axis": None, "configs": [{"BLOCK": 16}], "constraints": ["BLOCK > 16"]}, "breaks the constraint"),
    ({"tolerance": 2}, "tolerance must be between 0 and 1"),
    ({"arch": "hopper"}, "arch must look like sm_80"),
    ({"baseline": True}, "for built-in variants only"),
    ({"runner": "cublas"}, "runner 'cublas' is not allowed"),
    ({"options": {"gemm": "tiled"}}, "options gemm are not for the kernel runner; allowed: tf32"),
    ({"options": {"tf32": "yes"}}, "options: tf32 is true or false"),
    ({"includes": ["nowhere"]}, "includes: nowhere is not a directory"),
    ({"search": {"BLOCK": []}}, "search must map each parameter"),
    ({"options": 5}, "options must be a table"),
    ({"axis": None, "configs": [{"BM": 1}], "label": "a}b{BM}", "grid": ["1"], "block": ["32"]},
     "and use no other braces"),
    ({"grid": ["-" * 500 + "1"]}, "at most 400 are allowed"),
    ({"requires": ["stride = 1"]}, "requires: 'stride = 1' does not parse"),
    ({"requires": ["BLOCK == 16"]}, "requires: .*unknown symbol\\(s\\) BLOCK"),
    ({"requires": ["K % (M - M) == 0"]}, "requires: 'K % \\(M - M\\) == 0' divides by zero \\(on a "),  # was
    # each point's error, exit 1, where a launch expression that cannot be evaluated is the spec's, exit 2
    ({"workspace": {"A": "M"}}, "workspace: 'A' must be an identifier other than"),
    ({"workspace": {"T": "M * N"}}, "workspace T is passed to no kernel"),
    ({"workspace": {"T": "M - 1000"}, "args": ["A", "B", "C", "T", "M", "N", "K"]}, "workspace .* is empty"),
    ({"before": [{"kernel": "k", "args": ["A"], "grid": ["1"], "block": ["32"], "colour": 1}]},
     "before\\[0\\] must be a table with args, block"),
    ({"before": [{"kernel": "nosuch", "args": ["A"], "grid": ["1"], "block": ["32"]}]},
     "kernel 'nosuch' is not defined in k.cu or the headers it includes"),
    ({"before": [{"kernel": "k", "args": ["A"], "grid": ["1"], "block": ["2048"]}]},
     "k: a block of \\(2048, 1, 1\\) threads is past CUDA's limits"),
    ({"before": [{"kernel": "k", "args": ["Q"], "grid": ["1"], "block": ["32"]}]},
     "before\\[0\\].args: unknown name\\(s\\) Q"),
    ({"before": [{"kernel": "k", "args": ["A"], "block": ["32"]}]}, "before\\[0\\].grid is missing"),
    ({"source": "f.py", "kernel": "f", "axis": None, "grid": None, "block": None, "workspace": {"T": "M"}},
     "before, workspace and tensor_maps are for CUDA kernel variants only"),
])
def test_bad_specs_name_file_entry_and_what_is_allowed(project, changes, match):
    with pytest.raises(SpecError, match=match) as e:
        project(**changes)
    message = str(e.value)
    assert "\n" not in message and "gpubench.toml: variant" in message


def test_a_users_variant_may_not_take_a_builtin_name(project):
    (v,) = project(name="tiled")
    with pytest.raises(SpecError, match="a built-in gemm variant has that name"):
        Catalog.with_user([v])


def test_user_variants_join_the_default_selection(project):
    (v,) = project()
    catalog = Catalog.with_user([v])
    assert [x.name for x in catalog.select("gemm", "cuda", None)] == ["global", "shared", "tiled", "cublas", "cublaslt", "mine"]


def test_lab_kernel_flag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab.cu").write_text("__global__ void gpu_matrix_mult_sm(float *a, float *b, float *c, int m, int n, "
                                     "int k) {}\n")
    v = spec_files.lab_kernel("gemm", "lab.cu:gpu_matrix_mult_sm", None)
    assert (v.name, v.space.define, v.code.program.args) == ("gpu_matrix_mult_sm", "BLOCK_SIZE", ("A", "B", "C", "M", "K", "N"))
    launch = v.code.launch_for(GemmShape(100, 70, 30).dims(), v.space.configs_for((16,))[0])
    assert launch.grid == (5, 7, 1) and launch.block == (16, 16, 1)  # x over C's 70 columns, y over its 100 rows
    named = spec_files.lab_kernel("gemm", "mine=lab.cu:gpu_matrix_mult_sm", "A,B,C,M,N,K")
    assert named.name == "mine" and named.code.program.args == ("A", "B", "C", "M", "N", "K")
    with pytest.raises(SpecError, match="give FILE:SYMBOL"):
        spec_files.lab_kernel("gemm", "lab.cu", None)


@pytest.mark.parametrize("text,match", [
    ("lab.cu:bad-sym", "SYMBOL 'bad-sym' is not a function's name"),
    ("lab.cu:gpu_matrix_mult_sm\n", "SYMBOL 'gpu_matrix_mult_sm\\\\n' is not a function's name"),
    ("lab.cu:1st", "SYMBOL '1st' is not a function's name"),
    ("lab.cu:ké", "is not a function's name"),
    ("bad name=lab.cu:gpu_matrix_mult_sm", "NAME 'bad name' must be letters, digits"),
    ("mine\t=lab.cu:gpu_matrix_mult_sm", "NAME 'mine\\\\t' must be"),
    ("=lab.cu:gpu_matrix_mult_sm", "NAME before = is empty"),  # was named after SYMBOL, as if no = were there
    (" =lab.cu:gpu_matrix_mult_sm", "NAME before = is empty"),
    ("lab.cu:__builtins__", r"SYMBOL '__builtins__', the variant name, must be letters, digits and \. _ \+ -, "
                            "starting with a letter or digit"),  # was "name is required"
    ("here:gpu_matrix_mult_sm", "source here is a directory"),
])
def test_lab_kernel_flag_names_what_is_wrong(tmp_path, monkeypatch, text, match):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab.cu").write_text("__global__ void gpu_matrix_mult_sm(float *a) {}\n")
    (tmp_path / "here").mkdir()
    with pytest.raises(SpecError, match=match) as e:
        spec_files.lab_kernel("gemm", text, None)
    assert "name is required" not in str(e.value)


def test_a_spec_nested_too_deeply_is_one_line(tmp_path):
    deep = tmp_path / "gpubench.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SpecError, match="nested too deeply"):
        spec_files.read_toml(deep, "project file")


@pytest.mark.parametrize("launch,beyond", [
    (Launch((2**31 - 1, 65535, 65535), (1024, 1, 1)), None),
    (Launch((1, 1, 1), (32, 32, 1)), None),
    (Launch((1, 1, 1), (1, 1, 64)), None),
    (Launch((2**31, 1, 1), (32, 1, 1)), "a grid of"),
    (Launch((1, 65536, 1), (32, 1, 1)), "a grid of"),
    (Launch((1, 1, 65536), (32, 1, 1)), "a grid of"),
    (Launch((1, 1, 1), (1025, 1, 1)), "a block of"),
    (Launch((1, 1, 1), (1, 1, 65)), "a block of"),
    (Launch((1, 1, 1), (64, 32, 1)), "a block of"),
    (Launch((0, 1, 1), (32, 1, 1)), "an empty grid"),
    (Launch((1, 1, 1), (32, 1, 1), -1), "-1 bytes of shared memory"),
])
def test_cudas_launch_limits(launch, beyond):
    found = launch.beyond_limits()
    assert (found is None) if beyond is None else found.startswith(beyond), found


def test_a_point_whose_launch_is_past_cudas_limits_is_skipped_with_the_reason(tmp_path, monkeypatch):
    """The lab's launch puts M/B blocks on y: past 65535 rows of blocks the CUDA backend skips the point, naming
    the grid (checked here through the launcher's own test of the launch, without a GPU)."""
    from gpubench.backends.cuda.kernels import KernelLaunches
    from gpubench.core.errors import Skip

    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab.cu").write_text("__global__ void gpu_matrix_mult_sm(float *a) {}\n")
    v = spec_files.lab_kernel("gemm", "lab.cu:gpu_matrix_mult_sm", None)
    launch = v.code.launch_for(GemmShape(8 * 65536, 8, 8).dims(), v.space.configs_for((8,))[0])

    class Function:
        def get_attribute(self, _):
            return 1024

    class Device(KernelLaunches):
        drv = type("drv", (), {"function_attribute": type("fa", (), {"MAX_THREADS_PER_BLOCK": 0})})
        smem_optin = 0

    with pytest.raises(Skip, match=r"a grid of \(1, 65536, 1\) blocks is past CUDA's limits"):
        Device().launcher(Function(), launch, "", ())


def test_a_dimension_past_a_kernels_int_parameter_skips_the_point():
    from gpubench.backends import kernel_arguments
    from gpubench.core.errors import Skip

    with pytest.raises(Skip, match="M = 2147483648 does not fit the kernel's 32-bit int parameter"):
        kernel_arguments(("A", "M"), GemmShape(2**31, 1, 1), {"A": None, "B": None}, None)
    assert kernel_arguments(("A", "M"), GemmShape(2**31 - 1, 1, 1), {"A": 1, "B": 2}, 3) == ("Pi", (1, 2**31 - 1))
    # a per-tensor scale the precision lacks (fp32 has none) is a null pointer; one it has, its array
    assert kernel_arguments(("A_scale", "M"), GemmShape(5, 1, 1), {"A": 1, "B": 2}, 3) == ("Pi", (0, 5))
    assert kernel_arguments(("A_scale",), GemmShape(5, 1, 1, "fp8", "nt"), {"A_scale": 7}, 3) == ("P", (7,))


# --- persistent kernels: the device's multiprocessor count in launch expressions ---------------------------------

PERSISTENT = {"name": "walk", "op": "gemm", "source": "walk.cu", "kernel": "walk",
              "args": ["A", "B", "C", "M", "N", "K"],
              "configs": [{"BM": 128}], "grid": ["min(cdiv(M, BM) * cdiv(N, BM), SMS)"], "block": ["256"]}


def test_a_grid_may_be_sized_by_the_devices_multiprocessors(tmp_path):
    (tmp_path / "walk.cu").write_text('extern "C" __global__ void walk() {}\n')
    (v,) = parse_specs({"variant": [PERSISTENT]}, "gpubench.toml", tmp_path)
    tiles = GemmShape(1000, 1500, 777).dims()
    assert v.code.launch_for({**tiles, SMS: 132}, v.space.configs[0]).grid == (96, 1, 1)  # 8 × 12 tiles, fewer than the SMs
    assert v.code.launch_for({**GemmShape(4096, 4096, 64).dims(), SMS: 132}, v.space.configs[0]).grid == (132, 1, 1)
    assert v.code.launch_for({**GemmShape(4096, 4096, 64).dims(), SMS: 114}, v.space.configs[0]).grid == (114, 1, 1)


def test_a_configuration_cannot_shadow_the_multiprocessor_count(tmp_path):
    (tmp_path / "walk.cu").write_text('extern "C" __global__ void walk() {}\n')
    with pytest.raises(SpecError, match="SMS is the device's multiprocessor count"):
        parse_specs({"variant": [{**PERSISTENT, "configs": [{"BM": 128, "SMS": 4}]}]}, "gpubench.toml", tmp_path)


def test_sms_is_named_among_the_allowed_launch_names(tmp_path):
    (tmp_path / "walk.cu").write_text('extern "C" __global__ void walk() {}\n')
    with pytest.raises(SpecError, match=r"unknown.*SM_COUNT.*SMS"):
        parse_specs({"variant": [{**PERSISTENT, "grid": ["min(M, SM_COUNT)"]}]}, "gpubench.toml", tmp_path)


# --- variants of several kernels (a transform, then the main kernel) -------------------------------------------

TWO_STEP = {"name": "two", "op": "conv", "source": "two.cu", "kernel": "main", "args": ["x", "T", "y", "N", "K"],
            "workspace": {"T": "9 * K * C"}, "requires": ["R == 3 and stride == 1"],
            "before": [{"kernel": "prep", "args": ["w", "T", "K", "C"], "grid": ["cdiv(K * C, 256)"],
                        "block": ["256"]}],
            "grid": ["cdiv(N * OH * OW, 128)"], "block": ["128"]}


def test_a_variant_may_launch_steps_sharing_a_workspace(tmp_path):
    (tmp_path / "two.cu").write_text('extern "C" __global__ void prep() {}\nextern "C" __global__ void main() {}\n')
    (v,) = parse_specs({"variant": [TWO_STEP]}, "gpubench.toml", tmp_path)
    assert [s.kernel for s in v.code.steps()] == ["prep", "main"]
    shape = conv_shape(20, 1, batch=2, in_channels=5, out_channels=7)
    assert v.code.workspace_sizes(shape.dims(), v.space.configs[0]) == {"T": 9 * 7 * 5}
    assert v.code.steps()[0].launch_for(shape.dims(), v.space.configs[0]).grid == (1, 1, 1)
    assert v.scope.unfit(shape.dims()) is None
    assert v.scope.unfit(conv_shape(20, 2).dims()) == "requires R == 3 and stride == 1"
    assert v.scope.unfit(conv_shape(20, 1, kernel=5).dims()) == "requires R == 3 and stride == 1"


def test_the_inputs_must_reach_some_step(tmp_path):
    (tmp_path / "two.cu").write_text('extern "C" __global__ void prep() {}\nextern "C" __global__ void main() {}\n')
    table = {**TWO_STEP, "before": [{**TWO_STEP["before"][0], "args": ["T", "K", "C"]}]}
    with pytest.raises(SpecError, match="args of the steps: missing w"):
        parse_specs({"variant": [table]}, "gpubench.toml", tmp_path)


# --- TMA descriptors built on the host ----------------------------------------------------------------------

TMA = {"name": "tma", "op": "gemm", "source": "tma.cu", "kernel": "k", "args": ["map_a", "B", "C", "M", "N", "K"],
       "tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"]}},
       "configs": [{"BM": 128}], "grid": ["cdiv(M, BM)"], "block": ["128"]}


def _tma_spec(tmp_path, **changes):
    (tmp_path / "tma.cu").write_text('extern "C" __global__ void k() {}\n')
    return parse_specs({"variant": [{**TMA, **changes}]}, "gpubench.toml", tmp_path)


def test_a_tensor_map_passes_its_array_to_the_kernel(tmp_path):
    (v,) = _tma_spec(tmp_path)
    (m,) = v.code.kernels.tensor_maps
    assert (m.name, m.array) == ("map_a", "A")
    assert m.resolve({"M": 1000, "K": 776, "BM": 128}) == ((1000, 776), (128, 32))
    assert m.swizzle == 128  # the default: 128-byte rows, the layout wgmma's descriptors expect


def test_a_tensor_map_without_swizzle_may_have_rows_of_up_to_256_floats(tmp_path):
    plain = {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["16", "BM * 2"], "swizzle": 0}}
    (v,) = _tma_spec(tmp_path, tensor_maps=plain)
    (m,) = v.code.kernels.tensor_maps
    assert m.swizzle == 0 and m.unfit({"M": 1000, "K": 776, "BM": 128}) is None


def test_a_tensor_map_may_swizzle_rows_as_wide_as_its_configuration_chooses(tmp_path):
    chosen = {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "BK / 4"], "swizzle": "BK"}}
    (v,) = _tma_spec(tmp_path, tensor_maps=chosen, configs=[{"BM": 128, "BK": 64}])
    (m,) = v.code.kernels.tensor_maps
    for bk in (32, 64, 128):  # rows of BK / 4 float32s: BK bytes, as wide as the swizzle
        assert m.swizzle_bytes({"BK": bk}) == bk and m.unfit({"M": 1000, "K": 776, "BM": 128, "BK": bk}) is None
    assert "a swizzle of 96 bytes" in m.unfit({"M": 1000, "K": 776, "BM": 128, "BK": 96})
    fixed = {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "16"], "swizzle": "BK"}}  # 64-byte rows
    (v,) = _tma_spec(tmp_path, tensor_maps=fixed, configs=[{"BM": 128, "BK": 64}])
    (m,) = v.code.kernels.tensor_maps
    assert m.unfit({"M": 1000, "K": 776, "BM": 128, "BK": 64}) is None
    assert "at most 32 bytes, the swizzle's width" in m.unfit({"M": 1000, "K": 776, "BM": 128, "BK": 32})


def test_a_tensor_map_with_a_condition_is_built_only_where_it_holds(tmp_path):
    only = {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "when": "K % 4 == 0 and BM >= 64"}}
    (v,) = _tma_spec(tmp_path, tensor_maps=only)
    (m,) = v.code.kernels.tensor_maps
    assert m.applies({"M": 1000, "K": 776, "BM": 128})
    assert not m.applies({"M": 1000, "K": 777, "BM": 128}) and not m.applies({"M": 1000, "K": 776, "BM": 32})
    # where it is not built, nothing about it can be unfit (a box too wide for the swizzle is not checked)
    assert m.unfit({"M": 1000, "K": 777, "BM": 128}) is None
    (always,) = _tma_spec(tmp_path)[0].code.kernels.tensor_maps
    assert always.when is None and always.applies({"M": 1, "K": 1, "BM": 1})


def test_a_tensor_map_limited_to_some_layouts_is_present_only_for_their_problems(tmp_path):
    only_tn = {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "layouts": ["tn"]}}
    (v,) = _tma_spec(tmp_path, tensor_maps=only_tn, layouts=["nn", "tn"], layout_define="LAYOUT")
    (m,) = v.code.kernels.tensor_maps
    assert m.layouts == ("tn",)
    assert m.present(GemmShape(256, 256, 256, layout=GemmLayout.TN))
    nn = GemmShape(256, 256, 256, layout=GemmLayout.NN)
    # absent in nn: not built there, so nothing about it is checked (a box too wide would be refused in tn)
    assert not m.present(nn) and m.present()
    wide = replace(m, box=(m.box[0], expr.parse("64")))
    assert wide.unfit({**nn.dims(), "BM": 128}, nn) is None
    tn = GemmShape(256, 256, 256, layout=GemmLayout.TN)
    assert "128 bytes" in wide.unfit({**tn.dims(), "BM": 128}, tn)
    (every,) = _tma_spec(tmp_path)[0].code.kernels.tensor_maps
    assert every.layouts == () and every.present(nn)


def test_builtin_fp8_grouped_maps_its_block_scales_in_the_block_layouts_only():
    from gpubench.ops.grouped_gemm import GroupedShape
    (m,) = [m for m in CATALOG.get("grouped-gemm", "cuda", "fp8-grouped").code.kernels.tensor_maps
            if m.name == "map_sa"]
    config = {"BN": 128, "STAGES": 5, "TMA_SCALES": 1}
    for layout, built in (("contiguous-block", True), ("masked-block", True), ("contiguous", False),
                          ("masked", False)):
        shape = GroupedShape((300, 0, 1000), 4096, 1000, dtype=DType.FP8, layout=layout)
        assert m.present(shape) == built
        if built:  # SA [KB, M] as a matrix, a box of 128 rows' scales for one K block, plain rows
            values = {**shape.dims(), **config}
            assert m.applies(values) and m.swizzle_bytes(values) == 0
            assert m.resolve(values, shape) == ((8, shape.rows), (1, 128)) and m.unfit(values, shape) is None
    assert not m.applies({**GroupedShape((128,), 256, 256).dims(), **config, "TMA_SCALES": 0})


def test_builtin_tma_conv_stores_through_map_y_only_where_rows_are_whole_16_byte_chunks():
    for name in ("tc-wgmma-tma", "tc-wgmma-halo"):
        maps = {m.name: m for m in CATALOG.get("conv", "cuda", name).code.kernels.tensor_maps}
        ragged = conv_shape(33, 1, batch=2, in_channels=8, out_channels=33, kernel=3).dims()
        whole = conv_shape(28, 1, batch=2, in_channels=128, out_channels=128, kernel=3).dims()
        assert not maps["map_y"].applies(ragged) and maps["map_y"].applies(whole)
        assert all(maps[m].applies(ragged) for m in ("map_x", "map_w"))


def test_the_residual_map_is_built_only_where_the_problem_has_z_in_whole_16_byte_rows():
    """tc-wgmma-tma's map_z (the fused epilogue's residual, loaded where the output will be staged): a problem
    without z has no map (so nothing about it is unfit: its elements would be float32's, too wide for the box), one
    with it has a map where K % 8 == 0, of y's type and box."""
    (m,) = [m for m in CATALOG.get("conv", "cuda", "tc-wgmma-tma").code.kernels.tensor_maps if m.name == "map_z"]
    config = {"BM": 256, "BN": 128, "CLUSTER": 1}
    for k, built in ((128, True), (70, False)):
        bare = conv_shape(28, 1, batch=2, in_channels=128, out_channels=k, kernel=3, dtype=DType.FP16,
                          layout=ConvLayout.NHWC)
        fused = conv_shape(28, 1, batch=2, in_channels=128, out_channels=k, kernel=3, dtype=DType.FP16,
                           layout=ConvLayout.NHWC, fused=Fused(Epilogue.BIAS_RELU_ADD))
        assert not m.present(bare) and m.present(fused) and m.present()
        assert m.applies({**fused.dims(), **config}) == built
        assert m.unfit({**bare.dims(), **config}, bare) is None and m.unfit({**fused.dims(), **config}, fused) is None
        if built:
            assert m.resolve({**fused.dims(), **config}, fused) == ((2 * 28 * 28, k), (64, 64))
    # where the problem has z (and K % 8 == 0), the map is checked: a box wider than the swizzle is refused
    fused = conv_shape(28, 1, batch=2, in_channels=128, out_channels=128, kernel=3, dtype=DType.FP16,
                       layout=ConvLayout.NHWC, fused=Fused(Epilogue.BIAS_RELU_ADD))
    wide = replace(m, box=(m.box[0], expr.parse("128")))
    assert "box 64 × 128 of 2-byte elements" in wide.unfit({**fused.dims(), **config}, fused)


@pytest.mark.parametrize("changes,message", [
    ({"tensor_maps": {"map_a": {"array": "Q", "shape": ["M", "K"], "box": ["BM", "32"]}}},
     "tensor_maps.map_a.array must be one of A, B, C"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M"], "box": ["BM", "32"]}}},
     "tensor_maps.map_a.shape must be two expressions"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "64"]}}},
     "box 128 × 64 of 4-byte elements: rows must be 1 to 256 and cols a multiple of 4 up to 32"),
    ({"tensor_maps": {"M": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"]}}},
     "tensor_maps.M: the name must be an identifier other than"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "swizzle": 48}}},
     "tensor_maps.map_a.swizzle must be 128 \\(bytes; the default\\), 64, 32, 0"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "swizzle": "BQ"}}},
     "tensor_maps.map_a.swizzle"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "512"], "swizzle": 0}}},
     "box 128 × 512 of 4-byte elements: rows must be 1 to 256 and cols a multiple of 4 up to 256 \\(TMA's limit "
     "without a swizzle"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "pad": 4}}},
     "tensor_maps.map_a must be a table with array, box \\(and optionally shape, swizzle, im2col, when, layouts\\)"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "layouts": ["tt"]}}},
     "tensor_maps.map_a.layouts must be a list of the layouts nn, .*got \\['tt'\\]"),
    ({"tensor_maps": {"map_a": {"array": "A", "shape": ["M", "K"], "box": ["BM", "32"], "when": "K % 4 == Q"}}},
     "tensor_maps.map_a.when"),
    ({"args": ["A", "B", "C", "M", "N", "K"]}, "tensor map\\(s\\) map_a passed to no kernel"),
    ({"args": ["map_a", "C", "M", "N", "K"]}, "args of the steps: missing B"),
])
def test_bad_tensor_maps_are_refused_in_one_line(tmp_path, changes, message):
    with pytest.raises(SpecError, match=message):
        _tma_spec(tmp_path, **changes)


def test_builtin_tma_gemm_requires_rows_of_whole_16_byte_chunks():
    v = CATALOG.get("gemm", "cuda", "tf32-tma")
    maps = {m.name: m for m in v.code.kernels.tensor_maps}
    assert {m.array for m in v.code.kernels.tensor_maps} == {"A", "B", "C"}  # C leaves by TMA stores
    assert v.scope.unfit(GemmShape(333, 1100, 1028).dims()) is None
    assert v.scope.unfit(GemmShape(1000, 1500, 777).dims()) == "requires K % 4 == 0"
    for c in v.space.configs:  # a 2-block cluster's blocks each load half of the A tile
        _, box = maps["map_a"].resolve({**GemmShape(512, 512, 512).dims(), **c.values})
        assert box == (256 // c.values["CLUSTER"], 32)


@pytest.mark.parametrize("name", ["tc-implicit", "tc-wgmma", "tc-wgmma-ws"])
def test_builtin_tensor_core_convs_take_fp16_bf16_nhwc_with_whole_channel_chunks(name):
    """The tensor-core convolutions copy 8 channels at a time and keep a 32-bit mask of filter taps: other problems
    are skipped, saying which condition they break; they take only the precisions and the layout they read."""
    from gpubench.core.dtypes import DType
    from gpubench.ops.conv import ConvLayout
    v = CATALOG.get("conv", "cuda", name)
    assert set(v.scope.dtypes) == {DType.FP16, DType.BF16} and tuple(v.scope.layouts) == (ConvLayout.NHWC,)
    assert v.scope.unfit(conv_shape(23, 2, batch=3, in_channels=24, out_channels=70).dims()) is None
    assert v.scope.unfit(conv_shape(23, 1, in_channels=13).dims()) == "requires C % 8 == 0"
    assert v.scope.unfit(conv_shape(23, 1, in_channels=8, kernel=7).dims()) == "requires R * S <= 32"
    assert v.scope.takes(conv_shape(23, 1, in_channels=24, dtype=DType.BF16, layout=ConvLayout.NHWC)) is None
    assert "not fp32" in v.scope.takes(conv_shape(23, 1, in_channels=24, layout=ConvLayout.NHWC))
    assert "not nchw" in v.scope.takes(conv_shape(23, 1, in_channels=24, dtype=DType.FP16))


def test_a_tensor_map_without_a_shape_takes_the_array_as_it_lies_in_each_layout():
    """wgmma-tma's maps name no shape: A is M×K in nn and nt and K×M in tn, B is K×N in nn and tn and N×K in nt,
    C is M×N; the elements are the precision's (2 bytes in bf16, 1 in fp8), so a 64-element box is 128 bytes."""
    v = CATALOG.get("gemm", "cuda", "wgmma-tma")
    maps = {m.name: m for m in v.code.kernels.tensor_maps}
    values = {**GemmShape(1000, 1500, 776).dims(), **v.space.configs[0].values}
    expect = {"nn": ((1000, 776), (776, 1500)), "nt": ((1000, 776), (1500, 776)), "tn": ((776, 1000), (776, 1500))}
    for layout, (a, b) in expect.items():
        problem = GemmShape(1000, 1500, 776, DType.BF16, GemmLayout(layout))
        assert maps["map_a"].resolve(values, problem) == (a, (64, 64))
        assert maps["map_b"].resolve(values, problem) == (b, (64, 64))
        assert maps["map_c"].resolve(values, problem)[0] == (1000, 1500)
        assert maps["map_a"].element(problem) is ml_dtypes.bfloat16
        assert all(m.unfit(values, problem) is None for m in v.code.kernels.tensor_maps)
    fp8 = CATALOG.get("gemm", "cuda", "fp8-tma")
    problem = GemmShape(1000, 1500, 768, DType.FP8, GemmLayout.NT)
    (map_a,) = [m for m in fp8.code.kernels.tensor_maps if m.name == "map_a"]
    assert map_a.resolve({**problem.dims(), **fp8.space.configs[0].values}, problem) == ((1000, 768), (64, 128))
    assert map_a.element(problem) is ml_dtypes.float8_e4m3fn
    # the same 128-element box is 256 bytes of bfloat16: wider than the swizzle
    assert "cols a multiple of 8 up to 64" in map_a.unfit({**problem.dims(), **fp8.space.configs[0].values},
                                                         replace(problem, dtype=DType.BF16))


def test_a_box_wider_than_the_swizzle_for_some_precision_is_refused(tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    spec = {**TMA, "source": "k.cu", "dtypes": ["fp32", "fp8"], "dtype_define": "ELEM",
            "tensor_maps": {"map_a": {"array": "A", "box": ["BM", "64"]}}}
    with pytest.raises(SpecError, match="box 128 × 64 of 4-byte elements.*up to 32"):
        parse_specs({"variant": [spec]}, "gpubench.toml", tmp_path)


@pytest.mark.parametrize("array,what", [("x", "conv"), ("W", "workspace")])
def test_a_tensor_map_may_leave_out_its_shape_only_for_a_gemm_array(tmp_path, array, what):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    if what == "conv":
        spec = {"name": "c", "op": "conv", "source": "k.cu", "kernel": "k", "args": ["m", "w", "y", "N"],
                "tensor_maps": {"m": {"array": "x", "box": ["8", "8"]}}, "grid": ["1"], "block": ["32"]}
    else:
        spec = {**TMA, "source": "k.cu", "workspace": {"W": "M * K"},
                "tensor_maps": {"map_a": {"array": "W", "box": ["8", "8"]}}, "args": ["map_a", "A", "B", "C", "M", "N", "K"]}
    with pytest.raises(SpecError, match="shape may be left out .* only for a GEMM's A, B, C"):
        parse_specs({"variant": [spec]}, "gpubench.toml", tmp_path)


CONV_TMA = {"name": "c", "op": "conv", "source": "k.cu", "kernel": "k", "args": ["map_x", "w", "y", "N"],
            "tensor_maps": {"map_x": {"array": "x", "im2col": True, "box": ["BM", "64"]}}, "configs": [{"BM": 256}],
            "grid": ["1"], "block": ["32"], "dtypes": ["fp16"], "layouts": ["nhwc"]}


def _conv_tma_spec(tmp_path, **changes):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    return parse_specs({"variant": [{**CONV_TMA, **changes}]}, "gpubench.toml", tmp_path)


def test_an_im2col_map_reads_a_conv_input_as_output_pixels_by_channels(tmp_path):
    """One filter tap's im2col matrix: N·OH·OW output pixels × C channels, in boxes of up to 1024 pixels."""
    (v,) = _conv_tma_spec(tmp_path)
    (m,) = v.code.kernels.tensor_maps
    assert m.im2col and m.array == "x"
    shape = conv_shape(28, 2, batch=4, in_channels=128, out_channels=8, padding=1, dtype=DType.FP16,
                       layout=ConvLayout.NHWC)
    values = {**shape.dims(), "BM": 256}
    assert m.resolve(values, shape) == ((4 * 14 * 14, 128), (256, 64))
    assert m.unfit(values, shape) is None
    assert "rows must be 1 to 1024" in m.unfit({**values, "BM": 2048}, shape)
    assert "the im2col mode reads NHWC inputs, not nchw" in m.unfit(values, replace(shape, layout=ConvLayout.NCHW))


@pytest.mark.parametrize("changes,message", [
    ({"op": "gemm", "args": ["map_x", "B", "C", "M"], "dtypes": ["fp32"], "layouts": ["nn"],
      "tensor_maps": {"map_x": {"array": "A", "im2col": True, "box": ["BM", "32"]}}},
     "tensor_maps.map_x.im2col is for a convolution's input x, without a shape"),
    ({"tensor_maps": {"map_x": {"array": "w", "im2col": True, "box": ["BM", "64"]}}, "args": ["x", "map_x", "y"]},
     "tensor_maps.map_x.im2col is for a convolution's input x"),
    ({"tensor_maps": {"map_x": {"array": "x", "im2col": True, "shape": ["N", "C"], "box": ["BM", "64"]}}},
     "im2col is for a convolution's input x, without a shape \\(the problem gives it\\)"),
    ({"tensor_maps": {"map_x": {"array": "x", "im2col": 1, "box": ["BM", "64"]}}},
     "tensor_maps.map_x.im2col must be true or false, got 1"),
    ({"layouts": ["nchw"]}, "the im2col mode reads NHWC inputs, not nchw"),
])
def test_bad_im2col_maps_are_refused_in_one_line(tmp_path, changes, message):
    with pytest.raises(SpecError, match=message):
        _conv_tma_spec(tmp_path, **changes)


def test_builtin_tma_conv_reads_nhwc_through_an_im2col_map_and_the_filters_as_krsc_rows():
    """tc-wgmma-tma: no tap mask (any filter size), but the copy engine's limits on the box corners and the stride;
    its filter map is K × R·S·C, each block of a cluster loading its share of the tile's rows."""
    v = CATALOG.get("conv", "cuda", "tc-wgmma-tma")
    maps = {m.name: m for m in v.code.kernels.tensor_maps}
    assert maps["map_x"].im2col and not maps["map_w"].im2col
    shape = conv_shape(23, 2, batch=3, in_channels=24, out_channels=70, kernel=7, padding=3, dtype=DType.FP16,
                       layout=ConvLayout.NHWC)
    assert v.scope.unfit(shape.dims()) is None  # 7×7: R·S = 49 taps, past tc-wgmma-ws's 32-bit mask
    assert v.scope.unfit(conv_shape(23, 9, in_channels=8).dims()) == "requires stride <= 8"
    for c in v.space.configs:
        values = {**shape.dims(), **c.values}
        assert maps["map_w"].resolve(values, shape) == ((70, 7 * 7 * 24), (c.values["BN"] // c.values["CLUSTER"], 64))
        assert maps["map_x"].resolve(values, shape)[1] == (c.values["BM"], 64)


def test_tensor_core_gemms_skip_rows_tma_cannot_read_saying_why():
    """TMA reads rows that start on 16-byte boundaries: 8 elements of 16 bits, 16 of fp8 (K) and 8 of bf16 (C)."""
    wgmma = CATALOG.get("gemm", "cuda", "wgmma-tma")
    fp8 = CATALOG.get("gemm", "cuda", "fp8-tma")
    assert wgmma.scope.unfit(GemmShape(2056, 3000, 1040).dims()) is None
    assert wgmma.scope.unfit(GemmShape(1000, 1001, 999).dims()) == "requires N % 8 == 0"
    assert wgmma.scope.unfit(GemmShape(1001, 1000, 1000).dims()) == "requires M % 8 == 0"
    assert fp8.scope.unfit(GemmShape(1001, 1000, 1040).dims()) is None  # M is no row length in nt
    assert fp8.scope.unfit(GemmShape(1000, 1000, 1032).dims()) == "requires K % 16 == 0"


def test_kernel_args_may_name_the_per_tensor_scales(tmp_path):
    (v,) = _tma_spec(tmp_path, args=["map_a", "B", "C", "A_scale", "B_scale", "M", "N", "K"])
    assert v.code.program.args[3:5] == ("A_scale", "B_scale")
    with pytest.raises(SpecError, match="unknown name\\(s\\) C_scale"):
        _tma_spec(tmp_path, args=["map_a", "B", "C", "C_scale", "M", "N", "K"])


def test_builtin_winograd_variants_declare_their_filter_transform():
    for name in ("winograd-2x2", "winograd-4x4"):
        v = CATALOG.get("conv", "cuda", name)
        assert [s.kernel for s in v.code.steps()] == ["winograd_filter", "winograd_conv"]
        assert v.scope.unfit(conv_shape(56, 1, batch=32, in_channels=64, out_channels=64).dims()) is None
        assert v.scope.unfit(conv_shape(56, 2, batch=32, in_channels=64, out_channels=64).dims())
        tile = v.space.configs[0].values["TILE"]
        shape = conv_shape(56, 1, batch=32, in_channels=64, out_channels=64)
        launch = v.code.launch_for(shape.dims(), v.space.configs[0])
        assert launch.grid[0] * v.space.configs[0].values["BP"] >= 32 * (56 // tile) ** 2


# --- families: what several variants share, declared once -----------------------------------------------------

FAMILY = {"name": "fam", "op": "gemm", "source": "k.cu", "kernel": "k", "args": ["A", "B", "C", "M", "N", "K"],
          "defaults": {"X": 1, "Y": 2}, "label": "{X}/{Y}", "grid": ["cdiv(N, 16)", "cdiv(M, 16)"], "block": ["256"]}


def test_a_variant_takes_its_familys_keys_and_adds_its_own(project, tmp_path):
    one, two = parse_specs({"family": [FAMILY], "variant": [
        {"name": "one", "family": "fam", "configs": [{"X": 4}]},
        {"name": "two", "family": "fam", "configs": [{"X": 8}], "defaults": {"Y": 3}, "block": ["128"]},
    ]}, "gpubench.toml", tmp_path)
    assert (one.code.program.source, one.code.program.kernel, one.code.program.args) == (two.code.program.source, two.code.program.kernel, two.code.program.args)
    assert one.space.configs[0].values == {"X": 4, "Y": 2} and one.space.configs[0].label == "4/2"
    assert two.space.configs[0].values == {"X": 8, "Y": 3}  # defaults merge key by key: the variant's Y wins
    assert one.code.launch_for(GemmShape(64, 64, 64).dims(), one.space.configs[0]).threads == 256
    assert two.code.launch_for(GemmShape(64, 64, 64).dims(), two.space.configs[0]).threads == 128  # its own block wins


@pytest.mark.parametrize("data,match", [
    ({"family": [FAMILY], "variant": [{"name": "v", "family": "other"}]}, r"family 'other' is not declared; declared: fam"),
    ({"family": [{**FAMILY, "colour": 1}], "variant": []}, r"family 'fam': unknown field\(s\) colour"),
    ({"family": [FAMILY, FAMILY], "variant": []}, r"family 'fam': declared twice"),
    ({"family": [{**FAMILY, "family": "x"}], "variant": []}, r"unknown field\(s\) family"),
    ({"family": {"name": "fam"}, "variant": []}, r"families are declared as \[\[family\]\] tables"),
])
def test_bad_families_are_refused_in_one_line(project, tmp_path, data, match):
    with pytest.raises(SpecError, match=match):
        parse_specs(data, "gpubench.toml", tmp_path)


def test_the_warp_tile_family_is_declared_once():
    members = [v for v in BUILTIN if v.code.program and v.code.program.source is not None and v.code.program.source.name == "05_warptile.cu"]
    assert [v.name for v in members] == ["warptile", "dbuf", "swizzle", "tuned"]
    assert len({(v.code.program.kernel, v.code.launch, v.space.label, v.space.constraints, v.space.search, v.space.defaults) for v in members}) == 1
    spec = (catalog.kernels_dir() / "gemm" / "variants.toml").read_text()
    assert spec.count('source = "05_warptile.cu"') == 1 and spec.count('"(WN / TN) * (WM / TM) == 32"') == 1


def test_the_tensor_core_family_is_declared_once():
    members = [v for v in BUILTIN if v.code.program and v.code.program.source is not None and v.code.program.source.name == "10_wgmma_tma.cu"]
    assert [v.name for v in members] == ["wgmma-tma", "fp8-tma"]
    assert len({(v.code.program.kernel, v.code.program.args, v.code.launch, v.code.kernels.tensor_maps, v.space.constraints, v.code.program.dtype_define) for v in members}) == 1


GOOD_PY = "def g(A, B, C, M, N, K):\n    C[:] = A @ B\n"


@pytest.mark.parametrize("source", [
    GOOD_PY.replace("def g", "def f"), GOOD_PY + "f = g\n", GOOD_PY + "f: object = g\n", "from lib import g as f\n",
    "class f:\n    pass\n", "async def f(A, B, C, M, N, K):\n    pass\n",
    "# -*- coding: latin-1 -*-\n# caf\xe9\n" + GOOD_PY.replace("def g", "def f"),
], ids=["def", "alias", "annotated", "import", "class", "async", "latin-1"])
def test_a_python_kernel_may_be_defined_any_way_python_defines_a_name(tmp_path, monkeypatch, source):
    """The spec's look for the symbol (before the worker imports it and checks it is callable, with the right
    signature) takes what Python takes: an alias, an import, a class, a file in the encoding it declares."""
    from gpubench.specs.files import lab_kernel

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(source.encode("latin-1" if "latin-1" in source else "utf-8"))
    assert lab_kernel("gemm", "m.py:f", "A,B,C,M,N,K").code.program.kernel == "f"


@pytest.mark.parametrize("source,words", [
    (b"x = 1\nx == f\n", "kernel 'f' is not defined in m.py"), (b"# f\n", "kernel 'f' is not defined in m.py"),
    (bytes(range(256)), "cannot be read as Python source"), ("def f(): pass".encode("utf-16"), "cannot be read"),
    (b"# -*- coding: nonsense-9 -*-\ndef f(): pass\n", "unknown encoding"),
], ids=["comparison", "comment", "binary", "utf-16", "bad-cookie"])
def test_a_python_kernel_that_is_not_there_is_one_line(tmp_path, monkeypatch, source, words):
    from gpubench.specs.files import lab_kernel

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(source)
    with pytest.raises(SpecError, match=words) as e:
        lab_kernel("gemm", "m.py:f", "A,B,C,M,N,K")
    assert "\n" not in str(e.value)


# --- tiled maps of more than two dimensions (tc-wgmma-halo's NHWC halo boxes) ---------------------------------

HALO_MAP = {"array": "x", "shape": ["N", "H", "W", "C"], "box": ["1", "R + 1 + (BM + S - 3) / (W + 2 * pad)",
                                                                  "W + 2 * pad", "64"]}


def test_a_4d_tiled_map_resolves_its_shape_and_box_outermost_first(tmp_path):
    (v,) = _conv_tma_spec(tmp_path, tensor_maps={"map_x": HALO_MAP}, requires=["W + 2 * pad <= 256"])
    (m,) = v.code.kernels.tensor_maps
    shape = conv_shape(56, 1, batch=3, in_channels=64, out_channels=8, padding=1, dtype=DType.FP16,
                       layout=ConvLayout.NHWC)
    values = {**shape.dims(), "BM": 256}
    assert m.resolve(values, shape) == ((3, 56, 56, 64), (1, 8, 58, 64))  # 3 + 1 + 256 / 58 rows of 58 columns
    assert m.unfit(values, shape) is None
    wide = conv_shape(300, 1, batch=1, in_channels=64, out_channels=8, padding=1, dtype=DType.FP16,
                      layout=ConvLayout.NHWC)
    assert "box 1 × 4 × 302 × 64 of 2-byte elements: its outer dimensions must be 1 to 256" in m.unfit(
        {**wide.dims(), "BM": 256}, wide)


def test_a_map_is_checked_on_the_sample_problem_only_where_the_variant_takes_it(tmp_path):
    """The spec check evaluates every map on a ragged sample problem (1000 wide): a halo box of 1002 columns is
    refused there, unless the variant's `requires` turns that problem away (it would never be asked to run it)."""
    with pytest.raises(SpecError, match="box 1 × 4 × 1000 × 64 of 2-byte elements: its outer dimensions must be 1 "
                                        "to 256"):
        _conv_tma_spec(tmp_path, tensor_maps={"map_x": HALO_MAP})
    _conv_tma_spec(tmp_path, tensor_maps={"map_x": HALO_MAP}, requires=["W + 2 * pad <= 256"])


@pytest.mark.parametrize("map_x,message", [
    ({**HALO_MAP, "box": ["1", "8", "64"]}, "tensor_maps.map_x.box must have one expression per dimension of the "
                                            "array \\(4\\), got 3"),
    ({**HALO_MAP, "shape": ["N", "H", "W", "C", "1", "1"], "box": ["1"] * 6}, "shape must be two expressions, rows "
                                                                             "then columns \\(contiguous\\), or up to 5"),
    ({"array": "x", "im2col": True, "box": ["1", "BM", "64"]}, "box must have one expression per dimension of the "
                                                               "array \\(2\\), got 3"),
])
def test_bad_nd_maps_are_refused_in_one_line(tmp_path, map_x, message):
    with pytest.raises(SpecError, match=message):
        _conv_tma_spec(tmp_path, tensor_maps={"map_x": map_x})


def test_builtin_halo_conv_takes_stride_1_only_and_boxes_one_image_s_rows():
    """tc-wgmma-halo: pixel q + r·Wp + s is tap (r, s)'s only at stride 1; its halo box is one image's rows of
    Wp = W + 2·pad columns from -pad (at most 256, a box dimension's limit). The spec's sample problem (1000 wide,
    stride 2) is one it turns away, so the spec check does not hold its map against it."""
    v = CATALOG.get("conv", "cuda", "tc-wgmma-halo")
    assert v.scope.unfit(conv_shape(56, 2, in_channels=64).dims()) == "requires stride == 1"
    assert v.scope.unfit(conv_shape(255, 1, in_channels=64).dims()) == "requires W + 2 * pad <= 256"
    maps = {m.name: m for m in v.code.kernels.tensor_maps}
    shape = conv_shape(28, 1, batch=128, in_channels=128, out_channels=128, padding=1, dtype=DType.BF16,
                       layout=ConvLayout.NHWC)
    assert v.scope.unfit(shape.dims()) is None
    for c in v.space.configs:
        values = {**shape.dims(), **c.values}
        rows = 3 + 1 + (c.values["BM"] + 3 - 3) // 30
        assert maps["map_x"].resolve(values, shape) == ((128, 28, 28, 128), (1, rows, 30, 64))
        assert maps["map_w"].resolve(values, shape) == ((128, 9 * 128), (c.values["BN"], 64))
        assert maps["map_x"].unfit(values, shape) is None
