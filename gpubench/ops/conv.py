"""Convolution: y = x ⋆ w, cross-correlation with symmetric zero padding and no bias.

The lab's second problem: one image of three channels and one 3×3 filter with SAME padding by default, and any
layer (batch, channels, filter, stride, padding) on request. Kernels live in cuda_src/conv/, the library baseline
is cuDNN (its best plan). The lab's problems are memory-bound, so plots rate them in GB/s of minimum bytes; the
run view gives the lab's per-variant tables (sizes and strides by block size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Mapping

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import params
from gpubench.ops.base import (LAB_SIZES, MAX_DIM, Array, OpDef, Param, ParamKind, Shape, TableLayout, enum_field,
                               positive)


class ConvLayout(StrEnum):
    """How a convolution's tensors lie in memory."""

    NCHW = "nchw"  # x[N,C,H,W], w[K,C,R,S], y[N,K,OH,OW] (the lab's)
    NHWC = "nhwc"  # x[N,H,W,C], w[K,R,S,C], y[N,OH,OW,K]: channels innermost, what tensor cores read best


# The lab's problem: one image of three channels, one 3×3 filter, SAME padding. The command line, the suites and
# the labels read these; a label leaves out what equals them.
LAB_LAYER: Mapping[str, object] = {"batch": 1, "in_channels": 3, "out_channels": 1, "kernel": 3, "padding": "same"}
STRIDES = (1, 2, 3)  # the lab's strides


@dataclass(frozen=True)
class ConvShape(Shape):
    """y = x ⋆ w in a precision (fp32 by default) and a layout (NCHW: y[N,K,OH,OW] = x[N,C,H,W] ⋆ w[K,C,R,S]; or
    NHWC)."""

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

    op: ClassVar[str] = "conv"
    LAYOUT: ClassVar[type[ConvLayout]] = ConvLayout
    DEFAULT_LAYOUT: ClassVar[ConvLayout] = ConvLayout.NCHW
    KEYS: ClassVar[tuple[str, ...]] = ("batch", "in_channels", "out_channels", "height", "width", "kernel", "stride",
                                       "padding", "dtype", "layout")
    ROW_HEADERS: ClassVar[tuple[str, ...]] = ("size", "stride")
    PLOT_AXIS: ClassVar[str] = "input size H = W"
    DEFAULTS: ClassVar[Mapping[str, object]] = LAB_LAYER

    def __post_init__(self):
        positive("a convolution", batch=self.batch, in_channels=self.in_channels, out_channels=self.out_channels,
                 height=self.height, width=self.width, kernel=self.kernel, stride=self.stride)
        if type(self.pad) is not int or not 0 <= self.pad <= MAX_DIM:
            raise GpubenchError(f"a convolution: pad must be 0 or more (at most 2**63 - 1), got {self.pad!r:.40}")
        enum_field(self, "dtype", DType)
        enum_field(self, "layout", ConvLayout)
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

    def _lab_layer(self) -> bool:
        d = LAB_LAYER
        return (self.batch, self.in_channels, self.out_channels, self.kernel) == (
            d["batch"], d["in_channels"], d["out_channels"], d["kernel"])

    @property
    def label(self) -> str:
        """The input size, and the rest of the problem where it is not the lab's."""
        hw = str(self.height) if self.height == self.width else f"{self.height}x{self.width}"
        if self._lab_layer():
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
        """Everything but the (square) input size, so layers with other channel counts, filters, strides or padding
        are other lines."""
        if self.plot_x is None:
            return None
        rest = "" if self._lab_layer() else \
            f"{self.batch}x{self.in_channels} k{self.out_channels} {self.kernel}x{self.kernel} "
        return f"{rest}stride {self.stride} pad {self.pad}" + (f" {self.tag}" if self.tag else "")

    def record(self) -> dict[str, object]:
        """The problem as a results file keeps it (KEYS; padding is the pad applied on each side)."""
        return {"batch": self.batch, "in_channels": self.in_channels, "out_channels": self.out_channels,
                "height": self.height, "width": self.width, "kernel": self.kernel, "stride": self.stride,
                "padding": self.pad, "dtype": str(self.dtype), "layout": str(self.layout)}

    def array_dims(self) -> dict[str, tuple[int, ...]]:
        """Each array's dimensions as it lies in memory, by its spec name."""
        n, c, h, w, k, r = self.batch, self.in_channels, self.height, self.width, self.out_channels, self.kernel
        oh, ow = self.out_height, self.out_width
        if self.layout == ConvLayout.NHWC:
            return {"x": (n, h, w, c), "w": (k, r, r, c), "y": (n, oh, ow, k)}
        return {"x": (n, c, h, w), "w": (k, c, r, r), "y": (n, k, oh, ow)}

    def dims(self) -> dict[str, int]:
        """The values of the op's dims, for kernel arguments and launch expressions."""
        return {"N": self.batch, "C": self.in_channels, "H": self.height, "W": self.width, "K": self.out_channels,
                "R": self.kernel, "S": self.kernel, "stride": self.stride, "pad": self.pad, "OH": self.out_height,
                "OW": self.out_width}


