"""Every benchmarked variant, declared as data.

The CLI, sweeps, tables, plots and tests all read this one list. A variant names the kernel file and symbol
it runs, the axis it sweeps (thread-block sizes or tile configurations), how its launch shape follows from a
configuration, and its accuracy tolerance. Adding a kernel means writing its ``.cu`` file and one entry here.

Kernel calling conventions (the backends pass these arguments, in this order):

* gemm kernels: ``(const float* A, const float* B, float* C, int M, int N, int K)``, row-major.
* conv kernels: ``(const float* x, const float* w, float* y, int N, int C, int H, int W, int K, int R, int S,
  int stride, int pad, int OH, int OW)``, NCHW.

The im2col runner feeds the GEMM variant named in its options, through that kernel's ``<kernel>_batched``
entry point: ``(A, B, C, M, N, K, long long stride_a, stride_b, stride_c)`` over blockIdx.z.

Every configuration parameter is also passed to nvcc as ``-DNAME=value``, so tile sizes are compile-time
constants in the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from gpubench.errors import GpubenchError
from gpubench.problems import ConvShape, GemmShape

LAB_BLOCK_SIZES = (8, 16, 24, 32)
MAX_BLOCK_SIZE = 32  # B×B threads; 32×32 = 1024 is CUDA's per-block limit

FP32_TOL = 1e-4  # ||out-ref||/||ref|| for FP32 FFMA arithmetic (observed errors are ~1e-7 to 1e-6)
TF32_TOL = 5e-3  # TF32 keeps 10 mantissa bits: errors land near 3e-4 for K in the thousands


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Config:
    """One point on a variant's own axis: the label shown in tables and the compile-time parameters."""

    label: str
    params: tuple[tuple[str, int], ...] = ()

    @property
    def values(self) -> dict[str, int]:
        return dict(self.params)


def block_config(b: int) -> Config:
    return Config(str(b), (("BLOCK", b),))


