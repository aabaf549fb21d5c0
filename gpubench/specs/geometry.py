"""How one of a variant's kernels is launched, as plain data: the grid, block and shared memory of a configuration
(:class:`Launch`), the expressions a spec gives for them (:class:`LaunchSpec`), a `before` step (:class:`Step`) and
a TMA descriptor (:class:`TensorMap`), with CUDA's limits that every evaluated launch is checked against.
gpubench/specs/variant.py holds them in a variant's :class:`~gpubench.specs.variant.Kernels`; gpubench/specs/launch.py
fills and checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol

import numpy as np

from gpubench import ops
from gpubench.core.expr import Expr
from gpubench.ops import laid_out_arrays


class Parameters(Protocol):
    """A configuration as a launch reads it: its compile-time parameters by name (gpubench/specs/variant.py's
    Config is one)."""

    @property
    def values(self) -> dict[str, int]: ...


# Names a launch expression may use besides the problem's and the configuration's: the device's own. SMS, its
# multiprocessor count, sizes a persistent kernel's grid ("min(tiles, SMS)"). Specs are checked with SAMPLE_SMS.
SMS = "SMS"
SAMPLE_SMS = 132

# CUDA's launch limits, the same on every GPU since compute capability 3.0 (the programming guide's table of
# technical specifications): blocks per grid dimension, threads per block dimension, threads per block.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def beyond_limits(self) -> str | None:
        """Why CUDA would refuse this launch (a grid or block past its limits, or an empty one), or None."""
        if self.shared_bytes < 0:
            return f"{self.shared_bytes} bytes of shared memory (shared must come to 0 or more)"
        if min(self.grid) < 1 or min(self.block) < 1:
            return f"an empty grid or block (grid {self.grid}, block {self.block})"
        if any(g > m for g, m in zip(self.grid, MAX_GRID)):
            return (f"a grid of {self.grid} blocks is past CUDA's limits ({MAX_GRID[0]} × {MAX_GRID[1]} × "
                    f"{MAX_GRID[2]})")
        if self.threads > MAX_THREADS or any(b > m for b, m in zip(self.block, MAX_BLOCK)):
            return (f"a block of {self.block} threads is past CUDA's limits ({MAX_THREADS} threads, at most "
                    f"{MAX_BLOCK[0]} × {MAX_BLOCK[1]} × {MAX_BLOCK[2]})")
        return None


@dataclass(frozen=True)
class LaunchSpec:
    """Grid, block and dynamic shared memory as expressions over the problem's dims and the configuration."""

    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    shared: Expr

    def resolve(self, values: Mapping[str, int]) -> Launch:
        def three(exprs):
            dims = [e(values) for e in exprs]
            return tuple(dims + [1] * (3 - len(dims)))

        return Launch(three(self.grid), three(self.block), self.shared(values))

    def names(self) -> set[str]:
        return {n for e in (*self.grid, *self.block, self.shared) for n in e.names}


@dataclass(frozen=True)
class Step:
    """One kernel launch of a variant's call: a `before` step (e.g. a filter transform) or the main kernel."""

    kernel: str
    args: tuple[str, ...]
    launch: LaunchSpec

    def launch_for(self, dims: Mapping[str, int], config: Parameters) -> Launch:
        return self.launch.resolve({**dims, **config.values})


TENSOR_MAP_MAX_DIMS = 5  # the most dimensions cuTensorMapEncodeTiled takes: specs are checked against it
SWIZZLE_WIDTHS = (0, 32, 64, 128)  # bytes: the copy engine's swizzled rows (0: plain rows)


