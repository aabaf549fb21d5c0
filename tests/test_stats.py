"""The shared statistics: summaries, the comparison interval, and when a point's samples are decidable."""

import itertools
import random

import pytest

from gpubench.measure import stats
from gpubench.measure.timing import TimingPolicy, measure


def test_summary_statistics():
    s = stats.summarize([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s.n, s.median, s.min, s.max, s.q1, s.q3) == (5, 3.0, 1.0, 5.0, 2.0, 4.0)


def test_interval_of_a_known_shift():
    rng = random.Random(1)
    base = [1.0 + rng.gauss(0, 0.01) for _ in range(200)]
    new = [1.2 * (1.0 + rng.gauss(0, 0.01)) for _ in range(200)]
    est, low, high = stats.ratio_interval(base, new, 0.05)
    assert low < 1.2 < high and est == pytest.approx(1.2, rel=0.01) and high / low < 1.01


def test_long_samples_are_thinned_not_refused():
    rng = random.Random(2)
    base = [1.0 + rng.gauss(0, 0.02) for _ in range(5000)]
    est, low, high = stats.ratio_interval(base, base, 0.001)
    assert low < 1 < high and high - low < 0.01


def _brute_u_counts(n, m):
    """U's null distribution by listing every rank order: which n of the n + m ranks the first set holds."""
    counts = [0] * (n * m + 1)
    for first in itertools.combinations(range(n + m), n):
        second = sorted(set(range(n + m)) - set(first))
        counts[sum(1 for x in first for y in second if x > y)] += 1
    return tuple(counts)


@pytest.mark.parametrize("n,m", [(1, 1), (2, 5), (4, 4), (5, 3), (6, 7)])
def test_exact_u_distribution_matches_listing_every_rank_order(n, m):
    assert stats._u_counts(n, m) == _brute_u_counts(n, m)


def test_rank_count_is_exact_in_the_far_tail():
    """Among 352 points at 5%, each tail may have 7.1e-5: 9 samples a side reach it (P(U = 0) = 1/48620,
    P(U ≤ 1) = 2/48620, P(U ≤ 2) = 4/48620 is past it), 8 do not (P(U = 0) = 1/12870); the normal
    approximation used before asked for 11."""
    alpha = 0.05 / 352
    assert stats.rank_count(9, 9, alpha) == 2
    assert stats.rank_count(8, 8, alpha) == 0
    assert stats.rank_count(11, 11, alpha) > 2
    assert stats.decidable([1.0 + 0.001 * i for i in range(9)], 0.05, family=352)
    assert not stats.decidable([1.0 + 0.001 * i for i in range(8)], 0.05, family=352)


def test_rank_count_joins_the_normal_approximation_smoothly():
    exact, normal = stats.rank_count(50, 50, 0.05), stats.rank_count(51, 51, 0.05)
    assert 0 < exact < normal < exact * 1.1


def test_interval_covers_no_change_at_its_level():
    """Two sets from one distribution: the interval leaves out 1 in at most alpha of trials (exact k)."""
    rng = random.Random(7)
    missed = 0
    for _ in range(2000):
        a = [rng.lognormvariate(0, 0.02) for _ in range(9)]
        b = [rng.lognormvariate(0, 0.02) for _ in range(9)]
        _, low, high = stats.ratio_interval(a, b, 0.1)
        missed += not (low <= 1 <= high)
    assert missed / 2000 <= 0.1 + 0.02


def test_decidable_depends_on_spread_samples_and_family():
    rng = random.Random(3)
    tight = [1.0 + rng.gauss(0, 0.005) for _ in range(30)]
    loose = [1.0 + rng.gauss(0, 0.08) for _ in range(30)]
    assert stats.decidable(tight, 0.05, family=400)
    assert not stats.decidable(loose, 0.05, family=400)
    assert not stats.decidable(tight[:3], 0.05)  # too few samples to say anything


def test_decidable_is_the_self_interval_inside_the_bounds():
    """The counting shortcut gives ratio_interval's answer, near the edge too (sizes around the thinning limit
    included), at a small fraction of its cost."""
    rng = random.Random(4)
    agreed = {True: 0, False: 0}
    for trial in range(300):
        n = rng.choice([5, 9, 20, 64, 150, 400, 2100])
        spread = rng.choice([0.001, 0.005, 0.01, 0.02, 0.04])
        samples = [1.0 + abs(rng.gauss(0, spread)) for _ in range(n)]
        family, threshold = rng.choice([1, 40, 400]), rng.choice([0.02, 0.05, 0.1])
        _, low, high = stats.ratio_interval(samples, samples, 0.05 / family)
        half = stats.DECIDE_SHARE * threshold
        expected = bool(high <= 1 + half and low >= 1 / (1 + half))
        assert stats.decidable(samples, threshold, family) == expected, (n, spread, family, threshold)
        agreed[expected] += 1
    assert min(agreed.values()) > 30  # both answers were exercised


class NoisyClock:
    def __init__(self, sd, seed=0):
        self.rng, self.sd = random.Random(seed), sd

    def sync(self):
        pass

    def flush(self):
        pass

    def time_ms(self, run):
        return 1.0 + abs(self.rng.gauss(0, self.sd))


def test_measure_samples_on_until_decidable():
    policy = TimingPolicy(warmup=0, reps=10, min_reps=5, budget_s=0.0, decide=0.05, family=400, max_time_s=30)
    t = measure(lambda: None, NoisyClock(0.04), policy)
    assert t.stop == "decided" and len(t.samples_ms) > 10 and stats.decidable(t.samples_ms, 0.05, 400)
    quiet = measure(lambda: None, NoisyClock(0.001), policy)
    assert len(quiet.samples_ms) <= 12  # a rank interval among 400 points needs about 9 samples, no more


def test_measure_gives_up_deciding_at_the_time_cap():
    policy = TimingPolicy(warmup=0, reps=5, budget_s=0.0, decide=0.001, family=1000, max_time_s=0.05)
    assert measure(lambda: None, NoisyClock(0.5), policy).stop in ("time-cap", "cap")


class BatchingClock(NoisyClock):
    def __init__(self):
        super().__init__(0.0)
        self.batches = []

    def time_ms(self, run):
        return 0.005

    def time_batch_ms(self, run, n, flush):
        self.batches.append(n)
        return [0.005] * n


def test_short_calls_are_timed_in_queued_batches():
    clock = BatchingClock()
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=200, min_reps=5, budget_s=100))
    assert clock.batches and t.batch == clock.batches[0] > 1 and len(t.samples_ms) >= 200
    long = measure(lambda: None, type("C", (BatchingClock,), {"time_ms": lambda self, run: 1.0})(),
                   TimingPolicy(warmup=0, reps=10, min_reps=5, budget_s=100))
    assert long.batch == 1


