"""How the run's tables show a point whose samples sit in two modes (gpubench/measure/modes.py): a mark beside its time,
as `~` marks a wide spread, and the caption's lines that name each such point with its two centres and shares."""

from __future__ import annotations

from gpubench.analysis.compare import point_label
from gpubench.measure.modes import MIN_GAP
from gpubench.results import Point, Status
from gpubench.views.tables import marked_caption

MARK = "‡"  # beside the time of a point with two modes (it takes the place of "~": two modes explain the spread)


def two_mode_points(points) -> list[Point]:
    return [p for p in points if p.status == Status.OK and p.modes is not None]


def caption(points) -> str:
    """What the mark means, and each marked point's two modes (the first LISTED of them); "" when none has two."""
    return marked_caption(
        MARK, f"marks a point whose samples sit in two modes at least {MIN_GAP:.0%} apart: its median depends on "
        "how many samples each mode held (each line says where it lies: at a mode, or between them), so it and every "
        "ratio from it can move by up to the gap in another run",
        [f"{point_label(p)}: {p.modes.describe(p.median_ms)}" for p in two_mode_points(points)],
        "the CSV view gives every point's modes")
