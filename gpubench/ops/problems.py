"""Problem shapes: what is computed, how many FLOPs it takes and the fewest bytes it must move.

A shape is pure data, validated when it is made (positive sizes, a filter that fits its padded input) and
frozen. Each shape owns what a reader of a saved run needs from it: its label, the key and headers of a table
row, the size a plot puts on its x axis, and the record a results file keeps (:meth:`record`), which
:func:`shape_from` turns back into the shape. The registry, the references, every backend and every view read
these; nothing here touches a GPU.

Each shape has a precision (`dtype`, gpubench/core/dtypes.py) and a memory layout (`layout`): a problem in bf16 is
another problem than the same sizes in fp32, so compare never pairs them. A new field goes into the shapes here:
add it with a default, check it in `__post_init__`, add it to `KEYS` and to `record`, and every file written
before it still loads through `shape_from` (a record may leave out what has a default; it may not hold keys the
shape does not know).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Mapping

from gpubench.core.dtypes import PRECISIONS, ConvLayout, DType, GemmLayout
from gpubench.core.errors import GpubenchError

MAX_DIM = 2**63 - 1  # past this a size is no int64: NumPy axes, C's long and the plots lose it


class Op(StrEnum):
    """What a variant computes. String-valued, so that files and specs keep writing "gemm" and "conv"."""

    GEMM = "gemm"
    CONV = "conv"


# The names a kernel spec uses for each op's arrays and dimensions (its `args` and launch expressions).
ARRAYS = {Op.GEMM: ("A", "B", "C"), Op.CONV: ("x", "w", "y")}
DIMS = {Op.GEMM: ("M", "N", "K"), Op.CONV: ("N", "C", "H", "W", "K", "R", "S", "stride", "pad", "OH", "OW")}
# fp8's per-tensor dequantisation scales, one float32 each, passed like arrays (a kernel or cuBLASLt reads them
# through a pointer); only problems whose dtype is scaled have them.
SCALES = {Op.GEMM: ("A_scale", "B_scale"), Op.CONV: ("x_scale", "w_scale")}
# The lab's own GEMM naming: c[m,k] = a[m,n] · b[n,k], so its n is gpubench's K and its k is gpubench's N.
LAB_NAMES = {Op.GEMM: {"a": "A", "b": "B", "c": "C", "m": "M", "n": "K", "k": "N"}, Op.CONV: {}}


def _enum(shape, name: str, kind) -> None:
    """Turn a field given as its string (a results file, a suite) into its enum; one line if it is not one."""
    value = getattr(shape, name)
    try:
        object.__setattr__(shape, name, kind(value))
    except ValueError:
        raise GpubenchError(f"{name} {value!r}; allowed: {', '.join(kind)}") from None


def precision_tag(dtype: DType, layout, default_layout) -> str:
    """How tables tell a problem's precision and layout apart: "" for the lab's (fp32 in its layout), else the
    dtype, and the layout where it is not the op's default ("BF16", "FP16 NT")."""
    if dtype == DType.FP32 and layout == default_layout:
        return ""
    return " ".join([dtype.upper()] + ([layout.upper()] if layout != default_layout else []))


def _positive(owner: str, **values) -> None:
    for name, value in values.items():
        if type(value) is not int or not 1 <= value <= MAX_DIM:
            raise GpubenchError(f"{owner}: {name} must be a positive integer (at most 2**63 - 1), got {value!r:.40}")


