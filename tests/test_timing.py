
import time

import pytest

from gpubench.core.errors import GpubenchError
from gpubench.measure.timing import HostClock, Pace, Stop, TimingPolicy, measure, summarize


class FakeClock:
    """Returns scripted durations; counts flushes and calls."""

    def __init__(self, durations):
        self.durations = iter(durations)
        self.flushes = self.timed = 0

    def sync(self):
        pass

    def flush(self):
        self.flushes += 1

    def time_ms(self, run):
        run()
        self.timed += 1
        return next(self.durations)


def test_stops_at_reps_and_flushes_each_timed_call():
    calls = []
    clock = FakeClock([1.0] * 100)
    t = measure(lambda: calls.append(1), clock, TimingPolicy(warmup=2, reps=7, budget_s=100))
    assert t.stop == "reps" and len(t.samples_ms) == 7
    assert clock.flushes == 7 and len(calls) == 2 + 7


def test_no_flush():
    clock = FakeClock([1.0] * 10)
    measure(lambda: None, clock, TimingPolicy(warmup=0, reps=3, min_reps=3, flush=False))
    assert clock.flushes == 0


def test_budget_stops_after_min_reps():
    clock = FakeClock([1.0] * 100)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=50, min_reps=4, budget_s=0.0))
    assert t.stop == "budget" and len(t.samples_ms) == 4


def test_adaptive_stops_when_spread_is_small():
    clock = FakeClock([5.0, 1.0, 9.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0] + [1.0] * 50)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, min_reps=5, max_noise=0.01, max_time_s=60))
    assert t.stop == "noise"
    assert summarize(t.samples_ms).rel_iqr <= 0.01


def test_adaptive_gives_up_at_the_time_cap():
    clock = FakeClock([1.0, 2.0] * 10_000)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, min_reps=5, max_noise=0.01, max_time_s=0.05))
    assert t.stop == "time-cap"


class SlowBatchingClock(FakeClock):
    """Calls of 2 ms: too long to batch, so each is timed on its own."""

    def time_batch_ms(self, run, n, flush):
        raise AssertionError("calls this long are never batched")


def test_long_calls_keep_their_calibration_calls_as_samples():
    clock = SlowBatchingClock([2.0, 2.1, 2.2] + [2.0] * 100)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=7, min_reps=5, budget_s=100))
    assert t.batch == 1 and t.samples_ms[:3] == [2.0, 2.1, 2.2] and len(t.samples_ms) == 7
    assert clock.timed == 7 and clock.flushes == 7  # no call is timed and thrown away


def test_warm_up_stops_once_it_has_run_long_enough():
    import time

    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.06)

    measure(slow, FakeClock([1.0] * 10), TimingPolicy(warmup=5, reps=3, min_reps=3, budget_s=100))
    assert len(calls) == 2 + 3  # two warm-up calls pass WARM_S (0.1 s), then the three timed ones


def test_the_checks_call_counts_towards_the_warm_up():
    import time

    from gpubench.measure.timing import WARM_S

    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.06)

    measure(slow, FakeClock([1.0] * 10), TimingPolicy(warmup=5, reps=3, min_reps=3, budget_s=100), warm_s=WARM_S * 1.2)
    assert len(calls) == 3  # a call that already ran WARM_S is warm: only the timed ones
    calls.clear()
    measure(slow, FakeClock([1.0] * 10), TimingPolicy(warmup=5, reps=3, min_reps=3, budget_s=100), warm_s=0.06)
    assert len(calls) == 1 + 3  # 0.06 s before and one warm-up call of 0.06 pass WARM_S


# --- the sustained pace ----------------------------------------------------------------------------------------


class StreamingClock(FakeClock):
    """A clock with a stream: single calls return `single`, the stream's chunks come from `chunks` (a list of
    lists) and the stream counts what it was asked."""

    def __init__(self, single, chunks):
        super().__init__([single] * 100)
        self.chunks = iter(chunks)
        self.taken = self.closed = 0
        self.asked = None

    def stream(self, run, flush, call_ms):
        self.asked = (flush, call_ms)
        clock = self

        class Stream:
            def take(self):
                clock.taken += 1
                return next(clock.chunks)

            def close(self):
                clock.closed += 1

        return Stream()


