"""How fast NVML answers, and how often its energy counter moves: what an energy window can rely on.

    python3 tools/gpu/nvml_probe.py   (on the GPU machine)

Prints each telemetry call's mean latency, then, with the GPU busy (back-to-back SGEMMs through CuPy) and idle,
the intervals between changes of nvmlDeviceGetTotalEnergyConsumption and the size of each change.
"""

from __future__ import annotations

import statistics
import time

import cupy as cp
import pynvml as nv


def latency(fn, n: int = 300) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def changes(h, seconds: float, busy) -> tuple[list[float], list[int]]:
    """Intervals (ms) between changes of the energy counter, and the changes (mJ), polled as fast as NVML answers."""
    stamps, steps = [], []
    last = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        busy()
        now = nv.nvmlDeviceGetTotalEnergyConsumption(h)
        if now != last:
            stamps.append(time.perf_counter())
            steps.append(now - last)
            last = now
    return [1e3 * (b - a) for a, b in zip(stamps, stamps[1:])], steps


def summary(name: str, gaps: list[float], steps: list[int]) -> None:
    if len(gaps) < 2:
        print(f"{name}: {len(steps)} changes")
        return
    q = statistics.quantiles(gaps, n=10)
    print(f"{name}: {len(steps)} changes; interval ms median {statistics.median(gaps):.2f} p10 {q[0]:.2f} "
          f"p90 {q[-1]:.2f} max {max(gaps):.2f}; step mJ median {statistics.median(steps)}")


def main() -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    calls = {
        "clock sm": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
        "clock mem": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
        "power": lambda: nv.nvmlDeviceGetPowerUsage(h),
        "reasons": lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h),
        "energy": lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h),
    }
    for name, fn in calls.items():
        print(f"{name}: {latency(fn):.1f} us per call")
    a = cp.random.random((4096, 4096), dtype=cp.float32)
    queue = []

    def busy():  # keep about 10 ms of SGEMMs queued ahead of the host
        queue.append(cp.cuda.Event())
        cp.matmul(a, a)
        queue[-1].record()
        while len(queue) > 4:
            queue.pop(0).synchronize()

    summary("busy", *changes(h, 1.5, busy))
    cp.cuda.Device().synchronize()
    time.sleep(0.2)
    summary("idle", *changes(h, 1.0, lambda: None))


if __name__ == "__main__":
    main()
