"""Where a point stands against what the hardware can do: the roofline, from ceilings measured on the run's GPU.

A run on the GPU records its ceilings (environment.device.ceilings): the FP32 FFMA peak from a
microbenchmark, the tensor-core peaks of each precision through the library at a large size (TF32, FP16, BF16,
FP8: the keys are gpubench/core/dtypes.py's `ceiling`), the device-to-device copy bandwidth and the L2 read
bandwidth. A point's bound is min(its precision's compute peak, arithmetic intensity × DRAM bandwidth), its
intensity being FLOPs over the minimum bytes it must move in its precision; its share is its GFLOPS over that
bound.
"""

from __future__ import annotations

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.results import Point, Run


def ceilings(run: Run) -> dict:
    return run.environment.get("device", {}).get("ceilings") or {}


def bound(p: Point, run: Run) -> tuple[float, str] | None:
    """(GFLOPS the hardware allows this point, "memory" or "compute"), or None without ceilings."""
    c = ceilings(run)
    peak = c.get(PRECISIONS[p.dtype].ceiling)
    bandwidth = c.get("copy_gbps")
    if not peak or not bandwidth or not p.min_bytes:
        return None
    memory = p.flops / p.min_bytes * bandwidth
    return (memory, "memory") if memory < peak else (float(peak), "compute")


def peaks(run: Run) -> list[tuple[str, float]]:
    """(precision, GFLOPS) of every compute peak the run measured, FP32 first."""
    c = ceilings(run)
    return [(d.upper(), c[PRECISIONS[d].ceiling]) for d in DType if c.get(PRECISIONS[d].ceiling)]


def share(p: Point, run: Run) -> float | None:
    b = bound(p, run)
    return p.gflops / b[0] if b and p.gflops else None


def floor_ms(run: Run) -> float | None:
    return run.environment.get("device", {}).get("floor_ms")


def near_floor(p: Point, run: Run, factor: float = 2.0) -> bool:
    """Within `factor` of the time an empty kernel takes under the same protocol: the floor, not the kernel."""
    f = floor_ms(run)
    return bool(f and p.median_ms and p.median_ms <= factor * f)
