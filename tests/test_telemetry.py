"""Telemetry through a fake NVML: clocks and throttle reasons per sample, energy per call, locked-clock detection,
and what the timing loop does with them (flag, discard and retake)."""

import sys
import types

import pytest

from gpubench import telemetry
from gpubench.telemetry import Nvml, Sample, energy_window, open_telemetry
from gpubench.timing import TimingPolicy, measure


class FakeNvml(types.ModuleType):
    """The few pynvml calls gpubench makes, scripted: clocks, reasons and an energy counter that advances."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    class NVMLError(Exception):
        pass

    def __init__(self, idle=345, max_sm=1980, script=(), energy=True, mj_per_read=50):
        super().__init__("pynvml")
        self.idle, self.max_sm, self.script, self.energy, self.mj_per_read = idle, max_sm, list(script), energy, mj_per_read
        self.reads, self.mj, self.started = 0, 1_000_000, False

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        return "handle"

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return self.max_sm

    def _now(self):
        return self.script[min(self.reads, len(self.script) - 1)] if self.script else (self.max_sm, 0)

    def nvmlDeviceGetClockInfo(self, h, kind):
        if not self.started:  # the first read is the idle clock, before any work
            self.started = True
            return self.idle
        return self._now()[0] if kind == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetPowerUsage(self, h):
        return 412_000

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        reasons = self._now()[1]
        self.reads += 1
        return reasons

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.energy:
            raise self.NVMLError("not supported")
        self.mj += self.mj_per_read
        return self.mj

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetUUID(self, h):
        return b"GPU-fake-0000"


@pytest.fixture
def fake_nvml(monkeypatch):
    def install(**kw):
        fake = FakeNvml(**kw)
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        return fake

    return install


class Clock:
    def __init__(self, ms=1.0):
        self.ms = ms

    def sync(self):
        pass

    def flush(self):
        pass

    def time_ms(self, run):
        run()
        return self.ms


def test_unlocked_clocks_are_seen_at_rest(fake_nvml):
    fake_nvml(idle=345)
    t = open_telemetry("0000:19:00.0")
    assert isinstance(t, Nvml) and t.locked is False and t.expected_mhz == 1980
    assert t.describe() == {"uuid": "GPU-fake-0000", "sm_clock_max_mhz": 1980, "sm_clock_idle_mhz": 345, "clocks_locked": False,
                            "expected_sm_mhz": 1980, "energy_counter": True, "power_limit_w": 700.0}


def test_a_gpu_at_rest_below_its_boost_clock_expects_that_clock(fake_nvml):
    fake_nvml(idle=1755)  # locked there, most likely: NVML cannot say, so `locked` stays unknown
    t = open_telemetry("0000:19:00.0")
    assert t.locked is None and t.expected_mhz == 1755


def test_a_gpu_still_at_its_boost_clock_is_unknown(fake_nvml):
    fake_nvml(idle=1980)  # locked, or busy until a moment ago
    t = open_telemetry("0000:19:00.0")
    assert t.locked is None and t.expected_mhz == 1980


def test_no_nvml_means_no_telemetry(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` fails
    t = open_telemetry("0000:19:00.0")
    assert t.available is False and t.sample() is None and t.describe() == {}


@pytest.mark.parametrize("sm,reasons,throttled", [
    (1980, 0, False), (1980, 0x1, False), (1980, 0x2, False),  # idle and the locked/app clock setting are fine
    (1980, 0x4, True), (1755, 0x0, True), (1930, 0x0, False), (1980, 0x20 | 0x1, True),
])
def test_a_sample_is_flagged_when_power_heat_or_a_low_clock_held_it_back(sm, reasons, throttled):
    assert Sample(sm, 2619, 400.0, reasons).throttled(1980) is throttled


def test_samples_are_flagged_and_summarised(fake_nvml):
    fake_nvml(script=[(1980, 0)] * 3 + [(1755, 0x4)] * 2 + [(1980, 0)] * 100)
    t = open_telemetry("bus")
    timing = measure(lambda: None, Clock(), TimingPolicy(warmup=0, reps=10, min_reps=5, budget_s=100), t)
    assert len(timing.samples_ms) == 10 and timing.throttled == 2 and timing.discarded == 0
    summary = timing.telemetry()
    assert summary["sm_mhz"] == 1980 and summary["sm_mhz_min"] == 1755 and summary["reasons"] == ["power cap"]
    assert summary["power_w"] == 412.0 and summary["mem_mhz"] == 2619


def test_discard_throttled_retakes_the_samples(fake_nvml):
    fake_nvml(script=[(1980, 0)] * 3 + [(1755, 0x4)] * 2 + [(1980, 0)] * 100)
    t = open_telemetry("bus")
    timing = measure(lambda: None, Clock(), TimingPolicy(warmup=0, reps=10, min_reps=5, budget_s=100,
                                                         discard_throttled=True), t)
    assert len(timing.samples_ms) == 10 and timing.discarded == 2 and min(timing.sm_mhz) == 1980


def test_discarding_gives_up_at_the_time_cap(fake_nvml):
    fake_nvml(script=[(1700, 0x40)])
    timing = measure(lambda: None, Clock(), TimingPolicy(warmup=0, reps=10, max_time_s=0.02, discard_throttled=True),
                     open_telemetry("bus"))
    assert timing.samples_ms == [] and timing.stop == "time-cap" and timing.discarded > 0


def test_energy_per_call_from_the_counter(fake_nvml):
    fake_nvml(mj_per_read=5)
    calls = []
    window = energy_window(lambda n: calls.append(n), open_telemetry("bus"), min_s=0.0)
    assert window["calls"] == sum(calls) and window["joules_per_call"] == pytest.approx(0.005 / sum(calls))


def test_no_energy_counter_no_energy(fake_nvml):
    fake_nvml(energy=False)
    assert energy_window(lambda n: None, open_telemetry("bus")) is None


def test_the_whole_point_carries_telemetry(fake_nvml):
    """A CPU backend with the fake NVML attached runs a real point: clocks and energy land in it."""
    from gpubench import catalog
    from gpubench.backends.cpu import CpuBackend
    from gpubench.problems import GemmShape
    from gpubench.runner import PointTask, ShapeTask, run_task
    from gpubench.variant import NO_CONFIG

    fake_nvml(mj_per_read=30)

    class Instrumented(CpuBackend):
        telemetry = open_telemetry("bus")

        def energy(self, run, flush, flops):
            def many(n):
                for _ in range(n):
                    run()
            window = telemetry.energy_window(many, self.telemetry, min_s=0.0)
            return {"joules_per_call": window["joules_per_call"],
                    "gflops_per_w": flops / window["joules_per_call"] / 1e9}

    numpy = catalog.Catalog(catalog.builtin()).get("gemm", "cpu", "numpy")
    task = ShapeTask("t", GemmShape(32, 32, 32), 0, (PointTask(0, numpy, NO_CONFIG, TimingPolicy(warmup=0, reps=5)),))
    point = [e[2] for e in run_task(Instrumented(), task) if e[0] == "point"][0]
    assert point.status == "ok" and point.telemetry["sm_mhz"] == 1980 and point.telemetry["joules_per_call"] > 0
    assert point.telemetry["gflops_per_w"] > 0
