"""Convolution: y = x ⋆ w, cross-correlation with symmetric zero padding, and an optional fused epilogue.

The lab's second problem: one image of three channels and one 3×3 filter with SAME padding by default, and any
layer (batch, channels, filter, stride, padding) on request, in any precision (int8 too: exact) and layout (NCHW,
NHWC, and for channels in multiples of 32 cuDNN's NCHW_VECT_C with 32-channel vectors, the source document's
NC/32HW32). A problem may end in the fused epilogue y = act(α·s·conv + β·bias + γ·z) (gpubench/ops/epilogue.py).
Kernels live in cuda_src/conv/, the library baseline is cuDNN (its best plan). The lab's problems are
memory-bound, so plots rate them in GB/s of minimum bytes; the run view gives the lab's per-variant tables (sizes
and strides by block size). The arithmetic is gpubench/ops/conv_math.py's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Mapping

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import epilogue, params
from gpubench.ops.base import (LAB_SIZES, MAX_DIM, Array, OpDef, Param, ParamKind, Shape, Storage, TableLayout,
                               enum_field, positive)
from gpubench.ops.conv_math import im2col, in_layout, out_size, sliding, via_im2col  # noqa: F401 (read from here)
from gpubench.ops.epilogue import NO_EPILOGUE, Epilogue, Fused, Scaling

SCALARS = ("alpha", "beta", "gamma")  # the epilogue's factors, float parameters of a kernel
VECTOR = 32  # NCHW_VECT_C's channels per vector (cuDNN's INT8x32): 32 bytes of int8, what one thread loads twice


class ConvLayout(StrEnum):
    """How a convolution's tensors lie in memory (a tensor's dims in its layout: `dims`; to and from the logical
    NCHW order: `to_nchw`, `from_nchw`)."""

    NCHW = "nchw"  # x[N,C,H,W], w[K,C,R,S], y[N,K,OH,OW] (the lab's)
    NHWC = "nhwc"  # x[N,H,W,C], w[K,R,S,C], y[N,OH,OW,K]: channels innermost, what tensor cores read best
    # cuDNN's CUDNN_TENSOR_NCHW_VECT_C with 32-channel vectors (MegEngine's NCHW32, the document's NC/32HW32):
    # x[N,C/32,H,W,32], w[K,C/32,R,S,32], y[N,K/32,OH,OW,32]; channels in multiples of 32
    NCHW_VECT_C = "nchw_vect_c"

    def dims(self, n: int, c: int, h: int, w: int) -> tuple[int, ...]:
        """A tensor of logical dims (N, C, H, W) as it lies in this layout (a filter: N = K, H = R, W = S)."""
        if self == ConvLayout.NHWC:
            return (n, h, w, c)
        if self == ConvLayout.NCHW_VECT_C:
            return (n, c // VECTOR, h, w, VECTOR)
        return (n, c, h, w)

    def to_nchw(self, a):
        """A stored tensor as a logical (N, C, H, W) one (a view, or a copy for the vectors)."""
        if self == ConvLayout.NHWC:
            return a.transpose(0, 3, 1, 2)
        if self == ConvLayout.NCHW_VECT_C:
            n, cv, h, w, v = a.shape
            return a.transpose(0, 1, 4, 2, 3).reshape(n, cv * v, h, w)
        return a

    def from_nchw(self, a):
        """A logical (N, C, H, W) tensor as this layout stores it."""
        if self == ConvLayout.NHWC:
            return a.transpose(0, 2, 3, 1)
        if self == ConvLayout.NCHW_VECT_C:
            n, c, h, w = a.shape
            return a.reshape(n, c // VECTOR, VECTOR, h, w).transpose(0, 1, 3, 4, 2)
        return a


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
    fused: Fused = NO_EPILOGUE  # the epilogue (none: y = conv(x, w) as the lab's)

    op: ClassVar[str] = "conv"
    LAYOUT: ClassVar[type[ConvLayout]] = ConvLayout
    DEFAULT_LAYOUT: ClassVar[ConvLayout] = ConvLayout.NCHW
    KEYS: ClassVar[tuple[str, ...]] = ("batch", "in_channels", "out_channels", "height", "width", "kernel", "stride",
                                       "padding", "dtype", "layout")
    OPTIONAL_KEYS: ClassVar[tuple[str, ...]] = epilogue.KEYS  # only where the epilogue is not none
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
        if not isinstance(self.fused, Fused):
            raise GpubenchError(f"a convolution's epilogue is a Fused record, got {self.fused!r:.40}")
        self.fused.check(self.dtype)
        if self.layout == ConvLayout.NCHW_VECT_C and (self.in_channels % VECTOR or self.out_channels % VECTOR):
            raise GpubenchError(f"{self.layout} holds channels in vectors of {VECTOR}: C and K must be multiples of "
                                f"{VECTOR}, got C={self.in_channels}, K={self.out_channels}")
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
        """The products and sums, and the epilogue's arithmetic per output."""
        return 2.0 * self.output_elems * self.gemm_k + self.fused.flops_per_output() * self.output_elems

    @property
    def reduction(self) -> int:
        """How many products each output sums: C·R·S."""
        return self.gemm_k

    @property
    def min_bytes(self) -> float:
        p = PRECISIONS[self.dtype]
        extra = 4 * self.out_channels * len({epilogue.BIAS, epilogue.SCALE} & set(self.fused.arrays()))
        residual = p.out_bytes * self.output_elems if self.fused.epilogue.add else 0
        return p.in_bytes * (self.input_elems + self.filter_elems) + p.out_bytes * self.output_elems + extra + \
            residual

    def scalars(self) -> dict[str, float]:
        """The epilogue's factors as kernels receive them (float parameters alpha, beta, gamma)."""
        return dict(zip(SCALARS, self.fused.factors(self.dtype, self.reduction)))

    def _lab_layer(self) -> bool:
        d = LAB_LAYER
        return (self.batch, self.in_channels, self.out_channels, self.kernel) == (
            d["batch"], d["in_channels"], d["out_channels"], d["kernel"])

    @property
    def label(self) -> str:
        """The input size, the rest of the problem where it is not the lab's, and the epilogue where there is one."""
        hw = str(self.height) if self.height == self.width else f"{self.height}x{self.width}"
        text = hw if self._lab_layer() else \
            f"{self.batch}x{self.in_channels}x{hw} k{self.out_channels} {self.kernel}x{self.kernel}"  # the lab's: the
        return f"{text} {self.fused.label}" if self.fused.label else text  # size says it all

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
        fields = {("pad" if k == "padding" else k): v for k, v in r.items() if k not in epilogue.KEYS}
        return cls(**fields, padding=str(r.get("padding", "")), fused=Fused.from_record(r))

    @property
    def series(self) -> str | None:
        """Everything but the (square) input size, so layers with other channel counts, filters, strides or padding
        are other lines."""
        if self.plot_x is None:
            return None
        rest = "" if self._lab_layer() else \
            f"{self.batch}x{self.in_channels} k{self.out_channels} {self.kernel}x{self.kernel} "
        rest += f"{self.fused.label} " if self.fused.label else ""
        return f"{rest}stride {self.stride} pad {self.pad}" + (f" {self.tag}" if self.tag else "")

    def record(self) -> dict[str, object]:
        """The problem as a results file keeps it (KEYS; padding is the pad applied on each side)."""
        return {"batch": self.batch, "in_channels": self.in_channels, "out_channels": self.out_channels,
                "height": self.height, "width": self.width, "kernel": self.kernel, "stride": self.stride,
                "padding": self.pad, "dtype": str(self.dtype), "layout": str(self.layout), **self.fused.record()}

    def array_dims(self) -> dict[str, tuple[int, ...]]:
        """Each array's dimensions as it lies in memory, by its spec name (the epilogue's only where it has them:
        bias and the channel scales K each, the residual z as y)."""
        n, c, h, w, k, r = self.batch, self.in_channels, self.height, self.width, self.out_channels, self.kernel
        x = self.layout
        dims = {"x": x.dims(n, c, h, w), "w": x.dims(k, c, r, r), "y": x.dims(n, k, self.out_height, self.out_width)}
        extra = {epilogue.BIAS: (k,), epilogue.SCALE: (k,), epilogue.RESIDUAL: dims["y"]}
        return {**dims, **{name: extra[name] for name in self.fused.arrays()}}

    def dims(self) -> dict[str, int]:
        """The values of the op's dims, for kernel arguments and launch expressions."""
        return {"N": self.batch, "C": self.in_channels, "H": self.height, "W": self.width, "K": self.out_channels,
                "R": self.kernel, "S": self.kernel, "stride": self.stride, "pad": self.pad, "OH": self.out_height,
                "OW": self.out_width}