# --- the arithmetic, written once for any array module xp (NumPy on the CPU, CuPy on the GPU) -----------------


def _padded(xp, x, pad: int, dtype):
    x = x.astype(dtype, copy=False)
    if pad == 0:
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))


def _tap(xp_in, r: int, s: int, stride: int, oh: int, ow: int):
    """The input pixels filter tap (r, s) meets, for every output pixel: a strided view (N, C, OH, OW)."""
    return xp_in[:, :, r : r + stride * (oh - 1) + 1 : stride, s : s + stride * (ow - 1) + 1 : stride]


def out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def sliding(xp, x, w, stride: int, pad: int, dtype="float64"):
    """Direct convolution (NCHW, KCRS) as R·S shifted, strided views of the padded input, each contracted over
    channels."""
    n, c, h, wd = x.shape
    k, _, r_, s_ = w.shape
    oh, ow = out_size(h, r_, stride, pad), out_size(wd, s_, stride, pad)
    xin = _padded(xp, x, pad, dtype)
    w = w.astype(dtype, copy=False)
    y = xp.zeros((n, k, oh, ow), dtype=dtype)
    for r in range(r_):
        for s in range(s_):
            y += xp.einsum("nchw,kc->nkhw", _tap(xin, r, s, stride, oh, ow), w[:, :, r, s])
    return y


def im2col(xp, x, kernel: int, stride: int, pad: int, dtype="float32"):
    """The column matrix, batch-major: (N, C·R·S, OH·OW), row index c·R·S + r·S + s as in a KCRS filter."""
    n, c, h, wd = x.shape
    oh, ow = out_size(h, kernel, stride, pad), out_size(wd, kernel, stride, pad)
    xin = _padded(xp, x, pad, dtype)
    cols = xp.empty((n, c, kernel, kernel, oh, ow), dtype=dtype)
    for r in range(kernel):
        for s in range(kernel):
            cols[:, :, r, s] = _tap(xin, r, s, stride, oh, ow)
    return cols.reshape(n, c * kernel * kernel, oh * ow)


def via_im2col(xp, x, w, stride: int, pad: int, dtype="float32"):
    """im2col followed by one (batched) matmul: y[n] = W[K, CRS] · cols[n]."""
    n = x.shape[0]
    k, _, r_, _ = w.shape
    cols = im2col(xp, x, r_, stride, pad, dtype)
    oh = out_size(x.shape[2], r_, stride, pad)
    ow = out_size(x.shape[3], r_, stride, pad)
    y = xp.matmul(w.reshape(k, -1).astype(dtype, copy=False), cols)
    return y.reshape(n, k, oh, ow)


def _in_layout(convolve):
    """An NCHW convolution applied to the problem's arrays as stored: NHWC read and written through views."""
    def run(xp, shape: ConvShape, values: dict, dtype="float64") -> dict:
        x, w = values["x"], values["w"]
        nhwc = shape.layout == ConvLayout.NHWC
        if nhwc:
            x, w = x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2)
        y = convolve(xp, x, w, shape.stride, shape.pad, dtype=dtype)
        return {"y": y.transpose(0, 2, 3, 1) if nhwc else y}

    return run


reference = _in_layout(sliding)


# --- problems -------------------------------------------------------------------------------------------------


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


def conv_shape(size: int, stride: int, *, batch: int = LAB_LAYER["batch"], in_channels: int = LAB_LAYER["in_channels"],
               out_channels: int = LAB_LAYER["out_channels"], kernel: int = LAB_LAYER["kernel"],
               padding: str | int = LAB_LAYER["padding"], dtype: DType = DType.FP32,
               layout: ConvLayout = ConvLayout.NCHW) -> ConvShape:
    """A square conv problem (H = W = size) with the padding resolved the way the lab does it."""
    for name, value in (("size", size), ("stride", stride), ("batch", batch), ("in-channels", in_channels),
                        ("out-channels", out_channels), ("kernel-size", kernel)):
        if value < 1:
            raise GpubenchError(f"{name} must be a positive integer, got {value}")
    pad = resolve_padding(padding, size, kernel, stride)
    return ConvShape(batch, in_channels, out_channels, size, size, kernel, stride, pad, str(padding).lower(), dtype,
                     layout)


