"""The settings records: built once from click's keyword arguments (by the options' names), turned into checked
timing policies, and laid over a suite sweep's own timing."""

import pytest

from gpubench.core.errors import GpubenchError
from gpubench.core.gpus import GpuSelection
from gpubench.measure.timing import Pace, TimingPolicy
from gpubench.planning.plan import DEFAULTS, Spread
from gpubench.planning.settings import OutputSettings, RunSettings, Settings, TimingSettings


def test_settings_are_taken_out_of_the_command_lines_keyword_arguments_by_name():
    kw = {"warmup": 2, "reps": 9, "no_flush": True, "pace": None, "output": "r.json", "force": True,
          "backend": "cpu", "seed": 3, "tf32": False, "timeout": 60.0, "config": None, "gpus": "2",
          "scheduler": None, "replicate": True, "slow_threshold": None, "variants": "tiled"}
    s = Settings.taken_from(kw)
    assert kw == {"variants": "tiled"}  # what is no setting stays for the command
    assert s.timing == TimingSettings(warmup=2, reps=9, no_flush=True)
    assert s.output == OutputSettings("r.json", True)
    assert s.run == RunSettings(backend="cpu", seed=3, timeout=60.0)
    assert s.spread == Spread(GpuSelection(count=2), None, True, DEFAULTS.slow_threshold)


def test_the_spread_is_checked_as_it_is_taken():
    with pytest.raises(GpubenchError, match="--slow-threshold 0.2 .* give --replicate too"):
        Settings.taken_from({"slow_threshold": 0.2})


def test_a_policy_has_the_defaults_where_nothing_was_given_and_decides_on_a_gpu_only():
    assert TimingSettings().policy("cpu") == TimingPolicy(min_reps=5)
    assert TimingSettings().policy("cuda").decide == 0.05
    assert TimingSettings(decide=0).policy("cuda").decide is None  # 0 turns it off
    p = TimingSettings(reps=7, no_flush=True, pace="sustained", settle=1).policy("cpu")
    assert (p.reps, p.flush, p.pace, p.settle_s) == (7, False, Pace.SUSTAINED, 1.0)


def test_a_policy_names_a_bad_value_by_its_option_or_by_the_callers_words():
    with pytest.raises(GpubenchError, match="--reps must be at least 5"):
        TimingSettings(reps=2).policy("cpu")
    with pytest.raises(GpubenchError, match="measure: reps must be at least 5"):
        TimingSettings(reps=2).policy("cpu", where=lambda key: f"measure: {key}")


def test_what_was_given_lies_over_a_suite_sweeps_policy_and_the_rest_is_kept():
    own = TimingSettings(reps=6, budget=2.0, discard_throttled=True).policy("cuda")
    assert TimingSettings().over(own) is own
    over = TimingSettings(max_noise=0.02, decide=0).over(own)
    assert (over.reps, over.budget_s, over.discard_throttled, over.max_noise, over.decide) == (6, 2.0, True, 0.02, None)
    with pytest.raises(GpubenchError, match="--settle is how long pace sustained"):
        TimingSettings(settle=1.0).check_settle([own])


def test_a_suite_sweeps_own_policy_is_kept_whole_under_a_setting_given():
    """Every value of the sweep's policy survives the overlay, whatever field a later option adds."""
    own = TimingSettings(warmup=1, reps=9, budget=0.5, max_noise=0.03, max_time=4.0, no_flush=True, decide=0.1,
                         pace="sustained", settle=2.0, cooldown=1.5).policy("cuda")
    assert TimingSettings(reps=9).over(own) == own
