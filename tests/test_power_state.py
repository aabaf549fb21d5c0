from dataclasses import replace
from pathlib import Path

import pytest

from gpubench.analysis import power_state
from gpubench.core.dtypes import DType
from gpubench.results import Status, io

RESULTS = Path(__file__).resolve().parent.parent / "results"


def _with(p, mhz, throttled=0):
    return replace(p, telemetry={**(p.telemetry or {}), "sm_mhz": mhz, "throttled": throttled})


@pytest.fixture
def pair(make_run):
    run = make_run(clocks=1980)
    return run.points[0], run.points[1]


def test_one_state_is_no_mark(pair):
    p, base = pair
    assert power_state.apart(p, base) is None
    assert power_state.apart(_with(p, 1965), base) is None  # one 15 MHz step: under 2%
    assert power_state.apart(_with(p, 1965, throttled=3), _with(base, 1980, throttled=40)) is None  # both capped


def test_a_capped_point_against_an_uncapped_one_is_two_states(pair):
    p, base = pair
    states = power_state.apart(_with(p, 1965, throttled=40), base)
    assert states is not None and states.capped and not states.base_capped


def test_clocks_two_percent_apart_are_two_states_either_way(pair):
    p, base = pair
    assert power_state.apart(_with(p, 1935), base) is not None
    assert power_state.apart(p, _with(base, 1935)) is not None


def test_no_telemetry_no_verdict(make_run):
    run = make_run()  # a CPU-like run: no clocks recorded
    assert power_state.apart(run.points[0], run.points[1]) is None


def test_the_ratio_per_clock_is_the_cycles_ratio():
    states = power_state.PowerStates(mhz=1860, base_mhz=1980, capped=True, base_capped=False)
    # cuDNN 46.7 µs at 1,980 MHz, ours 47.6 µs at 1,860: 0.98× in time, 1.04× in cycles
    ratio = 46.7 / 47.6
    assert states.per_clock(ratio) == pytest.approx((46.7 * 1980) / (47.6 * 1860))
    assert states.describe(ratio) == "0.98× at 1,860 MHz (capped) against 1,980 MHz: 1.04× per clock"


def test_the_saved_h100_14x14_fp16_point_is_a_power_effect():
    """The H100 run of the tensor-core conv targets (tc-conv-issue20-s33-r1.json.gz): our best 14² fp16 point ran
    capped at 1,860 MHz, cuDNN's plan at 1,980 MHz uncapped; 0.98× in time is ahead per clock."""
    run = io.load(RESULTS / "nvidia-h100-80gb-hbm3" / "tc-conv-issue20-s33-r1.json.gz")
    at = [p for p in run.points if p.problem.height == 14 and p.problem.dtype == DType.FP16 and p.status == Status.OK]
    base = next(p for p in at if p.variant == "cudnn")
    ours = min((p for p in at if p.variant != "cudnn"), key=lambda p: p.median_ms)
    states = power_state.apart(ours, base)
    ratio = base.median_ms / ours.median_ms
    assert states is not None and states.capped and not states.base_capped
    assert ratio < 1 < states.per_clock(ratio)
