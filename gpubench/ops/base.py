"""What an op is: the one record every layer asks about a kind of problem.

An op (GEMM, convolution, a project's own softmax) is declared once, as an :class:`OpDef` in its own module under
gpubench/ops/ (or as an ``[[op]]`` table in a project's gpubench.toml, gpubench/ops/declared.py). It owns:

- its problem record (:attr:`OpDef.shape`): the sizes, a precision and a layout, the label, table row and plot
  axis, flops and minimum bytes, the record a results file keeps;
- its arrays: any number of inputs and outputs, each with dims the shape gives (:meth:`Shape.array_dims`) and a
  storage precision (the problem's input or output type, or a fixed one);
- its float64 reference, written once for NumPy and the device's array module (:meth:`OpDef.reference`);
- its error model: the reduction length each output sums (:attr:`Shape.reduction`), or a model of its own
  (:attr:`OpDef.error_model`) where a dot product's does not fit (attention's softmax);
- how its inputs are drawn, where they have structure (:attr:`OpDef.draw`: a grouped GEMM's offsets and block
  scales), and which outputs no variant need write (:attr:`OpDef.unchecked`: a masked group's rows past its count);
- its command-line and suite parameters and their defaults (:class:`Param`), which build its problems;
- its table layout and plot metric (:class:`TableLayout`, :attr:`OpDef.by_flops`);
- the library baselines it offers (:attr:`OpDef.baselines`) and the sample problem that spec checks evaluate
  launches on (:attr:`OpDef.sample`).

Everything else (plan, CLI, suites, API, runners, backends, views, tuned files, the catalog) asks the op through
gpubench/ops/__init__.py's registry; no other module branches on an op.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum, StrEnum
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import GpubenchError
from gpubench.ops.epilogue import NO_EPILOGUE, Fused

MAX_DIM = 2**63 - 1  # past this a size is no int64: NumPy axes, C's long and the plots lose it
LAB_SIZES = (512, 1024, 2048, 4096, 8192)  # the lab's square sizes: every op's default problem sizes


class Storage(StrEnum):
    """What an array is stored as: the problem precision's input type, its output type, or a fixed type."""

    INPUT = "input"  # the dtype's storage type (fp16 for an fp16 problem, int8 for int8, ...)
    OUTPUT = "output"  # the dtype's output type (bf16 for fp8, int32 for int8, ...)
    FLOAT32 = "float32"  # always float32 (a norm's weight, a scale)
    INT32 = "int32"  # always int32 (a group's offsets)

    def host_type(self, dtype: DType):
        if self == Storage.INPUT:
            return PRECISIONS[dtype].storage
        if self == Storage.OUTPUT:
            return PRECISIONS[dtype].output
        return np.dtype(str(self)).type


@dataclass(frozen=True)
class Array:
    """One of an op's arrays, by the name specs and kernels use for it."""

    name: str
    output: bool = False
    storage: Storage | None = None  # None: the problem's input type for an input, its output type for an output
    scale: str | None = None  # the name of its per-tensor dequantisation scale, where the dtype is scaled (fp8)
    optional: bool = False  # only some problems have it (an epilogue's bias): those whose array_dims list it; a
    # kernel that names it gets a null pointer where the problem has none

    def __post_init__(self):
        if self.storage is None:
            object.__setattr__(self, "storage", Storage.OUTPUT if self.output else Storage.INPUT)


class ParamKind(Enum):
    """How a parameter's value is written: on the command line as text, in a suite as TOML."""

    INTS = "ints"  # comma-separated positive integers / a list of them ("512,1024" / [512, 1024])
    INT = "int"  # one positive integer
    TEXT = "text"  # a word or a number ("same", 1)
    TRIPLES = "triples"  # repeatable M,N,K / a list of [M, N, K]
    FLAG = "flag"  # on or off
    FLOAT = "float"  # one number (0.5)


