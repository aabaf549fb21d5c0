"""Energy windows aligned with the instant power's refresh (telemetry.Refreshes, telemetry.aligned,
DeviceFacts.energy_aside), on a simulated GPU whose instant power refreshes every 100 ms: once the refreshes are
learnt, a short point's window starts just early enough to run through the time its reading describes and ends
on that reading, instead of waiting for a refresh at a random moment. No GPU needed."""

import math

import pytest

from gpubench.backends.cuda import device
from gpubench.measure.telemetry import LEAD_S, PIN_S, SETTLE_S, TIMED_SPAN_S, FOLD_MS, Refreshes, aligned, wants_window
from gpubench.measure.timing import Timing, TimingPolicy, measure
from test_telemetry import Clock

PERIOD, PHASE = 0.1, 0.0371


def pin(r: Refreshes, at: float, value: int) -> None:
    """A poll just before and one at `at`: the change is seen within PIN_S."""
    r.see(r.value if r.value is not None else value - 1, at - PIN_S / 2)
    r.see(value, at)


def test_a_refresh_seen_between_close_polls_is_pinned_and_two_in_an_unbroken_run_give_the_period():
    r = Refreshes()
    assert r.until_next(0.0) is None  # nothing learnt: no prediction
    t, value = 1.0, 100
    r.see(value, t)
    while t < 1.25:  # polled every millisecond: refreshes at 1.0305 and 1.1305 and 1.2305
        t += 0.001
        value = 100 + math.floor((t - 0.0305) / PERIOD)
        r.see(value, t)
    assert r.period == pytest.approx(PERIOD, abs=0.002)
    assert r.until_next(1.3) == pytest.approx(0.0305, abs=0.002)


def test_refreshes_seen_far_apart_teach_nothing_until_the_period_is_known():
    r = Refreshes()
    pin(r, 1.0, 1)
    pin(r, 1.3, 2)  # polls in between were not close: 0.3 s could be one period or three
    assert r.period is None
    r.periods.append(PERIOD)
    pin(r, 1.6 + 0.001, 3)  # three periods from the last pin, and 1 ms long
    assert list(r.periods) == [PERIOD, pytest.approx(0.301 / 3)]
    pin(r, 1.66, 4)  # not a whole number of periods: ignored
    assert len(r.periods) == 2


def test_a_window_is_aligned_only_in_its_band_before_a_known_refresh():
    r = Refreshes()
    r.periods.append(PERIOD)
    pin(r, 2.0, 1)
    assert not aligned(r, 2.0 + PERIOD - LEAD_S[0] + 0.002)  # too late: the reading would not describe it
    assert aligned(r, 2.0 + PERIOD - (LEAD_S[0] + LEAD_S[1]) / 2)
    assert not aligned(r, 2.0 + PERIOD - LEAD_S[1] - 0.005)  # too early: it would wait, running
    assert LEAD_S[0] > SETTLE_S
    assert not aligned(Refreshes(), 2.0)


def test_which_points_need_a_window_of_their_own():
    assert wants_window(batch=8, median_ms=0.01, reps=12)
    assert wants_window(batch=1, median_ms=FOLD_MS / 2, reps=12)
    assert wants_window(batch=1, median_ms=FOLD_MS * 2, reps=12)  # 12 calls of 4 ms: 48 ms, no fresh reading
    assert not wants_window(batch=1, median_ms=TIMED_SPAN_S * 1e3 / 10, reps=12)


def test_the_timing_loop_calls_aside_after_each_sample_and_does_not_count_its_time():
    seen = []

    def aside(timing: Timing):
        seen.append(len(timing.samples_ms))
        import time
        time.sleep(0.02)

    timing = measure(lambda: None, Clock(), TimingPolicy(warmup=0, reps=8, min_reps=5, budget_s=0.05), aside=aside)
    assert seen == [1, 2, 3, 4, 5, 6, 7, 8]
    assert len(timing.samples_ms) == 8  # 0.02 s per aside counted would have ended a 0.05 s budget at 5