# --- the arithmetic, written once for any array module xp (NumPy on the CPU, CuPy on the GPU) -----------------


# The float64 reference: the direct convolution, summed in int64 for an int8 problem (exact), then the epilogue.
reference = in_layout(sliding, exact_integers=True)


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
               layout: ConvLayout = ConvLayout.NCHW, fused: Fused = NO_EPILOGUE) -> ConvShape:
    """A square conv problem (H = W = size) with the padding resolved the way the lab does it."""
    for name, value in (("size", size), ("stride", stride), ("batch", batch), ("in-channels", in_channels),
                        ("out-channels", out_channels), ("kernel-size", kernel)):
        if value < 1:
            raise GpubenchError(f"{name} must be a positive integer, got {value}")
    pad = resolve_padding(padding, size, kernel, stride)
    return ConvShape(batch, in_channels, out_channels, size, size, kernel, stride, pad, str(padding).lower(), dtype,
                     layout, fused)


LAYER_KEYS = ("batch", "in_channels", "out_channels", "kernel")


def problems(values: dict, where: str, strict: bool):
    """Every size × stride with one batch, channel counts, filter and padding (the lab's unless given). A filter
    larger than its padded input is an error on the command line (strict) and left out with the reason in a suite,
    where other shapes still make sense. A suite's sizes default to 512, the command line's to the lab's."""
    flags = {p.name: p.flag for p in OP.params}

    def at(key: str) -> str:  # where a value came from, as its message names it
        return flags[key] if strict else f"{where}.{key}"

    layer = {key: params.one_int(values.get(key, LAB_LAYER[key]), at(key)) for key in LAYER_KEYS}
    padding = params.text(values.get("padding", LAB_LAYER["padding"]), at("padding"),
                          "\"same\", \"valid\" or a non-negative integer")
    sizes = params.ints(values.get("sizes", LAB_SIZES if strict else [512]), at("sizes"), example="512,1024,2048")
    strides = params.ints(values.get("strides", STRIDES if strict else [1]), at("strides"), example="1,2,3")
    fused = fused_from(values, at)
    shapes, skipped = [], []
    for size, stride, epi in itertools.product(sizes, strides, fused):
        try:
            shapes.append(conv_shape(size, stride, padding=padding, fused=epi, **layer))
        except GpubenchError as e:
            if strict:
                raise
            skipped.append((f"{values.get('name', where)}: size {size} stride {stride}", str(e)))
    return shapes, skipped


