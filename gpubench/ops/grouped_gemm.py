"""Grouped GEMM for mixture-of-experts: G groups D_g[M_g, N] = A_g[M_g, K] · B_g[N, K]ᵀ, in DeepGEMM's two layouts.

Every group shares N and K (an expert's weights B_g are N×K, K-contiguous, as DeepGEMM's `nt` reads them); the
groups differ in their rows M_g (the tokens routed to each expert). Two layouts of A and D:

- **contiguous** (prefill, training): the groups' rows stacked along M in one A of [M, K], each group's run
  starting at a multiple of :data:`ALIGN` rows (DeepGEMM's M alignment on SM90); the pad rows between runs are
  zeros and belong to no group. D is [M, N].
- **masked** (decode, under a CUDA graph that cannot know the counts): A is [G, M_max, K], group g's first
  count_g rows valid. D is [G, M_max, N].

A variant receives, besides A, B and D: `groups` (each row's group, -1 for a row of none: DeepGEMM's m_indices),
`counts` (each group's rows: DeepGEMM's masked_m) and `offsets` (each group's first row and, last, the rows in all:
torch._grouped_mm's offsets are offsets[1:], where each group's run ends). Rows of no group (pad rows, rows past a
count) need not be written: the reference marks them NaN and they are left out of rel_err.

Precisions: bf16 (and fp16, fp32) as they are; fp8 e4m3 with float32 scales, which each layout comes in twice:
per-tensor (`contiguous`, `masked`: SA and SB hold one scale each) and block-scaled (`contiguous-block`,
`masked-block`: SA [⌈K/128⌉, rows] one scale per row and 128 K, SB [G, ⌈N/128⌉, ⌈K/128⌉] one per 128×128 block,
DeepGEMM's recipe). SA is row-major per K block, as DeepGEMM takes it ("transposed"): a tile's rows' scales for
one K block lie side by side, so a kernel reads them in whole sectors. The scales are operands lying in memory beside A and B, hence layouts. A value stands for
stored × its scale; the float64 reference applies the scales exactly. G = 1 in a block layout is the dense
block-scaled FP8 GEMM.

Inputs are drawn (:func:`draw`) with a magnitude of its own for each scale block, 2^u with u uniform in
[-MAGNITUDE_OCTAVES, MAGNITUDE_OCTAVES], as activations with outliers are: the block scales then differ, so a
scale applied to the wrong block errs by order 1. The error model is the dot product's over K
(core/dtypes.py). Flops count the valid rows: 2·ΣM_g·N·K.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Mapping

import numpy as np

from gpubench.core.dtypes import FP8_MAX, PRECISIONS, DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import params
from gpubench.ops.base import (MAX_DIM, Array, OpDef, Param, ParamKind, Shape, Storage, TableLayout, enum_field,
                               positive)

ALIGN = 128  # rows: a contiguous group's run starts at a multiple of this (DeepGEMM's M alignment on SM90)
SCALE_BLOCK = 128  # a 1×128 run of an A row, a 128×128 tile of B: one scale each in the block layouts
MAGNITUDE_OCTAVES = 3  # each scale block's values are drawn at 2^u, u in [-3, 3]
MAX_GROUPS = 1 << 16  # groups a problem may have (MoE layers have up to a few hundred experts)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class GroupedLayout(StrEnum):
    """How A and D lie (groups stacked along M, or one padded slab per group) and how fp8's scales do."""

    CONTIGUOUS = "contiguous"  # A [M, K]: runs aligned to ALIGN rows; per-tensor scales
    MASKED = "masked"  # A [G, M_max, K]: the first count_g rows of each slab; per-tensor scales
    CONTIGUOUS_BLOCK = "contiguous-block"  # contiguous, 1×128 scales of A and 128×128 scales of B
    MASKED_BLOCK = "masked-block"  # masked, the same block scales

    @property
    def masked(self) -> bool:
        return self in (GroupedLayout.MASKED, GroupedLayout.MASKED_BLOCK)

    @property
    def block_scaled(self) -> bool:
        return self in (GroupedLayout.CONTIGUOUS_BLOCK, GroupedLayout.MASKED_BLOCK)


