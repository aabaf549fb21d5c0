"""GPU telemetry through NVML (the nvidia-ml-py package): clocks, throttle reasons, power and energy.

The worker reads the device's state around the timed calls: the SM and memory clocks, the clock-event
("throttle") reasons and the board's instant power after each sample. Energy per call (and GFLOPS per watt) is
power times time per call, from the first of these that the GPU allows:

* calls long enough to be timed one at a time (at least FOLD_MS) take it from the instant power read between
  their own timed calls, so they need no window of their own;
* shorter calls run back to back in a window that ends at the first refresh of the instant power after SETTLE_S,
  taken between the point's timed samples when the next refresh is LEAD_S ahead (the refresh's period and phase
  are learnt from every poll: `Refreshes`), else after them;
* where NVML has no instant power, the energy counter over a window of at least ENERGY_WINDOW_S that it has
  visibly moved across.

On an H100 both the instant power and the energy counter change about every 100 ms
(`git show 20862c3:tools/gpu/nvml_probe.py`),
and a reading describes only the last part of each period (Yang et al., "Accurate
and Convenient Energy Measurements for GPUs", SC'24, found 25 ms of each 100 on A100 and H100). Measured on an H100
(docs/evidence/settle-probe-h100.txt): SGEMMs started L ms before a refresh move its
reading 25% of the way from idle to their steady power at L = 10, 80% at 25, 91-95% at 35-40 and all of it from
50 on. So a reading describes our calls only if they ran for SETTLE_S = 50 ms before it: the first change in a
point's timed loop may describe what ran before the loop (it is dropped), and a window's reading is taken only
once the window has run SETTLE_S. This bounds the cost of energy: about a refresh period per point whose calls are
too short to carry their own.

A sample taken while the GPU was power- or thermally-limited, or below the clock it should run at, is flagged;
`--discard-throttled` drops and retakes such samples.

Where NVML is missing (the CPU backend, a machine without nvidia-ml-py) :class:`NoTelemetry` stands in and
every reading is None: nothing downstream needs telemetry to work.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum

# NVML clock-event reasons that mean the clock was held down by power or heat (nvml.h
# nvmlClocksEventReason*: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40,
# HwPowerBrakeSlowdown 0x80). Idle (0x1) and the application/locked clock setting (0x2) are not throttling.
THROTTLE_REASONS = {0x4: "power cap", 0x8: "hw slowdown", 0x20: "thermal", 0x40: "hw thermal", 0x80: "power brake"}
THROTTLE_MASK = sum(THROTTLE_REASONS)
BELOW_EXPECTED = 0.97  # a sample whose SM clock is under 97% of the expected clock is flagged
LOCKED_IDLE = 0.4  # an idle SM clock under this share of the maximum means the clocks are not locked
ENERGY_WINDOW_S = 0.05  # shortest window for energy per call; longer while the counter has not moved
INSTANT_POWER = 186  # NVML_FI_DEV_POWER_INSTANT (nvml.h): the power now (nvmlDeviceGetPowerUsage averages 1 s on Hopper)
FRESH = 1  # new instant-power values a timed loop must see (after the first, which may predate it) to carry energy
FOLD_MS = 2.0  # calls this long take their energy from the readings between their own timed calls
SETTLE_S = 0.05  # a window's reading counts once the window has run this long (the H100's reading: its last ~50 ms)
POWER_WINDOW_MAX_S = 0.5  # a window that sees no refresh after SETTLE_S by then falls back to the counter
TIMED_SPAN_S = 0.3  # a loop of single calls this long usually sees a fresh reading after the one it drops
PIN_S = 0.004  # a change seen within this long of the poll before it pins a refresh (an energy window polls each ms)
PERIODS = 9  # the refresh period is the median of the last this many measured
LEAD_S = (SETTLE_S + 0.006, SETTLE_S + 0.018)  # an aligned window starts when the next refresh is this far ahead:
# the settle time, the pin's lateness and the poll after the refresh, and a band that a timing loop polling every
# few ms will not step over


class EnergySource(StrEnum):
    """What a point's energy per call was read from (saved with it as `energy_from`)."""

    TIMED = "timed calls"  # instant power read between the point's own timed calls
    INSTANT = "instant power"  # instant power over a window of calls back to back
    COUNTER = "energy counter"  # the energy counter over such a window