def fused_from(values: dict, at) -> list[Fused]:
    """The epilogues a sweep asks for: --epilogue (one or several, comma-separated, or a suite's list), --alpha,
    --beta, --gamma, --scaling (β and γ apply to the epilogues with their terms, and at least one must have it)."""
    kinds = params.words(values.get("epilogue", Epilogue.NONE), at("epilogue"), Epilogue)
    scaling = params.word(values.get("scaling", Scaling.TENSOR), at("scaling"), Scaling)
    alpha, beta, gamma = (params.number(values.get(k, d), at(k)) for k, d in zip(SCALARS, (None, 1.0, 1.0)))
    out = [Fused(k, alpha, beta if k.bias else 1.0, gamma if k.add else 1.0, scaling) for k in kinds]
    last = max(kinds, key=lambda k: k.index)
    Fused(last, alpha, beta, gamma, scaling)  # β without a bias, γ without a residual: refused, saying why
    return out


def _draw(rng, shape: ConvShape, name: str, dims: tuple[int, ...], host_type):
    """The epilogue's inputs, drawn its way (gpubench/ops/epilogue.py); None for x and w (dtypes.draw's)."""
    if name not in shape.fused.arrays():
        return None
    spread = epilogue.spread(shape.fused, shape.dtype, shape.reduction)
    return epilogue.draw(rng, name, dims, host_type, shape.dtype, spread)


OP = OpDef(
    rank=1,
    name="conv",
    summary="y[N,K,OH,OW] = x[N,C,H,W] ⋆ w[K,C,R,S]",
    noun="convolution",
    shape=ConvShape,
    arrays=(Array("x", scale="x_scale"), Array("w", scale="w_scale"),
            Array(epilogue.BIAS, storage=Storage.FLOAT32, optional=True),  # K: the epilogue's, where it has them
            Array(epilogue.RESIDUAL, storage=Storage.OUTPUT, optional=True),  # as y, in y's type
            Array(epilogue.SCALE, storage=Storage.FLOAT32, optional=True),  # K: α's per-channel factors
            Array("y", output=True)),
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
                  default=LAB_LAYER["padding"]),
            Param("epilogue", ParamKind.TEXT, "The fused epilogue(s), comma-separated, y = act(α·s·conv + β·bias + "
                  "γ·z): none, bias, bias-relu, bias-relu-add (the ReLU after the residual).",
                  default=str(Epilogue.NONE)),
            Param("alpha", ParamKind.FLOAT, "α, the accumulators' factor [default: 1; for int8-int8 the power of two "
                  "that fits a typical output to int8]."),
            Param("beta", ParamKind.FLOAT, "β, the bias's factor.", default=1.0),
            Param("gamma", ParamKind.FLOAT, "γ, the residual's factor.", default=1.0),
            Param("scaling", ParamKind.TEXT, "α per tensor, or per output channel (times the K powers of two of "
                  "channel_scale).", default=str(Scaling.TENSOR))),
    problems=problems,
    sample=conv_shape(1000, 2, batch=2, in_channels=3, out_channels=4, kernel=3),
    layout_samples={ConvLayout.NCHW_VECT_C: conv_shape(1000, 2, batch=2, in_channels=32, out_channels=96, kernel=3)},
    draw_input=_draw,
    scalars=SCALARS,
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
      gpubench conv --sizes 56 --batch 128 --in-channels 64 --out-channels 64 --padding 1 --stride 1 \\
        --dtype int8-int8 --layout nhwc,nchw_vect_c --epilogue bias-relu-add
    """,
    kernel_args="x,w,y,N,C,H,W,K,R,S,stride,pad,OH,OW",
    kernel_args_help="--kernel's parameter order. Default x,w,y,N,C,H,W,K,R,S,stride,pad,OH,OW (x is N×C×H×W, w "
                     "K×C×R×S, y N×K×OH×OW).",
    kernel_grid=("cdiv(OW, BLOCK_SIZE)", "cdiv(OH, BLOCK_SIZE)", "N * K"),
    emulations={"numpy-sliding": in_layout(sliding), "numpy-im2col": in_layout(via_im2col)},
    im2col=("x", ConvLayout.NHWC),
)
