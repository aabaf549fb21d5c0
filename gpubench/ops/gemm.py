"""GEMM: C[M,N] = A[M,K] · B[K,N], in a precision and a memory layout.

The lab's first problem. Kernels live in cuda_src/gemm/ (their reading order), the library baseline is cuBLAS
(cuBLASLt for fp8 and int8). Plots and tables rate it in GFLOPS; the lab's own naming of the operands (c[m,k] =
a[m,n] · b[n,k]) is accepted in a kernel's argument list beside gpubench's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.ops import params
from gpubench.ops.base import LAB_SIZES, Array, OpDef, Param, ParamKind, Shape, TableLayout, enum_field, positive


class GemmLayout(StrEnum):
    """Which GEMM operands are stored transposed. C[M,N] = A[M,K]·B[K,N], all row-major unless transposed:
    the first letter is A's, the second B's; `t` stores the operand as its transpose (A as K×M, B as N×K)."""

    NN = "nn"  # A is M×K, B is K×N (the lab's)
    NT = "nt"  # A is M×K, B is stored N×K: both K-contiguous, what tensor cores read best
    TN = "tn"  # A is stored K×M, B is K×N

    @property
    def a_transposed(self) -> bool:
        return self.value[0] == "t"

    @property
    def b_transposed(self) -> bool:
        return self.value[1] == "t"


@dataclass(frozen=True)
class GemmShape(Shape):
    """C[M,N] = A[M,K] · B[K,N] in a precision (fp32 by default), row-major unless the layout transposes an operand."""

    m: int
    n: int
    k: int
    dtype: DType = DType.FP32
    layout: GemmLayout = GemmLayout.NN

    op: ClassVar[str] = "gemm"
    LAYOUT: ClassVar[type[GemmLayout]] = GemmLayout
    DEFAULT_LAYOUT: ClassVar[GemmLayout] = GemmLayout.NN
    KEYS: ClassVar[tuple[str, ...]] = ("m", "n", "k", "dtype", "layout")  # a saved point's problem record
    ROW_HEADERS: ClassVar[tuple[str, ...]] = ("size",)
    PLOT_AXIS: ClassVar[str] = "matrix size N (N×N×N)"

    def __post_init__(self):
        positive("a GEMM", m=self.m, n=self.n, k=self.k)
        enum_field(self, "dtype", DType)
        enum_field(self, "layout", GemmLayout)

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
    def label(self) -> str:
        if self.m == self.n == self.k:
            return str(self.m)
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def plot_x(self) -> int | None:
        """The x a size plot puts this problem at; None where it is not square (no shared axis)."""
        return self.m if self.m == self.n == self.k else None

    @property
    def series(self) -> str | None:
        """Square GEMMs are one series; any other shape is a point of its own (None)."""
        if self.plot_x is None:
            return None
        return f"N×N×N {self.tag}" if self.tag else "N×N×N"

    def record(self) -> dict[str, object]:
        """The problem as a results file keeps it (KEYS)."""
        return {"m": self.m, "n": self.n, "k": self.k, "dtype": str(self.dtype), "layout": str(self.layout)}

    def array_dims(self) -> dict[str, tuple[int, ...]]:
        """Each array's dimensions as it lies in memory (row-major), by its spec name."""
        a = (self.k, self.m) if self.layout.a_transposed else (self.m, self.k)
        b = (self.n, self.k) if self.layout.b_transposed else (self.k, self.n)
        return {"A": a, "B": b, "C": (self.m, self.n)}

    def dims(self) -> dict[str, int]:
        """The values of the op's dims and of the lab's names, for kernel arguments and launch expressions."""
        return {"M": self.m, "N": self.n, "K": self.k, "m": self.m, "n": self.k, "k": self.n}


def reference(xp, shape: GemmShape, values: dict, dtype="float64") -> dict:
    """C = A·B in `dtype` (float64: the reference; float32: the CPU's own variant), from the inputs as stored (a
    transposed operand read as its transpose). C is row-major in every layout."""
    a, b = values["A"], values["B"]
    a = a.T if shape.layout.a_transposed else a
    b = b.T if shape.layout.b_transposed else b
    return {"C": xp.matmul(a.astype(dtype, copy=False), b.astype(dtype, copy=False))}


def problems(values: dict, where: str, strict: bool):
    """Square sizes, then M,N,K triples; each problem once (a triple that repeats a size is not measured twice).
    The command line's default is the lab's sizes (none when --mnk is given); a suite gives its own."""
    sizes = values.get("sizes")
    mnk = params.triples(values.get("mnk"), _where(where, "mnk", strict))
    if sizes is None:
        sizes = () if (mnk or not strict) else LAB_SIZES
    empty = isinstance(sizes, (list, tuple)) and not sizes  # the API's sizes=(): none, only the triples
    sizes = () if empty else params.ints(sizes, _where(where, "sizes", strict), example="512,1024,2048")
    return list(dict.fromkeys([GemmShape(s, s, s) for s in sizes] + [GemmShape(*t) for t in mnk])), []


def _where(where: str, key: str, strict: bool) -> str:
    return "--" + key if strict else f"{where}.{key}"


OP = OpDef(
    rank=0,
    name="gemm",
    summary="C[M,N] = A[M,K]·B[K,N]",
    noun="GEMM",
    shape=GemmShape,
    arrays=(Array("A", scale="A_scale"), Array("B", scale="B_scale"), Array("C", output=True)),
    dims=("M", "N", "K"),
    reference=reference,
    params=(Param("sizes", ParamKind.INTS, "Square sizes, comma-separated", default=LAB_SIZES,
                  note=" (none with --mnk)"),
            Param("mnk", ParamKind.TRIPLES, "A non-square M,N,K (repeatable).")),
    problems=problems,
    sample=GemmShape(1000, 1500, 777),
    table=TableLayout("cuBLAS", "% of library", lambda r: f"{100 * r:.0f}%"),
    lab_names={"a": "A", "b": "B", "c": "C", "m": "M", "n": "K", "k": "N"},
    required_args=("M", "N", "K"),
    baselines={"cublas": "cuBLAS"},
    command_help="""Sweep GEMM variants over sizes and block sizes; verify, time, tabulate, save.

    \b
    Examples:
      gpubench gemm --sizes 512,1024,2048
      gpubench gemm --mnk 1000,1500,777 --variants tiled,cublas
      gpubench gemm --kernel my_lab.cu:gpu_matrix_mult_sm --sizes 1024,2048
      gpubench gemm --backend cpu --sizes 256
    """,
    kernel_args="a,b,c,m,n,k",
    kernel_args_help="--kernel's parameter order. Default a,b,c,m,n,k (the lab's: a is m×n, b is n×k); A,B,C,M,N,K "
                     "is gpubench's C[M,N] = A[M,K]·B[K,N].",
    kernel_grid=("cdiv(N, BLOCK_SIZE)", "cdiv(M, BLOCK_SIZE)"),
    emulations={"numpy": reference},
    matrices=("A", "B", "C"),
)
