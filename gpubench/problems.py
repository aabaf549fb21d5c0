"""Problem shapes: what is computed, how many FLOPs it takes and the fewest bytes it must move.

A shape is pure data, validated when it is made (positive sizes, a filter that fits its padded input) and
frozen. Each shape owns what a reader of a saved run needs from it: its label, the key and headers of a table
row, the size a plot puts on its x axis, and the record a results file keeps (:meth:`record`), which
:func:`shape_from` turns back into the shape. The registry, the references, every backend and every view read
these; nothing here touches a GPU.

A new field (an element type, a layout) goes into the shapes here: add it with a default, check it in
`__post_init__`, add it to `KEYS` and to `record`, and every file written before it still loads through
`shape_from` (a record may leave out what has a default; it may not hold keys the shape does not know).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Mapping

from gpubench.errors import GpubenchError

FLOAT_BYTES = 4
MAX_DIM = 2**53  # past this a size is not an exact float (JSON readers, NumPy axes, FLOP counts lose it)


class Op(StrEnum):
    """What a variant computes. String-valued, so that files and specs keep writing "gemm" and "conv"."""

    GEMM = "gemm"
    CONV = "conv"


# The names a kernel spec uses for each op's arrays and dimensions (its `args` and launch expressions).
ARRAYS = {Op.GEMM: ("A", "B", "C"), Op.CONV: ("x", "w", "y")}
DIMS = {Op.GEMM: ("M", "N", "K"), Op.CONV: ("N", "C", "H", "W", "K", "R", "S", "stride", "pad", "OH", "OW")}
# The lab's own GEMM naming: c[m,k] = a[m,n] · b[n,k], so its n is gpubench's K and its k is gpubench's N.
LAB_NAMES = {Op.GEMM: {"a": "A", "b": "B", "c": "C", "m": "M", "n": "K", "k": "N"}, Op.CONV: {}}


def _positive(owner: str, **values) -> None:
    for name, value in values.items():
        if type(value) is not int or not 1 <= value <= MAX_DIM:
            raise GpubenchError(f"{owner}: {name} must be a positive integer (at most 2**53), got {value!r:.40}")


@dataclass(frozen=True)
class GemmShape:
    """C[M,N] = A[M,K] · B[K,N], float32, row-major."""

    m: int
    n: int
    k: int

    op: ClassVar[Op] = Op.GEMM
    KEYS: ClassVar[tuple[str, ...]] = ("m", "n", "k")  # a saved point's problem record, in this order
    ROW_HEADERS: ClassVar[tuple[str, ...]] = ("size",)
    PLOT_AXIS: ClassVar[str] = "matrix size N (N×N×N)"

    def __post_init__(self):
        _positive("a GEMM", m=self.m, n=self.n, k=self.k)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def min_bytes(self) -> float:
        return FLOAT_BYTES * (self.m * self.k + self.k * self.n + self.m * self.n)

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
        """The label with everything that tells two problems of a run apart."""
        return self.label

    @property
    def plot_x(self) -> int | None:
        """The x a size plot puts this problem at; None where it is not square (no shared axis)."""
        return self.m if self.m == self.n == self.k else None

    @property
    def series(self) -> str | None:
        """What problems must share to be drawn as one line against size: square GEMMs are one series; any
        other shape is a point of its own (None)."""
        return "N×N×N" if self.plot_x is not None else None

    def record(self) -> dict[str, int]:
        """The problem as a results file keeps it (KEYS)."""
        return {"m": self.m, "n": self.n, "k": self.k}

    @classmethod
    def from_record(cls, r: Mapping[str, object]) -> GemmShape:
        return cls(**r)

    def dims(self) -> dict[str, int]:
        """The values of DIMS[GEMM] and of the lab's names, for kernel arguments and launch expressions."""
        return {"M": self.m, "N": self.n, "K": self.k, "m": self.m, "n": self.k, "k": self.n}


@dataclass(frozen=True)
class ConvShape:
    """y[N,K,OH,OW] = x[N,C,H,W] ⋆ w[K,C,R,S]: NCHW float32 cross-correlation, symmetric zero padding, no bias."""

    batch: int
    in_channels: int
    out_channels: int
    height: int
    width: int
    kernel: int
    stride: int
    pad: int
    padding: str = field(default="", compare=False)  # how the pad was asked for ("same", "valid", "1"), for tables

    op: ClassVar[Op] = Op.CONV
    KEYS: ClassVar[tuple[str, ...]] = ("batch", "in_channels", "out_channels", "height", "width", "kernel", "stride",
                                       "padding")
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
            raise GpubenchError(f"a convolution: pad must be 0 or more (at most 2**53), got {self.pad!r:.40}")
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
    def min_bytes(self) -> float:
        return FLOAT_BYTES * (self.input_elems + self.filter_elems + self.output_elems)

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
        """The label with everything that tells two problems of a run apart: the stride too."""
        return f"{self.label} s{self.stride}"

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
        return f"{rest}stride {self.stride} pad {self.pad}"

    def record(self) -> dict[str, int]:
        """The problem as a results file keeps it (KEYS; padding is the pad applied on each side)."""
        return {"batch": self.batch, "in_channels": self.in_channels, "out_channels": self.out_channels,
                "height": self.height, "width": self.width, "kernel": self.kernel, "stride": self.stride,
                "padding": self.pad}

    def dims(self) -> dict[str, int]:
        """The values of DIMS[CONV], for kernel arguments and launch expressions."""
        return {"N": self.batch, "C": self.in_channels, "H": self.height, "W": self.width, "K": self.out_channels,
                "R": self.kernel, "S": self.kernel, "stride": self.stride, "pad": self.pad, "OH": self.out_height,
                "OW": self.out_width}


Shape = GemmShape | ConvShape
SHAPES: dict[Op, type[GemmShape] | type[ConvShape]] = {Op.GEMM: GemmShape, Op.CONV: ConvShape}


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
    return ConvShape(batch, in_channels, out_channels, size, size, kernel, stride, pad, str(padding).lower())
