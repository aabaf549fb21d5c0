"""Where a point stands against what the hardware can do: the roofline, from ceilings measured on the run's GPU.

A run on the GPU records its ceilings (environment.device.ceilings): the FP32 FFMA peak from a
microbenchmark; the tensor-core peaks of each precision from the vendor library at 8192³ (TF32, FP16 and BF16
through cuBLAS, FP8 and INT8 through cuBLASLt, where the GPU has them), the device-to-device copy bandwidth and
the L2 read bandwidth. A point's bound is min(the compute peak of its precision, arithmetic intensity × DRAM
bandwidth), its intensity being FLOPs over the minimum bytes it must move (in its precision's element sizes); its
share is its GFLOPS over that bound. A run recorded before a precision's peak was measured has no bound for it.
"""

from __future__ import annotations

from gpubench.dtypes import DType
from gpubench.results import Point, Run

# Each precision's compute ceiling: the key a run records it under and how a chart names it.
PEAKS: dict[DType, tuple[str, str]] = {
    DType.FP32: ("ffma_gflops", "FP32 FFMA"),
    DType.TF32: ("tf32_gflops", "TF32 (cuBLAS)"),
    DType.FP16: ("fp16_gflops", "FP16 (cuBLAS)"),
    DType.BF16: ("bf16_gflops", "BF16 (cuBLAS)"),
    DType.FP8: ("fp8_gflops", "FP8 (cuBLASLt)"),
    DType.INT8: ("int8_gops", "INT8 (cuBLASLt)"),
}


def ceilings(run: Run) -> dict:
    return run.environment.get("device", {}).get("ceilings") or {}


def peak(dtype: DType, run: Run) -> float | None:
    """The compute ceiling of the precision, as measured on the run's GPU (None where it was not)."""
    return ceilings(run).get(PEAKS[dtype][0])


def peaks(run: Run, dtypes) -> list[tuple[str, float]]:
    """(name, GFLOPS) of the measured ceilings of these precisions, in PEAKS' order, FP32's always first."""
    wanted = {DType.FP32, *dtypes}
    return [(name, peak(d, run)) for d, (_, name) in PEAKS.items() if d in wanted and peak(d, run)]


def bound(p: Point, run: Run) -> tuple[float, str] | None:
    """(GFLOPS the hardware allows this point, "memory" or "compute"), or None without ceilings."""
    compute = peak(p.dtype, run)
    bandwidth = ceilings(run).get("copy_gbps")
    if not compute or not bandwidth or not p.min_bytes:
        return None
    memory = p.flops / p.min_bytes * bandwidth
    return (memory, "memory") if memory < compute else (float(compute), "compute")


def share(p: Point, run: Run) -> float | None:
    b = bound(p, run)
    return p.gflops / b[0] if b and p.gflops else None


def floor_ms(run: Run) -> float | None:
    return run.environment.get("device", {}).get("floor_ms")


def near_floor(p: Point, run: Run, factor: float = 2.0) -> bool:
    """Within `factor` of the time an empty kernel takes under the same protocol: the floor, not the kernel."""
    f = floor_ms(run)
    return bool(f and p.median_ms and p.median_ms <= factor * f)
