"""The statistics gpubench uses, in one place: a sample's summary, and the interval of a ratio of two samples.

`summarize` is the one summary of a point's raw samples (the median and its spread). `ratio_interval` is the
change between two sets of samples that `compare` decides on: the Hodges–Lehmann shift between their
log-times and a distribution-free confidence interval from the Mann–Whitney rank test (Moses' method).
`decidable` asks of one set of samples whether a later comparison against a run of the same spread could
settle at a threshold, which is what the timing loop keeps sampling for.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

MAX_PAIRS = 4_000_000  # ratio_interval thins both sets evenly above this many pairs (2000 × 2000)


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


def _thin(x: np.ndarray, keep: int) -> np.ndarray:
    """Every k-th order statistic, so a long sample keeps its shape in fewer values."""
    if len(x) <= keep:
        return x
    return np.sort(x)[np.linspace(0, len(x) - 1, keep).round().astype(int)]


def ratio_interval(base, new, alpha: float) -> tuple[float, float, float]:
    """(estimate, low, high) of new/base: Hodges–Lehmann shift of log-times and Moses' rank interval.

    The interval is the k-th smallest and k-th largest of the n·m pairwise differences, k from the normal
    approximation to the Mann–Whitney U distribution at level 1 − alpha; (0, inf) when too few samples.
    """
    b, n_ = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    keep = int(math.sqrt(MAX_PAIRS))
    b, n_ = _thin(b, keep), _thin(n_, keep)
    diffs = (n_[:, None] - b[None, :]).ravel()
    n, m = len(b), len(n_)
    estimate = math.exp(float(np.median(diffs)))
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    k = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))
    if k < 1:
        return estimate, 0.0, math.inf
    low, high = np.partition(diffs, (k - 1, len(diffs) - k))[[k - 1, len(diffs) - k]]
    return estimate, math.exp(float(low)), math.exp(float(high))


DECIDE_SHARE = 0.25  # of the threshold, for the interval's half-width (see decidable)


def decidable(samples, threshold: float, family: int = 1, alpha: float = 0.05) -> bool:
    """Whether two runs with this spread, compared at `threshold` among `family` points, would give an
    interval narrow enough to decide: at most a quarter of the threshold either side, which leaves three
    quarters for the difference between two processes on the same GPU (measured on an H100: kernels of
    10-30 µs drift 1-3% from one run to the next, with the empty-kernel floor).

    That is `ratio_interval(samples, samples, alpha / family)` inside [1/(1 + h), 1 + h], h = DECIDE_SHARE ·
    threshold, found without listing the n² differences (the timing loop asks after every batch): the pairwise
    differences of log-times are symmetric, so both ends hold exactly when fewer than k of them exceed log(1 + h),
    and that count is one sorted search per sample."""
    x = _thin(np.log(np.asarray(samples, dtype=float)), int(math.sqrt(MAX_PAIRS)))
    x = np.sort(x)
    n = len(x)
    z = statistics.NormalDist().inv_cdf(1 - alpha / max(1, family) / 2)
    k = math.floor(n * n / 2 - z * math.sqrt(n * n * (2 * n + 1) / 12))
    if k < 1:
        return False
    limit = math.log(1 + DECIDE_SHARE * threshold)
    above = n * n - int(np.searchsorted(x, x + limit, side="right").sum())  # pairs with x_i - x_j > limit
    return above < k
