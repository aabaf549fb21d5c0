"""The second clock: each timed call's kernels as the GPU ran them (CUPTI's activity records), beside the events.

The events around a call measure from the start event to the end event on the stream: the kernels, plus whatever
the front end does between them (a launch the host queued late, a context's channel switching). CUPTI's records of
the kernels themselves (CONCURRENT_KERNEL: start, end, name, correlation id) measure only the kernels. Each timed
call is tagged with its own external correlation id (CUPTI's EXTERNAL_CORRELATION records link every launch's
correlation id to the tag pushed around it), so a call's kernels are found by tag: its duration is from the first
kernel's start to the last one's end (what the events bracket, without the front end), and its kernels' names are
what a library chose (cuBLAS's and cuDNN's kernel for this problem).

Pure functions over plain records, so that CI tests them without a GPU; the CUDA backend's thin layer over the
`cupti` package (gpubench/backends/cuda/cupti_clock.py) makes the records.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from enum import StrEnum
from typing import Iterable, Mapping, Sequence

from gpubench.core.errors import GpubenchError

CLOCKS_DIFFER = 0.05  # events/CUPTI medians further apart than this are marked in a run's tables
MAX_NAME = 300  # characters of a kernel's (mangled) name kept
MAX_NAMES = 8  # names kept per point: a call of more kernels keeps its first ones


class Clocks(StrEnum):
    """Which clocks time a point (saved in its policy, a suite's `clock` key, --clock)."""

    EVENTS = "events"  # CUDA events around each call: the samples
    BOTH = "both"  # the events, and CUPTI's kernel records of the same calls beside them (kernel_ms, kernels)


class CompareClock(StrEnum):
    """Which samples `compare` reads (--clock of compare): the events' (every run has them), or CUPTI's kernel times
    of the same calls (runs timed with Clocks.BOTH; analysis/kernel_times.py)."""

    EVENTS = "events"  # samples_ms
    KERNEL = "kernel"  # details.kernel_ms


def clocks_of(value) -> Clocks:
    try:
        return Clocks(value)
    except ValueError:
        raise GpubenchError(f"clock {value!r:.40}; allowed: {', '.join(Clocks)}") from None


@dataclass(frozen=True)
class KernelRecord:
    """One kernel as CUPTI saw it run."""

    start_ns: int
    end_ns: int
    name: str
    correlation: int  # the launch's correlation id


@dataclass(frozen=True)
class Call:
    """One tagged call's kernels: from the first one's start to the last one's end, and their names in order."""

    tag: int
    start_ns: int
    end_ns: int
    names: tuple[str, ...]

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def calls(kernels: Iterable[KernelRecord], links: Mapping[int, int]) -> dict[int, Call]:
    """Each tag's call, from the kernels whose launch `links` (correlation id -> tag) ties to a tag; the other
    kernels (the timer's own wait kernel, a flush, the calls outside the timed ones) are left out."""
    found: dict[int, list[KernelRecord]] = {}
    for k in kernels:
        tag = links.get(k.correlation)
        if tag is not None and k.end_ns > k.start_ns:
            found.setdefault(tag, []).append(k)
    out = {}
    for tag, ks in found.items():
        ks.sort(key=lambda k: k.start_ns)
        out[tag] = Call(tag, ks[0].start_ns, max(k.end_ns for k in ks), tuple(k.name for k in ks))
    return out


def durations(found: Mapping[int, Call], tags: Iterable[int]) -> list[float]:
    """The milliseconds of the tagged calls in the order given (a tag whose kernels were not recorded is left out)."""
    return [found[t].ms for t in tags if t in found]


def names(found: Mapping[int, Call]) -> tuple[str, ...]:
    """The kernels the calls ran, each once, in the order first seen (at most MAX_NAMES, each at most MAX_NAME
    characters)."""
    seen: dict[str, None] = {}
    for call in sorted(found.values(), key=lambda c: c.tag):
        for n in call.names:
            seen.setdefault(n if len(n) <= MAX_NAME else n[:MAX_NAME - 1] + "…")
    return tuple(seen)[:MAX_NAMES]


@dataclass(frozen=True)
class Agreement:
    """How a point's two clocks agree: the ratio of the medians, events over CUPTI (above 1: the events hold more
    than the kernels), and whether it is past `CLOCKS_DIFFER`."""

    ratio: float
    events_ms: float
    kernel_ms: float
    n: int  # kernel durations recorded

    @property
    def differ(self) -> bool:
        return abs(self.ratio - 1) > CLOCKS_DIFFER


def agreement(event_ms, kernel_ms) -> Agreement | None:
    """The two clocks of one point compared by their medians, or None where either has no time."""
    if not event_ms or not kernel_ms:
        return None
    e, k = statistics.median(event_ms), statistics.median(kernel_ms)
    if k <= 0:
        return None
    return Agreement(e / k, e, k, len(kernel_ms))


def spread(ratios: list[float]) -> tuple[float, float, float] | None:
    """(median, first quartile, third quartile) of many points' ratios, None where there are none."""
    if not ratios:
        return None
    if len(ratios) == 1:
        return ratios[0], ratios[0], ratios[0]
    q1, q2, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return q2, q1, q3


class Tagger:
    """Tags the calls a clock times (not the warm-up's, nor an energy window's), each with a number of its own,
    through `push(tag)` before the call and `pop()` after it (CUPTI's external correlation ids). `kept` lists, in
    order, the tag of each sample the clock returned: of a call timed again (the CUDA clock retimes one the host
    queued late) the last, of a batch timed again the last batch. Pure: the pushing is given."""

    def __init__(self, push, pop):
        self.push, self.pop = push, pop
        self.next = 1
        self.active = False
        self.issued: list[int] = []  # tags of the calls made while a clock method ran
        self.kept: list[int] = []

    def traced(self, run):
        """`run`, each call of it made while a clock method runs tagged with a new number."""
        def call():
            if not self.active:
                return run()
            tag = self.next
            self.next += 1
            self.push(tag)
            try:
                return run()
            finally:
                self.pop()
                self.issued.append(tag)

        return call

    def timing(self, method, keep: int | None):
        """method() with tagging on; the last `keep` tags it issued are kept (None: every one)."""
        before = len(self.issued)
        self.active = True
        try:
            return method()
        finally:
            self.active = False
            new = self.issued[before:]
            self.kept += new if keep is None else new[-keep:]


class TaggedClock:
    """A clock whose timed calls are tagged (Tagger): whatever it is given to time (the point's call, or a graph's
    launch) is tagged as it runs; everything else is the clock's own."""

    def __init__(self, inner, tagger: Tagger):
        self.inner, self.tagger = inner, tagger

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def time_ms(self, run) -> float:
        return self.tagger.timing(lambda: self.inner.time_ms(self.tagger.traced(run)), 1)

    def time_batch_ms(self, run, n: int, flush: bool) -> list[float]:
        return self.tagger.timing(lambda: self.inner.time_batch_ms(self.tagger.traced(run), n, flush), n)

    def stream(self, run, flush: bool, call_ms: float):
        """The sustained pace's stream: every call it queues while a chunk is taken is tagged (its chunks run ahead
        of the samples taken, so its durations are the stream's calls, not paired one to one with the samples)."""
        return TaggedStream(self.inner.stream(self.tagger.traced(run), flush, call_ms), self.tagger)


class TaggedStream:
    def __init__(self, inner, tagger: Tagger):
        self.inner, self.tagger = inner, tagger

    def take(self) -> list[float]:
        return self.tagger.timing(self.inner.take, None)

    def close(self) -> None:
        self.inner.close()


def split(kept: Sequence[int], sides: Sequence[int]) -> tuple[list[int], list[int]]:
    """The tags of an interleaved round's samples (measure/interleaved.py), side by side: the last len(sides) kept
    tags are the samples' own, and `sides` says which side each sample was. Too few tags for the samples: none
    (a side's times must not be another's)."""
    out: tuple[list[int], list[int]] = ([], [])
    if len(kept) < len(sides):
        return out
    for tag, side in zip(kept[len(kept) - len(sides):], sides):
        out[side].append(tag)
    return out


def paired_durations(found: Mapping[int, Call], tags: tuple[list[int], list[int]]) -> tuple[list[float], list[float]]:
    """Both sides' kernel durations, pair by pair: the i-th call of A with the i-th of B (adjacent calls), each pair
    kept only where both its calls' kernels were recorded, so that the two lists stay paired."""
    pairs = [(found[a].ms, found[b].ms) for a, b in zip(*tags) if a in found and b in found]
    return [a for a, _ in pairs], [b for _, b in pairs]


def aligned(kernel_ms: list[float], samples: int) -> list[float]:
    """The kernel durations of the kept samples: the calibration's calls come first and are not samples when
    calls are batched, so the last `samples` (all where there are fewer)."""
    return kernel_ms[-samples:] if samples and len(kernel_ms) > samples else kernel_ms