@dataclass(frozen=True)
class GemmShape:
    """C[M,N] = A[M,K] · B[K,N] in a precision (fp32 by default), row-major unless the layout transposes an operand."""

    m: int
    n: int
    k: int
    dtype: DType = DType.FP32
    layout: GemmLayout = GemmLayout.NN

    op: ClassVar[Op] = Op.GEMM
    LAYOUT: ClassVar[type[GemmLayout]] = GemmLayout
    DEFAULT_LAYOUT: ClassVar[GemmLayout] = GemmLayout.NN
    KEYS: ClassVar[tuple[str, ...]] = ("m", "n", "k", "dtype", "layout")  # a saved point's problem record
    ROW_HEADERS: ClassVar[tuple[str, ...]] = ("size",)
    PLOT_AXIS: ClassVar[str] = "matrix size N (N×N×N)"

    def __post_init__(self):
        _positive("a GEMM", m=self.m, n=self.n, k=self.k)
        _enum(self, "dtype", DType)
        _enum(self, "layout", GemmLayout)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def reduction(self) -> int:
        """How many products each output sums (what the error model's √K counts)."""
        return self.k

    @property
    def output_elems(self) -> int:
        return self.m * self.n

    @property
    def min_bytes(self) -> float:
        p = PRECISIONS[self.dtype]
        return p.in_bytes * (self.m * self.k + self.k * self.n) + p.out_bytes * self.m * self.n

    @property
    def tag(self) -> str:
        return precision_tag(self.dtype, self.layout, self.DEFAULT_LAYOUT)

    @property
    def label(self) -> str:
        if self.m == self.n == self.k:
            return str(self.m)
        return f"{self.m}x{self.n}x{self.k}"

    def row_key(self) -> tuple[str, ...]:
        """What a table row stands for (one value per ROW_HEADERS): the size."""
        return (self.label,)

    @property
    def full_label(self) -> str:
        """The label with everything that tells two problems of a run apart: the precision and layout too."""
        return f"{self.label} {self.tag}" if self.tag else self.label

    @property
    def plot_x(self) -> int | None:
        """The x a size plot puts this problem at; None where it is not square (no shared axis)."""
        return self.m if self.m == self.n == self.k else None

    @property
    def series(self) -> str | None:
        """What problems must share to be drawn as one line against size: square GEMMs are one series; any
        other shape is a point of its own (None)."""
        if self.plot_x is None:
            return None
        return f"N×N×N {self.tag}" if self.tag else "N×N×N"

    def record(self) -> dict[str, object]:
        """The problem as a results file keeps it (KEYS)."""
        return {"m": self.m, "n": self.n, "k": self.k, "dtype": str(self.dtype), "layout": str(self.layout)}

    @classmethod
    def from_record(cls, r: Mapping[str, object]) -> GemmShape:
        return cls(**r)

    def stored_dims(self) -> dict[str, tuple[int, ...]]:
        """Each input's dimensions as it lies in memory (row-major), by its spec name."""
        a = (self.k, self.m) if self.layout.a_transposed else (self.m, self.k)
        b = (self.n, self.k) if self.layout.b_transposed else (self.k, self.n)
        return {"A": a, "B": b}

    def output_dims(self) -> tuple[int, ...]:
        return (self.m, self.n)

    def canonical(self, a, b):
        """The inputs as the math reads them (A as M×K, B as K×N), as views of their stored arrays."""
        return (a.T if self.layout.a_transposed else a), (b.T if self.layout.b_transposed else b)

    def laid_out(self, c):
        """The output C[M,N] as it lies in memory (every GEMM layout stores C row-major)."""
        return c

    def dims(self) -> dict[str, int]:
        """The values of DIMS[GEMM] and of the lab's names, for kernel arguments and launch expressions."""
        return {"M": self.m, "N": self.n, "K": self.k, "m": self.m, "n": self.k, "k": self.n}