def test_sustained_settles_then_samples_the_stream_and_never_calls_aside(monkeypatch):
    import gpubench.measure.timing as timing

    monkeypatch.setattr(timing, "SETTLE_WINDOW_S", 0.0)  # a window per chunk
    # The calls slow down as the GPU comes down to its power limit, then hold: 1.0, 1.1, 1.2, then 1.25 on.
    chunks = [[1.0] * 4, [1.1] * 4, [1.2] * 4] + [[1.25] * 4] * 50
    clock = StreamingClock(1.0, chunks)
    asides = []
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=8, min_reps=5, budget_s=100, flush=False,
                                                  pace=Pace.SUSTAINED, settle_s=0.0), aside=asides.append)
    assert clock.asked == (False, 1.0)  # sized from the fastest single call, flushed as the policy says
    assert t.samples_ms == [1.25] * 8  # none of the settling calls, and every sample from the stream
    assert clock.taken == 6 + 2  # settled once three windows agreed (1.2 and 1.25 are 4% apart: not yet)
    assert clock.closed == 1 and not asides and t.stop == Stop.REPS and t.settled_s is not None


def test_sustained_settles_at_least_settle_s(monkeypatch):
    import gpubench.measure.timing as timing

    monkeypatch.setattr(timing, "SETTLE_WINDOW_S", 0.0)

    def slow_chunks():
        while True:
            time.sleep(0.01)
            yield [1.0, 1.0]

    clock = StreamingClock(1.0, slow_chunks())
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=100, pace=Pace.SUSTAINED,
                                                  settle_s=0.1))
    # at least 0.1 s though the first three windows agree (the count of takes varies with the machine's load)
    assert t.settled_s >= 0.1 and clock.taken > 3 + 3


def test_the_idle_pace_never_opens_a_stream():
    clock = StreamingClock(1.0, [])
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=100))
    assert clock.asked is None and t.settled_s is None and len(t.samples_ms) == 5


def test_sustained_needs_a_clock_with_a_stream():
    with pytest.raises(GpubenchError, match="cannot run calls in a stream"):
        measure(lambda: None, FakeClock([1.0] * 10), TimingPolicy(warmup=0, reps=5, pace=Pace.SUSTAINED))


def test_the_host_clock_streams_calls_one_after_another():
    calls = []
    t = measure(lambda: calls.append(1), HostClock(), TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=100,
                                                                   pace=Pace.SUSTAINED, settle_s=0.05))
    assert len(t.samples_ms) >= 5 and t.settled_s >= 0.05 and len(calls) > len(t.samples_ms)


def test_a_cooldown_idles_before_the_first_call_and_the_warm_up_then_runs_in_full(monkeypatch):
    """The card rests before each point (TimingPolicy.cooldown_s); the check's call no longer makes the kernel warm,
    since the clocks come up from idle again."""
    import gpubench.measure.timing as timing

    events = []
    monkeypatch.setattr(timing.time, "sleep", lambda s: events.append(("idle", s)))
    policy = TimingPolicy(warmup=2, reps=3, min_reps=3, budget_s=100, cooldown_s=0.7)
    measure(lambda: events.append("call"), FakeClock([1.0] * 10), policy, warm_s=10.0)
    assert events[0] == ("idle", 0.7)
    assert events[1:] == ["call"] * (2 + 3)  # the two warm-up calls, despite the check's 10 s, then three timed
    events.clear()
    measure(lambda: events.append("call"), FakeClock([1.0] * 10), TimingPolicy(warmup=2, reps=3, min_reps=3,
                                                                                budget_s=100), warm_s=10.0)
    assert events == ["call"] * 3  # no cool-down: no idle, and the check was the warm-up


# --- short calls in queued batches: flushed as the policy says ----------------------------------------------------


