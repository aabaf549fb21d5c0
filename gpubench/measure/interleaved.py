"""Two calls timed call by call in turn: one round of an A/B (gpubench/execution/paired.py runs the rounds).

Why call by call. Timed as a block of ~30 calls of A and then a block of ~30 calls of B, a 24 µs naive GEMM
against itself on an H200 gave round ratios near 1.02 or near 0.98 (docs/evidence/micro-h200.log.txt). The card
has states that last tens of calls, and a state often changed between the two blocks. Timed in turn, both sides see
any state that lasts longer than one call alike.

Why counterbalanced (A B B A, not A B A B). Timed A B A B on an H200, a 16 µs kernel against a copy of itself gave
round ratios of 0.96-0.99 and 1.02-1.05 by turns: within a round, the calls in even places ran 2-4% slower than
those in odd places (or the other way), the same kernel either side (docs/evidence/micro-ab-h200.txt). With A B A B,
place and side coincide, and that difference read as A against B. In A B B A A B B A each side takes one even and
one odd place in every four calls: the i-th pair of adjacent calls (the i-th sample of each side) comes A-first and
B-first by turns, and measure/paired.py's `round_ratio` takes each such two pairs together, so a difference by place
cancels, as does a drift through the round.

A round uses the clock's own methods, not a copy of measure/timing.py's batching:

- **Warm-up.** Both calls in turn, policy.warmup times each, stopped once they have run WARM_S.
- **Short calls.** Where the two sides' fastest single calls average below policy.batch_below_ms (`calibrate`
  decides it once, for every round, with timing.batch_for's rule), calls are queued in batches behind the clock's
  wait kernel (`time_batch_ms`). One batch holds both sides' calls in turn, through an `Alternating` call that
  records which side each call was. Each call still comes after its own flush, between its own events.
- **Longer calls.** These, and every call on a clock that has no batches (the CPU backend's HostClock), are timed
  one at a time with `time_ms`, in turn, one call per turn of the loop. Each side's call then follows the same
  host work. Taken two to a turn, the first call of each pair followed the loop's stop check, and on the CPU
  backend the two sides' times then differed with which side went first.
- **When a round stops.** Once each side has policy.reps samples, or, after min_reps each, once 2 × budget_s has gone
  by (each side's share of the round being budget_s). The two sides always hold as many samples as each other: the
  i-th of A and the i-th of B are adjacent calls.
- **Telemetry.** Read once, after the round. Both sides' samples get the same reading. A round taken while
  throttled is kept and counted as throttled; an A/B has no samples to spare for discarding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from gpubench.core.phases import add, phase
from gpubench.measure.telemetry import NoTelemetry
from gpubench.measure.timing import CALIBRATION, WARM_S, Clock, Stop, Timing, TimingPolicy, batch_for, note_reading, \
    single

SIDES = 2  # A (0) and B (1)


class SideFailed(Exception):
    """A call of one side raised during a round (or its calibration): `side` is the side whose call was running,
    the exception it raised is the cause. A fault the GPU reports later, at a wait, names the side last called."""

    def __init__(self, side: int):
        super().__init__(f"side {side}")
        self.side = side


def abba(first: int, k: int) -> int:
    """The side of the k-th call of a sequence that starts with side `first`, counterbalanced: A B B A A B B A ...
    (B A A B ... from B). Each side then takes one even and one odd place in every four calls, and the pairs of
    adjacent calls come in both orders alike."""
    return first if k % 4 in (0, 3) else 1 - first


class Alternating:
    """A's call and B's in turn, counterbalanced (`abba`), starting with `first`: each call runs the next side and
    records which side it was (`sides`, in the order made, a call the clock made again included). `last` is the side
    of the call made last. `restart(first)` begins the sequence again (each queued batch does)."""

    def __init__(self, runs: Sequence[Callable[[], None]], first: int):
        self.runs = runs
        self.sides: list[int] = []
        self.last = first
        self.restart(first)

    def restart(self, first: int) -> None:
        self.first, self.k = first, 0

    def __call__(self) -> None:
        side = self.last = abba(self.first, self.k)
        self.k += 1
        self.sides.append(side)
        self.runs[side]()

    def one(self, side: int) -> Callable[[], None]:
        """One side's call alone, noted as the last made each time it runs (a single call the clock times again
        runs the same side again)."""
        def call() -> None:
            self.last = side
            self.runs[side]()

        return call


@dataclass
class Round:
    """One round's samples: each side's Timing (A's, then B's), and which side each sample was, in the order taken
    (what splits a second clock's records of the same calls alike: kernel_clock.paired_durations)."""

    timings: tuple[Timing, Timing]
    sides: list[int] = field(default_factory=list)


def warm(runs: Sequence[Callable[[], None]], clock: Clock, policy: TimingPolicy, first: int) -> None:
    """Both calls in turn, policy.warmup times each (at least once), stopped once they have run WARM_S (or half the
    budget)."""
    limit, started = min(WARM_S, policy.budget_s / 2), time.perf_counter()
    with phase("warmup"):
        for _ in range(max(1, policy.warmup)):
            for side in (first, 1 - first):
                runs[side]()
            clock.sync()
            if time.perf_counter() - started > limit:
                break


def calibrate(runs: Sequence[Callable[[], None]], clock: Clock, policy: TimingPolicy) -> int:
    """Calls per queued batch for every round (even: a batch holds as many of each side's calls), or 1 where the
    calls are timed one at a time: timing.batch_for's rule on the mean of the two sides' fastest single calls
    (CALIBRATION of each, in turn, after a warm-up). A clock without batches: 1, with no call made."""
    if not hasattr(clock, "time_batch_ms"):
        return 1
    pair = Alternating(runs, 0)
    try:
        warm((pair.one(0), pair.one(1)), clock, policy, 0)
        with phase("calibrate"):
            times = [[single(pair.one(side), clock, policy.flush) for side in range(SIDES)] for _ in range(CALIBRATION)]
        fastest = [min(column) for column in zip(*times)]
    except Exception as e:  # noqa: BLE001 - the caller records it on the side that raised
        raise SideFailed(pair.last) from e
    batch = batch_for(sum(fastest) / SIDES, policy)
    return batch if batch == 1 else batch + batch % 2


def measure_round(runs: Sequence[Callable[[], None]], clock: Clock, policy: TimingPolicy, first: int, batch: int,
                  telemetry=NoTelemetry()) -> Round:
    """One round: a warm-up, then A's and B's calls in turn starting with side `first`, queued `batch` to a batch
    (1: one at a time), until the round's stop rule (the module's docstring); then one telemetry reading for
    both. SideFailed where a call raises."""
    samples: tuple[list[float], list[float]] = ([], [])
    taken: list[int] = []
    pair = Alternating(runs, first)
    try:
        warm((pair.one(0), pair.one(1)), clock, policy, first)
        started = time.perf_counter()
        while True:
            with phase("sample"):
                if batch > 1:
                    pair.restart(first)
                    n = min(batch, 2 * max(1, policy.reps - len(samples[0])))
                    got = clock.time_batch_ms(pair, n, policy.flush)
                    who = pair.sides[-len(got):]  # a batch timed again: its last run's calls are the samples
                else:  # one call per turn of the loop, so that each side's calls follow the same host work
                    side = abba(first, len(taken))
                    got, who = [single(pair.one(side), clock, policy.flush)], [side]
            add("timed", sum(got) / 1e3)
            for ms, side in zip(got, who):
                samples[side].append(ms)
            taken += who
            stop = _stop(len(samples[0]), len(samples[1]), time.perf_counter() - started, policy)
            if stop is not None:
                break
    except Exception as e:  # noqa: BLE001 - the caller records it on the side that raised
        raise SideFailed(pair.last) from e
    timings = (Timing(samples[0], stop, batch), Timing(samples[1], stop, batch))
    with phase("telemetry"):
        reading = telemetry.sample()
    if reading is not None:
        for t in timings:
            note_reading(t, reading, len(t.samples_ms), telemetry.expected_mhz, discard=False)
    return Round(timings, taken)


def _stop(a: int, b: int, elapsed_s: float, policy: TimingPolicy) -> Stop | None:
    """Why the round's sampling ends with `a` and `b` samples of the two sides, or None to go on (always while
    one side has more than the other)."""
    each = min(a, b)
    if a != b:
        return None
    if each >= policy.reps:
        return Stop.REPS
    if each >= policy.min_reps and elapsed_s >= SIDES * policy.budget_s:
        return Stop.BUDGET
    return None
