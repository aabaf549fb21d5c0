"""Whether a point's timing samples sit in two modes: two clusters, apart, with an empty valley between them.

A GPU point can take two different times in one run and keep both: a library that switches between two kernels,
a clock or power state the GPU flips between, two placements of the data in L2. Its median then says which mode
held more samples, not how fast the code is, and a ratio or a comparison taken from it can swing by the gap
between the modes when the shares change (the H100's cuDNN 14x14 bf16 point: 45.6 us in 38% of its samples,
53.8 us in the rest, docs/evidence/two-modes.md). The spread alone (IQR/median) does not say this: a wide
unimodal point and a point with two tight modes look alike in it.

The rule, `two_modes`, numpy only and cheap enough to run on every point a view shows (one sort, prefix sums, a
few sorted searches):

1. The split: the best partition of the sorted samples into a faster and a slower group, the one with the least
   within-group sum of squares (Fisher's exact 1-D grouping, i.e. 1-D k-means with k = 2, which is exact here:
   in one dimension the optimal groups are contiguous in sorted order, so every cut is tried by prefix sums).
   Each group must hold at least MIN_SHARE of the samples and MIN_MODE_SAMPLES of them, so that a few slow
   outliers are a tail, not a mode.
2. Separation: Ashman's D = sqrt(2) |m1 - m2| / sqrt(s1^2 + s2^2) of the two groups (Ashman, Bird & Zepf 1994,
   AJ 108, 2348: D > 2 is needed for a clean separation of two Gaussians) above MIN_SEPARATION. On groups
   cut by a hard split D is biased upwards (each group is truncated where the other begins): a single normal
   sample, cut at its median, gives D = 2.66 however large it is. So D alone cannot tell one mode from two,
   which is why the valley follows.
3. A valley: the bimodality amplitude A = 1 - valley / lower peak (Zhang, Mapes & Soden 2003, QJRMS 129, 2847),
   where each peak is the count of samples within a sixth of the gap either side of a group's median, and the
   valley the least such count at nine places between the two (the antimode, wherever it lies, so that a third
   mode in the middle is not taken for the valley). A = 1 is an empty valley; a unimodal sample cut in two gives
   about 0 or less (its densest place lies between the two medians). A must reach MIN_AMPLITUDE, and the valley
   must be emptier than chance would make it in a level density: a sign test of the valley's count against the
   peak's (each sample of the two bands in either with probability one half) at VALLEY_P. The test is what keeps
   20 to 40 samples of a long-tailed or flat unimodal point (where a band holds two or three samples, and an
   empty one is luck) from being flagged.
4. A gap that matters: the slower mode's median at least MIN_GAP above the faster one's. Modes closer than that
   are real but inside the 1-3% two processes on one H100 drift (docs/evidence/lab-speed-h100.md): no ratio
   or verdict at gpubench's thresholds turns on them.

The thresholds were set on every point saved under results/ (docs/evidence/two-modes.md has the figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

# Set on the 9,147 saved points with 20 samples or more (docs/evidence/two-modes.md: 776 flagged, and what each
# threshold changes): the valley's two tests decide nearly everything; the rest guard the edges.
MIN_SAMPLES = 20  # fewer cannot show two groups of MIN_MODE_SAMPLES with a valley (a band of 2-3 samples) between
MIN_SHARE = 0.10  # the smaller mode holds at least this share: a few slow samples are a tail, not a mode
MIN_MODE_SAMPLES = 5  # ... and at least this many samples, whatever the share
MIN_SEPARATION = 2.0  # Ashman's D of the two groups (2: Ashman et al.'s line for a clean separation; 3 drops 78
#                       of the 776, spikes beside a wide mode such as the H200's cuDNN 256 s3 at 8.2 and 8.6 µs)
MIN_AMPLITUDE = 0.5  # the valley holds at most half of the lower peak's samples (0.7 drops 263, most with a dip)
MIN_GAP = 0.02  # the slower mode's centre at least 2% above the faster one's (0% would add 100, each under 2%)
VALLEY_P = 0.01  # the sign test's level: without it 1,876 are flagged, the extra mostly 4-6 slow samples off a
#                  mode of 30-40 (a band then holds 2 or 3, and an empty one is luck); 0.001 drops 229 that read as
#                  two humps with a dip
VALLEY_PLACES = 9  # where the antimode is looked for between the two centres


class Place(StrEnum):
    """Where a point's median lies against its two modes: at one of them (within a sixth of the gap of its centre,
    the band that counts its peak), or in the valley between, where shares near half and half put it."""

    FASTER = "at the faster mode"
    SLOWER = "at the slower mode"
    BETWEEN = "between the two modes"


@dataclass(frozen=True)
class Modes:
    """A point's two modes: the faster and the slower one's centre (the median of its samples, ms) and share."""

    fast_ms: float
    slow_ms: float
    fast_share: float  # of the samples, in the faster mode
    separation: float  # Ashman's D of the two groups
    amplitude: float  # the valley's depth (1: empty)
    n: int

    @property
    def slow_share(self) -> float:
        return 1 - self.fast_share

    @property
    def gap(self) -> float:
        """How much slower the slow mode is than the fast one (0.18: 18%)."""
        return self.slow_ms / self.fast_ms - 1

    def place(self, median_ms: float) -> Place:
        """Where `median_ms` (the point's median over all its samples) lies against the two modes."""
        band = (self.slow_ms - self.fast_ms) / 6  # the peaks' half-width in _valley
        if abs(median_ms - self.fast_ms) <= band:
            return Place.FASTER
        if abs(median_ms - self.slow_ms) <= band:
            return Place.SLOWER
        return Place.BETWEEN

    def describe(self, median_ms: float | None = None) -> str:
        """"two modes: 45.54 and 53.7 µs (38%/62%)", in µs when both are under a millisecond, else in ms (0.21 and
        11.6 ms); with the point's median, where it lies: "...; median 53.6 µs, at the slower mode"."""
        unit, name = (1, "ms") if self.slow_ms >= 1 else (1e3, "µs")
        text = (f"two modes: {self.fast_ms * unit:.4g} and {self.slow_ms * unit:.4g} {name} "
                f"({self.fast_share:.0%}/{self.slow_share:.0%})")
        if median_ms is None:
            return text
        return f"{text}; median {median_ms * unit:.4g} {name}, {self.place(median_ms)}"


def _best_cut(x: np.ndarray, least: int) -> int:
    """The number of samples in the faster group of the least-squares two-group split of sorted x, each group
    holding at least `least` samples."""
    n = len(x)
    y = x - x[n // 2]  # centred, so that the sums of squares keep their digits
    total, total_sq = np.cumsum(y), np.cumsum(y * y)
    k = np.arange(least, n - least + 1)
    left, left_sq = total[k - 1], total_sq[k - 1]
    right, right_sq = total[-1] - left, total_sq[-1] - left_sq
    within = (left_sq - left ** 2 / k) + (right_sq - right ** 2 / (n - k))
    return int(k[int(np.argmin(within))])


def _valley(x: np.ndarray, fast: float, slow: float) -> tuple[float, float]:
    """(amplitude, p): 1 - the antimode's count / the lower peak's count, each counted within a sixth of the gap
    of its place, and the chance of a valley that deep or deeper were the density the same there (a sign test:
    each of the valley's and the peak's samples in either band with probability one half)."""
    h = (slow - fast) / 6
    places = np.concatenate(([fast, slow], np.linspace(fast + 2 * h, slow - 2 * h, VALLEY_PLACES)))
    counts = np.searchsorted(x, places + h, side="right") - np.searchsorted(x, places - h, side="left")
    peak, valley = int(min(counts[0], counts[1])), int(counts[2:].min())
    if peak == 0 or valley / peak > 1 - MIN_AMPLITUDE:
        return 0.0 if peak == 0 else 1 - valley / peak, 1.0
    both = peak + valley
    p = sum(math.comb(both, i) for i in range(valley + 1)) / 2 ** both
    return 1 - valley / peak, p


def two_modes(samples) -> Modes | None:
    """The point's two modes where its samples have two (the module's docstring gives the rule), else None."""
    n = len(samples)
    least = max(MIN_MODE_SAMPLES, math.ceil(MIN_SHARE * n))
    if n < MIN_SAMPLES or 2 * least > n:
        return None
    x = np.sort(np.asarray(samples, dtype=float))
    if x[0] == x[-1]:
        return None
    k = _best_cut(x, MIN_MODE_SAMPLES)  # the best cut of all; a tail it cuts off is then too small a share
    if min(k, n - k) < least:
        return None
    fast, slow = x[:k], x[k:]
    fast_ms, slow_ms = float(np.median(fast)), float(np.median(slow))
    if slow_ms < fast_ms * (1 + MIN_GAP):
        return None
    spread, apart = float(fast.var() + slow.var()), float(slow.mean() - fast.mean())
    separation = math.sqrt(2) * apart / math.sqrt(spread) if spread > 0 else math.inf
    if separation <= MIN_SEPARATION:
        return None
    amplitude, p = _valley(x, fast_ms, slow_ms)
    if amplitude < MIN_AMPLITUDE or p > VALLEY_P:
        return None
    return Modes(fast_ms, slow_ms, k / n, separation, amplitude, n)
