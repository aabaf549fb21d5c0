"""gpubench/measure/modes.py: the two-mode rule on synthetic samples of known shape, and on the saved H100 point that made
the case for it."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpubench.measure import modes
from gpubench.measure.modes import two_modes
from gpubench.results import Status, load

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "nvidia-h100-80gb-hbm3"
EVIDENCE = ROOT / "docs" / "evidence" / "two-modes.md"


def two_clusters(n_fast=40, n_slow=60, fast=0.0457, slow=0.0539, spread=0.003, seed=0):
    """Two tight clusters (spread: each one's standard deviation relative to its centre), shuffled."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([fast * (1 + spread * rng.standard_normal(n_fast)),
                        slow * (1 + spread * rng.standard_normal(n_slow))])
    return list(rng.permutation(x))


def test_two_clean_modes_are_found_with_their_centres_and_shares():
    m = two_modes(two_clusters())
    assert m is not None
    assert m.fast_ms == pytest.approx(0.0457, rel=0.005) and m.slow_ms == pytest.approx(0.0539, rel=0.005)
    assert (m.fast_share, m.slow_share, m.n) == (pytest.approx(0.4), pytest.approx(0.6), 100)
    assert m.separation > 20 and m.amplitude == 1.0 and m.gap == pytest.approx(0.18, abs=0.01)
    assert m.describe() == f"two modes: {m.fast_ms * 1e3:.4g} and {m.slow_ms * 1e3:.4g} µs (40%/60%)"


def test_a_mode_above_a_millisecond_is_told_in_ms():
    m = two_modes(two_clusters(fast=1.54, slow=1.73))
    assert m.describe() == f"two modes: {m.fast_ms:.4g} and {m.slow_ms:.4g} ms (40%/60%)"


def test_one_mode_with_a_few_outliers_is_not_two():
    rng = np.random.default_rng(1)
    x = list(0.05 * (1 + 0.003 * rng.standard_normal(100))) + [0.07 + 0.0002 * i for i in range(9)]
    assert two_modes(x) is None  # 9 of 109 far off (8%): a tail, not a mode
    assert two_modes(x + [0.0705] * 6) is not None  # 15 of 115 there: a mode
    assert two_modes(x[:100] + [0.07, 0.071]) is None  # a mode of 2 samples is not one


@pytest.mark.parametrize("name, draw", [
    ("lognormal", lambda rng, n: np.exp(rng.normal(np.log(0.05), 0.05, n))),
    ("exponential tail", lambda rng, n: 0.05 + rng.exponential(0.005, n)),
    ("flat", lambda rng, n: rng.uniform(0.05, 0.055, n)),
    ("Student t, 3 degrees", lambda rng, n: 0.05 * (1 + 0.01 * rng.standard_t(3, n))),
])
@pytest.mark.parametrize("n", [30, 100, 1000])
def test_a_long_tail_or_a_flat_sample_is_not_two_modes(name, draw, n):
    rng = np.random.default_rng(n)
    assert sum(two_modes(draw(rng, n)) is not None for _ in range(50)) <= 1


def test_too_few_samples_say_nothing():
    assert two_modes(two_clusters(8, 11)) is None  # 19: under MIN_SAMPLES, however clean
    assert two_modes(two_clusters(8, 12)) is not None
    assert two_modes(two_clusters(4, 40)) is None  # a mode of 4 samples is under MIN_MODE_SAMPLES


def test_constant_and_two_valued_samples():
    assert two_modes([0.01] * 50) is None
    m = two_modes([0.01] * 20 + [0.012] * 30)  # no spread inside either mode: D as large as rounding leaves it
    assert m is not None and m.separation > 1e6 and m.fast_share == pytest.approx(0.4)


def test_modes_closer_than_the_gap_are_left_alone():
    assert two_modes(two_clusters(fast=0.05, slow=0.0505, spread=0.0005)) is None  # 1% apart, cleanly
    assert two_modes(two_clusters(fast=0.05, slow=0.0515, spread=0.0005)) is not None  # 3%


def test_the_saved_cudnn_point_of_two_modes_is_flagged_and_its_other_runs_are_not():
    """cuDNN's 14x14 bf16 layer on the H100 (docs/evidence/two-modes.md): 117 samples in two clusters in one run,
    one cluster in four others, the same engine throughout (a fifth such run, tc-conv-halo, is in git history)."""

    def point(name):
        run = load(RESULTS / f"{name}.json.gz")
        return next(p for p in run.points if p.variant == "cudnn"
                    and p.problem.full_label == "128x256x14 k256 3x3 s1 BF16 NHWC")

    m = point("tc-conv-tma-s32").modes
    assert m is not None and m.n == 117
    assert (round(m.fast_ms * 1e3, 1), round(m.slow_ms * 1e3, 1)) == (45.5, 53.7)
    assert round(m.fast_share, 2) == 0.38 and m.separation > 10
    for other in ("tc-conv-tma", "tc-conv", "tc-conv-ws", "precision"):
        assert point(other).modes is None, other