@dataclass(frozen=True)
class Param:
    """A parameter of an op's problems: `--NAME` on its command, `NAME` in a suite's [[sweep]], a keyword of the
    API. `default` None means "not given" (the op decides); `cli_default` is what the command line shows."""

    name: str  # snake_case: the suite key and the API keyword; the flag is --name-with-dashes
    kind: ParamKind
    help: str
    default: Any = None  # what the command line shows and uses when it is not given (None: the op decides)
    metavar: str | None = None
    cli_name: str | None = None  # the flag where it is not --name (--stride for strides, --kernel-size for kernel)
    note: str = ""  # said after the default in the command line's help (" (none with --mnk)")

    @property
    def flag(self) -> str:
        return self.cli_name or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class TableLayout:
    """How the run view tabulates an op against its library."""

    library: str  # the library column's title ("cuBLAS")
    ratio_header: str  # "% of library", "speed vs library"
    ratio: Callable[[float], str]  # a speed ratio as a cell
    lab_tables: bool = False  # the lab's per-variant tables (rows: sizes and strides; columns: blocks)


def enum_field(shape, name: str, kind) -> None:
    """Turn a field given as its string (a results file, a suite) into its enum; one line if it is not one."""
    value = getattr(shape, name)
    try:
        object.__setattr__(shape, name, kind(value))
    except ValueError:
        raise GpubenchError(f"{name} {value!r}; allowed: {', '.join(kind)}") from None


def positive(owner: str, **values) -> None:
    for name, value in values.items():
        if type(value) is not int or not 1 <= value <= MAX_DIM:
            raise GpubenchError(f"{owner}: {name} must be a positive integer (at most 2**63 - 1), got {value!r:.40}")


def precision_tag(dtype: DType, layout, default_layout) -> str:
    """How tables tell a problem's precision and layout apart: "" for the default (fp32 in the op's default
    layout), else the dtype, and the layout where it is not the op's default ("BF16", "FP16 NT")."""
    if dtype == DType.FP32 and layout == default_layout:
        return ""
    return " ".join([dtype.upper()] + ([layout.upper()] if layout != default_layout else []))


class Shape:
    """What every op's problem record has (each op's is a frozen dataclass with `dtype` and `layout` fields).

    A shape is pure data, validated when it is made and frozen. A new field goes into an op's shape with a
    default, into `KEYS` and `record`; every file written before it still loads through `from_record`."""

    op: ClassVar[str]  # the op's name, as files and specs write it
    KEYS: ClassVar[tuple[str, ...]]  # a saved point's problem record
    OPTIONAL_KEYS: ClassVar[tuple[str, ...]] = ()  # keys a record has only where they are not at their defaults
    ROW_HEADERS: ClassVar[tuple[str, ...]] = ("size",)
    PLOT_AXIS: ClassVar[str] = "size"
    LAYOUT: ClassVar[type[StrEnum]]
    DEFAULT_LAYOUT: ClassVar[StrEnum]
    dtype: DType
    layout: StrEnum
    fused: Fused = NO_EPILOGUE  # its fused epilogue (an op whose shape has the field; none for the others)

    def scalars(self) -> dict[str, float]:
        """Its float kernel parameters by name (the epilogue's factors), where it has any."""
        return {}

    @property
    def tag(self) -> str:
        return precision_tag(self.dtype, self.layout, self.DEFAULT_LAYOUT)

    @property
    def full_label(self) -> str:
        """The label with everything that tells two problems of a run apart."""
        return f"{self.label} {self.tag}" if self.tag else self.label

    def row_key(self) -> tuple[str, ...]:
        return (self.label,)

    @property
    def series(self) -> str | None:
        """What problems must share to be drawn as one line against size (None: a point of its own)."""
        if self.plot_x is None:
            return None
        return self.tag or "all"

    @classmethod
    def from_record(cls, r: Mapping[str, object]):
        return cls(**r)


