"""Attention, forward: O = softmax(Q·Kᵀ/√D, causal or not)·V, with grouped-query heads.

Q and O are [B, H, S, D]; K and V are [B, H_kv, S, D], where H_kv divides H and query head h reads key/value head
h // (H / H_kv) (grouped-query attention; H_kv = H is multi-head, H_kv = 1 multi-query). The scores are scaled by
1/√D. Causal: query i sees the keys j ≤ i (queries and keys have the same length, so the top-left and bottom-right
conventions agree). fp16 and bf16 inputs give an output of their own type; fp8 is e4m3 with a per-tensor scale
each for Q, K and V (Q_scale, K_scale, V_scale, as fp8 GEMM's A_scale), and a bf16 output.

**Flops** are 4·B·H·S²·D: two products of S·S·D multiply-adds per head. Causal halves them, counting S²/2 score
entries per head: the S(S−1)/2 below the diagonal and half of the S on it, FlashAttention's and cuDNN's convention,
so that rates compare with their published figures (an exact count of the kept entries, S(S+1)/2, would add 1/S).

**The error model** (:func:`error_model`). A real kernel computes the scores S = Q·Kᵀ in fp32 from the rounded
inputs (a reduction of length D), takes P = exp(S − m) with m the row's running maximum, rounds P to the inputs'
precision for the second tensor-core product (fp16, bf16; e4m3 for fp8), sums P·V in fp32 (a reduction of length
S), divides by the row sum ℓ and rounds O to the output type. Each output is then a weighted mean of the values,
and the rounding of P perturbs each weight by a relative u_P: the error it leaves in O is, relative to O, about
u_P whatever S is (O and its error both shrink as 1/√S over random values). So

    tol = c_out(n)·u_out + C_P·u_P + C_ACC·u_acc·(√S + √D) + C_MATH·u_math

with u_out, u_acc and u_math the precision's (core/dtypes.py), c_out(n) the output rounding's coefficient over n
outputs, and C_P = C_OUT (P's rounding to nearest is worth what the output's is). An H200 run of a FlashAttention
kernel measured 0.59·u for fp16 and bf16 (two roundings of 0.42·u each, in quadrature); the model allows 1.4·u,
and a wrong mask or a missing 1/√D errs by order 1.

The float64 reference is computed a block of query rows at a time (:data:`CHUNK_BYTES` of scores), so that S = 16k
fits in memory on either array module. The CPU's own variant (:func:`flash`) is FlashAttention-2's loop in float32:
blocks of keys, a running maximum and sum, P rounded to the inputs' type before P·V.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

import ml_dtypes
import numpy as np

from gpubench.core import dtypes
from gpubench.core.dtypes import FP8_MAX, PRECISIONS, DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import params
from gpubench.ops.base import Array, OpDef, Param, ParamKind, Shape, TableLayout, enum_field, positive

CHUNK_BYTES = 256 << 20  # float64 scores the reference holds at a time
BLOCK = 64  # queries and keys per step of the CPU's FlashAttention loop


class AttentionLayout(StrEnum):
    """How Q, K, V and O lie in memory."""

    BHSD = "bhsd"  # [batch, heads, sequence, head_dim]: each head's rows contiguous (PyTorch's SDPA, cuDNN's default)


@dataclass(frozen=True)
class AttentionShape(Shape):
    """O[B,H,S,D] = softmax(Q·Kᵀ/√D)·V over K, V of [B,H_kv,S,D], causal or not, in a precision (fp32 by default)."""

    batch: int
    heads: int
    kv_heads: int
    seq: int
    head_dim: int
    causal: bool = False
    dtype: DType = DType.FP32
    layout: AttentionLayout = AttentionLayout.BHSD

    op: ClassVar[str] = "attention"
    LAYOUT: ClassVar[type[AttentionLayout]] = AttentionLayout
    DEFAULT_LAYOUT: ClassVar[AttentionLayout] = AttentionLayout.BHSD
    KEYS: ClassVar[tuple[str, ...]] = ("batch", "heads", "kv_heads", "seq", "head_dim", "causal", "dtype", "layout")
    PLOT_AXIS: ClassVar[str] = "sequence length S"

    def __post_init__(self):
        positive("an attention", batch=self.batch, heads=self.heads, kv_heads=self.kv_heads, seq=self.seq,
                 head_dim=self.head_dim)
        if self.causal not in (0, 1):  # True, False, or a record's 0 and 1
            raise GpubenchError(f"an attention: causal must be true or false (1 or 0), got {self.causal!r:.40}")
        object.__setattr__(self, "causal", bool(self.causal))
        if self.heads % self.kv_heads:
            raise GpubenchError(f"an attention: kv_heads {self.kv_heads} must divide heads {self.heads} (each K/V "
                                "head serves a group of query heads)")
        enum_field(self, "dtype", DType)
        enum_field(self, "layout", AttentionLayout)

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.kv_heads

    @property
    def flops(self) -> float:
        full = 4.0 * self.batch * self.heads * self.seq * self.seq * self.head_dim
        return full / 2 if self.causal else full

    @property
    def reduction(self) -> int:
        """The longer of the two sums each output carries: P·V's, over the keys."""
        return self.seq

    @property
    def output_elems(self) -> int:
        return self.batch * self.heads * self.seq * self.head_dim

    @property
    def min_bytes(self) -> float:
        p = PRECISIONS[self.dtype]
        kv = 2 * self.batch * self.kv_heads * self.seq * self.head_dim
        return p.in_bytes * (self.output_elems + kv) + p.out_bytes * self.output_elems

    @property
    def label(self) -> str:
        heads = f"{self.heads}" if self.kv_heads == self.heads else f"{self.heads}/{self.kv_heads}"
        return f"{self.batch}x{heads}x{self.seq}x{self.head_dim}" + (" causal" if self.causal else "")

    @property
    def plot_x(self) -> int:
        return self.seq

    @property
    def series(self) -> str:
        """Everything but the sequence length: one line per batch, heads, head size, mask and precision."""
        heads = f"{self.heads}" if self.kv_heads == self.heads else f"{self.heads}/{self.kv_heads}"
        rest = f"B={self.batch} H={heads} D={self.head_dim}" + (" causal" if self.causal else "")
        return f"{rest} {self.tag}" if self.tag else rest

    def record(self) -> dict[str, object]:
        return {"batch": self.batch, "heads": self.heads, "kv_heads": self.kv_heads, "seq": self.seq,
                "head_dim": self.head_dim, "causal": self.causal, "dtype": str(self.dtype),
                "layout": str(self.layout)}

    def array_dims(self) -> dict[str, tuple[int, ...]]:
        q = (self.batch, self.heads, self.seq, self.head_dim)
        kv = (self.batch, self.kv_heads, self.seq, self.head_dim)
        return {"Q": q, "K": kv, "V": kv, "O": q}

    def dims(self) -> dict[str, int]:
        """What kernels and launch expressions may name: B, H, H_kv, S, D, causal (0 or 1), GROUP (H / H_kv)."""
        return {"B": self.batch, "H": self.heads, "H_kv": self.kv_heads, "S": self.seq, "D": self.head_dim,
                "causal": int(self.causal), "GROUP": self.group}