class BatchingClock(FakeClock):
    """Calls of `single` ms timed one by one, and queued batches whose every call is `single` ms; records whether each
    sample it returned was taken after a flush (a single call after clock.flush(), a batch by its flush flag)."""

    def __init__(self, single):
        super().__init__([single] * 1000)
        self.single, self.pending, self.sample_flushed = single, False, []

    def flush(self):
        super().flush()
        self.pending = True

    def time_ms(self, run):
        self.sample_flushed.append(self.pending)
        self.pending = False
        return super().time_ms(run)

    def time_batch_ms(self, run, n, flush):
        for _ in range(n):
            run()
        self.sample_flushed += [bool(flush)] * n
        return [self.single] * n


@pytest.mark.parametrize("flush", [True, False])
def test_every_sample_of_a_batched_short_call_is_flushed_as_the_policy_says(flush):
    """A point records `flushed` from the policy (tasks.py), so the batched path must pass the policy's flag on: a
    batch timed unflushed while the point says flushed reads short calls from a warm L2."""
    clock = BatchingClock(0.01)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=200, min_reps=5, budget_s=100, flush=flush))
    assert t.batch > 1  # 0.01 ms calls are timed in queued batches
    assert len(clock.sample_flushed) == 3 + len(t.samples_ms)  # the calibration's three single calls, then the batches
    assert clock.sample_flushed == [flush] * len(clock.sample_flushed)


def test_one_slow_first_call_does_not_stop_short_calls_being_batched():
    """The batches are sized from the fastest of the calibration's calls: a first call that is slow (a lazy load, a
    JIT) must neither keep a 10 µs kernel from being batched nor end up among its samples."""
    clock = BatchingClock(0.01)
    clock.durations = iter([5.0] + [0.01] * 100)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=200, min_reps=5, budget_s=100))
    assert t.batch > 1 and 5.0 not in t.samples_ms


class ScriptedTelemetry:
    """Readings after each sample (or batch): throttled (power cap at 1755 MHz) for the first `throttled` of them."""

    expected_mhz = 1980

    def __init__(self, throttled: int):
        from gpubench.measure.telemetry import Sample

        self.readings = iter([Sample(1755, 2619, 400.0, 0x4)] * throttled + [Sample(1980, 2619, 400.0, 0)] * 1000)

    def sample(self):
        return next(self.readings)


@pytest.mark.parametrize("discard", [False, True])
def test_a_throttled_batch_counts_each_of_its_calls(discard):
    """A reading after a queued batch stands for every call in it: the point's throttled (and discarded) count is in
    samples, as its clocks are, so that "3 of 200 samples throttled" means calls, whatever the batch size."""
    clock = BatchingClock(0.01)
    t = measure(lambda: None, clock, TimingPolicy(warmup=0, reps=200, min_reps=5, budget_s=100,
                                                  discard_throttled=discard), ScriptedTelemetry(throttled=1))
    assert t.batch > 1 and t.throttled == t.batch and t.discarded == (t.batch if discard else 0)
    assert len(t.sm_mhz) == len(t.samples_ms) and min(t.sm_mhz) == (1980 if discard else 1755)


def test_the_time_aside_takes_is_not_counted_against_the_budget():
    """`aside` (an energy window between samples) may take longer than the samples themselves: the budget counts
    the time spent sampling, so a point with an energy window still gets its repetitions."""
    asides = []

    def aside(timing):
        asides.append(len(timing.samples_ms))
        time.sleep(0.06)

    t = measure(lambda: None, FakeClock([0.001] * 100), TimingPolicy(warmup=0, reps=12, min_reps=5, budget_s=0.3),
                aside=aside)
    assert t.stop == Stop.REPS and len(t.samples_ms) == 12 and len(asides) == 12  # 0.72 s of asides


def test_a_batch_lasts_about_the_target_and_long_calls_are_not_batched():
    from gpubench.measure.timing import BATCH_TARGET_MS, MAX_BATCH, batch_for

    policy = TimingPolicy(batch_below_ms=1.0)
    assert batch_for(0.1, policy) == round(BATCH_TARGET_MS / 0.1)
    assert batch_for(0.001, policy) == MAX_BATCH and batch_for(0.9, policy) == 3
    assert batch_for(1.0, policy) == 1 and batch_for(5.0, policy) == 1
    assert batch_for(0.9, TimingPolicy(batch_below_ms=0.5)) == 1
