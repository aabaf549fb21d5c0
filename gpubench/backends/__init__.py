"""Backends run registry variants on one kind of hardware.

A backend turns (variant, configuration, shape, inputs) into a :class:`Prepared` call: a closure that runs the
variant once, the array it writes, and any sub-steps worth timing on their own. Everything else (checking,
timing, saving) is shared and lives in :mod:`gpubench.sweep`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gpubench import reference
from gpubench.problems import ConvShape, GemmShape


class Skip(Exception):
    """This point cannot run here (it does not fit, or the device cannot launch it): recorded as skipped."""


@dataclass
class Prepared:
    run: Callable[[], None]
    output: Any
    parts: dict[str, Callable[[], None]] = field(default_factory=dict)  # timed on their own, e.g. im2col's unfold
    extra: dict = field(default_factory=dict)  # recorded with the point (engine name, tf32, ...)
    release: Callable[[], None] = lambda: None


class ArrayBackend:
    """What the NumPy and CuPy backends share: random inputs and float64 references through one array module."""

    name = "?"
    xp: Any = None

    def inputs(self, shape, seed: int) -> dict:
        rng = self.xp.random.default_rng(seed)

        def uniform(*dims):  # symmetric around 0, so sums cancel as in real data, never all zeros
            return rng.random(dims, dtype=self.xp.float32) * 2 - 1

        if isinstance(shape, GemmShape):
            return {"a": uniform(shape.m, shape.k), "b": uniform(shape.k, shape.n)}
        return {
            "x": uniform(shape.batch, shape.in_channels, shape.height, shape.width),
            "w": uniform(shape.out_channels, shape.in_channels, shape.kernel, shape.kernel),
        }

    def reference(self, shape, inputs: dict):
        if isinstance(shape, GemmShape):
            return reference.gemm(self.xp, inputs["a"], inputs["b"])
        return reference.conv_sliding(self.xp, inputs["x"], inputs["w"], shape.stride, shape.pad)

    def output(self, shape):
        if isinstance(shape, GemmShape):
            dims = (shape.m, shape.n)
        else:
            assert isinstance(shape, ConvShape)
            dims = (shape.batch, shape.out_channels, shape.out_height, shape.out_width)
        return self.xp.empty(dims, dtype=self.xp.float32)

    def rel_err(self, output, ref) -> float:
        return reference.rel_err(self.xp, output, ref)

    def poison(self, output) -> None:
        output.fill(float("nan"))

    def check_variants(self, variants) -> None:
        """Raise GpubenchError if a library some variant needs is missing."""

    def tolerance(self, variant) -> float:
        return variant.tolerance

    def collect(self) -> None:
        """Give back memory between shapes (CuPy keeps freed blocks in its pool)."""


def open_backend(name: str, *, tf32: bool = False):
    """The backend called `name`; raises GpubenchError naming whatever is missing (driver, GPU, PyCUDA, CuPy)."""
    if name == "cpu":
        from gpubench.backends.cpu import CpuBackend

        return CpuBackend()
    from gpubench.backends.cuda import CudaBackend

    return CudaBackend(tf32=tf32)