@settings(max_examples=25, deadline=None)
@given(n=st.integers(20, 400), spread=st.floats(0.001, 0.1), seed=st.integers(0, 2 ** 32 - 1))
def test_a_unimodal_normal_sample_is_flagged_rarely(n, spread, seed):
    rng = np.random.default_rng(seed)
    flagged = sum(two_modes(0.1 * (1 + spread * rng.standard_normal(n))) is not None for _ in range(40))
    assert flagged <= 2


mixtures = st.builds(two_clusters, n_fast=st.integers(5, 80), n_slow=st.integers(5, 80),
                     slow=st.floats(0.046, 0.07), spread=st.floats(0.001, 0.05), seed=st.integers(0, 1000))


@settings(max_examples=60, deadline=None)
@given(x=mixtures, power=st.integers(-30, 30))
def test_scaling_the_samples_changes_no_verdict(x, power):
    """Times in other units (any power of two, which scales exactly) give the same modes, scaled."""
    m, scaled = two_modes(x), two_modes([s * 2.0 ** power for s in x])
    assert (m is None) == (scaled is None)
    if m is not None:
        assert scaled.fast_ms == m.fast_ms * 2.0 ** power and scaled.fast_share == m.fast_share
        assert scaled.separation == m.separation and scaled.amplitude == m.amplitude


@settings(max_examples=60, deadline=None)
@given(x=mixtures, share=st.floats(0.0, 0.9))
def test_shifting_the_samples_down_keeps_two_modes(x, share):
    """The rule's statistics (the split, Ashman's D, the valley) do not move with a shift; only the gap is relative
    (MIN_GAP: a fixed offset matters less on a longer time), and a shift towards zero only widens it."""
    m = two_modes(x)
    shifted = two_modes([s - share * min(x) for s in x])
    if m is not None:
        assert shifted is not None and shifted.fast_share == m.fast_share
        assert shifted.separation == pytest.approx(m.separation, rel=1e-6)
        assert shifted.slow_ms - shifted.fast_ms == pytest.approx(m.slow_ms - m.fast_ms, rel=1e-6)


CALIBRATION = {  # docs/evidence/two-modes.md: file → (points with two modes, ok points with MIN_SAMPLES or more)
    "nvidia-h100-80gb-hbm3/lab-r5-c8eda63-b.json.gz": (53, 216),
    "nvidia-h100-80gb-hbm3/lab-small-placed-a.json.gz": (37, 132),
    "nvidia-h100-80gb-hbm3/tc-gemm-first-8192.json.gz": (13, 30),
    "nvidia-h100-80gb-hbm3/tc-gemm-cooldown.json.gz": (19, 48),
    "nvidia-h100-80gb-hbm3/tc-conv-tma-s32.json.gz": (3, 220),
    "nvidia-h200/tc-gemm-cooldown.json.gz": (16, 48),
    "nvidia-h200/lab.json.gz": (22, 376),
}


@pytest.mark.parametrize("name", CALIBRATION)
def test_the_saved_runs_flag_what_the_calibration_says(name):
    """The evidence's per-file counts, from saved runs that never change: a change of a threshold that does not
    update the evidence fails here."""
    run = load(RESULTS.parent / name, each_once=False)  # the calibration counted every measurement saved
    long_enough = [p for p in run.points if p.status == Status.OK and len(p.samples_ms) >= modes.MIN_SAMPLES]
    assert (sum(p.modes is not None for p in long_enough), len(long_enough)) == CALIBRATION[name]
    assert f"`{name.split('/')[1]}` | {CALIBRATION[name][0]} of {CALIBRATION[name][1]} |" in EVIDENCE.read_text()


def test_the_median_s_place_against_the_modes():
    """The trial's point under CPU load: modes at 0.21 and 11.6 ms, its median 5.0 ms, between them."""
    m = modes.Modes(0.21, 11.6, 0.5, 30.0, 1.0, 30)
    assert m.place(5.0) == modes.Place.BETWEEN and m.place(0.3) == modes.Place.FASTER
    assert m.place(11.0) == modes.Place.SLOWER
    assert m.describe(5.0) == "two modes: 0.21 and 11.6 ms (50%/50%); median 5 ms, between the two modes"