class Sim:
    """A GPU whose instant power refreshes every PERIOD (from PHASE), reading the power of whatever ran in the
    SETTLE_S before the refresh: a call's power while the point's calls ran back to back all that time, else
    less. The host's clock is simulated too."""

    def __init__(self):
        self.t = 0.0
        self.busy_since = None  # when the current run of back-to-back calls began
        self.refreshes = Refreshes()
        self.has_instant = True
        self.value = 100_000

    def refresh_index(self, t):
        return math.floor((t - PHASE) / PERIOD)

    def advance(self, seconds, busy=False):
        end = self.t + seconds
        for k in range(self.refresh_index(self.t) + 1, self.refresh_index(end) + 1):
            at = PHASE + k * PERIOD
            ran_through = busy and self.busy_since is not None and at - self.busy_since >= SETTLE_S
            self.value = 400_000 + k if ran_through else 150_000 + k  # distinct at every refresh
        self.t = end

    def instant_mw(self):
        self.refreshes.see(self.value, self.t)
        return self.value


class SimClock:
    def __init__(self, sim):
        self.sim = sim

    def host_time(self):
        return self.sim.t

    def busy(self, run, chunk, go_on):
        self.sim.busy_since, calls = self.sim.t, 0
        while True:
            self.sim.advance(chunk * 10e-6, busy=True)  # 10 µs calls
            calls += chunk
            if not go_on():
                self.sim.busy_since = None
                return calls, calls * 10e-6


class Facts(device.DeviceFacts):
    def __init__(self, sim):
        self.telemetry, self.clock = sim, SimClock(sim)


def short_point(facts, sim, samples=8):
    """A point of 10 µs calls in batches (5 ms each between polls), then its energy as the backend reads it."""
    aside = facts.energy_aside(lambda: None, TimingPolicy(reps=12))
    timing = Timing([], None, batch=64)
    started = sim.t
    for _ in range(samples):
        sim.advance(0.005)
        sim.instant_mw()  # the sample's telemetry
        timing.samples_ms += [0.01] * 64
        aside(timing)
    energy = facts.energy(lambda: None, True, 1e6, timing)
    return sim.t - started, energy, timing


def run_points(n=60):
    sim = Sim()
    facts = Facts(sim)
    costs, aligned_windows = [], 0
    for i in range(n):
        sim.advance(0.0137 * (i % 7))  # the host's work between points: any phase
        spent, energy, timing = short_point(facts, sim)
        assert energy["window_power_w"] >= 400.0  # every reading describes the point's own calls
        costs.append(spent - 8 * 0.005)
        aligned_windows += bool(timing.window)
    assert sim.refreshes.period == pytest.approx(PERIOD, abs=0.002)
    learnt = costs[10:]
    return sum(learnt) / len(learnt), aligned_windows


def test_aligned_windows_cost_less_and_read_their_own_calls(monkeypatch):
    aligned_cost, aligned_windows = run_points()
    assert aligned_windows >= 15
    monkeypatch.setattr(device.telemetry, "aligned", lambda refreshes, now: False)
    plain_cost, plain_windows = run_points()
    assert plain_windows == 0
    assert aligned_cost < plain_cost - 0.008  # seconds a point


def test_without_instant_power_there_is_no_aside():
    sim = Sim()
    sim.has_instant = False
    assert Facts(sim).energy_aside(lambda: None, TimingPolicy()) is None


def test_the_settle_time_covers_what_a_reading_looks_back_over_on_the_h100():
    """docs/evidence/settle-probe-h100.txt (a probe, since removed): a burst started L ms before a refresh
    moves its reading this share of the way to the burst's steady power. Every burst of SETTLE_S or longer read at
    least 95% of it; a shorter settle time would have read up to a third low at 40 ms."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs/evidence/settle-probe-h100.txt").read_text()
    shares = {int(m[1]): [float(x) for x in m[2].split()] for m in re.finditer(r"L +(\d+) ms: .*steady ([\d. ]+)", text)}
    assert len(shares) >= 8
    assert all(min(v) >= 0.95 for L, v in shares.items() if L >= SETTLE_S * 1e3)
    assert any(min(v) < 0.95 for L, v in shares.items() if L < SETTLE_S * 1e3 and L >= 35)
