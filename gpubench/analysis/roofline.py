"""Where a point stands against what the hardware can do: the roofline, from ceilings measured on the run's GPU.

A run on the GPU records its ceilings (environment.device.ceilings): the FP32 FFMA peak from a
microbenchmark, the tensor-core peaks of each precision through the library at a large size (TF32, FP16, BF16,
FP8: the keys are gpubench/core/dtypes.py's `ceiling`), the device-to-device copy bandwidth and the L2 read
bandwidth. A point's bound is min(its precision's compute peak, arithmetic intensity × DRAM bandwidth), its
intensity being FLOPs over the bytes it moves: the DRAM bytes Nsight Compute counted in one of its calls where the
point was profiled (gpubench profile, --profile), else the minimum bytes it must move in its precision; its share
is its GFLOPS over that bound.
"""

from __future__ import annotations

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.results import Point, Run


def ceilings(run: Run) -> dict:
    return run.environment.get("device", {}).get("ceilings") or {}


def measured_bytes(p: Point) -> float | None:
    """The DRAM bytes a profile counted for one call of the point (every launch's reads and writes), or None."""
    profile = p.details.profile
    moved = profile.dram_bytes if profile is not None and profile.taken else None
    return moved if moved else None


def moved_bytes(p: Point) -> float:
    """The bytes the roofline places the point by: measured where profiled, else the minimum."""
    return measured_bytes(p) or p.min_bytes


def intensity(p: Point) -> float | None:
    """FLOPs per byte moved (measured bytes where the point was profiled)."""
    moved = moved_bytes(p)
    return p.flops / moved if moved else None


def intensity_label(points: list[Point]) -> str:
    if any(measured_bytes(p) for p in points):
        return "arithmetic intensity (FLOPs per DRAM byte: measured by Nsight Compute where profiled, else the minimum)"
    return "arithmetic intensity (FLOPs per minimum byte)"


def bound(p: Point, run: Run) -> tuple[float, str] | None:
    """(GFLOPS the hardware allows this point, "memory" or "compute"), or None without ceilings."""
    c = ceilings(run)
    peak = c.get(PRECISIONS[p.dtype].ceiling)
    bandwidth = c.get("copy_gbps")
    if not peak or not bandwidth or not moved_bytes(p):
        return None
    memory = intensity(p) * bandwidth
    return (memory, "memory") if memory < peak else (float(peak), "compute")


def peaks(run: Run) -> list[tuple[str, float]]:
    """(precision, GFLOPS) of every compute peak the run measured, FP32 first."""
    c = ceilings(run)
    first = {PRECISIONS[d].ceiling: d for d in reversed(DType)}  # each ceiling by the first precision that has it
    return [(d.upper(), c[key]) for key, d in sorted(first.items(), key=lambda kd: list(DType).index(kd[1]))
            if c.get(key)]


def share(p: Point, run: Run) -> float | None:
    b = bound(p, run)
    return p.gflops / b[0] if b and p.gflops else None


def floor_ms(run: Run) -> float | None:
    return run.environment.get("device", {}).get("floor_ms")


def near_floor(p: Point, run: Run, factor: float = 2.0) -> bool:
    """Within `factor` of the time an empty kernel takes under the same protocol: the floor, not the kernel."""
    f = floor_ms(run)
    return bool(f and p.median_ms and p.median_ms <= factor * f)
