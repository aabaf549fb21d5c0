"""A time shared by a run's short calls: when most calls of a few microseconds moved the same way between two runs.

A change in one kernel moves its own points. What moves nearly every short call of a run together, by about the
same microseconds, is the process that timed them: the launch path's cost differs a little from one process to
the next, and on an H200 every kernel launched after a cuDNN plan search in the same process cost about 0.36 µs
more (docs/measuring/preheat.md). Against 5-10 µs calls that is 2-7%, enough to make verdicts of identical code
slower, faster or inconclusive. `compare` reports the shared shift beside its verdicts, so that a reader sees one
cause where the table shows many changes; the verdicts themselves are left as they are.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpubench.analysis.compare import Verdict

SHORT_MS = 0.02  # calls shorter than this carry a launch path's share of their time (the base's median)
FEWEST = 10  # short points a shared shift is looked for among
SHARE = 0.8  # the share of them that must have moved the same way
LEAST = 0.01  # and the median move, as a share of the call, worth a note


@dataclass(frozen=True)
class SharedShift:
    moved: int  # short points that moved the way most did
    short: int  # short points compared
    per_call_us: float  # their median new - base time, in µs
    share: float  # their median new / base - 1

    @property
    def direction(self) -> Verdict:
        """Which way the short calls moved, in compare's words."""
        return Verdict.SLOWER if self.per_call_us > 0 else Verdict.FASTER


def shared_shift(changes) -> SharedShift | None:
    """The shift most short calls share among a comparison's changes (compare.Change: base, new, ratio), or None
    where fewer than SHARE of them moved the same way, or by less than LEAST in the median."""
    short = [c for c in changes if c.base.median_ms < SHORT_MS]
    if len(short) < FEWEST:
        return None
    up = [c for c in short if c.ratio > 1]
    down = [c for c in short if c.ratio < 1]
    moved = max(up, down, key=len)
    if len(moved) < SHARE * len(short):
        return None
    share = statistics.median(c.ratio for c in short) - 1
    if abs(share) < LEAST:
        return None
    per_call = statistics.median(c.base.median_ms * (c.ratio - 1) for c in short) * 1000
    return SharedShift(len(moved), len(short), per_call, share)
