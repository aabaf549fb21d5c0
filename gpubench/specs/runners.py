"""What runs a variant: one type per kind of runner, each with its own options, made from a spec by one table.

A spec names its runner (`runner = "cudnn"`) and gives its options (`options = { plans = "best" }`); RUNNERS maps
the name to its type, and the type checks its options when it is made. The spec parser asks a runner what it
needs (a source file of which kind, kernel launches, a library), a backend runs it through a table from type to
method, and a saved run records its name: nothing branches on a runner's name outside this module.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import ClassVar, Mapping

from gpubench.core.backend_kind import BackendKind


class PlanPolicy(StrEnum):
    """How the cuDNN runner picks its plan for a problem."""

    HEURISTIC = "heuristic"  # cuDNN's own first choice, untimed
    BEST = "best"  # every plan timed once (not as the point is), the fastest kept


def searches_kept_plans(runner) -> bool:
    """Whether the runner searches a library's plans and keeps the choice between runs (cuDNN's `cudnn`): what a
    run prepares before its sweep (execution/tasks.py first_calls)."""
    return runner.KEEPS_PLANS and getattr(runner, "plans", None) == PlanPolicy.BEST


def _option_as(runner, name: str, kind: type[StrEnum]) -> None:
    """A runner's option `name` turned into its enum `kind`; one line naming the allowed values where it is not one."""
    value = getattr(runner, name)
    try:
        object.__setattr__(runner, name, kind(value))
    except ValueError:
        raise ValueError(f"options: {name} {value!r}; allowed: {', '.join(kind)}") from None


@dataclass(frozen=True)
class Runner:
    """The kind of call a variant is. Subclasses set the class constants and add their options as fields."""

    NAME: ClassVar[str]
    BACKEND: ClassVar[BackendKind]
    SOURCE: ClassVar[str | None] = None  # the suffix of the source file it runs (".cu", ".py"), if any
    USER: ClassVar[bool] = False  # a project's own variants may use it (the others are gpubench's)
    LAUNCHES: ClassVar[bool] = False  # the spec describes its main kernel's launch (kernel, args, grid, ...)
    STEPS: ClassVar[bool] = False  # the spec's `before` kernels and `workspace` arrays run ahead of it
    ARGS: ClassVar[bool] = False  # the spec gives the order of its arguments
    COMPILES_CONFIG: ClassVar[bool] = False  # its configuration's parameters are -D defines of its own source
    NVCC: ClassVar[bool] = False  # nvcc compiles its source (a .cu file) before any point runs
    FUNCTION: ClassVar[bool] = False  # its source is a Python module whose function (`kernel`) is called
    KEEPS_PLANS: ClassVar[bool] = False  # with plans = "best", the plan its search picks is kept between runs
    LIBRARY: ClassVar[str | None] = None  # a library the backend must describe as present (its `libraries`) ...
    MISSING: ClassVar[str] = ""  # ... and what to say when it is not

    @property
    def library_math(self) -> bool:
        """Its arithmetic is a library's (cuBLAS, cuDNN), which --tf32 lets use TF32 tensor cores."""
        return False

    @property
    def tf32(self) -> bool:
        """Its own arithmetic is TF32 (a TF32 kernel), whatever --tf32 says."""
        return False

    def options(self) -> dict:
        """Its options as a spec writes them."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> Runner:
        """The runner a spec's options describe; ValueError saying which option is wrong and what is allowed."""
        allowed = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise ValueError(f"options {', '.join(unknown)} are not for the {cls.NAME} runner; allowed: "
                             f"{', '.join(allowed) or 'none'}")
        return cls(**options)


@dataclass(frozen=True)
class KernelRunner(Runner):
    """A CUDA kernel of the spec's (or the user's), launched through PyCUDA, with its `before` steps."""

    NAME = "kernel"
    BACKEND = BackendKind.CUDA
    SOURCE = ".cu"
    USER = True
    LAUNCHES = True
    STEPS = True
    ARGS = True
    COMPILES_CONFIG = True
    NVCC = True

    tf32_kernel: bool = False  # the kernel computes with TF32 tensor cores (its tolerance is TF32's)

    def __post_init__(self):
        if not isinstance(self.tf32_kernel, bool):
            raise ValueError(f"options: tf32 is true or false, got {self.tf32_kernel!r}")

    @property
    def tf32(self) -> bool:
        return self.tf32_kernel

    def options(self) -> dict:
        return {"tf32": True} if self.tf32_kernel else {}

    @classmethod
    def from_options(cls, options):
        rest = {k: v for k, v in options.items() if k != "tf32"}
        if rest:
            raise ValueError(f"options {', '.join(sorted(rest))} are not for the kernel runner; allowed: tf32")
        return cls(tf32_kernel=options.get("tf32", False))


