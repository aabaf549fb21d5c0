"""What an A/A test says about a comparison: identical code run R times in fresh processes, per point and per
duration class.

A point's R run medians m_1 … m_R scatter by what changes between processes (the whole-run shift of kernels of a
few microseconds, docs/evidence/whole-run-shift-h100.md) on top of what changes between samples. Taking the log of
a run's median as its true value plus a shift e_r ~ N(0, σ²) drawn per run (σ: the standard deviation of the R log
medians, `sd`), the log ratio of two runs' medians of code that changed by Δ is N(log(1 + Δ), 2σ²). From that:

* **false verdicts**: the share of the R(R − 1)/2 pairwise comparisons (`gpubench compare` at its threshold) that
  called identical code slower or faster: counted, not modelled;
* **smallest change decided with 95% power** (`decided`): the Δ that compare calls slower in 95% of pairs, which
  needs its interval's low end above 1 + t: log(1 + Δ) = log(1 + t) + h + z₀.₉₅·√2·σ, where h is the half-width
  (in log) of compare's interval for the point (the median over the pairs) and t the threshold;
* **suggested threshold** (`suggested`): the larger of the normal model's family-wise bound, z at 1 − α/(2m) times
  √2·σ (m points, α compare's alpha: a shift of identical code past it in any of a run's points has probability α),
  and the largest change between two runs' medians that the class showed, rounded up to the next half percent.

A class pools its points' variances (σ² averaged), since within a class the points share the run's shift. The
estimate of σ rests on R runs whatever the number of points (the shift is common to them), so R = 3 gives a rough
figure and R = 10 a usable one.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import StrEnum

POWER = 0.95
STEP = 0.005  # a suggested threshold is rounded up to a multiple of this


class Duration(StrEnum):
    """A point's duration class, by its median."""

    UNDER_10_US = "< 10 µs"
    TENS_OF_US = "10-100 µs"
    SUB_MS = "0.1-1 ms"
    OVER_1_MS = "> 1 ms"


BOUNDS_MS = ((0.01, Duration.UNDER_10_US), (0.1, Duration.TENS_OF_US), (1.0, Duration.SUB_MS))


def duration(median_ms: float) -> Duration:
    return next((d for bound, d in BOUNDS_MS if median_ms < bound), Duration.OVER_1_MS)


def sd(medians) -> float:
    """The standard deviation of the log medians (0 for fewer than two): about the runs' relative spread."""
    logs = [math.log(m) for m in medians]
    return statistics.stdev(logs) if len(logs) >= 2 else 0.0


def z(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def decided(sigma: float, half_width: float, threshold: float, power: float = POWER) -> float:
    """The smallest slowdown that a comparison at `threshold` calls slower with this power (module docstring)."""
    return math.exp(math.log(1 + threshold) + half_width + z(power) * math.sqrt(2) * sigma) - 1


def bound(sigma: float, family: int, alpha: float) -> float:
    """The change that identical code passes with probability alpha over `family` points (normal model)."""
    return math.exp(z(1 - alpha / (2 * max(1, family))) * math.sqrt(2) * sigma) - 1


def rounded_up(x: float, step: float = STEP) -> float:
    return math.ceil(round(x / step, 9)) * step


@dataclass(frozen=True)
class PointRuns:
    """One point across R runs: its run medians, and what the pairwise comparisons said of it."""

    label: str
    medians_ms: tuple[float, ...]
    pairs: int  # comparisons in which it was measured in both runs
    false_verdicts: int  # of those, slower or faster
    inconclusive: int
    half_width: float  # the median over the pairs of compare's interval's half-width, in log

    @property
    def duration(self) -> Duration:
        return duration(statistics.median(self.medians_ms))

    @property
    def sd(self) -> float:
        return sd(self.medians_ms)

    @property
    def largest(self) -> float:
        """The largest change between two of its run medians (max over min, minus one)."""
        return max(self.medians_ms) / min(self.medians_ms) - 1

    @property
    def false_rate(self) -> float:
        return self.false_verdicts / self.pairs if self.pairs else 0.0

    def decided(self, threshold: float) -> float:
        return decided(self.sd, self.half_width, threshold)


@dataclass(frozen=True)
class ClassRuns:
    """A duration class's points across the runs."""

    duration: Duration
    points: tuple[PointRuns, ...]
    family: int  # the points a comparison of the whole run corrects for
    threshold: float
    alpha: float

    @property
    def comparisons(self) -> int:
        return sum(p.pairs for p in self.points)

    @property
    def false_verdicts(self) -> int:
        return sum(p.false_verdicts for p in self.points)

    @property
    def false_rate(self) -> float:
        return self.false_verdicts / self.comparisons if self.comparisons else 0.0

    @property
    def inconclusive_rate(self) -> float:
        return sum(p.inconclusive for p in self.points) / self.comparisons if self.comparisons else 0.0

    @property
    def sd(self) -> float:
        """The points' variances pooled (averaged), as a standard deviation."""
        return math.sqrt(statistics.fmean(p.sd ** 2 for p in self.points))

    @property
    def half_width(self) -> float:
        return statistics.median(p.half_width for p in self.points)

    @property
    def largest(self) -> float:
        return max(p.largest for p in self.points)

    @property
    def decided(self) -> float:
        return decided(self.sd, self.half_width, self.threshold)

    @property
    def suggested(self) -> float:
        return rounded_up(max(bound(self.sd, self.family, self.alpha), self.largest))


def classes(points: list[PointRuns], threshold: float, alpha: float) -> list[ClassRuns]:
    """The duration classes that hold any of the points, shortest first."""
    family = len(points)
    by_class: dict[Duration, list[PointRuns]] = {}
    for p in points:
        by_class.setdefault(p.duration, []).append(p)
    return [ClassRuns(d, tuple(by_class[d]), family, threshold, alpha) for d in Duration if d in by_class]
