"""How the run's summary shows a ratio taken between two power states (gpubench/analysis/power_state.py): a mark beside
the ratio, and the caption's lines that give each such ratio with both clocks and its value per clock."""

from __future__ import annotations

from gpubench.analysis import power_state
from gpubench.views.tables import marked_caption

MARK = "⚡"  # beside a speed ratio whose two points ran in different power states


def caption(marked: list[tuple[str, float, power_state.PowerStates]]) -> str:
    """What the mark means, and each marked ratio (label, ratio, states) with its clocks; "" when none is."""
    return marked_caption(
        MARK, "marks a ratio between points in different power states (one capped by the limiter and the other not, "
        f"or median SM clocks {power_state.CLOCKS_APART:.0%} or more apart): partly the limiter's, so each is given "
        "per clock too (NVML's sampled clocks: an estimate; ncu counts cycles)",
        [f"{label}: {states.describe(ratio)}" for label, ratio, states in marked],
        "the hardware table gives every point's clock")
