"""The fused epilogue: what a kernel does to its accumulators on their way out, as part of the problem.

A convolution may end in the epilogue of the source document's int8 convolution (CUTLASS's
BiasAddLinearCombinationRelu, which MegEngine's kernels use). It is computed in this order:

    e = act(α · s[k] · conv(x, w) + β · bias[k] + γ · z)

- α, β and γ are numbers of the problem (1 unless given; α's default for a requantised output is below);
- s[k] is 1 (per-tensor scaling) or the per-output-channel scale `channel_scale` (:class:`Scaling`: K powers of two);
- bias is per output channel (K float32 values), z a residual of the output's shape, in the output's type;
- act is ReLU for bias-relu and bias-relu-add, the identity otherwise. The residual is added *before* the ReLU,
  the document's order (the ReLU of the whole linear combination): a kernel that adds z after its ReLU is wrong.

Then e is stored in the output's type: rounded once to a float output; for a requantised output (int8-int8)
rounded half to even (NumPy's rint, PTX's cvt.rni) and saturated to [-128, 127] (:func:`finish`).

Exactness. int8 problems are checked exactly (rel_err 0), so their factors are restricted to values for which a
kernel's float32 epilogue is exact on gpubench's inputs (whole-number bias and z, accumulators below 2^24): for an
int32 output α, β and γ are whole numbers and the scaling is per tensor; for an int8 output they are powers of two
(times a sign), as are the channel scales, so every float32 product and sum in the int8 range is exact and a correct
kernel meets the float64 rule bit for bit. With a factor such as 0.3, float32 arithmetic could land one step from
the float64 rule where a value sits near a rounding tie, so such factors are refused there (an int8-fp32 output
takes any factor, within its tolerance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Mapping

import numpy as np

from gpubench.core.dtypes import INT8_MAX, PRECISIONS, DType
from gpubench.core.errors import GpubenchError


class Epilogue(StrEnum):
    """The terms of the fused epilogue, each adding to the one before (so kernels take its index as -DEPILOGUE=i)."""

    NONE = "none"  # y = α·s·conv(x, w)
    BIAS = "bias"  # + β·bias[k]
    BIAS_RELU = "bias-relu"  # then ReLU
    BIAS_RELU_ADD = "bias-relu-add"  # + γ·z before the ReLU

    @property
    def index(self) -> int:
        return list(Epilogue).index(self)

    @property
    def bias(self) -> bool:
        return self.index >= Epilogue.BIAS.index

    @property
    def relu(self) -> bool:
        return self.index >= Epilogue.BIAS_RELU.index

    @property
    def add(self) -> bool:
        return self == Epilogue.BIAS_RELU_ADD


class Scaling(StrEnum):
    """How α scales the accumulators: one number, or one more factor per output channel (the array `channel_scale`)."""

    TENSOR = "tensor"
    CHANNEL = "channel"


BIAS, RESIDUAL, SCALE = "bias", "z", "channel_scale"  # the arrays an epilogue brings, by their spec names
REQUANT_SPREAD = 64  # a requantised output's default α maps a typical |conv| here (a few percent saturate)


@dataclass(frozen=True)
class Fused:
    """A problem's epilogue: its terms and factors (alpha None: the default, 1 or a requantised output's)."""

    epilogue: Epilogue = Epilogue.NONE
    alpha: float | None = None
    beta: float = 1.0
    gamma: float = 1.0
    scaling: Scaling = Scaling.TENSOR

    def __post_init__(self):
        for name, kind in (("epilogue", Epilogue), ("scaling", Scaling)):
            try:
                object.__setattr__(self, name, kind(getattr(self, name)))
            except ValueError:
                raise GpubenchError(f"{name} {getattr(self, name)!r}; allowed: {', '.join(kind)}") from None
        for name in ("alpha", "beta", "gamma"):
            value = getattr(self, name)
            if value is None and name == "alpha":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not value:
                raise GpubenchError(f"{name} must be a finite non-zero number, got {value!r:.40}")
            object.__setattr__(self, name, float(value))
        if self.beta != 1.0 and not self.epilogue.bias:
            raise GpubenchError(f"beta scales the bias: give an epilogue with one (bias, bias-relu, bias-relu-add), "
                                f"not {self.epilogue}")
        if self.gamma != 1.0 and not self.epilogue.add:
            raise GpubenchError(f"gamma scales the residual z: give the epilogue bias-relu-add, not {self.epilogue}")

    @property
    def default(self) -> bool:
        return self == NO_EPILOGUE

    def arrays(self) -> tuple[str, ...]:
        """The input arrays it brings (spec names): bias, z, channel_scale."""
        return ((BIAS,) if self.epilogue.bias else ()) + ((RESIDUAL,) if self.epilogue.add else ()) + \
            ((SCALE,) if self.scaling == Scaling.CHANNEL else ())

    def check(self, dtype: DType) -> None:
        """Refuse factors a precision's exact check could not hold a float32 kernel to (the module's docstring)."""
        p = PRECISIONS[dtype]
        if not p.integer or dtype == DType.INT8_FP32:
            return
        given = {n: v for n, v in (("alpha", self.alpha), ("beta", self.beta), ("gamma", self.gamma)) if v is not None}
        if p.requantised:
            odd = [f"{n} {v:g}" for n, v in given.items() if math.frexp(abs(v))[0] != 0.5]
            if odd:
                raise GpubenchError(f"{dtype} is checked exactly: {', '.join(odd)} must be a power of two (0.0625, "
                                    "0.5, 1, 2, ... or its negative); use int8-fp32 for other factors")
            return
        odd = [f"{n} {v:g} is not a whole number" for n, v in given.items() if v != int(v)]
        odd += ["per-channel scales are fractions"] if self.scaling == Scaling.CHANNEL else []
        if odd:
            raise GpubenchError(f"{dtype}'s int32 outputs hold whole numbers: {'; '.join(odd)}; use int8-fp32 or "
                                "int8-int8 for these")

    def factors(self, dtype: DType, reduction: int) -> tuple[float, float, float]:
        """α, β, γ as the problem computes with them (α's default resolved: :func:`default_alpha`)."""
        alpha = default_alpha(dtype, reduction) if self.alpha is None else self.alpha
        return alpha, self.beta, self.gamma

    @property
    def label(self) -> str:
        """"" for no epilogue; else its name, the factors given and the scaling where it is per channel."""
        if self.default:
            return ""
        parts = [] if self.epilogue == Epilogue.NONE else [str(self.epilogue)]
        parts += [f"{sym}{v:g}" for sym, v, d in (("α", self.alpha, None), ("β", self.beta, 1.0),
                                                     ("γ", self.gamma, 1.0)) if v != d]
        return " ".join(parts + (["per-channel"] if self.scaling == Scaling.CHANNEL else []))

    def flops_per_output(self) -> int:
        """What it adds to each output's arithmetic: α·s (a product, where not 1), β·bias (a product and a sum),
        ReLU (a max), γ·z (a product and a sum)."""
        scaled = self.alpha not in (None, 1.0) or self.scaling == Scaling.CHANNEL
        e = self.epilogue
        return int(scaled) + 2 * e.bias + e.relu + 2 * e.add

    def record(self) -> dict[str, object]:
        """The keys a problem's record gains, only those not at their defaults (older files have none)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = str(value) if isinstance(value, StrEnum) else value
        return out

    @classmethod
    def from_record(cls, r: Mapping[str, object]) -> Fused:
        return cls(**{f.name: r[f.name] for f in fields(cls) if f.name in r})


NO_EPILOGUE = Fused()
KEYS = tuple(f.name for f in fields(Fused))  # the problem record's optional keys


def typical(dtype: DType, reduction: int) -> float:
    """The standard deviation of a sum of `reduction` products of gpubench's inputs: uniform integers in [-127, 127]
    (a product's spread is 127·128/3) or uniform reals in [-1, 1) (1/3)."""
    per = INT8_MAX * (INT8_MAX + 1) / 3 if PRECISIONS[dtype].integer else 1 / 3
    return per * math.sqrt(reduction)


def default_alpha(dtype: DType, reduction: int) -> float:
    """α unless given: 1, but for a requantised output the power of two that brings a typical |conv| nearest to
    REQUANT_SPREAD, so that the int8 output spans its range and a few percent of it saturates."""
    if not PRECISIONS[dtype].requantised:
        return 1.0
    return 2.0 ** round(math.log2(REQUANT_SPREAD / typical(dtype, reduction)))


def channel_scales(k: int) -> np.ndarray:
    """The per-channel scales s[k]: 1/2, 1, 2 in turn (powers of two, so an int8 output stays exact)."""
    return (2.0 ** (np.arange(k) % 3 - 1)).astype(np.float32)


def draw(rng: np.random.Generator, name: str, dims: tuple[int, ...], host_type, dtype: DType,
         spread: float) -> np.ndarray:
    """An epilogue input on the host: bias and z uniform in ±spread (the typical |α·conv|, so that each term moves the
    output and the ReLU cuts a share of it), whole numbers for int8 problems (so float32 epilogues stay exact) within
    an integer type's range; the channel scales fixed (:func:`channel_scales`)."""
    if name == SCALE:
        return channel_scales(dims[0])
    values = (rng.random(dims) * 2 - 1) * spread
    if PRECISIONS[dtype].integer:
        values = np.rint(values)
    if np.issubdtype(np.dtype(host_type), np.integer):
        info = np.iinfo(np.dtype(host_type))
        values = np.clip(values, -info.max, info.max)
    return values.astype(host_type)


def apply(xp, acc, fused: Fused, factors: tuple[float, float, float], values: Mapping, channel_axis: int):
    """e = act(α·s[k]·acc + β·bias[k] + γ·z), in acc's (float) type; z lies as acc does, bias and scale are per
    channel along `channel_axis`."""
    alpha, beta, gamma = factors
    along = [1] * acc.ndim
    along[channel_axis] = -1
    kind = acc.dtype.type
    e = acc * kind(alpha)
    if fused.scaling == Scaling.CHANNEL:
        e = e * values[SCALE].astype(kind).reshape(along)
    if fused.epilogue.bias:
        e = e + kind(beta) * values[BIAS].astype(kind).reshape(along)
    if fused.epilogue.add:
        e = e + kind(gamma) * values[RESIDUAL].astype(kind)
    if fused.epilogue.relu:
        e = xp.maximum(e, kind(0))
    return e


def finish(xp, e, dtype: DType):
    """The epilogue's value as the output holds it: a requantised output's rounded half to even and saturated
    (values as floats still; the backend stores them), any other's as it is (rounded once when stored)."""
    p = PRECISIONS[dtype]
    if not p.requantised:
        return e
    info = np.iinfo(np.dtype(p.output))
    return xp.clip(xp.rint(e), info.min, info.max)


def spread(fused: Fused, dtype: DType, reduction: int) -> float:
    """The typical |α·conv| of a problem: what its bias and residual are drawn around."""
    return abs(fused.factors(dtype, reduction)[0]) * typical(dtype, reduction)

