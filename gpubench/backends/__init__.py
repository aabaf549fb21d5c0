"""Backends run variants on one kind of hardware.

A backend turns (variant, configuration, shape, inputs) into a :class:`Prepared` call: a closure that runs the
variant once, the array it writes, and any sub-steps worth timing on their own. Everything else (checking,
timing) is shared and lives in :mod:`gpubench.execution.tasks`. A backend is told which configuration to run; it never
looks one up itself. :class:`Backend` declares everything the runner and the worker call; each backend
dispatches on the variant's runner type through a table (its PREPARE), not on names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Protocol

import numpy as np

from gpubench.core.backend_kind import BackendKind
from gpubench.core import dtypes
from gpubench import ops
from gpubench.ops import reference
from gpubench.core import user_code
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import CompileError, Skip
from gpubench.ops.base import Shape
from gpubench.results import Details
from gpubench.measure.telemetry import NoTelemetry
from gpubench.measure.timing import Clock

__all__ = ["ArrayBackend", "Backend", "Prepared", "Skip", "open_backend", "call_arrays", "kernel_arguments",
           "first_call"]


@dataclass
class Prepared:
    run: Callable[[], None]
    output: Any
    parts: dict[str, Callable[[], None]] = field(default_factory=dict)  # timed on their own, e.g. im2col's unfold
    details: Details = field(default_factory=Details)  # recorded with the point (engine name, tf32, ...)
    release: Callable[[], None] = lambda: None
    capturable: bool = True  # its launches follow the backend's capturing stream (--graph); a Python variant's do not


class Backend(Protocol):
    """What gpubench/execution/tasks.py and gpubench/execution/worker.py ask of a backend: that is all a new one must do."""

    name: str  # "cuda" | "cpu": what --backend says and runs record
    clock: Clock  # how a call is timed (gpubench/measure/timing.py)
    flushes: bool  # whether clock.flush() really evicts the caches (recorded per point)
    telemetry: Any  # clocks and power after each sample (NoTelemetry where there are none)
    out_of_memory: tuple[type[BaseException], ...]  # what an allocation that does not fit raises (a point: skipped)
    memory_name: str  # "host memory", "device memory": where it did not fit

    def describe(self) -> dict:
        """The device, its arch and limits (max_threads, sms), its libraries: what the coordinator plans with."""

    def environment(self, precisions: Collection[DType] | None = None) -> dict:
        """The device and software a run records, with the ceilings of `precisions` (None: every one it has)."""

    def check(self, variants: list) -> None:
        """Load what the variants need before any point runs (a project's Python module imported): GpubenchError
        naming the first that cannot load, as a kernel nvcc rejects stops the run before its first point."""

    def inputs(self, shape: Shape, seed: int) -> dict:
        """Fresh random inputs for the shape in its precision and layout, by spec name (Skip when they do not fit)."""

    def reference(self, shape: Shape, inputs: dict):
        """The float64 result the variants are checked against, from the inputs as rounded to the precision."""

    def prepare(self, variant, config, shape: Shape, inputs: dict, output=None) -> Prepared:
        """The variant's call at this configuration, ready to run (Skip when it cannot run here), writing a fresh
        output, or `output` where given (an A/B's two calls share theirs: gpubench/execution/paired.py)."""

    def poison(self, output) -> None:
        """Fill an output with NaN, so that a variant that writes nothing cannot pass."""

    def rel_err(self, output, ref, shape: Shape) -> float:
        """||output − ref|| / ||ref|| over the output's values in the shape's output type (inf where any is NaN)."""

    def tolerance(self, variant, shape: Shape) -> float:
        """The largest rel_err the variant may have on the shape (its spec's, or the error model's for the
        shape's precision and reduction length: gpubench/core/dtypes.py)."""

    def energy(self, run: Callable[[], None], flush: bool, flops: float, timing=None) -> dict | None:
        """Joules per call and GFLOPS per watt, where the hardware reports energy (`timing`: the point's timed
        calls, whose own readings, or the window taken between them, may already tell)."""

    def energy_aside(self, run: Callable[[], None], policy, earlier: Callable[[], bool] | None = None) \
            -> Callable | None:
        """What the timing loop calls between samples to take the point's energy window when the hardware's
        reading is about to refresh (timing.measure's `aside`), or None. `earlier()` goes first and may take an
        earlier point's waiting window at that moment instead (gpubench/execution/energy_queue.py)."""

    def window_due(self) -> bool:
        """Whether an energy window started now would end on the hardware's next reading (False: none to time)."""

    def wait_for_window(self) -> None:
        """Wait until window_due, within a refresh period (at once where there are no readings)."""

    def window_wanted(self, timing) -> bool:
        """Whether a measured point still needs an energy window of its own (timing: its timed calls)."""

    def energy_later(self, run: Callable[[], None], flush: bool, flops: float, timing) -> dict | None:
        """A point's energy from a window taken now, after later points ran (where window_wanted said so)."""

    def preheat(self, seconds: float) -> None:
        """Bring the device to its working state before timing where it idled (the CUDA backend burns the GPU for
        `seconds`: backends/cuda/preheat.py); nothing where there is no such state."""

    def launch_floor_us(self) -> float | None:
        """What an empty launch costs this process, timed as a short call is (the CUDA backend), or None where
        nothing is launched: what a worker is chosen by (gpubench/execution/launch_floor.py)."""

    def worked(self) -> None:
        """Timed work just ended (what preheat measures an idle gap from)."""

    def spread(self, variant, config, shape, inputs, prepared: Prepared, places: int) -> Prepared:
        """The prepared call as it is timed: `prepared`, or (the CUDA backend, for a call on small buffers, places >
        1) one that runs in turn on `places` sets of its buffers (placement.spread), its details saying how many."""

    def kernel_tracer(self, policy):
        """The second clock of one point's timed calls where the policy asks for it and the backend has one (the
        CUDA backend's CUPTI records: cupti_clock.PointTrace, with clock(inner) and finish(samples, per), or
        finish_sides(sides) for an A/B's round), else None."""

    def timed_clock(self, clock, policy, prepared: Prepared):
        """The clock a point is timed by: `clock`, or (policy.graph) one that times a CUDA graph of that many captured
        calls in place of each call (the CUDA backend's clock.GraphClock; close() it after); Skip where the prepared
        call cannot be captured."""

    def collect(self) -> None:
        """Give memory back between shapes."""

    def healthy(self) -> bool:
        """Whether this process can go on after a point raised."""

    def plan_search_due(self, variant, shape: Shape) -> bool:
        """Whether preparing the point would search a library's plans (the CUDA backend's cuDNN search, whose
        choice is kept between runs: backends/cuda/plan_cache.py); False where nothing is searched."""

    @property
    def plan_searches(self) -> int:
        """How many plan searches this process has run (a process that ran one is not timed in: tasks.first_call)."""


class ArrayBackend:
    """What the NumPy and CuPy backends share: random inputs and float64 references through one array module.

    Inputs lie in the problem's layout (its shape's array_dims) and precision. float32 ones are drawn by the
    array module itself (on the GPU, on the device); the others on the host by gpubench/core/dtypes.py (ml_dtypes'
    rounding) and moved with `upload`. `values64` gives back what a stored array stands for in float64, which is
    what the reference is computed from: the rounded inputs, so rel_err measures the variant's own error."""

    name = "?"
    xp: Any = None

    out_of_memory: tuple[type[BaseException], ...] = (MemoryError,)
    telemetry = NoTelemetry()
    plan_searches = 0  # no library here searches plans (the CUDA backend counts cuDNN's: libraries.py)

    def plan_search_due(self, variant, shape) -> bool:
        return False

    def energy(self, run, flush: bool, flops: float, timing=None) -> dict | None:
        """Joules per call, where the hardware reports energy (the CUDA backend, through NVML)."""
        return None

    def energy_aside(self, run, policy, earlier=None) -> None:
        return None

    def window_due(self) -> bool:
        return False

    def wait_for_window(self) -> None:
        pass

    def window_wanted(self, timing) -> bool:
        return False

    def energy_later(self, run, flush: bool, flops: float, timing) -> dict | None:
        return None

    def preheat(self, seconds: float) -> None:
        """No device state to bring about here."""

    def launch_floor_us(self) -> float | None:
        return None

    def worked(self) -> None:
        pass

    def spread(self, variant, config, shape, inputs, prepared, places):
        """Where host memory lies moves no call here: the call as prepared."""
        return prepared

    def kernel_tracer(self, policy):
        """No second clock here (the host's time is the call's)."""
        return None

    def timed_clock(self, clock, policy, prepared):
        """No graphs here (plan.check_graph refuses --graph off the CUDA backend)."""
        return clock

    def check(self, variants: list) -> None:
        """Every Python variant's function imported here, in the process that will call it, and its signature
        checked against the spec's arguments and its configurations' keywords (gpubench/core/user_code.py); CUDA
        kernels are compiled by the coordinator (gpubench/execution/nvcc.py)."""
        for v in variants:
            if v.code.runner.FUNCTION:
                user_code.check(v, v.space.configs_for((1,)))  # a block axis's keyword is the same at every size

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
        op = ops.of(shape)
        if op.draw is not None:  # inputs with structure (a group's offsets, block scales): the op draws them
            return {name: self.upload(values) for name, values in op.draw(np.random.default_rng(seed), shape).items()}
        dims = shape.array_dims()
        inputs = op.inputs_of(shape)
        own = op.draw_input is not None and any(a.optional for a in inputs)  # an epilogue's, drawn the op's way
        if not own and all(a.storage.host_type(shape.dtype) is np.float32 for a in inputs):  # fp32, tf32: drawn
            rng = self.xp.random.default_rng(seed)  # where they live
            # symmetric around 0, so sums cancel as in real data, never all zeros
            return {a.name: rng.random(dims[a.name], dtype=self.xp.float32) * 2 - 1 for a in inputs}
        rng = np.random.default_rng(seed)
        out = {}
        for a in inputs:
            host_type = a.storage.host_type(shape.dtype)
            drawn = op.draw_input(rng, shape, a.name, dims[a.name], host_type) if op.draw_input else None
            values, scale = (drawn, None) if drawn is not None else dtypes.draw(rng, dims[a.name], shape.dtype,
                                                                                host_type)
            out[a.name] = self.upload(values)
            if scale is not None and a.scale:
                out[a.scale] = self.upload(np.array([scale], dtype=np.float32))
        return out

    def upload(self, host: np.ndarray):
        """A host array on this backend's device (the CPU backend's is the host)."""
        return host

    def values64(self, array, host_type):
        """What a stored array of the host element type stands for, in float64, on this backend's device (the
        CUDA backend keeps bfloat16 and fp8 as raw bits, which host_type names)."""
        return array.astype(np.float64)

    def scale(self, inputs: dict, name: str) -> float:
        """An input's dequantisation scale (1 for a dtype without scales)."""
        scale = inputs.get(name)
        return 1.0 if scale is None else float(scale[0])

    def reference(self, shape, inputs: dict):
        return self.fits(lambda: self._reference(shape, inputs), "the float64 reference")

    def _reference(self, shape, inputs: dict):
        op = ops.of(shape)
        values = {a.name: self.values64(inputs[a.name], a.storage.host_type(shape.dtype))
                  * (self.scale(inputs, a.scale) if a.scale else 1.0) for a in op.inputs_of(shape)}
        refs = {name: self.xp.ascontiguousarray(out) for name, out in op.reference(self.xp, shape, values).items()}
        return one_or_all(refs)

    def output(self, shape):
        """The op's output array (a dict of them, by name, where it has several), uninitialised."""
        arrays = ops.laid_out_arrays(shape)
        outs = {name: self.fits(lambda: self.empty(*arrays[name]), "the output") for name in ops.of(shape).outputs}
        return one_or_all(outs)

    def empty(self, dims: tuple[int, ...], host_type):
        """An uninitialised array of the host element type (raw storage where the array module lacks it)."""
        return self.xp.empty(dims, dtype=host_type)

    def rel_err(self, output, ref, shape) -> float:
        """The worst output's ||out − ref|| / ||ref|| (over the elements the op checks)."""
        op = ops.of(shape)
        if not isinstance(output, dict):
            return reference.rel_err(self.xp, self.values64(output, PRECISIONS[shape.dtype].output), ref,
                                     op.unchecked)
        types = {a.name: a.storage.host_type(shape.dtype) for a in op.arrays}
        return max(reference.rel_err(self.xp, self.values64(out, types[name]), ref[name], op.unchecked)
                   for name, out in output.items())

    def poison(self, output) -> None:
        """NaN everywhere (integers: their most negative value, which no int8 product sum reaches here)."""
        if isinstance(output, dict):
            for out in output.values():
                self.poison(out)
            return
        if np.issubdtype(output.dtype, np.integer):
            output.fill(np.iinfo(output.dtype).min)
        else:
            output.fill(float("nan"))

    def tolerance(self, variant, shape) -> float:
        return variant.scope.tolerance_for(shape)

    def collect(self) -> None:
        """Give back memory between shapes (CuPy keeps freed blocks in its pool)."""

    def healthy(self) -> bool:
        """Whether this process can go on after a point raised (a CUDA kernel's fault poisons its context)."""
        return True


def first_call(variant, call: Callable[[], object], wait: Callable[[], None] = lambda: None) -> tuple[float, object]:
    """A Python variant's first call, on its own and timed on the host to the end of its work (wait()), where its
    code is compiled (Triton's JIT and autotuning, a RawKernel's nvrtc, numba): (ms, what it returned). A compiler
    rejecting the code (user_code.compile_error) is a CompileError naming the file and the first error, as nvcc's
    is; anything else it raises (a fault while it runs) goes on up as it is."""
    t0 = time.perf_counter()
    try:
        returned = call()
        wait()
    except Exception as e:
        text = user_code.compile_error(e)
        if text is None:
            raise
        program = variant.code.program
        raise CompileError(f"{program.source or 'measure'}: {program.kernel} does not compile: {text}",
                           str(e)) from None
    return (time.perf_counter() - t0) * 1e3, returned


def one_or_all(arrays: dict):
    """An op's outputs as backends pass them: the array itself where there is one (GEMM's C), else all by name."""
    return next(iter(arrays.values())) if len(arrays) == 1 else arrays


def call_arrays(shape, inputs: dict, out, scratch=None) -> dict:
    """Every array a variant's kernels may name, by its spec name: the inputs, the outputs, the workspace."""
    outs = out if isinstance(out, dict) else {ops.of(shape).outputs[0]: out}
    return {**inputs, **outs, **(scratch or {})}


def kernel_arguments(args, shape, inputs: dict, out, pointer=lambda a: a, scratch=None,
                     null=np.uintp(0)) -> tuple[str, tuple]:
    """The values a kernel receives, in the order its spec gives (`args`): arrays (through `pointer`), including
    the variant's workspace arrays (`scratch`), int dims and float scalars (an epilogue's factors). A per-tensor scale
    (A_scale, ...) that the problem's precision does not have arrives as a null pointer, which a kernel serving
    several precisions reads as 1; an optional array the problem does not have (an epilogue's bias) arrives as
    `null` (a null pointer; None for a Python function).

    Returns (PyCUDA's prepared-call format: "P" per pointer, "i" per int, "f" per float, the values)."""
    arrays = call_arrays(shape, inputs, out, scratch)
    dims, scalars, op = shape.dims(), shape.scalars(), ops.of(shape)
    absent = set(op.scales) | {a.name for a in op.arrays if a.optional}
    fmt, values = "", []
    for name in args:
        if name in arrays:
            fmt += "P"
            values.append(pointer(arrays[name]))
        elif name in absent:
            fmt += "P"
            values.append(np.uintp(0) if name in op.scales else null)
        elif name in op.scalars:
            fmt += "f"
            values.append(np.float32(scalars[name]))
        else:
            if not -2**31 <= dims[name] < 2**31:
                raise Skip(f"{name} = {dims[name]} does not fit the kernel's 32-bit int parameter {name}")
            fmt += "i"
            values.append(dims[name])
    return fmt, tuple(values)


def open_backend(name: str):
    """The backend called `name`; raises GpubenchError naming whatever is missing (driver, GPU, PyCUDA, CuPy)."""
    if name == BackendKind.CPU:
        from gpubench.backends.cpu import CpuBackend

        return CpuBackend()
    from gpubench.backends.cuda import CudaBackend

    return CudaBackend()
