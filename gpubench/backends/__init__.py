"""Backends run variants on one kind of hardware.

A backend turns (variant, configuration, shape, inputs) into a :class:`Prepared` call: a closure that runs the
variant once, the array it writes, and any sub-steps worth timing on their own. Everything else (checking,
timing) is shared and lives in :mod:`gpubench.runner`. A backend is told which configuration to run; it never
looks one up itself. :class:`Backend` declares everything the runner and the worker call; each backend
dispatches on the variant's runner type through a table (its PREPARE), not on names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from gpubench import reference
from gpubench.errors import Skip
from gpubench.problems import ARRAYS, ConvShape, GemmShape, Shape
from gpubench.results import Details
from gpubench.telemetry import NoTelemetry
from gpubench.timing import Clock

__all__ = ["ArrayBackend", "Backend", "Prepared", "Skip", "open_backend", "call_arrays", "kernel_arguments"]


@dataclass
class Prepared:
    run: Callable[[], None]
    output: Any
    parts: dict[str, Callable[[], None]] = field(default_factory=dict)  # timed on their own, e.g. im2col's unfold
    details: Details = field(default_factory=Details)  # recorded with the point (engine name, tf32, ...)
    release: Callable[[], None] = lambda: None


class Backend(Protocol):
    """What gpubench/runner.py and gpubench/worker.py ask of a backend: that is all a new one must do."""

    name: str  # "cuda" | "cpu": what --backend says and runs record
    clock: Clock  # how a call is timed (gpubench/timing.py)
    flushes: bool  # whether clock.flush() really evicts the caches (recorded per point)
    telemetry: Any  # clocks and power after each sample (NoTelemetry where there are none)
    out_of_memory: tuple[type[BaseException], ...]  # what an allocation that does not fit raises (a point: skipped)
    memory_name: str  # "host memory", "device memory": where it did not fit

    def describe(self) -> dict:
        """The device, its arch and limits (max_threads, sms), its libraries: what the coordinator plans with."""

    def environment(self) -> dict:
        """The device and software a run records."""

    def check(self, variants: list) -> None:
        """Load what the variants need before any point runs (a project's Python module imported): GpubenchError
        naming the first that cannot load, as a kernel nvcc rejects stops the run before its first point."""

    def inputs(self, shape: Shape, seed: int) -> dict:
        """Fresh random inputs for the shape, by spec name (Skip when they do not fit)."""

    def reference(self, shape: Shape, inputs: dict):
        """The float64 result the variants are checked against."""

    def prepare(self, variant, config, shape: Shape, inputs: dict) -> Prepared:
        """The variant's call at this configuration, ready to run (Skip when it cannot run here)."""

    def poison(self, output) -> None:
        """Fill an output with NaN, so that a variant that writes nothing cannot pass."""

    def rel_err(self, output, ref) -> float:
        """||output − ref|| / ||ref|| (inf where anything is NaN)."""

    def tolerance(self, variant) -> float:
        """The largest rel_err the variant may have here (TF32's where --tf32 lets its library use it)."""

    def energy(self, run: Callable[[], None], flush: bool, flops: float) -> dict | None:
        """Joules per call and GFLOPS per watt, where the hardware reports energy."""

    def collect(self) -> None:
        """Give memory back between shapes."""

    def healthy(self) -> bool:
        """Whether this process can go on after a point raised."""


class ArrayBackend:
    """What the NumPy and CuPy backends share: random inputs and float64 references through one array module."""

    name = "?"
    xp: Any = None

    out_of_memory: tuple[type[BaseException], ...] = (MemoryError,)
    telemetry = NoTelemetry()

    def energy(self, run, flush: bool, flops: float) -> dict | None:
        """Joules per call, where the hardware reports energy (the CUDA backend, through NVML)."""
        return None

    def check(self, variants: list) -> None:
        """Nothing to load ahead here (CUDA kernels are compiled by the coordinator, gpubench/nvcc.py)."""

    def fits(self, make, what: str):
        """make(), or Skip naming `what` when the memory it asks for is not there."""
        try:
            return make()
        except self.out_of_memory:
            self.collect()
            raise Skip(f"{what} would not fit in {self.memory_name}{self.free_text()}") from None

    memory_name = "memory"

    def free_text(self) -> str:
        return ""

    def inputs(self, shape, seed: int) -> dict:
        return self.fits(lambda: self._inputs(shape, seed), "the inputs")

    def _inputs(self, shape, seed: int) -> dict:
        rng = self.xp.random.default_rng(seed)

        def uniform(*dims):  # symmetric around 0, so sums cancel as in real data, never all zeros
            return rng.random(dims, dtype=self.xp.float32) * 2 - 1

        if isinstance(shape, GemmShape):
            return {"A": uniform(shape.m, shape.k), "B": uniform(shape.k, shape.n)}
        return {
            "x": uniform(shape.batch, shape.in_channels, shape.height, shape.width),
            "w": uniform(shape.out_channels, shape.in_channels, shape.kernel, shape.kernel),
        }

    def reference(self, shape, inputs: dict):
        return self.fits(lambda: self._reference(shape, inputs), "the float64 reference")

    def _reference(self, shape, inputs: dict):
        if isinstance(shape, GemmShape):
            return reference.gemm(self.xp, inputs["A"], inputs["B"])
        return reference.conv_sliding(self.xp, inputs["x"], inputs["w"], shape.stride, shape.pad)

    def output(self, shape):
        if isinstance(shape, GemmShape):
            dims = (shape.m, shape.n)
        else:
            assert isinstance(shape, ConvShape)
            dims = (shape.batch, shape.out_channels, shape.out_height, shape.out_width)
        return self.fits(lambda: self.xp.empty(dims, dtype=self.xp.float32), "the output")

    def rel_err(self, output, ref) -> float:
        return reference.rel_err(self.xp, output, ref)

    def poison(self, output) -> None:
        output.fill(float("nan"))

    def tolerance(self, variant) -> float:
        return variant.tolerance

    def collect(self) -> None:
        """Give back memory between shapes (CuPy keeps freed blocks in its pool)."""

    def healthy(self) -> bool:
        """Whether this process can go on after a point raised (a CUDA kernel's fault poisons its context)."""
        return True


def call_arrays(shape, inputs: dict, out, scratch=None) -> dict:
    """Every array a variant's kernels may name, by its spec name: the inputs, the output, the workspace."""
    return {**inputs, ARRAYS[shape.op][2]: out, **(scratch or {})}


def kernel_arguments(args, shape, inputs: dict, out, pointer=lambda a: a, scratch=None) -> tuple[str, tuple]:
    """The values a kernel receives, in the order its spec gives (`args`): arrays (through `pointer`), including
    the variant's workspace arrays (`scratch`), and int dims.

    Returns (PyCUDA's prepared-call format: "P" per pointer, "i" per int, the values)."""
    arrays = call_arrays(shape, inputs, out, scratch)
    dims = shape.dims()
    fmt, values = "", []
    for name in args:
        if name in arrays:
            fmt += "P"
            values.append(pointer(arrays[name]))
        else:
            fmt += "i"
            values.append(dims[name])
    return fmt, tuple(values)


def open_backend(name: str, *, tf32: bool = False):
    """The backend called `name`; raises GpubenchError naming whatever is missing (driver, GPU, PyCUDA, CuPy)."""
    if name == "cpu":
        from gpubench.backends.cpu import CpuBackend

        return CpuBackend()
    from gpubench.backends.cuda import CudaBackend

    return CudaBackend(tf32=tf32)
