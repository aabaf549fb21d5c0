"""gpubench/analysis/targets.py: a kernel's figure per round held to a threshold, as a ratio or in TFLOP/s, on
synthetic runs."""

import pytest

from gpubench.analysis import targets
from gpubench.analysis.targets import Measure, TargetVerdict, Threshold
from gpubench.core.dtypes import DType
from gpubench.measure.stats import median_interval
from gpubench.ops.grouped_gemm import GroupedLayout, GroupedShape
from gpubench.results import Point, Run, RunStatus, Status

BLOCK = GroupedShape((8192,) * 4, 4096, 7168, dtype=DType.FP8, layout=GroupedLayout.CONTIGUOUS_BLOCK)
LINE = Threshold(1250, Measure.TFLOPS)


def ms_at(tflops, shape=BLOCK):
    return shape.flops / tflops / 1e9


def point(variant, config, ms, shape=BLOCK, rel_err=1.7e-3):
    return Point.measured(shape, variant, config, samples_ms=[ms] * 5, rel_err=rel_err, tolerance=3e-3,
                          telemetry={"sm_mhz": 1980.0, "throttled": 0})


def run(*points):
    return Run("cuda", {}, {}, points=list(points), status=RunStatus.COMPLETE)


def verdict_of(values, threshold=LINE):
    return targets.judge(median_interval(values, 0.9), threshold, 0.9)


def test_a_tflops_target_is_met_at_the_line_or_not_by_where_its_interval_lies():
    assert verdict_of([1262, 1251, 1270, 1258, 1266]) == TargetVerdict.MET  # every round at or past the line
    assert verdict_of([1250, 1250, 1250, 1250, 1250]) == TargetVerdict.MET  # exactly on it reaches it
    assert verdict_of([1262, 1240, 1270, 1258, 1266]) == TargetVerdict.AT_THE_LINE  # one round short: the interval
    assert verdict_of([1230, 1240, 1260, 1235, 1238]) == TargetVerdict.AT_THE_LINE  # one past: the median below
    assert verdict_of([1079, 1084, 1073, 1070, 1249.9]) == TargetVerdict.NOT_MET  # every round short


def test_a_ratio_target_reads_its_threshold_the_same_way():
    assert verdict_of([1.01, 1.00, 1.02, 1.03, 1.01], Threshold(1.00)) == TargetVerdict.MET
    assert verdict_of([0.99, 0.98, 0.995, 0.97, 0.999], Threshold(1.00)) == TargetVerdict.NOT_MET
    assert verdict_of([0.99, 1.01, 1.00, 1.02, 0.98], Threshold(1.00)) == TargetVerdict.AT_THE_LINE


def test_too_few_rounds_or_none_give_no_verdict_and_a_row_without_threshold_is_reported():
    assert verdict_of([1300, 1300, 1300]) == TargetVerdict.TOO_FEW  # three rounds hold no 90% interval
    assert targets.judge(None, LINE, 0.9) == TargetVerdict.TOO_FEW
    assert targets.judge(median_interval([0.5] * 5), None, 0.9) == TargetVerdict.REPORTED


def test_a_threshold_says_what_it_measures():
    assert str(Threshold(1250, Measure.TFLOPS)) == "1,250 TFLOP/s" and str(Threshold(0.95)) == "0.95"


def test_rates_give_each_round_the_kernels_tflops_and_its_error():
    kernel = "fp8-grouped 128x128 s6 c1"
    failed = Point.measured(BLOCK, "fp8-grouped", "128x128 s6 c1", samples_ms=[ms_at(1300)] * 5, rel_err=0.5,
                            tolerance=3e-3)
    skipped = Point(BLOCK, "library", "-", Status.SKIPPED, reason="takes no block scales")
    rounds = [run(point("fp8-grouped", "128x128 s6 c1", ms_at(1080)), skipped),
              run(failed, skipped),
              run(skipped)]
    rates = {(r.problem, r.kernel): r for r in targets.rates(rounds)}
    rate = rates["fp8 contiguous-block 4x8192x4096x7168", kernel]
    assert rate.tflops[0] == pytest.approx(1080) and rate.tflops[1:] == (None, None)
    assert rate.rel_errs == (1.7e-3, 0.5, None)  # the failed point's error is shown, its time is not counted
    assert rate.why_not[1].startswith("fp8-grouped fail") and rate.why_not[2] == "not in this round"
    assert rate.clean == [pytest.approx(1080)] and rate.interval(0.9).level < 0.9
    assert rates["fp8 contiguous-block 4x8192x4096x7168", "library -"].clean == []  # skipped: no figure
