"""Precisions and memory layouts: the element types a problem is computed in, and how its operands lie in memory.

A problem (an op's shape, gpubench/ops/) has a :class:`DType` and a layout (its op's own enum, such as
:class:`~gpubench.ops.gemm.GemmLayout`).
The dtype says what the inputs are stored as, what the products are accumulated in and what the output is
rounded to (:data:`PRECISIONS`); everything that needs those facts (input generation, references, tolerances,
byte counts, kernels' compile-time element types, table tags) reads them here, so no other module branches on a
dtype's name.

The error model (README, "Precisions") is :func:`tolerance`. The float64 reference is computed from the inputs
*after* rounding to the dtype, so what remains is the kernel's own error:

    tol = max(floor, c_out(n) · u_out + C_ACC · u_acc · √K + C_MATH · u_math)

u_out is the output format's unit roundoff (rounding to nearest leaves ‖err‖/‖y‖ ≈ 0.42·u on random data;
truncating leaves ≈ 0.85·u, so c_out = 0.7 tells them apart over many outputs; it is not 0.6 because cuBLAS
itself lands at 0.61·u on some ragged shapes (bf16 1000×1001×999 on an H100: two roundings to the output type, as a
split-K partial stored in bf16 would give, √2 · 0.42 = 0.59; docs/kernels/libraries.md); over n outputs the
ratio is an average of n elements' errors, so c_out(n) = 0.7 + 0.4·min(1, √(64/n)) gives a few outputs more
room), u_acc is the accumulator's (recursive summation of K
random terms grows as √K), u_math is the rounding a tensor core applies to its inputs (TF32 keeps 10 mantissa
bits of float32's 23). The floors are the FP32 and TF32 tolerances gpubench used before the model: they are
looser than it, because transforms such as Winograd's add error that a dot product's model does not count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import ml_dtypes
import numpy as np

from gpubench.core.errors import GpubenchError


class DType(StrEnum):
    """A problem's precision, by the name the command line, suites, specs and results files use."""

    FP32 = "fp32"  # the lab's: float32 in, FFMA, float32 out
    TF32 = "tf32"  # float32 storage, TF32 tensor-core math (the old --tf32), float32 out
    FP16 = "fp16"  # half in, float32 accumulate, half out
    BF16 = "bf16"  # bfloat16 in, float32 accumulate, bfloat16 out
    FP8 = "fp8"  # e4m3 in with a per-tensor scale each, float32 accumulate, bfloat16 out
    INT8 = "int8"  # int8 in, int32 accumulate and out (exact)
    INT8_FP32 = "int8-fp32"  # int8 in, int32 accumulate, the epilogue in float32, float32 out
    INT8_INT8 = "int8-int8"  # int8 in, int32 accumulate, requantised to int8: rounded half to even, saturated


@dataclass(frozen=True)
class Precision:
    """What a dtype means for storage, arithmetic and error."""

    storage: object  # the host element type of the inputs (NumPy's or ml_dtypes')
    output: object  # the host element type of the output
    c_type: str  # the CUDA C type of the inputs, for -D<define>=... (a kernel's own element type)
    c_out_type: str  # the CUDA C type of the output
    accumulator: str  # what the products are summed in, as the results record it
    u_out: float  # unit roundoff of the output format (0: exact integers)
    u_acc: float  # unit roundoff of the accumulator
    u_math: float = 0.0  # rounding the math unit applies to inputs the reference sees unrounded (TF32)
    floor: float = 0.0  # the least tolerance (see the module's docstring)
    ceiling: str = "ffma_gflops"  # the key of its compute peak among a GPU run's measured ceilings (roofline.py)
    scaled: bool = False  # each input carries a per-tensor scale (fp8)
    requantised: bool = False  # the output is an integer narrower than the accumulator: the epilogue's value
    # rounded half to even and saturated to its range (gpubench/ops/epilogue.py states the rule)

    @property
    def in_bytes(self) -> int:
        return np.dtype(self.storage).itemsize

    @property
    def out_bytes(self) -> int:
        return np.dtype(self.output).itemsize

    @property
    def integer(self) -> bool:
        return np.issubdtype(np.dtype(self.storage), np.integer)


FP32_U = 2.0 ** -24
# Hopper's FP8 MMA keeps about 14 mantissa bits in its accumulator between promotions to float32 (DeepSeek-V3's
# report, section 3.3.2): count the accumulator as that, not as float32.
FP8_MMA_U = 2.0 ** -14

