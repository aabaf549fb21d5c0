"""Telemetry through a fake NVML: clocks and throttle reasons per sample, energy per call, locked-clock detection,
and what the timing loop does with them (flag, discard and retake)."""

import sys
import types

import pytest

from gpubench.measure import telemetry
from gpubench.measure.telemetry import (FOLD_MS, FRESH, EnergySource, FreshReadings, Nvml, Sample, energy_window,
                                 open_telemetry, power_window, timed_energy)
from gpubench.measure.timing import TimingPolicy, measure


class FakeNvml(types.ModuleType):
    """The few pynvml calls gpubench makes, scripted: clocks, reasons and an energy counter that advances."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    class NVMLError(Exception):
        pass

    def __init__(self, idle=345, max_sm=1980, script=(), energy=True, mj_per_read=50, instant=None):
        super().__init__("pynvml")
        self.idle, self.max_sm, self.script, self.energy, self.mj_per_read = idle, max_sm, list(script), energy, mj_per_read
        self.reads, self.mj, self.started = 0, 1_000_000, False
        self.instant = instant  # None: no instant power field; else a function of the read count giving mW
        self.instant_reads = 0

    def nvmlDeviceGetFieldValues(self, h, ids):
        assert ids == [telemetry.INSTANT_POWER]
        if self.instant is None:
            return [types.SimpleNamespace(nvmlReturn=3, value=types.SimpleNamespace(uiVal=0))]  # not supported
        self.instant_reads += 1
        return [types.SimpleNamespace(nvmlReturn=0, value=types.SimpleNamespace(uiVal=self.instant(self.instant_reads)))]

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
                            "expected_sm_mhz": 1980, "energy_counter": True, "instant_power": False,
                            "power_limit_w": 700.0}


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
    from gpubench.specs import catalog
    from gpubench.backends.cpu import CpuBackend
    from gpubench.ops.gemm import GemmShape
    from gpubench.execution.messages import Finished
    from gpubench.execution.tasks import PointTask, ShapeTask, run_task
    from gpubench.specs.variant import NO_CONFIG

    fake_nvml(mj_per_read=30)

    class Instrumented(CpuBackend):
        telemetry = open_telemetry("bus")

        def energy(self, run, flush, flops, timing=None):
            def many(n):
                for _ in range(n):
                    run()
            window = telemetry.energy_window(many, self.telemetry, min_s=0.0)
            return {"joules_per_call": window["joules_per_call"],
                    "gflops_per_w": flops / window["joules_per_call"] / 1e9}

    numpy = catalog.Catalog(catalog.builtin()).get("gemm", "cpu", "numpy")
    task = ShapeTask("t", GemmShape(32, 32, 32), 0, (PointTask(0, numpy, NO_CONFIG, TimingPolicy(warmup=0, reps=5)),))
    point = [e.point for e in run_task(Instrumented(), task) if isinstance(e, Finished)][0]
    assert point.status == "ok" and point.telemetry["sm_mhz"] == 1980 and point.telemetry["joules_per_call"] > 0
    assert point.telemetry["gflops_per_w"] > 0


def test_fresh_readings_keep_the_changes_after_the_first():
    fresh = FreshReadings()
    for value in [None, 300_000, 300_000, 310_000, 310_000, 400_000, None, 400_000, 420_000]:
        fresh.see(value)
    assert fresh.changes == 3 and fresh.values == [400_000, 420_000]  # 310 W may have begun before the work


def test_long_timed_calls_carry_their_own_energy():
    fresh = FreshReadings()
    for value in [100_000, 350_000, 400_000, 420_000]:
        fresh.see(value)
    e = timed_energy(fresh, batch=1, median_ms=5.0, calls=30)
    assert e["joules_per_call"] == pytest.approx(0.410 * 5.0) and e["power_w"] == pytest.approx(410.0)
    assert e["source"] == EnergySource.TIMED and e["readings"] == 2
    assert timed_energy(fresh, batch=8, median_ms=5.0, calls=30) is None  # queued batches: flushes in between
    assert timed_energy(fresh, batch=1, median_ms=FOLD_MS / 2, calls=30) is None  # too short: a window is cleaner
    few = FreshReadings()
    for value in [100_000, 350_000]:  # one change, which may describe what ran before the loop
        few.see(value)
    assert FRESH == 1 and timed_energy(few, batch=1, median_ms=5.0, calls=30) is None


def test_the_timing_loop_collects_instant_power(fake_nvml):
    fake_nvml(instant=lambda n: 300_000 + 1000 * n)  # a new value at every read
    timing = measure(lambda: None, Clock(), TimingPolicy(warmup=0, reps=6, min_reps=5, budget_s=100),
                     open_telemetry("bus"))
    assert len(timing.instant.values) == 6 - 2  # the first read is the start, the first change is dropped


class Busy:
    """Runs `calls_per_chunk` calls per chunk, of `ms_per_call` each on the GPU, until told to stop."""

    def __init__(self, calls_per_chunk, ms_per_call):
        self.chunk, self.ms, self.asked = calls_per_chunk, ms_per_call, 0

    def __call__(self, go_on):
        calls = self.chunk
        while True:
            calls += self.chunk
            self.asked += 1
            if not go_on():
                return calls, calls * self.ms / 1e3


def test_a_power_window_ends_at_the_first_new_reading_once_settled(fake_nvml):
    fake_nvml(instant=lambda n: 300_000 + 1000 * n)  # a new value at every read (read 1: open_telemetry's check)
    busy = Busy(calls_per_chunk=100, ms_per_call=0.01)
    ticks = iter(range(1000))
    window = power_window(busy, open_telemetry("bus"), settle_s=0.035, clock=lambda: next(ticks) / 100)
    # The clock says 10 ms more at each poll; a change counts once the poll before it came at 35 ms or later:
    # poll 4 is at 40 ms, so poll 5 (50 ms, read 6) ends the window.
    assert busy.asked == 5 and window["power_w"] == pytest.approx(306.0)
    assert window["source"] == EnergySource.INSTANT and window["calls"] == 100 * (busy.asked + 1)
    assert window["joules_per_call"] == pytest.approx(window["power_w"] * 0.01e-3)


def test_a_settled_window_takes_the_first_change_not_the_first_read(fake_nvml):
    fake_nvml(instant=lambda n: 200_000 if n <= 3 else 410_000)  # reads 2 and 3 stand still, then a refresh
    busy = Busy(calls_per_chunk=10, ms_per_call=1.0)
    window = power_window(busy, open_telemetry("bus"), settle_s=0.0)
    assert busy.asked == 3 and window["power_w"] == pytest.approx(410.0)


def test_no_instant_power_or_no_new_reading_means_no_power_window(fake_nvml):
    fake_nvml()
    assert power_window(Busy(10, 1.0), open_telemetry("bus")) is None
    fake_nvml(instant=lambda n: 250_000)  # never changes
    assert power_window(Busy(10, 1.0), open_telemetry("bus"), settle_s=0.0, max_s=0.01) is None
