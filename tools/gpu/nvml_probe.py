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


INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT (nvml.h)


def instant_mw(h) -> int | None:
    value = nv.nvmlDeviceGetFieldValues(h, [INSTANT])[0]
    return value.value.uiVal if value.nvmlReturn == 0 else None


def stamped(h, seconds: float, busy) -> None:
    """Whether the field's timestamp marks a new reading: distinct timestamps against distinct values."""
    seen = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        busy()
        v = nv.nvmlDeviceGetFieldValues(h, [INSTANT])[0]
        seen.append((v.timestamp, v.value.uiVal, v.latencyUsec))
    stamps = sorted({s for s, _, _ in seen})
    gaps = [(b - a) / 1e3 for a, b in zip(stamps, stamps[1:])]
    print(f"  {len(seen)} reads, {len(stamps)} distinct timestamps, {len({v for _, v, _ in seen})} distinct values; "
          f"timestamp gaps ms median {statistics.median(gaps) if gaps else 0:.2f}; latencyUsec {seen[-1][2]}")


def instant_changes(h, seconds: float, busy) -> tuple[list[float], list[int]]:
    """Intervals (ms) between changes of the instant power reading, and the readings (mW)."""
    stamps, values = [], []
    last = instant_mw(h)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        busy()
        now = instant_mw(h)
        if now != last:
            stamps.append(time.perf_counter())
            values.append(now)
            last = now
    return [1e3 * (b - a) for a, b in zip(stamps, stamps[1:])], values


def agreement(h, seconds: float, busy) -> None:
    """Mean instant power against the energy counter's power between two of its changes, under one load."""
    def edge():
        first = nv.nvmlDeviceGetTotalEnergyConsumption(h)
        while True:
            busy()
            now = nv.nvmlDeviceGetTotalEnergyConsumption(h)
            if now != first:
                return time.perf_counter(), now
    t0, e0 = edge()
    readings = []
    end = t0 + seconds
    while time.perf_counter() < end:
        busy()
        readings.append(instant_mw(h))
    t1, e1 = edge()
    counter_w = (e1 - e0) / (t1 - t0) / 1e3
    print(f"  counter {counter_w:.1f} W over {t1 - t0:.2f} s; instant mean {statistics.fmean(readings) / 1e3:.1f} W "
          f"({len(readings)} reads, {len(set(readings))} distinct)")


def summary(name: str, gaps: list[float], steps: list[int]) -> None:  # steps: changes (mJ) or readings (mW)
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
    print(f"instant power: {latency(lambda: instant_mw(h)):.1f} us per call, now {instant_mw(h)} mW")
    gaps, values = instant_changes(h, 1.0, busy)
    summary("instant busy", gaps, values)
    print("  first readings", values[:12])
    print("instant timestamps, busy:")
    stamped(h, 0.5, busy)
    x = cp.random.random(1 << 20, dtype=cp.float32)

    def small():  # short kernels, back to back, as the lab's small points are
        for _ in range(20):
            x.__iadd__(1.0)

    gaps, values = instant_changes(h, 1.0, small)
    summary("instant small kernels", gaps, values)
    print("agreement, SGEMM:")
    agreement(h, 2.0, busy)
    print("agreement, small kernels:")
    agreement(h, 2.0, small)
    cp.cuda.Device().synchronize()
    time.sleep(0.2)
    summary("idle", *changes(h, 1.0, lambda: None))
    gaps, values = instant_changes(h, 1.0, lambda: None)
    summary("instant idle", gaps, values)


if __name__ == "__main__":
    main()
