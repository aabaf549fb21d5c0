"""A project's own Python function on the GPU (the python-cuda runner): Triton kernels, CuPy RawKernels, PyTorch or
library calls, timed like every other variant.

The stream. The clock records its events on the legacy default stream (stream 0), CuPy's null stream. PyTorch's
default stream is that same stream 0, and Triton launches on PyTorch's current stream; so before the function is
called, CuPy's current stream is made the null stream and PyTorch's current stream its default stream: whatever the
function launches in the ordinary way lands between the timer's events. Work the function sends to a stream of its
own (`with torch.cuda.stream(s)`, `cupy.cuda.Stream(non_blocking=True)`) would escape the events and time as
nearly nothing, so before a point is timed one call is timed both by the events and by the host around a
device-wide synchronize: where the events missed most of what the device did, the point is an error that says so
(:func:`unseen_work`), never a fast time.

The first call is made on its own, timed on the host (Triton's JIT and autotuning, a RawKernel's compile happen
there) and recorded as `first_call_ms`; a mapping it returns (what it chose) is recorded as `reported`. A compiler
rejecting the code there is a CompileError (backends.first_call); the worker makes the first call of each variant,
configuration, precision and layout before any point runs (runner.first_call), so that such code stops the run (exit 2).

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from gpubench.core import user_code
from gpubench.backends import Prepared, first_call, kernel_arguments
from gpubench.core.errors import GpubenchError
from gpubench import ops
from gpubench.results import Details
from gpubench.specs.runners import Arrays

UNSEEN_MS = 0.1  # work the events missed: at least this much ...
UNSEEN_SHARE = 0.5  # ... and at least this share of the device's time for one call
STREAM_CHECKS = 3  # the smallest gap of these many calls decides (one host hiccup must not)


def events_missed(timings: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Of calls timed both by the events (event ms) and by the host around a device-wide synchronize (device ms),
    the one whose events came closest to the device's time, where even those missed more than UNSEEN_MS and more
    than UNSEEN_SHARE of it; else None. Work on the timed stream keeps the two within the host's few microseconds
    of launch and synchronize; a host hiccup widens one call's gap, never all of them."""
    event_ms, device_ms = min(timings, key=lambda t: t[1] - t[0])
    gap = device_ms - event_ms
    return (event_ms, device_ms) if gap > UNSEEN_MS and gap > UNSEEN_SHARE * device_ms else None


class UnseenWork(GpubenchError):
    """A Python variant's work ran on a stream the timer does not see."""


# PyTorch's element type for each host type whose CuPy array holds raw bits (CuPy has no bfloat16 or fp8).
TORCH_TYPES = {"bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn"}


def torch_views(arrays: dict, types: dict) -> dict:
    """PyTorch tensors over the same device memory as CuPy's arrays (DLPack: no copy), each viewed as its host
    element type where CuPy keeps raw bits (bfloat16 and fp8 as 16- and 8-bit integers)."""
    try:
        import torch
    except ImportError:
        raise GpubenchError("arrays = \"torch\" needs PyTorch: pip install torch") from None
    views = {}
    for name, a in arrays.items():
        t = torch.from_dlpack(a)
        wanted = TORCH_TYPES.get(np.dtype(types.get(name, a.dtype)).name)
        views[name] = t.view(getattr(torch, wanted)) if wanted else t
    return views


class PythonCalls:
    """Python functions on the device (methods of the CUDA backend)."""

    def on_timed_stream(self) -> None:
        """CuPy's and PyTorch's current streams made the one the clock's events are recorded on (stream 0)."""
        self.cp.cuda.Stream.null.use()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.set_stream(torch.cuda.default_stream())

    def unseen_work(self, call) -> tuple[float, float] | None:
        """(event ms, device ms) of one call where the events around it on the timed stream missed most of the
        device's work (it ran on another stream), else None."""
        start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
        sync = self.cp.cuda.runtime.deviceSynchronize
        timings = []
        for _ in range(STREAM_CHECKS):
            sync()
            t0 = time.perf_counter()
            start.record()
            call()
            end.record()
            sync()
            timings.append((self.cp.cuda.get_elapsed_time(start, end), (time.perf_counter() - t0) * 1e3))
        return events_missed(timings)

    def prepare_python(self, variant, config, shape, inputs, out) -> Prepared:
        fn = user_code.function_of(variant)
        given, given_out = inputs, out
        if variant.code.runner.arrays == Arrays.TORCH:
            types = {a.name: a.storage.host_type(shape.dtype) for a in ops.of(shape).arrays}
            outs = out if isinstance(out, dict) else {ops.of(shape).outputs[0]: out}
            views = torch_views({**inputs, **outs}, types)
            given_out = {name: views.pop(name) for name in outs}
            given_out = given_out if isinstance(out, dict) else next(iter(given_out.values()))
            given = views
        _, args = kernel_arguments(variant.code.program.args, shape, given, given_out, null=None)
        params = variant.code.call_keywords(config, shape.dtype, shape.layout, shape.fused.epilogue)
        self.on_timed_stream()

        def call():
            return fn(*args, **params)

        first_ms, returned = first_call(variant, call, self.cp.cuda.runtime.deviceSynchronize)
        self.on_timed_stream()  # the first call may have set up a framework (PyTorch's CUDA state)
        missed = self.unseen_work(call)
        if missed is not None:
            raise UnseenWork(f"{variant.code.program.kernel} kept the GPU busy {missed[1]:.3f} ms but the "
                             f"timed stream saw {missed[0]:.3f} ms: it launches on a stream of its own; launch on "
                             "the current stream (PyTorch's current stream, CuPy's current stream), which gpubench "
                             "times")
        details = Details(first_call_ms=first_ms, reported=user_code.report_of(returned))
        return Prepared(call, out, details=details, capturable=False)  # it launches on its framework's stream