PRECISIONS: dict[DType, Precision] = {
    DType.FP32: Precision(np.float32, np.float32, "float", "float", "fp32", FP32_U, FP32_U, floor=1e-4),
    DType.TF32: Precision(np.float32, np.float32, "float", "float", "fp32", FP32_U, FP32_U, u_math=2.0 ** -11,
                          floor=5e-3, ceiling="tf32_gflops"),
    DType.FP16: Precision(np.float16, np.float16, "__half", "__half", "fp32", 2.0 ** -11, FP32_U,
                          ceiling="fp16_gflops"),
    DType.BF16: Precision(ml_dtypes.bfloat16, ml_dtypes.bfloat16, "__nv_bfloat16", "__nv_bfloat16", "fp32", 2.0 ** -8,
                          FP32_U, ceiling="bf16_gflops"),
    DType.FP8: Precision(ml_dtypes.float8_e4m3fn, ml_dtypes.bfloat16, "__nv_fp8_e4m3", "__nv_bfloat16", "fp32",
                         2.0 ** -8, FP8_MMA_U, ceiling="fp8_gflops", scaled=True),
    DType.INT8: Precision(np.int8, np.int32, "int8_t", "int", "int32", 0.0, 0.0, ceiling="int8_gops"),
    # The floor: an epilogue's float32 steps (a product and two sums) round up to three times per output.
    DType.INT8_FP32: Precision(np.int8, np.float32, "int8_t", "float", "int32", FP32_U, 0.0, floor=4 * FP32_U,
                               ceiling="int8_gops"),
    DType.INT8_INT8: Precision(np.int8, np.int8, "int8_t", "int8_t", "int32", 0.0, 0.0, ceiling="int8_gops",
                               requantised=True),
}

C_OUT, C_OUT_FEW, FEW, C_ACC, C_MATH = 0.7, 0.4, 64, 2.0, 2.0
FP8_MAX = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)  # 448: the largest e4m3 value
INT8_MAX = 127


def tolerance(dtype: DType, reduction: int, outputs: int) -> float:
    """The largest ‖out − ref‖/‖ref‖ a correct kernel may have, for `outputs` elements each summing `reduction`
    products (GEMM: M·N of K; convolution: N·K·OH·OW of C·R·S). Integers are exact."""
    p = PRECISIONS[dtype]
    c_out = C_OUT + C_OUT_FEW * min(1.0, math.sqrt(FEW / max(outputs, 1)))
    model = c_out * p.u_out + C_ACC * p.u_acc * math.sqrt(reduction) + C_MATH * p.u_math
    return max(p.floor, model)


def draw(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType, storage=None) \
        -> tuple[np.ndarray, float | None]:
    """Fresh inputs in the dtype: uniform in [-1, 1) (never all zeros) rounded to it, on the host. Returns the
    stored array and, for a scaled dtype, its dequantisation scale (stored · scale is the value it stands for).

    fp8's scale maps the tensor's largest magnitude onto e4m3's largest value (448), the usual per-tensor choice:
    values keep e4m3's relative precision and none overflows. int8 draws whole numbers in [-127, 127]. An
    array an op stores in another type than the problem's inputs (`storage`: a norm's float32 weight) is drawn in
    [-1, 1) and rounded to that type, unscaled."""
    p = PRECISIONS[dtype]
    if storage is not None and storage is not p.storage:
        if np.issubdtype(np.dtype(storage), np.integer):
            return rng.integers(-INT8_MAX, INT8_MAX + 1, size=shape).astype(storage), None
        return (rng.random(shape, dtype=np.float32) * 2 - 1).astype(storage), None
    if p.integer:
        return rng.integers(-INT8_MAX, INT8_MAX + 1, size=shape, dtype=np.int8), None
    x = rng.random(shape, dtype=np.float32) * 2 - 1
    if not p.scaled:
        return x.astype(p.storage), None
    amax = float(np.abs(x).max()) or 1.0
    scale = amax / FP8_MAX
    return (x / np.float32(scale)).astype(p.storage), scale


def as_float64(stored: np.ndarray, scale: float | None = None) -> np.ndarray:
    """The values a stored host array stands for, in float64 (through ml_dtypes' conversions)."""
    out = stored.astype(np.float64)
    return out * scale if scale is not None else out


def parse_dtypes(text: str, what: str = "--dtype") -> tuple[DType, ...]:
    """'fp32,bf16' → (DType.FP32, DType.BF16); one line naming what is allowed otherwise."""
    return _parse(text, DType, what)


def parse_layouts(text: str, kind: type[StrEnum], what: str = "--layout") -> tuple:
    return _parse(text, kind, what)


def _parse(text: str, kind: type[StrEnum], what: str) -> tuple:
    names = [t.strip().lower() for t in str(text).split(",")]
    if not any(names):
        raise GpubenchError(f"{what} {text!r} is empty; allowed: {', '.join(kind)} (comma-separated)")
    if not all(names):  # fp32, or fp32,,bf16: a name left out (its variable unset?), not an empty list
        raise GpubenchError(f"{what} {text!r} has an empty item; allowed: {', '.join(kind)} (comma-separated, each "
                            "once)")
    out = []
    for name in names:
        try:
            value = kind(name)
        except ValueError:
            raise GpubenchError(f"{what}: {name!r} is not one; allowed: {', '.join(kind)}") from None
        if value not in out:
            out.append(value)
    return tuple(out)
