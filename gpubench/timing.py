"""One timing function for every variant on every backend.

A backend supplies a :class:`Clock`: how to time one call (CUDA events on the launch stream, or the host
clock for NumPy), how to wait for outstanding work, and how to flush the caches outside the timed region.
:func:`measure` does the rest: warm-up, repetitions under a time budget (or until the spread is small enough),
and the raw samples, which the saved results keep.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Protocol


class Clock(Protocol):
    def sync(self) -> None: ...

    def flush(self) -> None: ...

    def time_ms(self, run: Callable[[], None]) -> float: ...


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 3  # untimed calls first (stopped early once they take half the budget)
    reps: int = 50  # at most this many timed calls ...
    min_reps: int = 5  # ... and at least this many, whatever the budget
    budget_s: float = 1.0  # stop after min_reps once this much time went into timed calls
    flush: bool = True  # evict L2 before every timed call
    max_noise: float | None = None  # adaptive: sample until IQR/median is at most this ...
    max_time_s: float = 10.0  # ... or this much time has gone into the point

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    min: float
    max: float
    mean: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else float("inf")

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def summarize(samples: list[float]) -> Stats:
    s = sorted(samples)
    if len(s) >= 2:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1 = q3 = s[0]
    return Stats(len(s), statistics.median(s), s[0], s[-1], statistics.fmean(s), q1, q3)


@dataclass
class Timing:
    samples_ms: list[float]
    stop: str  # why sampling ended: "reps", "budget", "noise" (target met) or "time-cap" (target missed)


def _stop_reason(samples: list[float], elapsed_s: float, p: TimingPolicy) -> str | None:
    n = len(samples)
    if p.max_noise is not None:
        if n >= p.min_reps and summarize(samples).rel_iqr <= p.max_noise:
            return "noise"
        return "time-cap" if elapsed_s >= p.max_time_s else None
    if n >= p.reps:
        return "reps"
    if n >= p.min_reps and elapsed_s >= p.budget_s:
        return "budget"
    return None


def measure(run: Callable[[], None], clock: Clock, policy: TimingPolicy) -> Timing:
    started = time.perf_counter()
    for _ in range(max(1, policy.warmup)):
        run()
        clock.sync()
        if time.perf_counter() - started > policy.budget_s / 2:
            break
    samples: list[float] = []
    started = time.perf_counter()
    while True:
        if policy.flush:
            clock.flush()
        samples.append(clock.time_ms(run))
        stop = _stop_reason(samples, time.perf_counter() - started, policy)
        if stop:
            return Timing(samples, stop)


class HostClock:
    """The CPU backend's clock: work is synchronous, so the host's monotonic clock times it."""

    def sync(self) -> None:
        pass

    def flush(self) -> None:
        pass  # the CPU backend does not flush its caches; saved runs record flush as not applied

    def time_ms(self, run: Callable[[], None]) -> float:
        t0 = time.perf_counter()
        run()
        return (time.perf_counter() - t0) * 1e3
