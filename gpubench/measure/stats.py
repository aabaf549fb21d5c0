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
from functools import lru_cache

import numpy as np

MAX_PAIRS = 4_000_000  # ratio_interval thins both sets evenly above this many pairs (2000 × 2000)
EXACT_PAIRS = 2_500  # up to this many pairs (50 × 50) the rank count comes from U's exact distribution


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


@lru_cache(maxsize=4096)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n + m, n) equally likely rank orders give each value of the Mann–Whitney U (0 … n·m):
    the coefficients of the Gaussian binomial [n + m choose n]_q, built as the product of (1 − q^(m+i)) / (1 − q^i)
    for i = 1 … n. Every division is exact, so the counts are exact integers."""
    c = [1] + [0] * (n * m)
    for i in range(1, n + 1):
        for j in range(n * m, m + i - 1, -1):  # × (1 − q^(m+i)), highest power first so c[j − m − i] is old
            c[j] -= c[j - m - i]
        for j in range(i, n * m + 1):  # ÷ (1 − q^i): b[j] = a[j] + b[j − i]
            c[j] += c[j - i]
    return tuple(c)


@lru_cache(maxsize=4096)
def rank_count(n: int, m: int, alpha: float) -> int:
    """k for Moses' interval at level 1 − alpha: the interval is the k-th smallest and k-th largest of the n·m
    pairwise differences, with P(U < k) ≤ alpha / 2 under no difference; 0 when no k is small enough.

    Exact for small samples, where the normal approximation is off in the far tail a family-wise alpha reaches:
    at 0.05 among 352 points it asks for 11 samples a side where 9 suffice (P(U ≤ 1) = 2 / C(18, 9) = 4.1e-5,
    under the 7.1e-5 each tail may have). Above EXACT_PAIRS, the normal approximation."""
    tail = alpha / 2
    if n * m <= EXACT_PAIRS:
        counts, total, below, k = _u_counts(n, m), math.comb(n + m, n), 0, 0
        while k <= n * m and (below + counts[k]) / total <= tail:
            below += counts[k]
            k += 1
        return k
    z = statistics.NormalDist().inv_cdf(1 - tail)
    return max(0, math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12)))


def fewest_samples(alpha: float, most: int = 1000) -> int:
    """The fewest samples a side (n = m) for which ratio_interval at level 1 − alpha is bounded (rank_count ≥ 1):
    below it, no verdict but inconclusive is possible, however alike the samples."""
    n = 2
    while n < most and rank_count(n, n, alpha) < 1:
        n += 1
    return n


def ratio_interval(base, new, alpha: float) -> tuple[float, float, float]:
    """(estimate, low, high) of new/base: Hodges–Lehmann shift of log-times and Moses' rank interval.

    The interval is the k-th smallest and k-th largest of the n·m pairwise differences, k from rank_count at
    level 1 − alpha; (0, inf) when too few samples.
    """
    b, n_ = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    keep = int(math.sqrt(MAX_PAIRS))
    b, n_ = _thin(b, keep), _thin(n_, keep)
    diffs = (n_[:, None] - b[None, :]).ravel()
    n, m = len(b), len(n_)
    estimate = math.exp(float(np.median(diffs)))
    k = rank_count(n, m, alpha)
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
    k = rank_count(n, n, alpha / max(1, family))
    if k < 1:
        return False
    limit = math.log(1 + DECIDE_SHARE * threshold)
    above = n * n - int(np.searchsorted(x, x + limit, side="right").sum())  # pairs with x_i - x_j > limit
    return above < k


@dataclass(frozen=True)
class MedianInterval:
    """The median of a few values (one per repeat of a measurement) and a distribution-free interval for it."""

    n: int
    median: float
    low: float
    high: float
    level: float  # the interval's exact coverage, at least the level asked for (or the best n allows)


def median_interval(values, level: float = 0.9) -> MedianInterval:
    """The median of `values` and the order-statistic interval [x_(k), x_(n+1-k)] for it (the sign test's):
    it misses the true median only when k or fewer values fall on one side, probability 2·P(Bin(n, ½) < k). The
    widest k whose coverage is still at least `level` is taken; with too few values for that (n < 5 at 0.9),
    k = 1, the whole range, whose coverage is then below `level` and says so. Repeats, not samples: each value is
    one independent round (one process, one run), so the interval holds what changes from round to round."""
    x = sorted(float(v) for v in values)
    n = len(x)
    if n == 0:
        raise ValueError("median_interval needs at least one value")

    def coverage(k: int) -> float:
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= level:
        k += 1
    return MedianInterval(n, statistics.median(x), x[k - 1], x[n - k], coverage(k))