@dataclass(frozen=True)
class GroupedShape(Shape):
    """G groups of rows group_m, each times its own N×K weights, in a precision and a layout."""

    group_m: tuple[int, ...]
    n: int
    k: int
    m_max: int = 0  # masked: the rows each group's slab holds (0: the largest group's, aligned up to ALIGN)
    dtype: DType = DType.FP32
    layout: GroupedLayout = GroupedLayout.CONTIGUOUS

    op: ClassVar[str] = "grouped-gemm"
    LAYOUT: ClassVar[type[GroupedLayout]] = GroupedLayout
    DEFAULT_LAYOUT: ClassVar[GroupedLayout] = GroupedLayout.CONTIGUOUS
    KEYS: ClassVar[tuple[str, ...]] = ("group_m", "n", "k", "m_max", "dtype", "layout")
    PLOT_AXIS: ClassVar[str] = "rows per group M"

    def __post_init__(self):
        m = self.group_m
        if not isinstance(m, (tuple, list)) or not 1 <= len(m) <= MAX_GROUPS or not sum(m) \
                or any(type(x) is not int or not 0 <= x <= MAX_DIM for x in m):
            raise GpubenchError(f"a grouped GEMM: group_m must list each group's rows (1 to {MAX_GROUPS} groups, 0 "
                                f"or more rows each, some rows in all), got {m!r:.60}")
        object.__setattr__(self, "group_m", tuple(m))
        positive("a grouped GEMM", n=self.n, k=self.k)
        if type(self.m_max) is not int or (self.m_max and self.m_max < max(m)):
            raise GpubenchError(f"a grouped GEMM: m_max {self.m_max!r:.20} must hold the largest group's "
                                f"{max(m)} rows (or be 0: that, aligned to {ALIGN})")
        enum_field(self, "dtype", DType)
        enum_field(self, "layout", GroupedLayout)

    @property
    def groups(self) -> int:
        return len(self.group_m)

    @property
    def capacity(self) -> int:
        """Rows of each group's slab in the masked layouts."""
        return self.m_max or cdiv(max(self.group_m), ALIGN) * ALIGN

    @property
    def offsets(self) -> tuple[int, ...]:
        """Each group's first row in A's rows (as a [rows, K] matrix), and the rows in all."""
        runs = [self.capacity] * self.groups if self.layout.masked else [cdiv(m, ALIGN) * ALIGN for m in self.group_m]
        return (0, *itertools.accumulate(runs))

    @property
    def rows(self) -> int:
        return self.offsets[-1]

    @property
    def valid_rows(self) -> int:
        return sum(self.group_m)

    @property
    def flops(self) -> float:
        return 2.0 * self.valid_rows * self.n * self.k

    @property
    def reduction(self) -> int:
        return self.k

    @property
    def output_elems(self) -> int:
        return self.valid_rows * self.n

    @property
    def min_bytes(self) -> float:
        p = PRECISIONS[self.dtype]
        scales = self.valid_rows * cdiv(self.k, SCALE_BLOCK) + self.groups * cdiv(self.n, SCALE_BLOCK) * cdiv(
            self.k, SCALE_BLOCK) if self.layout.block_scaled else 2
        return p.in_bytes * (self.valid_rows + self.groups * self.n) * self.k + p.out_bytes * self.output_elems \
            + 4 * scales

    @property
    def label(self) -> str:
        m = self.group_m
        rows = str(m[0]) if len(set(m)) == 1 else f"[{min(m)}-{max(m)}]"
        room = f" of {self.capacity}" if self.layout.masked and self.m_max else ""
        return f"{self.groups}x{rows}{room}x{self.n}x{self.k}"

    @property
    def plot_x(self) -> int | None:
        return self.group_m[0] if len(set(self.group_m)) == 1 else None

    @property
    def series(self) -> str | None:
        if self.plot_x is None:
            return None
        rest = f"G={self.groups} N={self.n} K={self.k}"
        return f"{rest} {self.tag}" if self.tag else rest

    def record(self) -> dict[str, object]:
        return {"group_m": list(self.group_m), "n": self.n, "k": self.k, "m_max": self.m_max,
                "dtype": str(self.dtype), "layout": str(self.layout)}

    @classmethod
    def from_record(cls, r: Mapping[str, object]) -> GroupedShape:
        m = r.get("group_m")
        return cls(**{**r, "group_m": tuple(m) if isinstance(m, list) else m})

    def array_dims(self) -> dict[str, tuple[int, ...]]:
        g, n, k, kb = self.groups, self.n, self.k, cdiv(self.k, SCALE_BLOCK)
        lead = (g, self.capacity) if self.layout.masked else (self.rows,)
        block = self.layout.block_scaled
        return {"A": (*lead, k), "B": (g, n, k), "D": (*lead, n),
                "SA": (kb, *lead) if block else (1,), "SB": (g, cdiv(n, SCALE_BLOCK), kb) if block else (1,),
                "groups": (self.rows,), "counts": (g,), "offsets": (g + 1,)}

    def dims(self) -> dict[str, int]:
        """G, M (A's rows all told), M_max (a slab's rows, masked), N, K and the scale blocks NB, KB."""
        return {"G": self.groups, "M": self.rows, "M_max": self.capacity, "N": self.n, "K": self.k,
                "NB": cdiv(self.n, SCALE_BLOCK), "KB": cdiv(self.k, SCALE_BLOCK)}


