"""Whether a ratio between two points compares kernels or power states.

At tensor-core rates the power limiter decides clocks: of two points on one GPU, the one that draws more power a
cycle can run 5-10% slower in clock while doing the same work in fewer cycles (the 14² tensor-core conv: ours
clocked to 1,860 MHz, cuDNN's plan at 1,980; docs/kernels/tensor-core-conv.md). A speed ratio between them is then partly the limiter's.
`apart` tells such a pair from one measured in the same state, from what NVML recorded with each point: its median
SM clock and how many of its samples ran under a limiter (`throttled`), and puts the ratio per clock beside it.
The clock is NVML's reading sampled while the point ran, not a count of cycles, so the per-clock ratio is an
estimate, good to a percent or two; ncu's cycle counts are the measurement."""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.results import Point

CLOCKS_APART = 0.02  # median SM clocks this far apart (2%, ten 15 MHz steps at 1,980) are two power states


@dataclass(frozen=True)
class PowerStates:
    """The clocks (MHz) and limiter flags of a point and of the baseline it is compared with."""

    mhz: float
    base_mhz: float
    capped: bool  # some of the point's samples ran under a limiter (NVML's clock event reasons)
    base_capped: bool

    def per_clock(self, ratio: float) -> float:
        """A speed ratio (baseline time / point time) at equal clocks: the baseline's cycles over the point's."""
        return ratio * self.base_mhz / self.mhz

    def describe(self, ratio: float) -> str:
        """"0.98× at 1,860 MHz (capped) against 1,980 MHz: 1.04× per clock"."""
        def state(mhz: float, capped: bool) -> str:
            return f"{mhz:,.0f} MHz" + (" (capped)" if capped else "")
        return (f"{ratio:.2f}× at {state(self.mhz, self.capped)} against {state(self.base_mhz, self.base_capped)}: "
                f"{self.per_clock(ratio):.2f}× per clock")


def _state(p: Point) -> tuple[float, bool] | None:
    t = p.telemetry or {}
    mhz = t.get("sm_mhz")
    if not mhz:
        return None
    return float(mhz), bool(t.get("throttled"))


def apart(p: Point, base: Point) -> PowerStates | None:
    """The two points' power states where they differ (one capped and the other not, or their median clocks
    CLOCKS_APART or more apart); None where they match, or where either has no telemetry (a CPU run, no NVML)."""
    mine, theirs = _state(p), _state(base)
    if mine is None or theirs is None:
        return None
    states = PowerStates(mine[0], theirs[0], mine[1], theirs[1])
    if states.capped != states.base_capped or abs(states.mhz / states.base_mhz - 1) >= CLOCKS_APART:
        return states
    return None
