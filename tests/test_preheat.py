"""The GPU burnt to its working state where it idled (gpubench/backends/cuda/preheat.py), the policy's preheat
(planning/plan.py) and where the timing asks for it (execution/tasks.py), on a stand-in CuPy and clock."""

import types

import pytest

from gpubench.backends.cuda import preheat
from gpubench.core.errors import GpubenchError
from gpubench.planning import plan
from gpubench.planning.settings import TimingSettings


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class FakeCupy:
    """Counts the burn's work; each synchronize moves the fake clock on by 0.1 s."""

    float16, uint8 = "float16", "uint8"

    def __init__(self, clock: FakeClock):
        self.clock, self.matmuls, self.copies = clock, 0, 0
        self.cuda = types.SimpleNamespace(Stream=types.SimpleNamespace(null=types.SimpleNamespace(
            synchronize=self._sync)))

    def _sync(self):
        self.clock.t += 0.1

    def full(self, shape, value, dtype):
        return ("array", shape)

    def empty(self, n, dtype):
        return ("array", n)

    def empty_like(self, a):
        return a

    def matmul(self, a, b, out):
        self.matmuls += 1

    def copyto(self, dst, src):
        self.copies += 1


@pytest.fixture
def heater():
    clock = FakeClock()
    cp = FakeCupy(clock)
    return preheat.Preheater(cp, now=clock), cp, clock


def test_the_first_point_of_a_process_is_preceded_by_a_burn_of_the_seconds_asked(heater):
    h, cp, clock = heater
    spent = h.before(1.0)
    assert 1.0 <= spent < 1.2 and cp.matmuls > 0 and cp.copies == cp.matmuls


def test_a_gpu_timed_moments_ago_is_not_burnt_again_but_one_that_idled_is(heater):
    h, cp, clock = heater
    h.before(1.0)
    h.after()
    clock.t += preheat.IDLE_GAP_S / 2
    assert h.before(1.0) == 0.0
    h.after()
    clock.t += preheat.IDLE_GAP_S
    assert h.before(1.0) >= 1.0


def test_zero_seconds_never_burns(heater):
    h, cp, _ = heater
    assert h.before(0.0) == 0.0 and cp.matmuls == 0


def test_a_gpu_run_preheats_by_default_and_the_cpu_does_not():
    assert TimingSettings().policy("cuda").preheat_s == plan.PREHEAT_S > 0
    assert TimingSettings().policy("cpu").preheat_s == 0
    assert TimingSettings(preheat=0.0).policy("cuda").preheat_s == 0


@pytest.mark.parametrize("value", [-1.0, plan.MAX_PREHEAT_S + 1, float("nan"), "3"])
def test_a_preheat_out_of_range_is_refused_in_one_line(value):
    with pytest.raises(GpubenchError, match="preheat"):
        plan.policy(preheat=value)


class Recording:
    """A backend's preheat and worked calls, and a clock that times nothing."""

    def __init__(self):
        self.calls = []
        self.clock = types.SimpleNamespace(sync=lambda: None, flush=lambda: None, time_ms=self._time)
        from gpubench.measure.telemetry import NoTelemetry

        self.telemetry = NoTelemetry()

    def _time(self, run):
        run()
        return 1.0

    def preheat(self, seconds):
        self.calls.append(("preheat", seconds))

    def worked(self):
        self.calls.append(("worked",))

    def kernel_tracer(self, policy):
        return None

    def timed_clock(self, clock, policy, prepared):
        return clock


@pytest.mark.parametrize("cooldown, expected", [(0.0, [("preheat", 2.5), ("worked",)]), (0.01, [("worked",)])])
def test_a_point_is_preheated_before_its_timing_unless_a_cooldown_asks_for_a_rested_card(cooldown, expected):
    from gpubench.execution.tasks import timed

    backend = Recording()
    prepared = types.SimpleNamespace(run=lambda: None)
    policy = plan.policy(preheat=2.5, cooldown=cooldown, reps=5, budget=0.0, warmup=0)
    timing, _ = timed(backend, prepared, policy)
    assert backend.calls == expected and len(timing.samples_ms) >= 5
