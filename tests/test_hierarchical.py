"""The hierarchical bootstrap over processes, then samples, and compare's use of it where both runs have K ≥ 2."""

import numpy as np
import pytest

from gpubench.analysis import compare
from gpubench.measure import hierarchical
from gpubench.measure.stats import ratio_interval
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Run
from gpubench.results.pooled import pooled

ALPHA = 0.05 / 300  # a family-wise level, as compare asks for among a lab's points


def processes(shifts, n=64, seed=0, noise=0.005):
    """One process per shift: n samples around 10 µs times exp(shift), with log-normal noise."""
    rng = np.random.default_rng(seed)
    return [tuple(0.01 * np.exp(s + rng.normal(0, noise, n))) for s in shifts]


def test_processes_that_agree_give_an_interval_around_no_change():
    est, low, high = hierarchical.ratio_interval(processes([0, 0.002]), processes([0.001, 0], seed=1), ALPHA)
    assert low < 1 < high and est == pytest.approx(1, abs=0.005)
    assert high / low < 1.03


def test_processes_that_disagree_widen_the_interval_past_what_their_samples_say():
    """Two processes 6% apart in each run: the samples alone give an interval of a fraction of a percent, the
    processes' spread one that holds both of their shifts (so a 5% threshold cannot be called either way)."""
    base, new = processes([0, 0.06]), processes([0, 0.06], seed=1)
    _, low, high = hierarchical.ratio_interval(base, new, ALPHA)
    _, narrow_low, narrow_high = ratio_interval([s for g in base for s in g], [s for g in new for s in g], ALPHA)
    assert low < 0.96 and high > 1.04
    assert narrow_high / narrow_low < (high / low) ** 0.5


def test_a_shift_shared_by_every_new_process_is_found():
    _, low, high = hierarchical.ratio_interval(processes([0, 0.01]), processes([0.1, 0.11], seed=1), ALPHA)
    assert low > 1.05 and high < 1.2


def test_the_same_runs_always_give_the_same_interval():
    base, new = processes([0, 0.03, 0.01]), processes([0.02, 0, 0.05], seed=1)
    assert hierarchical.ratio_interval(base, new, ALPHA) == hierarchical.ratio_interval(base, new, ALPHA)


def test_processes_of_different_sizes_draw_their_own_counts():
    """A process with 5 samples and one with 300 (thinned): each draw takes the median of what was drawn only."""
    base = [tuple([1.0] * 5), tuple([2.0] * 300)]
    _, low, high = hierarchical.ratio_interval(base, base, 0.05)
    assert 0.4 < low <= 1 <= high < 2.5
    draws = hierarchical._draws([np.log(np.array([1.0] * 3)), np.log(np.array([8.0] * 9))], 500,
                                np.random.default_rng(0))
    # the first alone (3 ones: 1), the second alone (8), or both: 3 ones and 9 eights, whose median is 8
    assert np.all(np.isclose(np.exp(draws), 1.0) | np.isclose(np.exp(draws), 8.0))


def test_one_process_is_not_a_hierarchy():
    with pytest.raises(ValueError, match="at least two processes"):
        hierarchical.ratio_interval(processes([0]), processes([0, 0]), 0.05)


def test_spread_is_the_processes_medians_range():
    assert hierarchical.spread([(1.0, 1.0, 1.0), (1.05, 1.05)]) == pytest.approx(0.05)
    assert hierarchical.spread([(1.0, 2.0)]) is None


def point(groups, variant="v"):
    one = [Point.measured(GemmShape(8, 8, 8), variant, "-", samples_ms=g, rel_err=0.0, tolerance=1e-3)
           for g in groups]
    return pooled(one)


def run(*points):
    return Run("cpu", {}, {}, points=list(points))


def test_compare_uses_the_processes_where_both_runs_have_two_or_more():
    """The same samples: one process's worth of them as it was (pooled, K = 1 on one side) decides "slower" at
    5% from the samples' spread, the two runs' processes (6% apart within each run) leave it inconclusive."""
    base_groups, new_groups = processes([0, 0.06]), processes([0.06, 0.12], seed=1)
    both = compare.compare(run(point(base_groups)), run(point(new_groups)))
    (c,) = both.changes
    assert c.between and c.verdict == compare.Verdict.INCONCLUSIVE
    one_side = compare.compare(run(point([tuple(s for g in base_groups for s in g)])), run(point(new_groups)))
    (c1,) = one_side.changes
    assert not c1.between
    est, low, high = ratio_interval([s for g in base_groups for s in g], [s for g in new_groups for s in g], 0.05)
    assert (c1.low, c1.high) == (low, high)


def test_compare_notes_how_many_intervals_came_from_processes():
    from gpubench.views.compare import notes

    report = compare.compare(run(point(processes([0, 0.01]))), run(point(processes([0, 0.01], seed=1))))
    assert "1 of 1 interval from the spread between worker processes" in " ".join(notes(report))


def test_a_sides_draws_are_kept_by_content_so_a_pair_reads_the_same_before_and_after_others():
    rng = np.random.default_rng(7)
    a, b, c = ([rng.lognormal(0, 0.01, 64) * m for m in ms] for ms in ((1.0, 1.01), (1.0, 1.02), (1.03, 1.0)))
    hierarchical._side_draws.cache_clear()
    first = hierarchical.ratio_interval(a, b, 0.05)
    hierarchical.ratio_interval(a, c, 0.05)
    hierarchical.ratio_interval(c, b, 0.05)
    assert hierarchical.ratio_interval(a, b, 0.05) == first
    hierarchical._side_draws.cache_clear()
    assert hierarchical.ratio_interval(a, b, 0.05) == first


def test_groups_of_equal_sizes_but_other_samples_draw_their_own():
    rng = np.random.default_rng(8)
    a = [rng.lognormal(0, 0.01, 32), rng.lognormal(0, 0.01, 32)]
    slower = [g * 1.1 for g in a]
    hierarchical.ratio_interval(a, a, 0.05)  # the new side's draws of `a` are kept: `slower` must not read them
    est, low, high = hierarchical.ratio_interval(a, slower, 0.05)
    assert low > 1.05 and abs(est - 1.1) < 1e-9