@dataclass(frozen=True)
class OpDef:
    """An op: its problem type, arrays, reference, parameters, table and baselines (see the module docstring)."""

    name: str
    summary: str
    noun: str  # how prose names one ("a GEMM", "a convolution")
    shape: type  # the Shape subclass
    arrays: tuple[Array, ...]
    dims: tuple[str, ...]  # the names kernels and launch expressions may use for its sizes
    reference: Callable  # (xp, shape, values: {input name: float64 array as stored}) -> {output name: float64}
    params: tuple[Param, ...]  # its problems' parameters (sizes first)
    problems: Callable  # (values: {param name: value}, where, strict) -> (shapes, skipped)
    sample: Any  # a ragged problem spec checks evaluate launches, workspaces and requires on
    table: TableLayout
    by_flops: bool = True  # plots and rates in GFLOPS (else GB/s of minimum bytes)
    lab_names: Mapping[str, str] = field(default_factory=dict)  # another naming a kernel's args may use
    required_args: tuple[str, ...] = ()  # what every spec's `args` must list (besides the arrays)
    baselines: Mapping[str, str] = field(default_factory=dict)  # variant name -> how tables name that library
    command_help: str = ""  # its sweep command's help, with examples
    kernel_args: str = ""  # --kernel's default parameter order, and its help
    kernel_args_help: str = ""
    kernel_grid: tuple[str, ...] = ("cdiv(N, BLOCK_SIZE)", "cdiv(M, BLOCK_SIZE)")  # --kernel's default grid
    # The CPU backend's own variants: runner name -> (xp, shape, values, dtype) -> {output name: array as laid out},
    # computed in `dtype` from inputs in it (float32 for floats, float64 for integers: exact).
    emulations: Mapping[str, Callable] = field(default_factory=dict)
    matrices: tuple[str, ...] = ()  # arrays a TMA map may take as they lie (rows × columns), without a shape
    im2col: tuple[str, Any] | None = None  # the input the copy engine's im2col mode reads, and the layout it needs
    tolerance: float | Mapping[str, float] | None = None  # its own bound on rel_err, or one per precision (None:
    # the error model's)
    error_model: Callable | None = None  # (shape) -> the largest rel_err a correct variant may have, where the dot
    # product's model (dtypes.tolerance over `reduction`) does not describe the op (None: that model)
    draw: Callable | None = None  # (rng, shape) -> {input name: host array as stored}: its inputs where they have
    # structure (a group's offsets, block scales); None: each input drawn on its own (draw_input, dtypes.draw)
    draw_input: Callable | None = None  # (rng, shape, name, dims, host type) -> a host array for the inputs it draws
    # its own way (an epilogue's), None for the rest (dtypes.draw's)
    unchecked: bool = False  # its reference marks with NaN the output elements no variant need write (rows of no
    # group); rel_err leaves them out
    layout_samples: Mapping[Any, Any] = field(default_factory=dict)  # the sample problem where a layout needs other
    # sizes (channels in whole vectors)
    scalars: tuple[str, ...] = ()  # the float parameters its shapes give kernels (Shape.scalars)
    builtin: bool = True  # gpubench's own (False: a project's [[op]])
    rank: int = 100  # where its tables come in a run's listing (gemm first, then conv, then the rest by name)

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arrays if not a.output)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arrays if a.output)

    @property
    def array_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arrays)

    @property
    def required(self) -> tuple[str, ...]:
        """The arrays every problem has, which every kernel spec's arguments must name."""
        return tuple(a.name for a in self.arrays if not a.optional)

    @property
    def scales(self) -> tuple[str, ...]:
        """fp8's per-tensor scales, one float32 each, passed like arrays (only problems of a scaled dtype have
        them)."""
        return tuple(a.scale for a in self.arrays if a.scale)

    @property
    def suite_keys(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)

    def array(self, name: str) -> Array:
        return next(a for a in self.arrays if a.name == name)

    def laid_out_arrays(self, shape) -> dict[str, tuple[tuple[int, ...], object]]:
        """Every array the problem has by name (inputs, then outputs): its dims as it lies in memory and its host
        element type (an optional array only where the problem has it)."""
        dims = shape.array_dims()
        return {a.name: (dims[a.name], a.storage.host_type(shape.dtype)) for a in self.arrays if a.name in dims}

    def inputs_of(self, shape) -> tuple[Array, ...]:
        """The input arrays the problem has (an optional one only where its array_dims list it)."""
        dims = shape.array_dims()
        return tuple(a for a in self.arrays if not a.output and a.name in dims)

    def sample_in(self, dtype: DType, layout, fused: Fused = NO_EPILOGUE):
        """The sample problem in a precision, layout and epilogue (where the layout needs its own sizes, its own)."""
        extra = {} if fused.default else {"fused": fused}
        return replace(self.layout_samples.get(layout, self.sample), dtype=dtype, layout=layout, **extra)

    def tolerance_for(self, dtype: DType) -> float | None:
        """Its own bound on a variant's rel_err in the precision, if it sets one."""
        if isinstance(self.tolerance, Mapping):
            return self.tolerance.get(str(dtype))
        return self.tolerance

    def library_name(self, variant: str) -> str:
        return self.baselines.get(variant, variant)
