"""Problem shapes: what is computed, how many FLOPs it takes and the fewest bytes it must move.

A shape is pure data. The registry, the references and every backend read these; nothing here touches a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.errors import GpubenchError

FLOAT_BYTES = 4

# The names a kernel spec uses for each op's arrays and dimensions (its `args` and launch expressions).
ARRAYS = {"gemm": ("A", "B", "C"), "conv": ("x", "w", "y")}
DIMS = {"gemm": ("M", "N", "K"), "conv": ("N", "C", "H", "W", "K", "R", "S", "stride", "pad", "OH", "OW")}
# The lab's own GEMM naming: c[m,k] = a[m,n] · b[n,k], so its n is gpubench's K and its k is gpubench's N.
LAB_NAMES = {"gemm": {"a": "A", "b": "B", "c": "C", "m": "M", "n": "K", "k": "N"}, "conv": {}}


@dataclass(frozen=True)
class GemmShape:
    """C[M,N] = A[M,K] · B[K,N], float32, row-major."""

    m: int
    n: int
    k: int

    op = "gemm"

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

    def params(self) -> dict:
        return {"m": self.m, "n": self.n, "k": self.k}

    def dims(self) -> dict[str, int]:
        """The values of DIMS["gemm"] and of the lab's names, for kernel arguments and launch expressions."""
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
    padding: str = ""  # how the pad was asked for ("same", "valid" or the integer), for tables

    op = "conv"

    def __post_init__(self):
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
        return str(self.height) if self.height == self.width else f"{self.height}x{self.width}"

    def params(self) -> dict:
        return {
            "batch": self.batch,
            "in_channels": self.in_channels,
            "out_channels": self.out_channels,
            "height": self.height,
            "width": self.width,
            "kernel": self.kernel,
            "stride": self.stride,
            "padding": self.pad,
        }

    def dims(self) -> dict[str, int]:
        """The values of DIMS["conv"], for kernel arguments and launch expressions."""
        return {"N": self.batch, "C": self.in_channels, "H": self.height, "W": self.width, "K": self.out_channels,
                "R": self.kernel, "S": self.kernel, "stride": self.stride, "pad": self.pad, "OH": self.out_height,
                "OW": self.out_width}


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
        pad = int(text)
    except ValueError:
        raise GpubenchError(f"padding {padding!r} is not allowed: use same, valid or a non-negative integer") from None
    if pad < 0:
        raise GpubenchError(f"padding {pad} is negative: use same, valid or a non-negative integer")
    return pad


def conv_shape(
    size: int,
    stride: int,
    *,
    batch: int = 1,
    in_channels: int = 3,
    out_channels: int = 1,
    kernel: int = 3,
    padding: str | int = "same",
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
