"""One timing function for every variant on every backend.

A backend supplies a :class:`Clock`: how to time one call (CUDA events on the launch stream, or the host
clock for NumPy), how to wait for outstanding work, and how to flush the caches outside the timed region. A
clock that can also time a queued batch (`time_batch_ms`) lets short calls be timed without the host in the
way: the whole batch is queued behind a wait kernel, so no call's interval ever waits for the host.
:func:`measure` does the rest: warm-up, repetitions under a time budget, telemetry after each sample (flagging
or, on request, discarding samples taken while throttled), and, where asked, sampling on until a comparison
at a given threshold could be decided. The raw samples are kept.

Two paces (:class:`Pace`, part of the policy and saved with each point). `idle`, the default: each call (or short
queued batch) is timed right after the GPU waited for the host, which is what a call costs from a GPU that is not
already hot. `sustained`: calls run back to back in one stream that the host keeps ahead of the GPU, each still
after its own flush and between its own events; sampling starts once the calls have run for `settle_s` and their
time has stopped drifting over a few windows (the power-limited steady state of a hot GPU, where the clock may be well below its
maximum), which is what a call costs under sustained load (triton.testing.do_bench measures such a stream).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Protocol

from gpubench.core.errors import GpubenchError
from gpubench.core.phases import add, phase
from gpubench.measure.kernel_clock import Clocks
from gpubench.measure.stats import Stats, decidable, summarize
from gpubench.measure.telemetry import FreshReadings, NoTelemetry, reason_names

__all__ = ["Clock", "Pace", "TimingPolicy", "Timing", "Stop", "measure", "summarize", "Stats", "HostClock", "batch_for",
           "note_reading", "single"]

BATCH_TARGET_MS = 2.0  # a queued batch of short calls lasts about this long on the GPU ...
MAX_BATCH = 64  # ... with at most this many calls
CALIBRATION = 3  # single calls timed (and not kept) to size the batches: the fastest of them decides
MAX_DECIDE_SAMPLES = 2000  # enough to decide any comparison worth making; sampling stops here
WARM_S = 0.1  # warm-up calls stop once they have run this long (a call this long is warm after one, and the
# point's check has already run it once)
SETTLE_WINDOW_S = 0.5  # sustained: the stream's time is compared window to window, each this long ...
STEADY = 0.01  # ... and is steady once the medians of STEADY_WINDOWS windows in a row are within this of each other
STEADY_WINDOWS = 3  # (two were not enough on an H100 in bf16: its power limiter overshoots, then recovers)


class Stop(StrEnum):
    """Why sampling ended (saved with each point, as its string)."""

    REPS = "reps"  # the policy's repetitions were taken
    BUDGET = "budget"  # its time budget was spent (after min_reps)
    NOISE = "noise"  # --max-noise: the spread came under the target
    DECIDED = "decided"  # --decide: a comparison at the threshold could now be decided
    TIME_CAP = "time-cap"  # a target was missed within --max-time
    CAP = "cap"  # --decide gave up after MAX_DECIDE_SAMPLES


class Pace(StrEnum):
    """How the timed calls follow each other (saved with each point, as its string)."""

    IDLE = "idle"  # each call (or a short queued batch) timed after the GPU waited for the host: a call from idle
    SUSTAINED = "sustained"  # calls back to back in a stream kept ahead of the GPU, timed once it is steady


def pace_of(value) -> Pace:
    """A pace from its name (a suite's, the API's), or one line naming what is allowed."""
    try:
        return Pace(value)
    except ValueError:
        raise GpubenchError(f"pace {value!r:.40}; allowed: {', '.join(Pace)}") from None


class Stream(Protocol):
    """Calls back to back on the device, the queue kept ahead of it (what a clock's `stream` returns)."""

    def take(self) -> list[float]: ...  # the times of the next calls to finish (one chunk), more queued behind

    def close(self) -> None: ...  # wait for what is still queued


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
    pace: Pace = Pace.IDLE  # sustained: calls timed in a steady back-to-back stream ...
    settle_s: float = 1.0  # ... after running back to back at least this long (and until their time is steady)
    cooldown_s: float = 0.0  # the GPU idles this long before a point's first call, so that every point starts from a
    # rested card: at tensor-core rates the power limiter's clamp, set by the points before, otherwise carries over
    preheat_s: float = 0.0  # a GPU that idled (a process's first point, or after a compile) is burnt this long before
    # it is timed, so that every process measures a GPU in its working state (backends/cuda/preheat.py)
    places: int = 1  # a small call's timed calls go in turn to this many sets of its buffers (backends/cuda/placement.py)
    processes: int = 1  # worker processes that each sample the point under this policy (execution/processes.py)
    clocks: Clocks = Clocks.EVENTS  # both: CUPTI's kernel records of the timed calls beside the events (kernel_clock.py)
    graph: int = 0  # N > 0: each timed call is one launch of a CUDA graph of N captured calls (the CUDA clock)

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
    settled_s: float | None = None  # sustained: seconds the calls ran back to back before the first sample

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
    took WARM_S once is warm. A cool-down (policy.cooldown_s) comes first, and the warm-up after it runs in full: the
    clocks come up from idle again."""
    if policy.cooldown_s > 0:
        with phase("cooldown"):
            time.sleep(policy.cooldown_s)
        warm_s = 0.0
    limit = min(WARM_S, policy.budget_s / 2)
    started = time.perf_counter() - warm_s
    with phase("warmup"):
        for _ in range(max(1, policy.warmup) if warm_s <= limit else 0):
            run()
            clock.sync()
            if time.perf_counter() - started > limit:
                break
    if policy.pace == Pace.SUSTAINED:
        return _sustained(run, clock, policy, telemetry)
    timing = Timing([], None)
    started = time.perf_counter()
    kept: list[float] = []
    if hasattr(clock, "time_batch_ms"):
        # Size the batches from the fastest of a few single calls (one slow first call must not decide).
        with phase("calibrate"):
            calibration = [single(run, clock, policy.flush) for _ in range(CALIBRATION)]
        timing.batch = batch_for(min(calibration), policy)
        if timing.batch > 1:
            started = time.perf_counter()
        else:  # calls this long are timed one by one, flushed, after the warm-up: these are the first samples
            kept = calibration

    def samples() -> list[float]:
        nonlocal kept
        if kept:
            new, kept = kept, []
            return new
        if timing.batch > 1:
            return clock.time_batch_ms(run, timing.batch, policy.flush)
        return [single(run, clock, policy.flush)]

    return _sample(samples, timing, policy, telemetry, aside, started)


def batch_for(call_ms: float, policy: TimingPolicy) -> int:
    """Calls per queued batch for calls of about `call_ms` each (the fastest of a few single calls): enough for the
    batch to last about BATCH_TARGET_MS on the GPU, 2 to MAX_BATCH; 1 (each call timed on its own) from
    policy.batch_below_ms up."""
    if call_ms >= policy.batch_below_ms:
        return 1
    return max(2, min(MAX_BATCH, math.ceil(BATCH_TARGET_MS / max(call_ms, 0.002))))


def _sustained(run, clock: Clock, policy: TimingPolicy, telemetry) -> Timing:
    """Time `run` in a steady stream: sized from the fastest of a few single calls, settled (back to back for at
    least settle_s, until STEADY_WINDOWS windows' medians agree within STEADY, or max_time_s), then sampled a chunk at a
    time while the stream goes on. No aside: an energy window between samples would break the stream."""
    if not hasattr(clock, "stream"):
        raise GpubenchError(f"pace {Pace.SUSTAINED}: this backend's clock cannot run calls in a stream")
    with phase("calibrate"):
        call_ms = min(single(run, clock, policy.flush) for _ in range(CALIBRATION))
    stream = clock.stream(run, policy.flush, call_ms)
    try:
        timing = Timing([], None)
        with phase("settle"):
            timing.settled_s = _settle(stream, policy)
        return _sample(stream.take, timing, policy, telemetry, None, time.perf_counter())
    finally:
        stream.close()


def _settle(stream: Stream, policy: TimingPolicy) -> float:
    """Run the stream until its calls' time is steady: at least policy.settle_s, then until the medians of
    STEADY_WINDOWS windows of SETTLE_WINDOW_S in a row agree within STEADY (a GPU that reaches its power limit
    first clamps its clock below where it settles, then recovers), at most max_time_s. Returns the seconds it ran."""
    started = window_start = time.perf_counter()
    medians, window = [], []
    while True:
        window += stream.take()
        now = time.perf_counter()
        if now - window_start < SETTLE_WINDOW_S:
            continue
        medians.append(summarize(window).median)
        window, window_start = [], now
        ran = now - started
        last = medians[-STEADY_WINDOWS:]
        steady = len(last) == STEADY_WINDOWS and max(last) / min(last) - 1 <= STEADY
        if ran >= policy.settle_s and steady or ran >= max(policy.settle_s, policy.max_time_s):
            return ran


def _sample(samples: Callable[[], list[float]], timing: Timing, policy: TimingPolicy, telemetry,
            aside: Callable[[Timing], None] | None, started: float) -> Timing:
    """The sampling loop of either pace: `samples()` gives the next samples; telemetry after each, then the stop
    rules."""
    expected = telemetry.expected_mhz
    while True:
        with phase("sample"):
            new = samples()
        add("timed", sum(new) / 1e3)
        with phase("telemetry"):
            reading = telemetry.sample()
        if reading is not None and not note_reading(timing, reading, len(new), expected, policy.discard_throttled):
            if time.perf_counter() - started >= policy.max_time_s:
                timing.stop = Stop.TIME_CAP
                return timing
            continue
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


def note_reading(timing: Timing, reading, count: int, expected, discard: bool) -> bool:
    """A telemetry reading taken after `count` new samples, noted in `timing` (its clocks and power once per
    sample, its reasons, whether it was throttled). Returns False where those samples are to be dropped: taken
    while throttled, with `discard` (counted as discarded; their clocks are not noted)."""
    timing.reasons |= reading.reasons
    timing.instant.see(reading.instant_mw)
    if reading.throttled(expected):
        timing.throttled += count
        if discard:
            timing.discarded += count
            return False
    timing.sm_mhz += [reading.sm_mhz] * count
    timing.mem_mhz += [reading.mem_mhz] * count
    if reading.power_w is not None:
        timing.power_w += [reading.power_w] * count
    return True


def single(run, clock: Clock, flush: bool) -> float:
    """One call timed on its own, after a flush where `flush`."""
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

    def stream(self, run: Callable[[], None], flush: bool, call_ms: float) -> HostStream:
        return HostStream(self, run, max(1, math.ceil(BATCH_TARGET_MS / max(call_ms, 1e-3))))


class HostStream:
    """The CPU backend's stream: its calls are synchronous, so back to back is one call after another."""

    def __init__(self, clock: HostClock, run: Callable[[], None], chunk: int):
        self.clock, self.run, self.chunk = clock, run, chunk

    def take(self) -> list[float]:
        return [self.clock.time_ms(self.run) for _ in range(self.chunk)]

    def close(self) -> None:
        pass