@dataclass(frozen=True)
class ConvShape:
    """y = x ⋆ w: cross-correlation with symmetric zero padding and no bias, in a precision (fp32 by default) and a
    layout (NCHW: y[N,K,OH,OW] = x[N,C,H,W] ⋆ w[K,C,R,S]; or NHWC)."""

    batch: int
    in_channels: int
    out_channels: int
    height: int
    width: int
    kernel: int
    stride: int
    pad: int
    padding: str = field(default="", compare=False)  # how the pad was asked for ("same", "valid", "1"), for tables
    dtype: DType = DType.FP32
    layout: ConvLayout = ConvLayout.NCHW

    op: ClassVar[Op] = Op.CONV
    LAYOUT: ClassVar[type[ConvLayout]] = ConvLayout
    DEFAULT_LAYOUT: ClassVar[ConvLayout] = ConvLayout.NCHW
    KEYS: ClassVar[tuple[str, ...]] = ("batch", "in_channels", "out_channels", "height", "width", "kernel", "stride",
                                       "padding", "dtype", "layout")
    ROW_HEADERS: ClassVar[tuple[str, ...]] = ("size", "stride")
    PLOT_AXIS: ClassVar[str] = "input size H = W"
    # The lab's problem: one image of three channels, one 3×3 filter, SAME padding. The command line, the suites
    # and the labels read these; a label leaves out what equals them.
    DEFAULTS: ClassVar[Mapping[str, object]] = {"batch": 1, "in_channels": 3, "out_channels": 1, "kernel": 3,
                                                "padding": "same"}

    def __post_init__(self):
        _positive("a convolution", batch=self.batch, in_channels=self.in_channels, out_channels=self.out_channels,
                  height=self.height, width=self.width, kernel=self.kernel, stride=self.stride)
        if type(self.pad) is not int or not 0 <= self.pad <= MAX_DIM:
            raise GpubenchError(f"a convolution: pad must be 0 or more (at most 2**63 - 1), got {self.pad!r:.40}")
        _enum(self, "dtype", DType)
        _enum(self, "layout", ConvLayout)
        if self.out_height < 1 or self.out_width < 1:
            raise GpubenchError(
                f"kernel size {self.kernel} is larger than the padded input "
                f"{self.height + 2 * self.pad}x{self.width + 2 * self.pad}: use a smaller --kernel-size or more padding"
            )

    @property
    def out_height(self) -> int:
        return (self.height + 2 * self.pad - self.kernel) // self.stride + 1

    @property
    def out_width(self) -> int:
        return (self.width + 2 * self.pad - self.kernel) // self.stride + 1

    @property
    def gemm_k(self) -> int:
        """The reduction length when the convolution is seen as a GEMM: C·R·S."""
        return self.in_channels * self.kernel * self.kernel

    @property
    def out_pixels(self) -> int:
        return self.out_height * self.out_width

    @property
    def input_elems(self) -> int:
        return self.batch * self.in_channels * self.height * self.width

    @property
    def filter_elems(self) -> int:
        return self.out_channels * self.gemm_k

    @property
    def output_elems(self) -> int:
        return self.batch * self.out_channels * self.out_pixels

    @property
    def flops(self) -> float:
        return 2.0 * self.output_elems * self.gemm_k

    @property
    def reduction(self) -> int:
        """How many products each output sums: C·R·S."""
        return self.gemm_k

    @property
    def min_bytes(self) -> float:
        p = PRECISIONS[self.dtype]
        return p.in_bytes * (self.input_elems + self.filter_elems) + p.out_bytes * self.output_elems

    @property
    def tag(self) -> str:
        return precision_tag(self.dtype, self.layout, self.DEFAULT_LAYOUT)

    @property
    def label(self) -> str:
        """The input size, and the rest of the problem where it is not the lab's."""
        hw = str(self.height) if self.height == self.width else f"{self.height}x{self.width}"
        d = self.DEFAULTS
        if (self.batch, self.in_channels, self.out_channels, self.kernel) == (
                d["batch"], d["in_channels"], d["out_channels"], d["kernel"]):
            return hw  # the lab's shape: the size says it all
        return f"{self.batch}x{self.in_channels}x{hw} k{self.out_channels} {self.kernel}x{self.kernel}"

    def row_key(self) -> tuple[str, ...]:
        """What a table row stands for (one value per ROW_HEADERS): the problem and the stride."""
        return (self.label, str(self.stride))

    @property
    def full_label(self) -> str:
        """The label with everything that tells two problems of a run apart: the stride, precision and layout too."""
        return f"{self.label} s{self.stride}" + (f" {self.tag}" if self.tag else "")

    @property
    def plot_x(self) -> int | None:
        """The x a size plot puts this problem at; None where the input is not square."""
        return self.height if self.height == self.width else None

    @classmethod
    def from_record(cls, r: Mapping[str, object]) -> ConvShape:
        fields = {("pad" if k == "padding" else k): v for k, v in r.items()}
        return cls(**fields, padding=str(r.get("padding", "")))

    @property
    def series(self) -> str | None:
        """What problems must share to be drawn as one line against size: everything but the (square) input
        size, so layers with other channel counts, filters, strides or padding are other lines."""
        if self.plot_x is None:
            return None
        d = self.DEFAULTS
        rest = "" if (self.batch, self.in_channels, self.out_channels, self.kernel) == (
            d["batch"], d["in_channels"], d["out_channels"], d["kernel"]) else \
            f"{self.batch}x{self.in_channels} k{self.out_channels} {self.kernel}x{self.kernel} "
        return f"{rest}stride {self.stride} pad {self.pad}" + (f" {self.tag}" if self.tag else "")

    def record(self) -> dict[str, object]:
        """The problem as a results file keeps it (KEYS; padding is the pad applied on each side)."""
        return {"batch": self.batch, "in_channels": self.in_channels, "out_channels": self.out_channels,
                "height": self.height, "width": self.width, "kernel": self.kernel, "stride": self.stride,
                "padding": self.pad, "dtype": str(self.dtype), "layout": str(self.layout)}

    def stored_dims(self) -> dict[str, tuple[int, ...]]:
        """Each input's dimensions as it lies in memory, by its spec name."""
        n, c, h, w, k, r = self.batch, self.in_channels, self.height, self.width, self.out_channels, self.kernel
        if self.layout == ConvLayout.NHWC:
            return {"x": (n, h, w, c), "w": (k, r, r, c)}
        return {"x": (n, c, h, w), "w": (k, c, r, r)}

    def output_dims(self) -> tuple[int, ...]:
        n, k, oh, ow = self.batch, self.out_channels, self.out_height, self.out_width
        return (n, oh, ow, k) if self.layout == ConvLayout.NHWC else (n, k, oh, ow)

    def canonical(self, x, w):
        """The inputs as the math reads them (x as NCHW, w as KCRS), as views of their stored arrays."""
        if self.layout == ConvLayout.NHWC:
            return x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2)
        return x, w

    def laid_out(self, y):
        """An NCHW result as the output lies in memory (a view)."""
        return y.transpose(0, 2, 3, 1) if self.layout == ConvLayout.NHWC else y

    def dims(self) -> dict[str, int]:
        """The values of DIMS[CONV], for kernel arguments and launch expressions."""
        return {"N": self.batch, "C": self.in_channels, "H": self.height, "W": self.width, "K": self.out_channels,
                "R": self.kernel, "S": self.kernel, "stride": self.stride, "pad": self.pad, "OH": self.out_height,
                "OW": self.out_width}