@dataclass(frozen=True)
class Sample:
    sm_mhz: int | None
    mem_mhz: int | None
    power_w: float | None
    reasons: int  # clock-event reason bits
    instant_mw: int | None = None  # the board's instant power, where NVML reports it

    def throttled(self, expected_mhz: int | None) -> bool:
        if self.reasons & THROTTLE_MASK:
            return True
        return bool(expected_mhz and self.sm_mhz and self.sm_mhz < BELOW_EXPECTED * expected_mhz)


def reason_names(bits: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if bits & bit]


class FreshReadings:
    """The new values of a reading the device refreshes on its own schedule (instant power), seen by polling it:
    the first value polled is where things stood, the first change may cover time before the work of interest,
    and each later change is a reading taken during it (`values`)."""

    def __init__(self):
        self.last: int | None = None
        self.changes = 0
        self.values: list[int] = []

    def see(self, value: int | None) -> None:
        if value is None or value == self.last:
            return
        if self.last is not None:
            self.changes += 1
            if self.changes > 1:
                self.values.append(value)
        self.last = value


class Refreshes:
    """When the device refreshes its instant power, learnt from every poll of it: a change seen within PIN_S of the
    poll before it pins a refresh to that moment; the time between two pinned refreshes with polls no further apart
    than PIN_S all the way is one period (the value changes at every refresh), and so is a longer stretch divided by
    the whole number of periods it spans once one is known. `until_next` predicts the next refresh from the last
    pinned one. A prediction only says when to start an energy window: the window's own rule (power_window) still
    decides whether the reading it ends on describes its calls."""

    def __init__(self):
        self.value: int | None = None
        self.polled: float | None = None  # when the last poll was made
        self.pinned: float | None = None  # when the last pinned refresh was seen
        self.unbroken = False  # every poll since that refresh came within PIN_S of the one before
        self.periods: deque[float] = deque(maxlen=PERIODS)

    @property
    def period(self) -> float | None:
        return statistics.median(self.periods) if self.periods else None

    def see(self, value: int | None, now: float) -> None:
        if value is None:
            return
        gap = now - self.polled if self.polled is not None else math.inf
        if gap > PIN_S:
            self.unbroken = False
        if self.value is not None and value != self.value and gap <= PIN_S:
            if self.pinned is not None:
                self._learn(now - self.pinned)
            self.pinned, self.unbroken = now, True
        self.value, self.polled = value, now

    def _learn(self, interval: float) -> None:
        if self.unbroken:
            self.periods.append(interval)
            return
        period = self.period
        if period:
            whole = round(interval / period)
            if whole >= 1 and abs(interval / whole - period) <= 0.05 * period:
                self.periods.append(interval / whole)

    def until_next(self, now: float) -> float | None:
        """Seconds to the next refresh, or None until a refresh is pinned and the period known."""
        period = self.period
        if period is None or self.pinned is None:
            return None
        return period - (now - self.pinned) % period


class NoTelemetry:
    """What the CPU backend (or a GPU without NVML) reports: nothing."""

    available = False
    expected_mhz = None
    has_instant = False
    refreshes = Refreshes()  # never fed: nothing to align to

    def sample(self) -> Sample | None:
        return None

    def instant_mw(self) -> int | None:
        return None

    def energy_mj(self) -> int | None:
        return None

    def describe(self) -> dict:
        return {}


