
from gpubench.timing import TimingPolicy, measure, summarize


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

    from gpubench.timing import WARM_S

    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.06)

    measure(slow, FakeClock([1.0] * 10), TimingPolicy(warmup=5, reps=3, min_reps=3, budget_s=100), warm_s=WARM_S * 1.2)
    assert len(calls) == 3  # a call that already ran WARM_S is warm: only the timed ones
    calls.clear()
    measure(slow, FakeClock([1.0] * 10), TimingPolicy(warmup=5, reps=3, min_reps=3, budget_s=100), warm_s=0.06)
    assert len(calls) == 1 + 3  # 0.06 s before and one warm-up call of 0.06 pass WARM_S