def test_median_interval_is_the_sign_tests_order_statistics():
    from gpubench.measure.stats import median_interval

    five = median_interval([1.02, 0.98, 1.00, 0.99, 1.01])  # five rounds: only the whole range reaches 90%
    assert (five.median, five.low, five.high) == (1.00, 0.98, 1.02)
    assert five.level == pytest.approx(1 - 2 / 32)
    ten = median_interval(range(10), level=0.9)  # k = 2: 1 - 2·(1 + 10)/1024 = 97.9%; k = 3: 89.1% < 90%
    assert (ten.low, ten.high, ten.median) == (1, 8, 4.5)
    assert ten.level == pytest.approx(1 - 2 * 11 / 1024)
    three = median_interval([3, 1, 2])  # too few for 90%: the range, at the 75% it has
    assert (three.low, three.high, three.level) == (1, 3, 0.75)
    with pytest.raises(ValueError):
        median_interval([])


def test_median_interval_covers_the_median_at_its_level():
    import numpy as np

    from gpubench.measure.stats import median_interval

    rng = np.random.default_rng(3)
    hits = sum(r.low <= 0 <= r.high for r in (median_interval(rng.normal(size=7)) for _ in range(4000)))
    assert hits / 4000 == pytest.approx(median_interval(range(7)).level, abs=0.02)


def test_fewest_samples_is_where_the_interval_first_closes():
    from gpubench.measure.stats import fewest_samples, rank_count

    for alpha in (0.05, 0.05 / 11, 0.05 / 352):
        n = fewest_samples(alpha)
        assert rank_count(n, n, alpha) >= 1 and rank_count(n - 1, n - 1, alpha) < 1
    assert fewest_samples(0.05 / 11) == 6  # a CPU quick run's 11 points: its 5 samples a point can never decide