def tile_config(bm: int, bn: int, bk: int, tm: int, tn: int) -> Config:
    return Config(f"{bm}x{bn}x{bk}/{tm}x{tn}", (("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn)))


NO_CONFIG = Config("-")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Variant:
    name: str
    op: str  # "gemm" | "conv"
    backend: str  # "cuda" | "cpu"
    runner: str  # how the backend runs it: "kernel", "cublas", "im2col", "cudnn", "numpy", ...
    summary: str  # one line for `gpubench list` and the README: what the variant is and what it buys
    source: str | None = None  # file in cuda_src/
    kernel: str | None = None  # symbol in that file
    axis: str = "none"  # "block": configs come from --block-sizes; "tile": the fixed `configs`; "none": one row
    configs: tuple[Config, ...] = (NO_CONFIG,)
    launch: Callable[[object, dict], Launch] | None = None
    tolerance: float = FP32_TOL
    arch: str | None = None  # a fixed target such as "sm_90a" (wgmma); None = the device's own sm_XY
    lab: bool = True  # part of the default sweep
    baseline: bool = False  # the library that percentages and speed-ups are measured against
    options: dict = field(default_factory=dict)  # runner-specific settings (e.g. which GEMM im2col feeds)

    def configs_for(self, block_sizes: tuple[int, ...]) -> tuple[Config, ...]:
        """The configurations a sweep runs. A "tuned" variant has one, resolved per shape when it runs."""
        if self.axis == "block":
            return tuple(block_config(b) for b in block_sizes)
        return self.configs


# --- launch shapes -------------------------------------------------------------------------------------------


def _gemm_square_blocks(s: GemmShape, p: dict) -> Launch:
    # One thread per C element, x along N so that a warp reads consecutive columns of B and writes of C.
    b = p["BLOCK"]
    return Launch((cdiv(s.n, b), cdiv(s.m, b), 1), (b, b, 1))


def _gemm_tiles(s: GemmShape, p: dict) -> Launch:
    threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return Launch((cdiv(s.n, p["BN"]), cdiv(s.m, p["BM"]), 1), (threads, 1, 1))


def _conv_output_blocks(s: ConvShape, p: dict) -> Launch:
    b = p["BLOCK"]
    return Launch((cdiv(s.out_width, b), cdiv(s.out_height, b), s.batch * s.out_channels), (b, b, 1))


def _conv_implicit_tiles(s: ConvShape, p: dict) -> Launch:
    threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return Launch((cdiv(s.batch * s.out_pixels, p["BN"]), cdiv(s.out_channels, p["BM"]), 1), (threads, 1, 1))


def warp_config(bm, bn, bk, wm, wn, tm, tn, stages, swizzle=0, min_blocks=1) -> Config:
    label = f"{bm}x{bn}x{bk} w{wm}x{wn} t{tm}x{tn} s{stages}" + (f" g{swizzle}" if swizzle else "")
    label += f" b{min_blocks}" if min_blocks > 1 else ""
    names = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "STAGES", "SWIZZLE", "MIN_BLOCKS")
    return Config(label, tuple(zip(names, (bm, bn, bk, wm, wn, tm, tn, stages, swizzle, min_blocks))))


def warp_threads(p: dict) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _gemm_warptile(s: GemmShape, p: dict) -> Launch:
    # 1-D grid: the kernel maps block ids to tiles itself (optionally in L2-friendly bands).
    smem = 4 * p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"])  # transposed A (padded) + B per stage
    return Launch((cdiv(s.m, p["BM"]) * cdiv(s.n, p["BN"]), 1, 1), (warp_threads(p), 1, 1), smem)


def async_smem(p: dict) -> int:
    return 4 * p["STAGES"] * (p["BM"] * (p["BK"] + 4) + p["BK"] * p["BN"])  # row-major A (padded) + B per slot


def _gemm_async(s: GemmShape, p: dict) -> Launch:
    return Launch((cdiv(s.m, p["BM"]) * cdiv(s.n, p["BN"]), 1, 1), (warp_threads(p), 1, 1), async_smem(p))


def _conv_implicit_async(s: ConvShape, p: dict) -> Launch:
    tiles = cdiv(s.out_channels, p["BM"]) * cdiv(s.batch * s.out_pixels, p["BN"])
    return Launch((tiles, 1, 1), (warp_threads(p), 1, 1), async_smem(p) + 8 * s.gemm_k)  # + the k table


def _conv_window_tiles(s: ConvShape, p: dict) -> Launch:
    th, tw = p["TY"] * p["OY"], p["TX"] * p["OX"]
    window = ((th - 1) * s.stride + s.kernel) * ((tw - 1) * s.stride + s.kernel)
    return Launch((cdiv(s.out_width, tw), cdiv(s.out_height, th), s.batch * s.out_channels),
                  (p["TX"] * p["TY"], 1, 1), 4 * window)


def _conv_columns(s: ConvShape, p: dict) -> Launch:
    return Launch((cdiv(s.out_width, 32), cdiv(s.out_height, p["TY"] * p["OY"]), s.batch * s.out_channels),
                  (32 * p["TY"], 1, 1))


def _conv_vec_patches(s: ConvShape, p: dict) -> Launch:
    # 32×TY threads, each a 4-wide, OY-tall patch of one output plane.
    return Launch((cdiv(s.out_width, 128), cdiv(s.out_height, p["TY"] * p["OY"]), s.batch * s.out_channels),
                  (32 * p["TY"], 1, 1))


def column_config(ty, oy) -> Config:
    return Config(f"32x{ty} o{oy}", (("TY", ty), ("OY", oy)))


def window_config(tx, ty, ox, oy) -> Config:
    return Config(f"{tx}x{ty} o{ox}x{oy}", (("TX", tx), ("TY", ty), ("OX", ox), ("OY", oy)))


def _gemm_tf32(s: GemmShape, p: dict) -> Launch:
    # One warpgroup (128 threads) per 64 columns; STAGES × (A and B slices of 32 k) + 1 KB to align the swizzle.
    smem = p["STAGES"] * (p["BM"] * 32 * 4 + 32 * (p["BN"] + 8) * 4) + 1024
    return Launch((cdiv(s.n, p["BN"]), cdiv(s.m, p["BM"]), 1), (2 * p["BN"], 1, 1), smem)


def tf32_config(bm, bn, stages) -> Config:
    return Config(f"{bm}x{bn}x32 s{stages}", (("BM", bm), ("BN", bn), ("STAGES", stages)))


def valid_warp_config(p: dict, smem_limit: int = 227 * 1024) -> bool:
    """Whether gemm_warptile.cu compiles and launches these parameters (its static_asserts, shared memory)."""
    tx, ty = p["WN"] // p["TN"], p["WM"] // p["TM"]
    threads = warp_threads(p) if p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0 else 0
    a_vecs, b_vecs = p["BM"] * p["BK"] // 4, p["BK"] * p["BN"] // 4
    return (
        threads in (128, 256, 512) and tx * ty == 32 and p["WN"] % p["TN"] == 0 and p["WM"] % p["TM"] == 0
        and p["TM"] % 4 == 0 and p["TN"] % 4 == 0 and p["BK"] % 4 == 0 and p["TM"] * p["TN"] <= 128
        and a_vecs >= threads and a_vecs % threads == 0 and b_vecs >= threads and b_vecs % threads == 0
        and _gemm_warptile(GemmShape(1, 1, 1), p).shared_bytes <= smem_limit
    )


# What `gpubench tune gemm` searches for the `tuned` variant (gemm_warptile.cu, double-buffered), filtered by
# valid_warp_config.
SEARCH_SPACE = {
    "BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16), "WM": (32, 64, 128), "WN": (32, 64),
    "TM": (4, 8, 16), "TN": (4, 8), "STAGES": (2,), "SWIZZLE": (0, 4, 8, 16), "MIN_BLOCKS": (1, 2),
}

TILED_CONFIGS = (tile_config(128, 128, 8, 8, 8), tile_config(64, 64, 8, 4, 4))
WARPTILE = dict(bm=128, bn=128, bk=8, wm=64, wn=32, tm=8, tn=8)

VARIANTS: tuple[Variant, ...] = (
    # ---- GEMM on the GPU ----
    Variant(
        "global", "gemm", "cuda", "kernel",
        "one thread per C element; A and B read straight from global memory",
        source="gemm_global.cu", kernel="gemm_global", axis="block", launch=_gemm_square_blocks,
    ),
    Variant(
        "shared", "gemm", "cuda", "kernel",
        "B×B tiles of A and B staged through shared memory: each global load is reused B times",
        source="gemm_shared.cu", kernel="gemm_shared", axis="block", launch=_gemm_square_blocks,
    ),
    Variant(
        "tiled", "gemm", "cuda", "kernel",
        "2-D register tiling: each thread keeps a TM×TN block of C in registers, fed from BM×BK and BK×BN tiles",
        source="gemm_tiled.cu", kernel="gemm_tiled", axis="tile", configs=TILED_CONFIGS, launch=_gemm_tiles,
    ),
    Variant(
        "cublas", "gemm", "cuda", "cublas",
        "cuBLAS SGEMM (cublasGemmEx, FP32 compute; TF32 tensor cores only with --tf32)",
        baseline=True,
    ),
    # ---- the GEMM progression beyond the lab (issue 5): each step adds one idea to the one before ----
    Variant(
        "vec", "gemm", "cuda", "kernel",
        "tiled + 128-bit global loads, A transposed into shared memory as it is stored",
        source="gemm_vec.cu", kernel="gemm_vec", axis="tile", configs=TILED_CONFIGS, launch=_gemm_tiles, lab=False,
    ),
    Variant(
        "warptile", "gemm", "cuda", "kernel",
        "warp tiling: each warp owns a compact 64×32 patch, so its shared-memory reads are few 16-byte vectors",
        source="gemm_warptile.cu", kernel="gemm_warptile", axis="tile",
        configs=(warp_config(**WARPTILE, stages=1),), launch=_gemm_warptile, lab=False,
    ),
    Variant(
        "dbuf", "gemm", "cuda", "kernel",
        "double buffering through registers: the next slice's loads are in flight during this slice's FMAs",
        source="gemm_warptile.cu", kernel="gemm_warptile", axis="tile",
        configs=(warp_config(**WARPTILE, stages=2),), launch=_gemm_warptile, lab=False,
    ),
    Variant(
        "async", "gemm", "cuda", "kernel",
        "multi-stage cp.async ring: copies go global→shared without registers, several slices ahead",
        source="gemm_async.cu", kernel="gemm_async", axis="tile",
        configs=(warp_config(128, 128, 16, 64, 32, 8, 8, 3),), launch=_gemm_async, lab=False,
    ),
    Variant(
        "swizzle", "gemm", "cuda", "kernel",
        "dbuf + tiles visited in bands of 8 tile-rows, so concurrent blocks share A and B panels in L2",
        source="gemm_warptile.cu", kernel="gemm_warptile", axis="tile",
        configs=(warp_config(**WARPTILE, stages=2, swizzle=8),), launch=_gemm_warptile, lab=False,
    ),
    Variant(
        "tuned", "gemm", "cuda", "kernel",
        "dbuf with the tiles, warp tiles, swizzle and register cap `gpubench tune gemm` found best per shape",
        source="gemm_warptile.cu", kernel="gemm_warptile", axis="tuned",
        configs=(warp_config(**WARPTILE, stages=2, swizzle=8),), launch=_gemm_warptile, lab=False,
    ),
    Variant(
        "tf32", "gemm", "cuda", "kernel",
        "TF32 tensor cores: wgmma (sm_90a) from a cp.async ring, 128-byte-swizzled tiles (compare with --tf32)",
        source="gemm_tf32.cu", kernel="gemm_tf32", axis="tile", arch="sm_90a", tolerance=TF32_TOL,
        configs=(tf32_config(256, 128, 4), tf32_config(128, 128, 6)), launch=_gemm_tf32, lab=False,
        options={"tf32": True},
    ),
    # ---- convolution on the GPU ----
    Variant(
        "sliding", "conv", "cuda", "kernel",
        "direct convolution: one thread per output element, padding by bounds checks",
        source="conv_sliding.cu", kernel="conv_sliding", axis="block", launch=_conv_output_blocks,
    ),
    Variant(
        "im2col", "conv", "cuda", "im2col",
        "im2col column matrix in device memory, then this project's `tiled` GEMM writing NCHW directly",
        source="conv_im2col.cu", kernel="im2col", axis="tile", configs=TILED_CONFIGS,
        options={"gemm": "tiled"},
    ),
    Variant(
        "im2col-cublas", "conv", "cuda", "im2col",
        "the same im2col kernel followed by cuBLAS SGEMM, to show the GEMM's share",
        source="conv_im2col.cu", kernel="im2col", options={"gemm": "cublas"},
    ),
    Variant(
        "implicit", "conv", "cuda", "kernel",
        "implicit GEMM: M = K, N = N·OH·OW, K = C·R·S, input read through the im2col mapping, no column matrix",
        source="conv_implicit.cu", kernel="conv_implicit", axis="tile", configs=TILED_CONFIGS,
        launch=_conv_implicit_tiles,
    ),
    Variant(
        "sliding-tiled", "conv", "cuda", "kernel",
        "direct convolution from an input window (halo included) in shared memory, several outputs per thread",
        source="conv_sliding_tiled.cu", kernel="conv_sliding_tiled", axis="tile",
        configs=(window_config(32, 8, 2, 4), window_config(32, 8, 1, 4)),
        launch=_conv_window_tiles, lab=False,
    ),
    Variant(
        "sliding-rows", "conv", "cuda", "kernel",
        "direct convolution, each thread down a column of outputs: rows loaded once into registers, no barriers",
        source="conv_sliding_rows.cu", kernel="conv_sliding_rows", axis="tile",
        configs=(column_config(8, 8), column_config(4, 16), column_config(8, 4)), launch=_conv_columns, lab=False,
    ),
    Variant(
        "sliding-vec", "conv", "cuda", "kernel",
        "direct convolution on 4×OY patches: at stride 1, one 16-byte load per input row, neighbours by shuffle",
        source="conv_sliding_vec.cu", kernel="conv_sliding_vec", axis="tile",
        configs=(Config("32x4 o4", (("TY", 4), ("OY", 4))), Config("32x8 o2", (("TY", 8), ("OY", 2))),
                 Config("32x4 o2", (("TY", 4), ("OY", 2)))),
        launch=_conv_vec_patches, lab=False,
    ),
    Variant(
        "implicit-async", "conv", "cuda", "kernel",
        "implicit GEMM on the cp.async pipeline, with per-thread pixel bases and a k→offset table in shared memory",
        source="conv_implicit_async.cu", kernel="conv_implicit_async", axis="tile",
        configs=(warp_config(128, 128, 16, 64, 32, 8, 8, 3), warp_config(64, 128, 16, 32, 32, 4, 8, 3)),
        launch=_conv_implicit_async, lab=False,
    ),
    Variant(
        "cudnn-heuristic", "conv", "cuda", "cudnn",
        "cuDNN (frontend API): the plan its heuristic ranks first, what the lab measured",
        options={"plans": "heuristic"},
    ),
    Variant(
        "cudnn", "conv", "cuda", "cudnn",
        "cuDNN (frontend API): every supported plan timed, the fastest kept",
        options={"plans": "best"}, baseline=True,
    ),
    # ---- the CPU backend: the same pipeline with NumPy, for trying the tool and testing it without a GPU ----
    Variant("numpy", "gemm", "cpu", "numpy", "NumPy matmul (the CPU's BLAS)", baseline=True),
    Variant("sliding", "conv", "cpu", "numpy-sliding", "NumPy direct convolution: one strided view per filter tap"),
    Variant(
        "im2col", "conv", "cpu", "numpy-im2col", "NumPy im2col column matrix, then one matmul", baseline=True,
    ),
)

OPS = ("gemm", "conv")
BACKENDS = ("cuda", "cpu")


def variants(op: str, backend: str) -> list[Variant]:
    return [v for v in VARIANTS if v.op == op and v.backend == backend]


def get(op: str, backend: str, name: str) -> Variant:
    for v in variants(op, backend):
        if v.name == name:
            return v
    allowed = ", ".join(v.name for v in variants(op, backend))
    raise GpubenchError(f"unknown {op} variant {name!r} for the {backend} backend: allowed are {allowed}")


def select(op: str, backend: str, names: list[str] | None) -> list[Variant]:
    """The variants a sweep runs: the named ones in registry order, or the lab's default set."""
    if not names:
        return [v for v in variants(op, backend) if v.lab]
    chosen = {get(op, backend, n).name for n in names}
    return [v for v in variants(op, backend) if v.name in chosen]


def baseline(op: str, backend: str) -> Variant | None:
    return next((v for v in variants(op, backend) if v.baseline), None)
