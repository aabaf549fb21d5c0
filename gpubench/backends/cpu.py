"""The CPU backend: NumPy runs the same sweeps, tables and saved results, so the tool works without a GPU.

Besides the built-in NumPy variants it runs a project's own CPU functions (the python runner): a function in
a .py file that takes the spec's arguments in order, writes the output array in place like a kernel, and gets
its configuration's parameters as keyword arguments.

The NumPy variants compute in every precision the CPU can emulate: fp16, bf16 and fp8 inputs (ml_dtypes arrays,
fp8 with its per-tensor scale) are read as float32, multiplied and summed in float32, and the result rounded to
the output type once, as a tensor core with fp32 accumulation would; int8 is summed exactly (in float64, exact
for any sum of int8 products this side of 2^53) into int32. So CI exercises the whole precision axis.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform

import numpy as np

from gpubench import reference
from gpubench.backends import ArrayBackend, Prepared, kernel_arguments
from gpubench.dtypes import PRECISIONS
from gpubench.errors import GpubenchError, Skip
from gpubench.problems import ARRAYS, SCALES, GemmShape
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
    """Inputs and output as stored, float32 copies of them while an emulated variant runs, the float64
    reference and a float64 copy of the inputs while it is made."""
    if isinstance(shape, GemmShape):
        ins, out = shape.m * shape.k + shape.k * shape.n, shape.m * shape.n
    else:
        ins, out = shape.input_elems + shape.filter_elems, shape.output_elems
    p = PRECISIONS[shape.dtype]
    return p.in_bytes * ins + p.out_bytes * out + 4 * (ins + out) + 8 * (ins + 2 * out)


def emulated(shape, inputs: dict):
    """The inputs as an emulated variant computes with them: in the math's layout (views), as float32 (float64
    for integers: exact), each times its scale."""
    acc = np.float64 if PRECISIONS[shape.dtype].integer else np.float32
    operands = [inputs[name].astype(acc) for name in ARRAYS[shape.op][:2]]
    for operand, scale in zip(operands, SCALES[shape.op]):
        if scale in inputs:
            operand *= inputs[scale][0]
    return shape.canonical(*operands)


def store(shape, out, result) -> None:
    """Write a result computed in the math's layout into the output, rounded once to its type."""
    out[...] = shape.laid_out(result).astype(out.dtype)


class CpuBackend(ArrayBackend):
    name = "cpu"
    xp = np
    clock = HostClock()
    flushes = False
    memory_name = "host memory"

    def __init__(self):
        self._functions: dict = {}

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

    def check(self, variants: list) -> None:
        """Every project function imported before any point runs: a SyntaxError, a failed import or a missing
        function stops the run in one line naming the file."""
        for v in variants:
            if isinstance(v.runner, PythonRunner):
                self._function(v)

    def prepare(self, variant, config, shape, inputs) -> Prepared:
        prepare = self.PREPARE.get(type(variant.runner))
        if prepare is None:
            raise GpubenchError(f"the cpu backend cannot run variant {variant.name} (runner {variant.runner.NAME})")
        return prepare(self, variant, config, shape, inputs, self.output(shape))

    def _python(self, variant, config, shape, inputs, out) -> Prepared:
        fn = self._function(variant)
        _, args = kernel_arguments(variant.args, shape, inputs, out)
        params = config.values
        return Prepared(lambda: fn(*args, **params), out)

    def _matmul(self, variant, config, shape, inputs, out) -> Prepared:
        a, b = emulated(shape, inputs)
        return Prepared(lambda: store(shape, out, np.matmul(a, b)), out)

    @staticmethod
    def _convolution(conv):
        def prepare(self, variant, config, shape, inputs, out) -> Prepared:
            x, w = emulated(shape, inputs)

            def run():
                store(shape, out, conv(np, x, w, shape.stride, shape.pad, dtype=x.dtype))

            return Prepared(run, out)

        return prepare

    # What prepares each kind of runner's call: (backend, variant, config, shape, inputs, out) -> Prepared.
    PREPARE = {
        PythonRunner: _python,
        NumpyMatmul: _matmul,
        NumpySliding: _convolution(reference.conv_sliding),
        NumpyIm2col: _convolution(reference.conv_im2col),
    }

    def _function(self, variant):
        """The project's function, imported once from its file (a module of its own, named by the path)."""
        path = variant.source
        if path not in self._functions:
            name = "gpubench_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as e:  # the user's module failed to import: that point is an error, with the cause
                raise GpubenchError(f"importing {path} failed: {type(e).__name__}: {e}") from None
            self._functions[path] = module
        fn = getattr(self._functions[path], variant.kernel, None)
        if not callable(fn):
            raise GpubenchError(f"{path} has no function {variant.kernel}")
        return fn
