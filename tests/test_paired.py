"""gpubench/measure/paired.py: the exact sign test, its interval for the median ratio, the bootstrap beside it."""

import math
import statistics

import pytest

from gpubench.measure.paired import MIN_ROUNDS, bootstrap_geomean, paired_ratio, round_ratio, sign_test_p


def test_the_sign_test_is_exact_binomial():
    assert sign_test_p(10, 0) == pytest.approx(2 / 2 ** 10)
    assert sign_test_p(0, 10) == pytest.approx(2 / 2 ** 10)
    assert sign_test_p(5, 5) == 1.0
    assert sign_test_p(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert sign_test_p(0, 0) == 1.0


def test_a_planted_two_percent_slowdown_gives_an_interval_above_one():
    ratios = [1.02 + 0.003 * math.sin(i) for i in range(30)]
    r = paired_ratio(ratios, 0.95)
    assert r.n == 30 and r.above == 30 and r.below == 0
    assert 1.015 < r.low <= r.median <= r.high < 1.025
    assert r.level >= 0.95 and r.p_value < 1e-6
    assert 1.015 < r.boot_low <= r.geomean <= r.boot_high < 1.025


def test_equal_sides_give_an_interval_around_one():
    ratios = [1 + 0.004 * math.sin(3 * i) for i in range(30)]
    r = paired_ratio(ratios)
    assert r.low < 1 < r.high and r.p_value > 0.05


def test_one_wild_round_moves_the_sign_interval_by_one_order_statistic_at_most():
    calm = [1.0 + 0.001 * i for i in range(-10, 11)]
    wild = calm[:-1] + [5.0]
    a, b = paired_ratio(calm), paired_ratio(wild)
    assert (a.low, a.median) == (b.low, b.median) and b.high <= sorted(wild)[-2]
    assert b.boot_high > a.boot_high  # the bootstrap of the mean is pulled: the sign interval is what decides


def test_too_few_rounds_say_so():
    r = paired_ratio([1.1] * (MIN_ROUNDS - 1))
    assert not r.enough and r.level < 0.95
    assert paired_ratio([1.1] * MIN_ROUNDS).enough


def test_bad_ratios_are_refused():
    with pytest.raises(ValueError):
        paired_ratio([])
    with pytest.raises(ValueError):
        paired_ratio([1.0, 0.0])
    with pytest.raises(ValueError):
        paired_ratio([1.0, math.nan])


def test_the_bootstrap_is_reproducible():
    ratios = [1.0, 1.01, 0.99, 1.02, 1.005, 0.995, 1.0]
    assert bootstrap_geomean(ratios, 0.95) == bootstrap_geomean(ratios, 0.95)
    assert bootstrap_geomean([1.2], 0.95)[1:] == (0.0, math.inf)


def test_a_rounds_ratio_is_the_median_over_its_quartets_of_calls():
    assert round_ratio([1.0, 2.0, 4.0], [1.1, 2.2, 4.4]) == pytest.approx(1.1)  # the last pair counts alone
    wild = [1.02, 1.02, 1.02, 1.02, 5.0, 1.02, 1.02, 1.02]  # the pairs' b/a: one wild pair moves it little
    assert round_ratio([1.0] * 8, wild) == pytest.approx(1.02)
    place = [0.97, 1 / 0.97] * 4  # A-first pairs and B-first pairs differing by place alone: it cancels
    assert round_ratio([1.0] * 8, place) == pytest.approx(1.0)
    assert round_ratio([1.0, 1.0], [2.0, 2.0, 9.0]) == pytest.approx(2.0)  # an unpaired sample is left out
    with pytest.raises(ValueError):
        round_ratio([], [1.0])


def test_a_state_change_inside_a_round_moves_the_ratio_of_medians_but_not_the_pairs():
    """Calls A B A B ...; the card turns 2% slower between A's 16th call and B's 16th: that one pair differs. The
    medians of the two sides fall on either side of the change, and their ratio reads 1%."""
    a = [1.0] * 16 + [1.02] * 14
    b = [1.0] * 15 + [1.02] * 15
    assert statistics.median(b) / statistics.median(a) == pytest.approx(1.01)
    assert round_ratio(a, b) == 1.0