@dataclass(frozen=True)
class CublasRunner(Runner):
    """cuBLAS's SGEMM (gemmStridedBatchedEx), the GEMM baseline."""

    NAME = "cublas"
    BACKEND = BackendKind.CUDA

    @property
    def library_math(self) -> bool:
        return True


@dataclass(frozen=True)
class CublasLtRunner(Runner):
    """cuBLASLt's matmul (through nvmath-python's bindings) with per-tensor scales: the GEMM baseline in the
    precisions cuBLAS's GemmEx does not take (fp8, int8)."""

    NAME = "cublaslt"
    BACKEND = BackendKind.CUDA
    LIBRARY = "cublaslt"
    MISSING = "cuBLASLt is not available (pip install nvmath-python; it loads the CUDA toolkit's libcublasLt)"

    @property
    def library_math(self) -> bool:
        return True


@dataclass(frozen=True)
class CudnnRunner(Runner):
    """cuDNN's forward convolution through its frontend's graph API, the convolution baseline."""

    NAME = "cudnn"
    BACKEND = BackendKind.CUDA
    LIBRARY = "cudnn"
    KEEPS_PLANS = True  # backends/cuda/plan_cache.py
    MISSING = "cuDNN is not available (pip install nvidia-cudnn-frontend, with cuDNN 9 libraries)"

    @property
    def library_math(self) -> bool:
        return True

    plans: PlanPolicy = PlanPolicy.BEST

    def __post_init__(self):
        _option_as(self, "plans", PlanPolicy)


@dataclass(frozen=True)
class CudnnSdpaRunner(Runner):
    """cuDNN's scaled dot-product attention (forward) through its frontend's graph API: the attention baseline
    (fp16, bf16; fp8 where cuDNN has it). A problem cuDNN refuses, or a machine without it, skips the point saying
    why (the op's hand kernels still run)."""

    NAME = "cudnn-sdpa"
    BACKEND = BackendKind.CUDA

    plans: PlanPolicy = PlanPolicy.BEST

    def __post_init__(self):
        _option_as(self, "plans", PlanPolicy)

    @property
    def library_math(self) -> bool:
        return True


class SdpaBackend(StrEnum):
    """Which of PyTorch's scaled_dot_product_attention backends a torch-sdpa variant pins."""

    FLASH = "flash"  # FlashAttention-2, built into PyTorch
    EFFICIENT = "efficient"  # the memory-efficient kernels (xFormers')
    CUDNN = "cudnn"  # cuDNN's, through PyTorch
    MATH = "math"  # the unfused reference: for checking, not racing


@dataclass(frozen=True)
class TorchSdpaRunner(Runner):
    """torch.nn.functional.scaled_dot_product_attention pinned to one backend (sdpa_kernel), its result copied
    into O. Where PyTorch or the backend is missing, or refuses the problem, the point is skipped with its words."""

    NAME = "torch-sdpa"
    BACKEND = BackendKind.CUDA

    backend: SdpaBackend = SdpaBackend.FLASH

    def __post_init__(self):
        _option_as(self, "backend", SdpaBackend)

    @property
    def library_math(self) -> bool:
        return True


class GroupedLibrary(StrEnum):
    """Which library a grouped-library variant calls."""

    FIRST = "first"  # torch's grouped product where it runs, else the loop: the op's baseline
    TORCH = "torch"  # torch._grouped_mm (bf16) / torch._scaled_grouped_mm (fp8), and nothing else
    LOOP = "loop"  # one cuBLAS (fp16, bf16) or cuBLASLt (fp8) GEMM per group, launched back to back


@dataclass(frozen=True)
class GroupedLibraryRunner(Runner):
    """A grouped GEMM's library: torch._grouped_mm where the installed PyTorch has it, or a loop of one library GEMM
    per group; which one ran is recorded (the point's engine). A library that is missing or refuses skips the
    point with its words."""

    NAME = "grouped-library"
    BACKEND = BackendKind.CUDA

    library: GroupedLibrary = GroupedLibrary.FIRST

    def __post_init__(self):
        _option_as(self, "library", GroupedLibrary)

    @property
    def library_math(self) -> bool:
        return True


@dataclass(frozen=True)
class Im2colRunner(Runner):
    """A convolution as the spec's `before` kernels (the unfold into the column matrix, a workspace array) and then
    cuBLAS's GEMM of the filters by that matrix. (With a GEMM of ours instead, it is a plain kernel variant.)"""

    NAME = "im2col"
    BACKEND = BackendKind.CUDA
    SOURCE = ".cu"
    STEPS = True
    NVCC = True

    columns: str = "cols"  # the workspace array that holds the column matrix

    def __post_init__(self):
        if not isinstance(self.columns, str) or not self.columns:
            raise ValueError(f"options: columns names the workspace array of the column matrix, got {self.columns!r}")

    @property
    def library_math(self) -> bool:
        return True


