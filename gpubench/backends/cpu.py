"""The CPU backend: NumPy runs the same sweeps, tables and saved results, so the tool works without a GPU."""

from __future__ import annotations

import os
import platform

import numpy as np

from gpubench import reference
from gpubench.backends import ArrayBackend, Prepared
from gpubench.problems import ConvShape
from gpubench.timing import HostClock


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class CpuBackend(ArrayBackend):
    name = "cpu"
    xp = np
    clock = HostClock()
    flushes = False

    def environment(self) -> dict:
        return {
            "device": {"name": f"CPU: {_cpu_name()}", "kind": "cpu", "cores": os.cpu_count()},
            "software": {"numpy": np.__version__},
        }

    def check_block_sizes(self, block_sizes) -> None:
        pass  # no thread blocks on the CPU

    def prepare(self, variant, config, shape, inputs) -> Prepared:
        out = self.output(shape)
        if variant.runner == "numpy":
            a, b = inputs["a"], inputs["b"]
            return Prepared(lambda: np.matmul(a, b, out=out), out)
        assert isinstance(shape, ConvShape)
        x, w = inputs["x"], inputs["w"]
        conv = {"numpy-sliding": reference.conv_sliding, "numpy-im2col": reference.conv_im2col}[variant.runner]

        def run():
            out[...] = conv(np, x, w, shape.stride, shape.pad, dtype=np.float32)

        return Prepared(run, out)
