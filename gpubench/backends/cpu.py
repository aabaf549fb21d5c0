"""The CPU backend: NumPy runs the same sweeps, tables and saved results, so the tool works without a GPU.

Besides the built-in NumPy variants it runs a project's own CPU functions (the python runner): a function in
a .py file that takes the spec's arguments in order, writes the output array in place like a kernel, and gets
its configuration's parameters as keyword arguments.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from gpubench import reference, user_code
from gpubench.backends import ArrayBackend, Prepared, kernel_arguments
from gpubench.errors import GpubenchError, Skip
from gpubench.problems import GemmShape
from gpubench.results import Details
from gpubench.runners import NumpyIm2col, NumpyMatmul, NumpySliding, PythonRunner
from gpubench.timing import HostClock


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is no such file)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def bytes_needed(shape) -> int:
    """float32 inputs and output, the float64 reference and a float64 copy of the inputs while it is made."""
    if isinstance(shape, GemmShape):
        ins, out = shape.m * shape.k + shape.k * shape.n, shape.m * shape.n
    else:
        ins, out = shape.input_elems + shape.filter_elems, shape.output_elems
    return 4 * (ins + out) + 8 * (ins + 2 * out)


class CpuBackend(ArrayBackend):
    name = "cpu"
    xp = np
    clock = HostClock()
    flushes = False
    memory_name = "host memory"

    def describe(self) -> dict:
        return {"device": f"CPU: {_cpu_name()}", "arch": None, "max_threads": None, "libraries": {}}

    def environment(self) -> dict:
        return {
            "device": {"name": f"CPU: {_cpu_name()}", "kind": "cpu", "cores": os.cpu_count()},
            "software": {"numpy": np.__version__},
        }

    def free_text(self) -> str:
        free = _available_bytes()
        return f" ({free / 2**30:.1f} GiB available)" if free is not None else ""

    def inputs(self, shape, seed: int) -> dict:
        # Asking the OS for more than it has can end in the OOM killer rather than a MemoryError: check first.
        free = _available_bytes()
        if free is not None and bytes_needed(shape) > free:
            raise Skip(f"the inputs and the float64 reference ({bytes_needed(shape) / 2**30:.1f} GiB) would not "
                       f"fit in host memory{self.free_text()}")
        return super().inputs(shape, seed)

    def prepare(self, variant, config, shape, inputs) -> Prepared:
        prepare = self.PREPARE.get(type(variant.runner))
        if prepare is None:
            raise GpubenchError(f"the cpu backend cannot run variant {variant.name} (runner {variant.runner.NAME})")
        return prepare(self, variant, config, shape, inputs, self.output(shape))

    def _python(self, variant, config, shape, inputs, out) -> Prepared:
        fn = user_code.function_of(variant)
        _, args = kernel_arguments(variant.args, shape, inputs, out)
        params = config.values
        t0 = time.perf_counter()
        returned = fn(*args, **params)  # the first call, on its own: what it reports is recorded with the point
        details = Details(first_call_ms=(time.perf_counter() - t0) * 1e3, reported=user_code.report_of(returned))
        return Prepared(lambda: fn(*args, **params), out, details=details)

    def _matmul(self, variant, config, shape, inputs, out) -> Prepared:
        a, b = inputs["A"], inputs["B"]
        return Prepared(lambda: np.matmul(a, b, out=out), out)

    @staticmethod
    def _convolution(conv):
        def prepare(self, variant, config, shape, inputs, out) -> Prepared:
            x, w = inputs["x"], inputs["w"]

            def run():
                out[...] = conv(np, x, w, shape.stride, shape.pad, dtype=np.float32)

            return Prepared(run, out)

        return prepare

    # What prepares each kind of runner's call: (backend, variant, config, shape, inputs, out) -> Prepared.
    PREPARE = {
        PythonRunner: _python,
        NumpyMatmul: _matmul,
        NumpySliding: _convolution(reference.conv_sliding),
        NumpyIm2col: _convolution(reference.conv_im2col),
    }
