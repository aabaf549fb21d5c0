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

import math
import os
import platform

import numpy as np

from gpubench import ops
from gpubench.core.backend_kind import BackendKind
from gpubench.core import user_code
from gpubench.backends import ArrayBackend, Prepared, first_call, kernel_arguments
from gpubench.core.dtypes import PRECISIONS
from gpubench.core.errors import GpubenchError, Skip
from gpubench.results import Details
from gpubench.specs.runners import NumpyIm2col, NumpyMatmul, NumpySliding, PythonRunner
from gpubench.measure.timing import HostClock


def _proc_lines(name: str):
    """The lines of /proc/NAME, the file closed as soon as they are read (an open file left to the collector is a
    ResourceWarning, an error under PYTHONWARNINGS=error)."""
    with open(f"/proc/{name}") as f:
        return f.read().splitlines()


def _cpu_name() -> str:
    try:
        for line in _proc_lines("cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is no such file)."""
    try:
        for line in _proc_lines("meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def bytes_needed(shape) -> int:
    """Inputs and output as stored, float32 copies of them while an emulated variant runs, the float64
    reference and a float64 copy of the inputs while it is made."""
    arrays = ops.laid_out_arrays(shape)
    outputs = set(ops.of(shape).outputs)
    elems = {name: math.prod(dims) for name, (dims, _) in arrays.items()}
    stored = sum(elems[name] * np.dtype(host).itemsize for name, (_, host) in arrays.items())
    ins = sum(n for name, n in elems.items() if name not in outputs)
    out = sum(n for name, n in elems.items() if name in outputs)
    return stored + 4 * (ins + out) + 8 * (ins + 2 * out)


def emulated(shape, inputs: dict) -> tuple[dict, type]:
    """The inputs as an emulated variant computes with them, as stored: float32 (float64 for integers: exact),
    each times its scale; and that type."""
    acc = np.float64 if PRECISIONS[shape.dtype].integer else np.float32
    values = {}
    for a in ops.of(shape).inputs_of(shape):
        values[a.name] = inputs[a.name].astype(acc)
        if a.scale in inputs:
            values[a.name] *= inputs[a.scale][0]
    return values, acc


def store(out, results: dict) -> None:
    """Write results (by output name, as laid out) into the outputs, each rounded once to its type."""
    for name, target in (out.items() if isinstance(out, dict) else [(None, out)]):
        result = results[name] if name is not None else next(iter(results.values()))
        target[...] = result.astype(target.dtype)


class CpuBackend(ArrayBackend):
    name = BackendKind.CPU
    xp = np
    clock = HostClock()
    flushes = False
    memory_name = "host memory"

    def describe(self) -> dict:
        return {"device": f"CPU: {_cpu_name()}", "arch": None, "max_threads": None, "libraries": {}}

    def environment(self, precisions=None) -> dict:  # no ceilings measured on the CPU
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

    def prepare(self, variant, config, shape, inputs, output=None) -> Prepared:
        prepare = self.PREPARE.get(type(variant.code.runner))
        if prepare is None:
            raise GpubenchError(f"the cpu backend cannot run variant {variant.name} "
                                f"(runner {variant.code.runner.NAME})")
        return prepare(self, variant, config, shape, inputs, self.output(shape) if output is None else output)

    def _python(self, variant, config, shape, inputs, out) -> Prepared:
        fn = user_code.function_of(variant)
        _, args = kernel_arguments(variant.code.program.args, shape, inputs, out, null=None)
        params = variant.code.call_keywords(config, shape.dtype, shape.layout, shape.fused.epilogue)
        first_ms, returned = first_call(variant, lambda: fn(*args, **params))  # what it reports is recorded too
        details = Details(first_call_ms=first_ms, reported=user_code.report_of(returned))
        return Prepared(lambda: fn(*args, **params), out, details=details)

    def _numpy(self, variant, config, shape, inputs, out) -> Prepared:
        """One of the op's own NumPy variants (its `emulations`, by the runner's name), in float32."""
        compute = ops.of(shape).emulations.get(variant.code.runner.NAME)
        if compute is None:
            raise Skip(f"the {shape.op} op has no {variant.code.runner.NAME} emulation")
        values, acc = emulated(shape, inputs)
        return Prepared(lambda: store(out, compute(np, shape, values, dtype=acc)), out)

    # What prepares each kind of runner's call: (backend, variant, config, shape, inputs, out) -> Prepared.
    PREPARE = {
        PythonRunner: _python,
        NumpyMatmul: _numpy,
        NumpySliding: _numpy,
        NumpyIm2col: _numpy,
    }