class Nvml:
    """One device's NVML handle, found by PCI bus id (the one CUDA runs on, whatever CUDA_VISIBLE_DEVICES says)."""

    available = True

    def __init__(self, pci_bus_id: str):
        import pynvml

        self.nv = pynvml
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        self.max_sm_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
        # Read at rest, before any work of ours: an unlocked GPU idles far below its boost clock (an H100: 345
        # of 1980 MHz). One still high is either locked (nvidia-smi -lgc) or was busy until a moment ago: NVML
        # has no call that tells these apart, so that case is recorded as unknown (None), not guessed.
        self.idle_sm_mhz = pynvml.nvmlDeviceGetClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
        self.locked = None if self.idle_sm_mhz >= LOCKED_IDLE * self.max_sm_mhz else False
        self.expected_mhz = self.max_sm_mhz if self.idle_sm_mhz >= BELOW_EXPECTED * self.max_sm_mhz or \
            self.locked is False else self.idle_sm_mhz
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
            self.has_energy = True
        except pynvml.NVMLError:
            self.has_energy = False
        self.has_instant = self._instant_mw() is not None
        self.refreshes = Refreshes()

    def instant_mw(self) -> int | None:
        """The board's instant power (mW), or None where this GPU or driver does not report it. Every read teaches
        `refreshes` when the value changes."""
        if not self.has_instant:
            return None
        value = self._instant_mw()
        self.refreshes.see(value, time.perf_counter())
        return value

    def _instant_mw(self) -> int | None:
        try:
            value = self.nv.nvmlDeviceGetFieldValues(self.handle, [INSTANT_POWER])[0]
        except (self.nv.NVMLError, AttributeError):  # an older nvidia-ml-py or driver
            return None
        return int(value.value.uiVal) if value.nvmlReturn == 0 and value.value.uiVal > 0 else None

    def sample(self) -> Sample:
        nv, h = self.nv, self.handle
        try:
            power = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
        except nv.NVMLError:
            power = None
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons  # the older name, in older nvidia-ml-py
        return Sample(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                      power, int(reasons(h)), self.instant_mw())

    def energy_mj(self) -> int | None:
        return int(self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle)) if self.has_energy else None

    def describe(self) -> dict:
        nv, h = self.nv, self.handle
        out = {"uuid": _text(nv.nvmlDeviceGetUUID(h)), "sm_clock_max_mhz": self.max_sm_mhz,
               "sm_clock_idle_mhz": self.idle_sm_mhz,
               "clocks_locked": self.locked, "expected_sm_mhz": self.expected_mhz, "energy_counter": self.has_energy,
               "instant_power": self.has_instant}
        try:
            out["power_limit_w"] = nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0
        except nv.NVMLError:
            pass
        return out


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def device_count() -> int | None:
    """How many NVIDIA GPUs NVML sees here (None without NVML)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:  # noqa: BLE001
        return None


def one_arch() -> str | None:
    """The architecture ("sm_90") every GPU NVML sees shares, or None (no NVML, no GPU, or several models): what
    a worker on any of them will report, so that its kernels can be compiled while it starts."""
    try:
        import pynvml

        pynvml.nvmlInit()
        found = {pynvml.nvmlDeviceGetCudaComputeCapability(pynvml.nvmlDeviceGetHandleByIndex(i))
                 for i in range(pynvml.nvmlDeviceGetCount())}
    except Exception:  # noqa: BLE001 - a guess: without it the kernels are compiled after the worker starts
        return None
    if len(found) != 1:
        return None
    major, minor = found.pop()
    return f"sm_{major}{minor}"


def open_telemetry(pci_bus_id: str | None):
    """NVML for this device, or NoTelemetry where it cannot be had (no nvidia-ml-py, no NVML, no device)."""
    if not pci_bus_id:
        return NoTelemetry()
    try:
        return Nvml(pci_bus_id)
    except Exception:  # noqa: BLE001 - telemetry is an extra: its absence is recorded, never fatal
        return NoTelemetry()


def energy_window(run_many, telemetry, min_s: float = ENERGY_WINDOW_S, max_s: float = 5.0) -> dict | None:
    """Joules per call of `run_many(n)` (n calls back to back, returning when they are done), from NVML's
    energy counter over a window of at least min_s that the counter has visibly moved across (it updates every
    few tens of milliseconds, so a short window can see no change at all)."""
    if not telemetry.available or telemetry.energy_mj() is None:
        return None
    start_mj, t0, calls, n = telemetry.energy_mj(), time.perf_counter(), 0, 1
    while True:
        run_many(n)
        calls += n
        elapsed = time.perf_counter() - t0
        spent = telemetry.energy_mj() - start_mj
        if (elapsed >= min_s and spent > 0) or elapsed >= max_s:
            break
        n = min(n * 2, 4096)
    if spent <= 0:
        return None
    return {"joules_per_call": spent / 1000.0 / calls, "window_s": elapsed, "calls": calls,
            "power_w": spent / 1000.0 / elapsed, "source": EnergySource.COUNTER}


def _mean_w(values: list[int]) -> float:
    return sum(values) / len(values) / 1000.0


def wants_window(batch: int, median_ms: float, reps: int) -> bool:
    """Whether a point's calls need an energy window of their own: calls timed in batches or shorter than FOLD_MS
    do, and so do longer ones whose loop of `reps` calls is too short to see a fresh reading (TIMED_SPAN_S)."""
    return batch != 1 or median_ms < FOLD_MS or median_ms * reps < TIMED_SPAN_S * 1e3


def aligned(refreshes: Refreshes, now: float) -> bool:
    """Whether an energy window started now would end at the next refresh, and not much later than it needs:
    the next refresh is LEAD_S ahead. False while the refreshes are not yet learnt."""
    ahead = refreshes.until_next(now)
    return ahead is not None and LEAD_S[0] <= ahead <= LEAD_S[1]


def timed_energy(fresh: FreshReadings, batch: int, median_ms: float, calls: int) -> dict | None:
    """Joules per call from the instant power read between a point's own timed calls, where those calls are long
    enough (FOLD_MS, timed one at a time: each flush and host gap is a small part of the time) and the loop saw
    FRESH new readings; else None."""
    if batch != 1 or median_ms < FOLD_MS or len(fresh.values) < FRESH:
        return None
    power = _mean_w(fresh.values)
    return {"joules_per_call": power * median_ms / 1000.0, "power_w": power, "calls": calls,
            "readings": len(fresh.values), "source": EnergySource.TIMED}


def power_window(busy, telemetry, settle_s: float = SETTLE_S, max_s: float = POWER_WINDOW_MAX_S,
                 clock=time.perf_counter) -> dict | None:
    """Joules per call while `busy` keeps the GPU on calls back to back: busy(go_on) runs them, asking go_on()
    between chunks, and returns (calls, GPU seconds they took). The window ends at the first new instant-power
    value seen after it has run settle_s; energy per call is that power times the time per call. None where no
    such value came within max_s (or NVML has no instant power)."""
    if not telemetry.has_instant:
        return None
    started = clock()
    state = {"last": None, "asked": 0.0, "power_mw": None}  # last value, when it was last asked, the reading

    def go_on() -> bool:
        value, now = telemetry.instant_mw(), clock() - started
        settled = state["asked"] >= settle_s  # the value changed after a poll made once the window had settled
        state["asked"] = now
        if value is not None and value != state["last"]:
            if settled and state["last"] is not None:
                state["power_mw"] = value
                return False
            state["last"] = value
        return now < max_s

    calls, seconds = busy(go_on)
    if state["power_mw"] is None or calls <= 0 or seconds <= 0:
        return None
    power = state["power_mw"] / 1000.0
    return {"joules_per_call": power * seconds / calls, "power_w": power, "calls": calls, "window_s": seconds,
            "readings": 1, "source": EnergySource.INSTANT}
