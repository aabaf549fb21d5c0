"""The paired test of an A/B run: one ratio B/A per round, A's and B's calls timed in turn in each round.

Rounds are the unit, not samples. Within a round, A and B ran on the same buffers, call by call in turn
(measure/interleaved.py), so each of A's calls has a call of B next to it, on a card in the same state. A round's
ratio is the median, over its pairs of adjacent calls, of B's time over A's (`round_ratio`). Whatever moves both
calls of a pair cancels in its ratio: the process's launch path, the clock, the board's temperature, a state of
the card that lasts tens of calls. The median over the pairs leaves out a pair that a state's change fell between.
The rounds are the independent repeats. Two views of their ratios:

* The exact sign test (Conover, *Practical Nonparametric Statistics*, 3rd ed., 1999, §3.4): under "no difference"
  each round's ratio lies above or below 1 with probability ½, so the count above is Binomial(n, ½); its two-sided
  p-value is exact at any n. Inverted, it gives the distribution-free interval for the median ratio between two
  order statistics (`stats.median_interval`): this interval decides the verdict, with `compare`'s rule
  (`analysis.compare.verdict`). It assumes nothing about the ratios' distribution, so one round hit by a hiccup
  moves it by one order statistic at most.
* A percentile bootstrap of the geometric mean of the ratios (the mean of the log-ratios resampled with
  replacement; Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13), shown beside it as a
  second opinion: narrower where the ratios are well behaved, pulled by an outlying round where they are not.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from gpubench.measure.stats import median_interval

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0  # the same ratios always give the same interval
MIN_ROUNDS = 6  # below this the sign test cannot reach 95% (2 / 2**5 = 0.0625)


@dataclass(frozen=True)
class PairedRatio:
    """Per-round ratios B/A summarised: the median and its sign-test interval (which decides), the sign test's counts
    and exact p-value, and the geometric mean with its bootstrap interval."""

    n: int
    median: float
    low: float  # the sign test's interval for the median ratio ...
    high: float
    level: float  # ... and its exact coverage (below the level asked for where there are too few rounds)
    above: int  # rounds where B took longer than A
    below: int  # rounds where B took less time
    p_value: float  # the exact two-sided sign test of "no difference" (ties left out, as the test does)
    geomean: float
    boot_low: float
    boot_high: float

    @property
    def enough(self) -> bool:
        """Whether the interval reaches the level asked for (else the verdict can only be inconclusive)."""
        return self.n >= MIN_ROUNDS

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def round_ratio(a_ms, b_ms) -> float:
    """A round's ratio B/A: the median, over its quartets of calls (A B B A, measure/interleaved.py), of each
    quartet's ratio, the geometric mean of its two pairs' b_i / a_i (one pair A-first, the other B-first, so a
    difference by place in the sequence cancels); a last pair without its partner counts alone. A side with more
    samples than the other has its extra ones left out."""
    pairs = [b / a for a, b in zip(a_ms, b_ms)]
    if not pairs:
        raise ValueError("round_ratio needs at least one sample of each side")
    quartets = [math.sqrt(x * y) for x, y in zip(pairs[0::2], pairs[1::2])]
    if len(pairs) % 2:
        quartets.append(pairs[-1])
    return statistics.median(quartets)


def sign_test_p(above: int, below: int) -> float:
    """The exact two-sided p-value of the sign test: twice the smaller binomial tail of Bin(above + below, ½),
    at most 1. No rounds on either side (all ties, or none): 1."""
    n = above + below
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(above, below) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap_geomean(ratios, level: float, resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """(geometric mean, low, high): the percentile bootstrap interval of the mean log-ratio, exponentiated."""
    logs = np.log(np.asarray(ratios, dtype=float))
    mean = float(logs.mean())
    if len(logs) < 2:
        return math.exp(mean), 0.0, math.inf
    rng = np.random.default_rng(seed)
    means = logs[rng.integers(0, len(logs), size=(resamples, len(logs)))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return math.exp(mean), math.exp(float(low)), math.exp(float(high))


def paired_ratio(ratios, level: float = 0.95) -> PairedRatio:
    """The paired test of per-round ratios B/A (each a positive number) at `level`."""
    values = [float(r) for r in ratios]
    if not values:
        raise ValueError("paired_ratio needs at least one round")
    if not all(math.isfinite(r) and r > 0 for r in values):
        raise ValueError("paired_ratio: every ratio must be a finite positive number")
    m = median_interval(values, level)
    above = sum(1 for r in values if r > 1)
    below = sum(1 for r in values if r < 1)
    geomean, boot_low, boot_high = bootstrap_geomean(values, level)
    return PairedRatio(n=len(values), median=statistics.median(values), low=m.low, high=m.high, level=m.level,
                       above=above, below=below, p_value=sign_test_p(above, below), geomean=geomean,
                       boot_low=boot_low, boot_high=boot_high)