@dataclass(frozen=True)
class NumpyMatmul(Runner):
    """An op's "numpy" emulation: NumPy's matmul (BLAS) for GEMM, the CPU's GEMM baseline (gpubench/ops/gemm.py);
    attention's FlashAttention loop and grouped GEMM's per-group products likewise (their modules)."""

    NAME = "numpy"
    BACKEND = BackendKind.CPU


@dataclass(frozen=True)
class NumpySliding(Runner):
    """The float32 sliding-window convolution: the conv op's "numpy-sliding" emulation (gpubench/ops/conv.py)."""

    NAME = "numpy-sliding"
    BACKEND = BackendKind.CPU


@dataclass(frozen=True)
class NumpyIm2col(Runner):
    """The float32 im2col-and-matmul convolution: the conv op's "numpy-im2col" emulation (gpubench/ops/conv.py)."""

    NAME = "numpy-im2col"
    BACKEND = BackendKind.CPU


@dataclass(frozen=True)
class PythonRunner(Runner):
    """A project's own CPU function: the spec's arguments in order, the output written in place."""

    NAME = "python"
    BACKEND = BackendKind.CPU
    SOURCE = ".py"
    USER = True
    ARGS = True
    FUNCTION = True


class Arrays(StrEnum):
    """What a GPU Python function receives for the problem's arrays."""

    CUPY = "cupy"  # CuPy arrays (the backend's own)
    TORCH = "torch"  # PyTorch tensors over the same memory, through DLPack (Triton takes these)


@dataclass(frozen=True)
class PythonGpuRunner(Runner):
    """A project's own Python function on the GPU: the problem's device arrays and dims in the spec's order, its
    configuration as keyword arguments; it writes the output, launching Triton kernels, CuPy kernels or library
    calls on the current stream, which is the stream gpubench times."""

    NAME = "python-cuda"
    BACKEND = BackendKind.CUDA
    SOURCE = ".py"
    USER = True
    ARGS = True
    FUNCTION = True

    arrays: Arrays = Arrays.CUPY
    tf32_math: bool = False  # it computes with TF32 tensor cores (its tolerance is TF32's); `tf32` in the spec

    def __post_init__(self):
        _option_as(self, "arrays", Arrays)
        if not isinstance(self.tf32_math, bool):
            raise ValueError(f"options: tf32 is true or false, got {self.tf32_math!r}")

    @property
    def tf32(self) -> bool:
        return self.tf32_math

    def options(self) -> dict:
        return {"arrays": str(self.arrays), **({"tf32": True} if self.tf32_math else {})}

    @classmethod
    def from_options(cls, options):
        rest = sorted(set(options) - {"arrays", "tf32"})
        if rest:
            raise ValueError(f"options {', '.join(rest)} are not for the {cls.NAME} runner; allowed: arrays, tf32")
        return cls(arrays=options.get("arrays", Arrays.CUPY), tf32_math=options.get("tf32", False))


RUNNERS: dict[str, type[Runner]] = {r.NAME: r for r in (KernelRunner, CublasRunner, CublasLtRunner, CudnnRunner,
                                                        CudnnSdpaRunner, TorchSdpaRunner, GroupedLibraryRunner,
                                                        Im2colRunner, NumpyMatmul, NumpySliding, NumpyIm2col,
                                                        PythonRunner, PythonGpuRunner)}
# a spec that names no runner: the user's own code
DEFAULT = {BackendKind.CUDA: KernelRunner, BackendKind.CPU: PythonRunner}


def default(backend: str, suffix: str) -> type[Runner]:
    """The runner of a spec that names none: the user's own code on that backend, in a file of that suffix."""
    mine = [r for r in RUNNERS.values() if r.BACKEND == backend and r.USER and r.SOURCE == suffix]
    return mine[0] if mine else DEFAULT[backend]


def allowed(backend: str, builtin: bool) -> list[str]:
    """The runner names a spec may use on `backend` (gpubench's own specs may use every one)."""
    return [name for name, r in RUNNERS.items() if r.BACKEND == backend and (builtin or r.USER)]


def runner_from(name: str, options: Mapping[str, object]) -> Runner:
    """The runner a spec names, with its options checked; ValueError for an unknown name or a bad option."""
    if name not in RUNNERS:
        raise ValueError(f"runner {name!r} is unknown; allowed: {', '.join(RUNNERS)}")
    return RUNNERS[name].from_options(options)