LAYER_KEYS = ("batch", "in_channels", "out_channels", "kernel")


def problems(values: dict, where: str, strict: bool):
    """Every size × stride with one batch, channel counts, filter and padding (the lab's unless given). A filter
    larger than its padded input is an error on the command line (strict) and left out with the reason in a suite,
    where other shapes still make sense. A suite's sizes default to 512, the command line's to the lab's."""
    at = (lambda key, flag: flag) if strict else (lambda key, flag: f"{where}.{key}")
    layer = {key: params.one_int(values.get(key, LAB_LAYER[key]), at(key, "--" + key.replace("_", "-")))
             for key in LAYER_KEYS}
    padding = params.text(values.get("padding", LAB_LAYER["padding"]), at("padding", "--padding"),
                          "\"same\", \"valid\" or a non-negative integer")
    sizes = params.ints(values.get("sizes", LAB_SIZES if strict else [512]), at("sizes", "--sizes"),
                        example="512,1024,2048")
    strides = params.ints(values.get("strides", STRIDES if strict else [1]), at("strides", "--stride"),
                          example="1,2,3")
    shapes, skipped = [], []
    for size in sizes:
        for stride in strides:
            try:
                shapes.append(conv_shape(size, stride, padding=padding, **layer))
            except GpubenchError as e:
                if strict:
                    raise
                skipped.append((f"{values.get('name', where)}: size {size} stride {stride}", str(e)))
    return shapes, skipped


OP = OpDef(
    rank=1,
    name="conv",
    summary="y[N,K,OH,OW] = x[N,C,H,W] ⋆ w[K,C,R,S]",
    noun="convolution",
    shape=ConvShape,
    arrays=(Array("x", scale="x_scale"), Array("w", scale="w_scale"), Array("y", output=True)),
    dims=("N", "C", "H", "W", "K", "R", "S", "stride", "pad", "OH", "OW"),
    reference=reference,
    params=(Param("sizes", ParamKind.INTS, "Square sizes, comma-separated", default=LAB_SIZES),
            Param("strides", ParamKind.INTS, "Strides, comma-separated.", default=STRIDES, cli_name="--stride"),
            Param("batch", ParamKind.INT, "Images per batch (N).", default=LAB_LAYER["batch"]),
            Param("in_channels", ParamKind.INT, "Input channels (C).", default=LAB_LAYER["in_channels"]),
            Param("out_channels", ParamKind.INT, "Filters (K).", default=LAB_LAYER["out_channels"]),
            Param("kernel", ParamKind.INT, "Filter height = width (R = S).", default=LAB_LAYER["kernel"],
                  cli_name="--kernel-size"),
            Param("padding", ParamKind.TEXT, "same (the lab's), valid, or an integer.",
                  default=LAB_LAYER["padding"])),
    problems=problems,
    sample=conv_shape(1000, 2, batch=2, in_channels=3, out_channels=4, kernel=3),
    table=TableLayout("cuDNN", "speed vs library", lambda r: f"{r:.2f}×", lab_tables=True),
    by_flops=False,
    baselines={"cudnn": "cuDNN (best plan)"},
    command_help="""Sweep convolution variants over input sizes and strides; verify, time, tabulate, save.

    \b
    Examples:
      gpubench conv --stride 1,2,3
      gpubench conv --sizes 56 --batch 32 --in-channels 64 --out-channels 64 --padding 1 --stride 1
      gpubench conv --kernel my_conv.cu:conv_lab --args x,w,y,H,W,C,R,stride,pad,OH,OW --sizes 1024
      gpubench conv --backend cpu --sizes 64,100 --stride 1,2,3
    """,
    kernel_args="x,w,y,N,C,H,W,K,R,S,stride,pad,OH,OW",
    kernel_args_help="--kernel's parameter order. Default x,w,y,N,C,H,W,K,R,S,stride,pad,OH,OW (x is N×C×H×W, w "
                     "K×C×R×S, y N×K×OH×OW).",
    kernel_grid=("cdiv(OW, BLOCK_SIZE)", "cdiv(OH, BLOCK_SIZE)", "N * K"),
    emulations={"numpy-sliding": _in_layout(sliding), "numpy-im2col": _in_layout(via_im2col)},
    im2col=("x", ConvLayout.NHWC),
)