# --- inputs, reference and the CPU's variant ------------------------------------------------------------------


def structure(shape: GroupedShape) -> dict[str, np.ndarray]:
    """groups, counts and offsets as the problem defines them (int32)."""
    rows = np.full(shape.rows, -1, dtype=np.int32)
    for g, (start, m) in enumerate(zip(shape.offsets, shape.group_m)):
        rows[start:start + m] = g
    return {"groups": rows, "counts": np.array(shape.group_m, dtype=np.int32),
            "offsets": np.array(shape.offsets, dtype=np.int32)}


def _blocks(x: np.ndarray, block_rows: int) -> np.ndarray:
    """x [..., R, C] viewed per scale block: [..., ⌈R/block_rows⌉, ⌈C/128⌉] of the block's largest magnitude."""
    *lead, r, c = x.shape
    pr, pc = cdiv(r, block_rows) * block_rows, cdiv(c, SCALE_BLOCK) * SCALE_BLOCK
    padded = np.zeros((*lead, pr, pc), dtype=x.dtype)
    padded[..., :r, :c] = np.abs(x)
    return padded.reshape(*lead, pr // block_rows, block_rows, pc // SCALE_BLOCK, SCALE_BLOCK).max(axis=(-3, -1))


def _expand(scales, rows: int, cols: int, block_rows: int, xp=np):
    """Block scales [..., R/b, C/128] repeated over their blocks: [..., rows, cols]."""
    out = xp.repeat(xp.repeat(scales, block_rows, axis=-2), SCALE_BLOCK, axis=-1)
    return out[..., :rows, :cols]


def _quantized(x: np.ndarray, dtype: DType, block_rows: int | None):
    """(stored, scales): x rounded to the precision, with per-block (block_rows × 128) or per-tensor scales where
    the precision is scaled (fp8's amax / 448: no value overflows e4m3), else scale 1."""
    p = PRECISIONS[dtype]
    top = FP8_MAX if p.scaled else 1.0
    if block_rows is None:
        amax = float(np.abs(x).max()) if p.scaled else top
        scale = np.array([amax / top if amax else 1.0], dtype=np.float32)
        return (x / scale[0]).astype(p.storage), scale
    scales = (_blocks(x, block_rows) / top).astype(np.float32)
    scales[scales == 0] = 1.0
    return (x / _expand(scales, x.shape[-2], x.shape[-1], block_rows)).astype(p.storage), scales


def draw(rng: np.random.Generator, shape: GroupedShape) -> dict[str, np.ndarray]:
    """The op's inputs (OpDef.draw): values at a magnitude of their own per scale block, zeros in rows of no group,
    rounded to the precision with their scales; and the problem's groups, counts and offsets."""
    s = structure(shape)
    kb, nb = cdiv(shape.k, SCALE_BLOCK), cdiv(shape.n, SCALE_BLOCK)

    def octaves(*dims):
        return np.exp2(rng.uniform(-MAGNITUDE_OCTAVES, MAGNITUDE_OCTAVES, dims)).astype(np.float32)

    a = (rng.random((shape.rows, shape.k), dtype=np.float32) * 2 - 1)
    a *= _expand(octaves(shape.rows, kb), shape.rows, shape.k, 1)
    a[s["groups"] < 0] = 0
    b = (rng.random((shape.groups, shape.n, shape.k), dtype=np.float32) * 2 - 1)
    b *= _expand(octaves(shape.groups, nb, kb), shape.n, shape.k, SCALE_BLOCK)
    block = shape.layout.block_scaled
    a, sa = _quantized(a, shape.dtype, 1 if block else None)
    b, sb = _quantized(b, shape.dtype, SCALE_BLOCK if block else None)
    dims = shape.array_dims()
    if block:  # [rows, KB] as drawn: each K block's scales side by side
        sa = np.ascontiguousarray(sa.T)
    return {"A": a.reshape(dims["A"]), "B": b, "SA": sa.reshape(dims["SA"]), "SB": sb, **s}


def _rows(x, width: int):
    return x.reshape(-1, width)


def dequantized_a(xp, shape: GroupedShape, a, sa, start: int, stop: int):
    """Rows start:stop of A (as [rows, K]) times their scales."""
    rows = _rows(a, shape.k)[start:stop]
    if shape.layout.block_scaled:
        return rows * _expand(sa.reshape(cdiv(shape.k, SCALE_BLOCK), -1).T[start:stop], stop - start, shape.k, 1, xp)
    return rows * sa.reshape(-1)[0]


def dequantized_b(xp, shape: GroupedShape, b, sb, g: int):
    if shape.layout.block_scaled:
        return b[g] * _expand(sb[g], shape.n, shape.k, SCALE_BLOCK, xp)
    return b[g] * sb.reshape(-1)[0]


def reference(xp, shape: GroupedShape, values: dict, dtype="float64") -> dict:
    """D in float64 from the inputs as stored and their scales, one group at a time, over the rows the problem
    gives each group; rows of no group are NaN (unchecked)."""
    a, b, sa, sb = (values[n].astype(dtype, copy=False) for n in ("A", "B", "SA", "SB"))
    d = xp.full((shape.rows, shape.n), xp.nan, dtype=dtype)
    for g, (start, m) in enumerate(zip(shape.offsets, shape.group_m)):
        if m:
            d[start:start + m] = dequantized_a(xp, shape, a, sa, start, start + m) @ dequantized_b(xp, shape, b,
                                                                                                   sb, g).T
    return {"D": d.reshape(shape.array_dims()["D"])}


def emulation(xp, shape: GroupedShape, values: dict, dtype="float32") -> dict:
    """The CPU's variant: the reference's arithmetic in float32, reading each group's rows from the `offsets` and
    `counts` it is given (as a kernel does); rows of no group are written as zeros."""
    a, b, sa, sb = (values[n].astype(dtype, copy=False) for n in ("A", "B", "SA", "SB"))
    offsets, counts = values["offsets"].astype(int), values["counts"].astype(int)
    d = xp.zeros((shape.rows, shape.n), dtype=dtype)
    for g in range(shape.groups):
        start, stop = int(offsets[g]), int(offsets[g] + counts[g])
        d[start:stop] = dequantized_a(xp, shape, a, sa, start, stop) @ dequantized_b(xp, shape, b, sb, g).T
    return {"D": d.reshape(shape.array_dims()["D"])}


# --- problems -------------------------------------------------------------------------------------------------


def problems(values: dict, where: str, strict: bool):
    """groups × m × n × k with every group of m rows, then each explicit list of group rows (group_m) × n × k."""
    flags = {p.name: p.flag for p in OP.params}

    def at(key: str) -> str:
        return flags[key] if strict else f"{where}.{key}"

    def ints(key, lo=1):
        return params.ints(values[key], at(key), example="4096,8192", lo=lo) if key in values else DEFAULTS.get(key)

    given = values.get("group_m") or ()
    if isinstance(given, list) and given and all(isinstance(v, int) for v in given):
        given = [given]  # a suite's one list of rows, not a list of lists
    lists = [_group_list(v, at("group_m")) for v in given]
    groups = ints("groups")
    if max(groups) > MAX_GROUPS:
        raise GpubenchError(f"{at('groups')}: {max(groups)} groups; at most {MAX_GROUPS}")
    equal = [] if lists and "m" not in values else [(m,) * g for g in groups for m in ints("m")]
    m_max = params.one_int(values["m_max"], at("m_max")) if values.get("m_max") is not None else 0
    shapes = [GroupedShape(gm, n, k, m_max) for gm in [*equal, *lists] for n in ints("n") for k in ints("k")]
    return list(dict.fromkeys(shapes)), []


def _group_list(value, where: str) -> tuple[int, ...]:
    """One group_m: "4000,4100,3900" (the command line) or [4000, 4100, 3900] (a suite); groups may repeat a size."""
    if not isinstance(value, str):
        return tuple(params.toml_ints(value, where, lo=0))
    items = [t.strip() for t in value.split(",")]
    if not all(items):
        raise GpubenchError(f"{where} {value!r:.60}: give each group's rows, comma-separated, e.g. 4000,4100,3900")
    return tuple(params.int_list(item, where, lo=0, example="4000,4100,3900")[0] for item in items)


DEFAULTS = {"groups": (4,), "m": (4096,), "n": (4096,), "k": (7168,)}

OP = OpDef(
    rank=3,
    name="grouped-gemm",
    summary="D_g[M_g,N] = A_g[M_g,K]·B_g[N,K]ᵀ for G groups (MoE experts), contiguous or masked",
    noun="grouped GEMM",
    shape=GroupedShape,
    arrays=(Array("A"), Array("B"), Array("SA", storage=Storage.FLOAT32), Array("SB", storage=Storage.FLOAT32),
            Array("groups", storage=Storage.INT32), Array("counts", storage=Storage.INT32),
            Array("offsets", storage=Storage.INT32), Array("D", output=True)),
    dims=("G", "M", "M_max", "N", "K", "NB", "KB"),
    reference=reference,
    params=(Param("groups", ParamKind.INTS, "Groups G (experts), comma-separated", default=DEFAULTS["groups"]),
            Param("m", ParamKind.INTS, "Rows per group M_g, every group alike, comma-separated", default=DEFAULTS["m"],
                  note=" (none with --group-m)"),
            Param("group_m", ParamKind.TRIPLES, "Each group's rows, comma-separated: one problem (repeatable)."),
            Param("n", ParamKind.INTS, "N, comma-separated", default=DEFAULTS["n"]),
            Param("k", ParamKind.INTS, "K, comma-separated", default=DEFAULTS["k"]),
            Param("m_max", ParamKind.INT, "Rows of each group's slab in the masked layouts (default: the largest "
                  f"group's, aligned to {ALIGN})", default=None)),
    problems=problems,
    sample=GroupedShape((300, 0, 1000), 4000, 1000),
    table=TableLayout("library", "speed vs library", lambda r: f"{r:.2f}×"),
    baselines={"library": "torch._grouped_mm, or a cuBLAS loop"},
    command_help="""Sweep grouped GEMM variants (MoE experts); verify, time, tabulate, save.

    \b
    Examples:
      gpubench grouped-gemm --groups 4,8 --m 4096 --n 4096 --k 7168 --dtype bf16
      gpubench grouped-gemm --groups 4 --m 8192 --n 4096 --k 7168 --dtype fp8 --layout contiguous-block
      gpubench grouped-gemm --group-m 1000,0,3000 --n 512 --k 256 --layout contiguous,masked --backend cpu
    """,
    kernel_args="A,B,D,SA,SB,groups,counts,offsets,G,M,N,K",
    kernel_args_help="--kernel's parameter order. Default A,B,D,SA,SB,groups,counts,offsets,G,M,N,K.",
    kernel_grid=("cdiv(N, BLOCK_SIZE)", "cdiv(M, BLOCK_SIZE)"),
    emulations={"numpy": emulation},
    draw=draw,
    unchecked=True,
)