Shape = GemmShape | ConvShape
SHAPES: dict[Op, type[GemmShape] | type[ConvShape]] = {Op.GEMM: GemmShape, Op.CONV: ConvShape}


def laid_out_arrays(shape: Shape) -> dict[str, tuple[tuple[int, ...], object]]:
    """Every array of the problem by its spec name (the inputs, then the output): its dimensions as it lies in
    memory (row-major, in the problem's layout) and its host element type (gpubench/core/dtypes.py's PRECISIONS)."""
    precision = PRECISIONS[shape.dtype]
    arrays = {name: (dims, precision.storage) for name, dims in shape.stored_dims().items()}
    arrays[ARRAYS[shape.op][2]] = (shape.output_dims(), precision.output)
    return arrays


def shape_from(op: str, record: Mapping[str, int]) -> Shape:
    """The shape a results file's problem record describes (the inverse of `record()`); GpubenchError when the
    record is not one."""
    try:
        kind = SHAPES[Op(op)]
    except ValueError:
        raise GpubenchError(f"op {op!r}; allowed are {', '.join(Op)}") from None
    unknown = [k for k in record if k not in kind.KEYS]
    if unknown:
        raise GpubenchError(f"a {op} problem has the keys {', '.join(kind.KEYS)}, not {', '.join(unknown)}")
    try:
        return kind.from_record(record)
    except TypeError:  # a key without a default is missing
        raise GpubenchError(f"a {op} problem has the keys {', '.join(kind.KEYS)}, got {', '.join(record) or 'none'}"
                            ) from None


def same_padding(size: int, kernel: int, stride: int) -> int:
    """The lab's SAME padding: out = ceil(in/stride), pad = ((out-1)·stride + R - in) // 2 on both sides."""
    out = -(-size // stride)
    return max(0, ((out - 1) * stride + kernel - size) // 2)


def resolve_padding(padding: str | int, size: int, kernel: int, stride: int) -> int:
    """'same' | 'valid' | a non-negative integer → the pad applied on each side."""
    text = str(padding).strip().lower()
    if text == "same":
        return same_padding(size, kernel, stride)
    if text == "valid":
        return 0
    try:
        if not text.isascii():  # int() takes any script's digits
            raise ValueError(text)
        pad = int(text)
    except ValueError:
        raise GpubenchError(f"padding {padding!r} is not allowed: use same, valid or a non-negative integer") from None
    if pad < 0:
        raise GpubenchError(f"padding {pad} is negative: use same, valid or a non-negative integer")
    return pad


_D = ConvShape.DEFAULTS


def conv_shape(
    size: int,
    stride: int,
    *,
    batch: int = _D["batch"],
    in_channels: int = _D["in_channels"],
    out_channels: int = _D["out_channels"],
    kernel: int = _D["kernel"],
    padding: str | int = _D["padding"],
    dtype: DType = DType.FP32,
    layout: ConvLayout = ConvLayout.NCHW,
) -> ConvShape:
    """A square conv problem (H = W = size) with the padding resolved the way the lab does it."""
    for name, value in (
        ("size", size),
        ("stride", stride),
        ("batch", batch),
        ("in-channels", in_channels),
        ("out-channels", out_channels),
        ("kernel-size", kernel),
    ):
        if value < 1:
            raise GpubenchError(f"{name} must be a positive integer, got {value}")
    pad = resolve_padding(padding, size, kernel, stride)
    return ConvShape(batch, in_channels, out_channels, size, size, kernel, stride, pad, str(padding).lower(), dtype,
                     layout)