# --- the error model ------------------------------------------------------------------------------------------


def p_roundoff(dtype: DType) -> float:
    """The unit roundoff of the type P is rounded to before P·V: the inputs' storage type (e4m3 for fp8)."""
    return float(ml_dtypes.finfo(PRECISIONS[dtype].storage).eps) / 2


def error_model(shape: AttentionShape) -> float:
    """The largest rel_err a correct kernel may have (the module docstring derives it)."""
    p = PRECISIONS[shape.dtype]
    n = shape.output_elems
    c_out = dtypes.C_OUT + dtypes.C_OUT_FEW * min(1.0, math.sqrt(dtypes.FEW / n))
    model = (c_out * p.u_out + dtypes.C_OUT * p_roundoff(shape.dtype)
             + dtypes.C_ACC * p.u_acc * (math.sqrt(shape.seq) + math.sqrt(shape.head_dim))
             + dtypes.C_MATH * p.u_math)
    return max(p.floor, model)


# --- the arithmetic, for any array module xp (NumPy on the CPU, CuPy on the GPU) --------------------------------


def _heads(shape: AttentionShape):
    """(b, h, the key/value head h reads) for every query head."""
    for b in range(shape.batch):
        for h in range(shape.heads):
            yield b, h, h // shape.group


def reference(xp, shape: AttentionShape, values: dict, dtype="float64") -> dict:
    """O in float64, a block of query rows at a time (CHUNK_BYTES of scores); causal blocks read only the keys
    their rows may see."""
    q, k, v = (values[n].astype(dtype, copy=False) for n in ("Q", "K", "V"))
    s_len, scale = shape.seq, 1.0 / math.sqrt(shape.head_dim)
    o = xp.empty(shape.array_dims()["O"], dtype=dtype)
    rows = max(1, CHUNK_BYTES // (8 * s_len))
    for b, h, kv in _heads(shape):
        for r0 in range(0, s_len, rows):
            r1 = min(s_len, r0 + rows)
            keys = r1 if shape.causal else s_len
            s = (q[b, h, r0:r1] @ k[b, kv, :keys].T) * scale
            if shape.causal:
                s[xp.arange(keys)[None, :] > xp.arange(r0, r1)[:, None]] = -xp.inf
            s -= s.max(axis=1, keepdims=True)
            p = xp.exp(s)
            p /= p.sum(axis=1, keepdims=True)
            o[b, h, r0:r1] = p @ v[b, kv, :keys]
    return {"O": o}


def rounded_p(dtype: DType):
    """P as a kernel hands it to the P·V product: rounded to the inputs' type. fp8 scales P by e4m3's largest
    value first (cuDNN's scale of S), so that small probabilities keep e4m3's relative precision."""
    storage = PRECISIONS[dtype].storage
    if storage is np.float32:
        return lambda p: p
    if PRECISIONS[dtype].scaled:
        return lambda p: (p * FP8_MAX).astype(storage).astype(np.float32) / FP8_MAX
    return lambda p: p.astype(storage).astype(np.float32)


def flash(xp, shape: AttentionShape, values: dict, dtype="float32", running_max: bool = True) -> dict:
    """FlashAttention-2's loop in `dtype`: for each head and block of BLOCK queries, blocks of BLOCK keys with a
    running maximum m and sum ℓ (the accumulator rescaled by exp(m_old − m_new) as the maximum grows), P rounded to
    the inputs' type before P·V, O = acc / ℓ. Causal: the key blocks past a query block's last row are never
    visited, and the diagonal block is masked. `running_max=False` is the fault of a kernel without the maximum
    (exp of the raw scores overflows a 16-bit P once a logit passes 11)."""
    q, k, v = (values[n].astype(dtype, copy=False) for n in ("Q", "K", "V"))
    s_len, scale = shape.seq, np.float32(1.0 / math.sqrt(shape.head_dim))
    round_p = rounded_p(shape.dtype)
    o = xp.empty(shape.array_dims()["O"], dtype=dtype)
    for b, h, kv in _heads(shape):
        for i0 in range(0, s_len, BLOCK):
            i1 = min(s_len, i0 + BLOCK)
            m = xp.full((i1 - i0, 1), -xp.inf, dtype=dtype)
            ell = xp.zeros((i1 - i0, 1), dtype=dtype)
            acc = xp.zeros((i1 - i0, shape.head_dim), dtype=dtype)
            for j0 in range(0, i1 if shape.causal else s_len, BLOCK):
                j1 = min(s_len, j0 + BLOCK)
                s = (q[b, h, i0:i1] @ k[b, kv, j0:j1].T) * scale
                if shape.causal and j1 > i0:  # the diagonal block
                    s = xp.where(xp.arange(j0, j1)[None, :] > xp.arange(i0, i1)[:, None], -xp.inf, s)
                m_new = xp.maximum(m, s.max(axis=1, keepdims=True)) if running_max else xp.zeros_like(m)
                p = xp.exp(s - m_new)
                alpha = xp.exp(m - m_new)  # 0 at the first block (m = -inf); 1 without a running maximum
                ell = ell * alpha + p.sum(axis=1, keepdims=True)
                acc = acc * alpha + round_p(p) @ v[b, kv, j0:j1]
                m = m_new
            o[b, h, i0:i1] = acc / ell
    return {"O": o}


# --- problems -------------------------------------------------------------------------------------------------


def problems(values: dict, where: str, strict: bool):
    """Every batch × heads × kv_heads × seq × head_dim × causal; `tokens` fixes B·S instead of the batch (B =
    tokens / S for each S). A combination that cannot be (kv_heads not dividing heads, S not dividing tokens) is an
    error on the command line and left out with the reason in a suite."""
    flags = {p.name: p.flag for p in OP.params}

    def at(key: str) -> str:
        return flags[key] if strict else f"{where}.{key}"

    def ints(key, lo=1):
        return params.ints(values[key], at(key), example="1,2", lo=lo) if key in values else None

    seqs = ints("seq") or DEFAULTS["seq"]
    heads = ints("heads") or DEFAULTS["heads"]
    kv_heads = ints("kv_heads")
    head_dims = ints("head_dim") or DEFAULTS["head_dim"]
    causal = values.get("causal", DEFAULTS["causal"])
    causal = (causal,) if isinstance(causal, bool) else ints("causal", lo=0) or DEFAULTS["causal"]
    if any(c not in (0, 1) for c in causal):
        raise GpubenchError(f"{at('causal')} takes 0 (full attention), 1 (causal) or both, got {causal}")
    tokens = params.one_int(values["tokens"], at("tokens")) if values.get("tokens") is not None else None
    if tokens is not None and "batch" in values:
        raise GpubenchError(f"{at('tokens')} sets the batch (tokens / seq): give it or {at('batch')}, not both")
    batches = ints("batch") or DEFAULTS["batch"]
    shapes, skipped = [], []
    for s in seqs:
        for b in ([tokens // s] if tokens is not None else batches):
            for h in heads:
                for hkv in (kv_heads or (h,)):
                    for d in head_dims:
                        for c in causal:
                            try:
                                if tokens is not None and (tokens % s or not b):
                                    raise GpubenchError(f"seq {s} does not divide tokens {tokens}")
                                shapes.append(AttentionShape(b, h, hkv, s, d, bool(c)))
                            except GpubenchError as e:
                                if strict:
                                    raise
                                skipped.append((f"{values.get('name', where)}: seq {s} heads {h}/{hkv}", str(e)))
    return list(dict.fromkeys(shapes)), skipped


DEFAULTS = {"batch": (1,), "heads": (16,), "seq": (1024, 2048, 4096), "head_dim": (128,), "causal": (0,)}

OP = OpDef(
    rank=2,
    name="attention",
    summary="O[B,H,S,D] = softmax(Q·Kᵀ/√D, causal or not)·V, K and V of [B,H_kv,S,D]",
    noun="attention",
    shape=AttentionShape,
    arrays=(Array("Q", scale="Q_scale"), Array("K", scale="K_scale"), Array("V", scale="V_scale"),
            Array("O", output=True)),
    dims=("B", "H", "H_kv", "S", "D", "causal", "GROUP"),
    reference=reference,
    params=(Param("seq", ParamKind.INTS, "Sequence lengths S, comma-separated", default=DEFAULTS["seq"]),
            Param("batch", ParamKind.INTS, "Batch sizes B, comma-separated", default=DEFAULTS["batch"],
                  note=" (none with --tokens)"),
            Param("heads", ParamKind.INTS, "Query heads H, comma-separated", default=DEFAULTS["heads"]),
            Param("kv_heads", ParamKind.INTS, "Key/value heads H_kv (grouped-query attention: each divides H), "
                  "comma-separated", note="; default: H, multi-head attention"),
            Param("head_dim", ParamKind.INTS, "Head sizes D, comma-separated", default=DEFAULTS["head_dim"]),
            Param("causal", ParamKind.INTS, "0 (full attention), 1 (causal) or 0,1", default=DEFAULTS["causal"]),
            Param("tokens", ParamKind.INT, "Tokens per batch B·S: the batch is tokens / S for each S (FlashAttention's "
                  "B·S = 16k)", default=None)),
    problems=problems,
    sample=AttentionShape(2, 6, 2, 1000, 128, causal=True),
    table=TableLayout("cuDNN SDPA", "speed vs library", lambda r: f"{r:.2f}×"),
    baselines={"cudnn-sdpa": "cuDNN SDPA"},
    command_help="""Sweep attention (forward) variants over sequence lengths; verify, time, tabulate, save.

    \b
    Examples:
      gpubench attention --seq 4096,8192,16384 --tokens 16384 --heads 16 --causal 0,1 --dtype fp16,bf16
      gpubench attention --seq 1024,4096 --heads 32 --kv-heads 8 --causal 1 --dtype bf16
      gpubench attention --backend cpu --seq 100,256 --heads 4 --kv-heads 2 --head-dim 32 --causal 0,1
    """,
    kernel_args="Q,K,V,O,B,H,H_kv,S,D,causal",
    kernel_args_help="--kernel's parameter order. Default Q,K,V,O,B,H,H_kv,S,D,causal (Q and O are B×H×S×D, K and "
                     "V B×H_kv×S×D, causal 0 or 1).",
    kernel_grid=("cdiv(S, BLOCK_SIZE)", "B * H"),
    emulations={"numpy": flash},
    error_model=error_model,
)
