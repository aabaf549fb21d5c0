"""One timing function for every variant on every backend.

A backend supplies a :class:`Clock`: how to time one call (CUDA events on the launch stream, or the host
clock for NumPy), how to wait for outstanding work, and how to flush the caches outside the timed region. A
clock that can also time a queued batch (`time_batch_ms`) lets short calls be timed without the host in the
way: the whole batch is queued behind a wait kernel, so no call's interval ever waits for the host.
:func:`measure` does the rest: warm-up, repetitions under a time budget, telemetry after each sample (flagging
or, on request, discarding samples taken while throttled), and, where asked, sampling on until a comparison
at a given threshold could be decided. The raw samples are kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Protocol

from gpubench.phases import add, phase
from gpubench.stats import Stats, decidable, summarize
from gpubench.telemetry import FreshReadings, NoTelemetry, reason_names

__all__ = ["Clock", "TimingPolicy", "Timing", "Stop", "measure", "summarize", "Stats", "HostClock"]

BATCH_TARGET_MS = 2.0  # a queued batch of short calls lasts about this long on the GPU ...
MAX_BATCH = 64  # ... with at most this many calls
CALIBRATION = 3  # single calls timed (and not kept) to size the batches: the fastest of them decides
MAX_DECIDE_SAMPLES = 2000  # enough to decide any comparison worth making; sampling stops here
WARM_S = 0.1  # warm-up calls stop once they have run this long (a call this long is warm after one, and the
# point's check has already run it once)


class Stop(StrEnum):
    """Why sampling ended (saved with each point, as its string)."""

    REPS = "reps"  # the policy's repetitions were taken
    BUDGET = "budget"  # its time budget was spent (after min_reps)
    NOISE = "noise"  # --max-noise: the spread came under the target
    DECIDED = "decided"  # --decide: a comparison at the threshold could now be decided
    TIME_CAP = "time-cap"  # a target was missed within --max-time
    CAP = "cap"  # --decide gave up after MAX_DECIDE_SAMPLES


class Clock(Protocol):
    def sync(self) -> None: ...

    def flush(self) -> None: ...

    def time_ms(self, run: Callable[[], None]) -> float: ...


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 3  # untimed calls first (stopped early once they take WARM_S, or half the budget)
    reps: int = 50  # at most this many timed calls ...
    min_reps: int = 5  # ... and at least this many, whatever the budget
    budget_s: float = 1.0  # stop after min_reps once this much time went into timed calls
    flush: bool = True  # evict L2 before every timed call
    max_noise: float | None = None  # adaptive: sample until IQR/median is at most this ...
    max_time_s: float = 10.0  # ... or this much time has gone into the point (also caps `decide`)
    decide: float | None = None  # sample on until a comparison at this threshold could be decided ...
    family: int = 1  # ... among this many points (the comparison's Bonferroni family: the run's size)
    discard_throttled: bool = False  # drop samples taken while throttled, and take others
    batch_below_ms: float = 1.0  # calls shorter than this are timed in queued batches, where the clock can

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Timing:
    samples_ms: list[float]
    stop: Stop | None  # why sampling ended
    batch: int = 1  # calls per queued batch (1: each call timed on its own)
    sm_mhz: list[int] = field(default_factory=list)  # the SM clock read after each kept sample
    mem_mhz: list[int] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)
    throttled: int = 0  # samples taken while throttled (kept, or discarded with discard_throttled)
    discarded: int = 0
    reasons: int = 0  # every clock-event reason bit seen
    instant: FreshReadings = field(default_factory=FreshReadings)  # new instant-power values between samples
    window: dict | None = None  # an energy window taken between samples (`aside`), {} where none could be read

    def telemetry(self) -> dict | None:
        """What a saved point keeps: medians of the clocks and power, and how many samples were throttled."""
        if not self.sm_mhz:
            return None
        med = lambda xs: summarize(xs).median if xs else None  # noqa: E731
        return {"sm_mhz": med(self.sm_mhz), "sm_mhz_min": min(self.sm_mhz), "mem_mhz": med(self.mem_mhz),
                "power_w": med(self.power_w), "throttled": self.throttled, "discarded": self.discarded,
                "reasons": reason_names(self.reasons)}


def _stop_reason(samples: list[float], elapsed_s: float, p: TimingPolicy) -> Stop | None:
    n = len(samples)
    if p.max_noise is not None:
        if n >= p.min_reps and summarize(samples).rel_iqr <= p.max_noise:
            return Stop.NOISE
        return Stop.TIME_CAP if elapsed_s >= p.max_time_s else None
    usual = Stop.REPS if n >= p.reps else Stop.BUDGET if n >= p.min_reps and elapsed_s >= p.budget_s else None
    if usual is None or p.decide is None:
        return usual
    if decidable(samples, p.decide, p.family):
        return usual if n <= p.reps else Stop.DECIDED
    if n >= MAX_DECIDE_SAMPLES:
        return Stop.CAP
    return Stop.TIME_CAP if elapsed_s >= p.max_time_s else None


def measure(run: Callable[[], None], clock: Clock, policy: TimingPolicy, telemetry=NoTelemetry(),
            aside: Callable[[Timing], None] | None = None, warm_s: float = 0.0) -> Timing:
    """Time `run` under `policy`. `aside(timing)`, where given, is called after each sample and may do work of its
    own between samples (an energy window at the right moment); its time is not counted against the budget.
    `warm_s`: seconds the call has just run (the point's check), which count towards the warm-up: a call that
    took WARM_S once is warm."""
    limit = min(WARM_S, policy.budget_s / 2)
    started = time.perf_counter() - warm_s
    with phase("warmup"):
        for _ in range(max(1, policy.warmup) if warm_s <= limit else 0):
            run()
            clock.sync()
            if time.perf_counter() - started > limit:
                break
    timing = Timing([], None)
    expected = telemetry.expected_mhz
    started = time.perf_counter()
    kept: list[float] = []
    if hasattr(clock, "time_batch_ms"):
        # Size the batches from the fastest of a few single calls (one slow first call must not decide).
        with phase("calibrate"):
            calibration = [_single(run, clock, policy.flush) for _ in range(CALIBRATION)]
        if min(calibration) < policy.batch_below_ms:
            timing.batch = max(2, min(MAX_BATCH, math.ceil(BATCH_TARGET_MS / max(min(calibration), 0.002))))
            started = time.perf_counter()
        else:  # calls this long are timed one by one, flushed, after the warm-up: these are the first samples
            kept = calibration
    while True:
        if kept:
            new, kept = kept, []
        else:
            with phase("sample"):
                if timing.batch > 1:
                    new = clock.time_batch_ms(run, timing.batch, policy.flush)
                else:
                    new = [_single(run, clock, policy.flush)]
        add("timed", sum(new) / 1e3)
        with phase("telemetry"):
            reading = telemetry.sample()
        if reading is not None:
            timing.reasons |= reading.reasons
            timing.instant.see(reading.instant_mw)
            if reading.throttled(expected):
                timing.throttled += len(new)
                if policy.discard_throttled:
                    timing.discarded += len(new)
                    if time.perf_counter() - started >= policy.max_time_s:
                        timing.stop = Stop.TIME_CAP
                        return timing
                    continue
            timing.sm_mhz += [reading.sm_mhz] * len(new)
            timing.mem_mhz += [reading.mem_mhz] * len(new)
            if reading.power_w is not None:
                timing.power_w += [reading.power_w] * len(new)
        timing.samples_ms += new
        if aside is not None:
            before = time.perf_counter()
            aside(timing)
            started += time.perf_counter() - before
        with phase("stop rule"):
            stop = _stop_reason(timing.samples_ms, time.perf_counter() - started, policy)
        if stop:
            timing.stop = stop
            return timing


def _single(run, clock: Clock, flush: bool) -> float:
    if flush:
        clock.flush()
    return clock.time_ms(run)


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
