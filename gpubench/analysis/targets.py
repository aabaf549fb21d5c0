"""A target judged over saved rounds: one figure per round of a hand kernel on a problem, held to a threshold that
was written down before the rounds ran (docs/evidence/int8-attention-rounds.md, docs/evidence/grouped-rounds.md).

The figure is one of two measures:
- a **ratio**: the library's median time over the kernel's, in the same round (analysis/rounds.py's rows). Where a
  problem has several libraries, the library of a round is the fastest of them that ran and passed in it;
- **TFLOP/s**: the kernel's own rate, its problem's flops over its median time, for a target with no library to
  hold it to (`rates` here).

The verdict is the same for both: **met** when the rounds' median reaches the threshold and the sign test's
interval for it (stats.median_interval) lies at or above the threshold, **not met** when the interval lies below
it, **at the line** otherwise; too few rounds for the level asked give no verdict. Every round counts whatever its
clocks; a failed point is no figure for its round.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpubench.analysis.rounds import measured, problem_of
from gpubench.measure.stats import MedianInterval, median_interval
from gpubench.results import Run


class Measure(StrEnum):
    """What a target's figure is."""

    RATIO = "ratio"  # the round's library time over the kernel's
    TFLOPS = "TFLOP/s"  # the kernel's rate on its own


class TargetVerdict(StrEnum):
    MET = "met"
    AT_THE_LINE = "at the line"
    NOT_MET = "not met"
    TOO_FEW = "too few rounds"
    REPORTED = "reported"  # a row shown beside the targets, judged against none


@dataclass(frozen=True)
class Threshold:
    """The line a target's figure must reach."""

    value: float
    measure: Measure = Measure.RATIO

    def __str__(self) -> str:
        return f"{self.value:.2f}" if self.measure == Measure.RATIO else f"{self.value:,.0f} {self.measure}"


def judge(m: MedianInterval | None, threshold: Threshold | None, level: float) -> TargetVerdict:
    """The verdict of the rounds' median and its interval `m` (None: no round gave a figure) against the threshold
    (None: the row is reported, not judged)."""
    if threshold is None:
        return TargetVerdict.REPORTED
    if m is None or m.level < level:
        return TargetVerdict.TOO_FEW
    if m.median >= threshold.value and m.low >= threshold.value:
        return TargetVerdict.MET
    if m.high < threshold.value:
        return TargetVerdict.NOT_MET
    return TargetVerdict.AT_THE_LINE


@dataclass(frozen=True)
class Rate:
    """One kernel configuration on one problem on its own, over the rounds."""

    problem: str  # as analysis/rounds.problem_of gives it
    kernel: str  # variant and configuration
    tflops: tuple[float | None, ...]  # per round, in the order given; None: not measured in that round
    rel_errs: tuple[float | None, ...]  # per round, the point's error (a failed point's too; None: no point)
    why_not: tuple[str, ...]  # per round: why there is no figure ("" where there is)

    @property
    def clean(self) -> list[float]:
        return [t for t in self.tflops if t is not None]

    def interval(self, level: float) -> MedianInterval | None:
        return median_interval(self.clean, level) if self.clean else None


def rates(runs: list[Run]) -> list[Rate]:
    """Every (problem, kernel) of the runs, its TFLOP/s in each round where its point ran and passed."""
    per_run = [{(problem_of(p), f"{p.variant} {p.config}"): p for p in run.points} for run in runs]
    keys = dict.fromkeys(key for points in per_run for key in points)
    out = []
    for problem, kernel in keys:
        tflops, errs, why_not = [], [], []
        for points in per_run:
            p = points.get((problem, kernel))
            why = "not in this round" if p is None else measured(p)
            tflops.append(None if why else p.gflops / 1e3)
            errs.append(None if p is None else p.rel_err)
            why_not.append(why)
        out.append(Rate(problem, kernel, tuple(tflops), tuple(errs), tuple(why_not)))
    return out