@dataclass(frozen=True)
class TensorMap:
    """A TMA descriptor (the driver's CUtensorMap) that the host builds for a kernel argument: a row-major array of
    rows × cols seen as boxes of box_rows × box_cols (or of up to TENSOR_MAP_MAX_DIMS dimensions, outermost first,
    the last one contiguous: an NHWC input as N × H × W × C in boxes of images × rows × columns × channels), copied
    into shared memory in swizzled rows of `swizzle` bytes (128, the default; 64 or 32: a configuration may choose,
    swizzle = "BK") or as they are (swizzle = 0). Its elements are the
    array's own (an input's storage type in the problem's precision, the output's type, float32 for a workspace
    array).

    With im2col, the map is of a convolution's NHWC input as the copy engine's im2col mode reads it: for one filter
    tap, the N·OH·OW × C matrix of the input pixels under every output pixel (zeros in the padding), in boxes of
    box_rows output pixels × box_cols channels; the kernel names the tap when it copies.

    With a condition `when`, the map exists only for the problems (and configurations) where it holds: a TMA box
    of y needs rows of whole 16-byte chunks, so a kernel that stores through map_y where K % 8 == 0 keeps a copy
    loop for the other problems, and gets no map there (the backend passes zeros in its place). With `layouts`, the
    map exists only for problems in those layouts (an fp8 GEMM's block scales, absent from its per-tensor layouts,
    whose scale arrays hold one value)."""

    name: str
    array: str  # an input, the output or a workspace array
    # rows, cols (cols contiguous; or up to TENSOR_MAP_MAX_DIMS dims), over the problem's dims; None: the GEMM array
    # as it lies in the problem's layout (A is K×M in tn, ...), which is how one spec serves every layout
    shape: tuple[Expr, ...] | None
    box: tuple[Expr, ...]  # box rows, box cols (or one a dimension of shape), over the dims and the configuration
    swizzle: int | Expr = 128  # bytes: 128, 64 or 32, or 0 for plain rows; or an expression over the configuration
    im2col: bool = False  # a convolution's NHWC input, one filter tap's pixels at a time (rows: output pixels)
    when: Expr | None = None  # a condition over the dims and the configuration: the map is built only where it holds
    layouts: tuple[str, ...] = ()  # the problem layouts the map is built for (empty: every layout)

    def swizzle_bytes(self, values: Mapping[str, int]) -> int:
        """The width of the swizzled rows in bytes for this configuration (0: plain rows)."""
        return self.swizzle if isinstance(self.swizzle, int) else int(self.swizzle(values))

    def applies(self, values: Mapping[str, int]) -> bool:
        """Whether the map is built for this problem and configuration (its `when` holds, or it has none)."""
        return self.when is None or bool(self.when(values))

    def present(self, problem=None) -> bool:
        """Whether the problem has the mapped array: an optional one (an epilogue's residual z) only where the problem
        has it, a map limited to some layouts only in those, and the backend builds no map where it has not (without
        a problem: assumed present)."""
        if problem is None:
            return True
        if self.layouts and str(problem.layout) not in self.layouts:
            return False
        if self.array not in ops.of(problem).array_names:  # a workspace array: always there
            return True
        return self.array in laid_out_arrays(problem)

    def element(self, problem=None):
        """The host element type of the mapped array (float32 for a workspace array, or without a problem)."""
        if problem is None:
            return np.float32
        return laid_out_arrays(problem).get(self.array, ((), np.float32))[1]

    def resolve(self, values: Mapping[str, int], problem=None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        box = tuple(b(values) for b in self.box)
        if self.im2col:
            return (values["N"] * values["OH"] * values["OW"], values["C"]), box
        if self.shape is not None:
            return tuple(d(values) for d in self.shape), box
        rows, cols = laid_out_arrays(problem)[self.array][0]
        return (rows, cols), box

    def unfit(self, values: Mapping[str, int], problem=None) -> str | None:
        """What the copy engine would refuse in this map (the first rule broken), or None (also where the map is not
        built at all: its `when` does not hold, or the problem lacks its optional array)."""
        if not self.applies(values) or not self.present(problem):
            return None
        shape, box = self.resolve(values, problem)
        if min(shape) < 1:
            return f"tensor map {self.name}: {' × '.join(map(str, shape))} is empty"
        if self.im2col and problem is not None and problem.layout != ops.of(problem).im2col[1]:
            return f"tensor map {self.name}: the im2col mode reads NHWC inputs, not {problem.layout}"
        swizzle = self.swizzle_bytes(values)
        if swizzle not in SWIZZLE_WIDTHS:
            return (f"tensor map {self.name}: a swizzle of {swizzle} bytes; the copy engine swizzles rows of "
                    f"{', '.join(map(str, SWIZZLE_WIDTHS[1:]))} bytes, or none (0)")
        size = np.dtype(self.element(problem)).itemsize
        widest = swizzle // size if swizzle else 256  # the swizzle's row of bytes, or TMA's 256 elements
        tallest = 1024 if self.im2col else 256  # im2col's pixels per box, or a tiled box's rows (each outer dim)
        *outer, box_cols = box
        if not (all(1 <= b <= tallest for b in outer) and 1 <= box_cols <= widest and box_cols * size % 16 == 0):
            why = f"at most {swizzle} bytes, the swizzle's width" if swizzle else "TMA's limit without a swizzle"
            what = "rows" if len(box) == 2 else "its outer dimensions"
            return (f"tensor map {self.name}: box {' × '.join(map(str, box))} of {size}-byte elements: {what} must be "
                    f"1 to {tallest} and cols a multiple of {max(1, 16 // size)} up to {widest} ({why})")
        return None
