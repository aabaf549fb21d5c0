"""One point from the same point measured several times over: in K worker processes of one run (`--processes K`,
gpubench/execution/processes.py), or in R runs of an A/A test (`gpubench stability`). Every sample is kept, in
order, with how many each process took (Point.processes), so that a comparison can tell the processes apart.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from gpubench.results.model import Point, Status

_SEVERITY = (Status.ERROR, Status.TIMEOUT, Status.FAIL, Status.SKIPPED)  # which process's outcome a point keeps


def _telemetry(points: list[Point]) -> dict | None:
    """The processes' telemetry as one point's: medians of the readings, the fewest MHz, throttled and discarded
    samples summed, every reason named once."""
    readings = [p.telemetry for p in points if p.telemetry]
    if not readings:
        return None
    out: dict = {}
    for key in dict.fromkeys(k for t in readings for k in t):
        values = [t[key] for t in readings if t.get(key) is not None]
        if not values:
            out[key] = None
        elif key in ("throttled", "discarded"):
            out[key] = sum(values)
        elif key == "sm_mhz_min":
            out[key] = min(values)
        elif all(isinstance(v, list) for v in values):
            out[key] = list(dict.fromkeys(x for v in values for x in v))
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = statistics.median(values)
        else:
            out[key] = values[0]
    return out


def pooled(points: list[Point], of: str = "process") -> Point:
    """One point from the same point measured in several processes (or runs: `of` names them in reasons), in
    order: every sample kept, with how many each process took (Point.processes: a point that was itself measured in
    several gives each of its own); the first's details, with every process's kernel times where each has them. A
    point must pass in each: one that failed, erred, timed out or was skipped in any is that outcome (the worst), its
    reason saying where."""
    if len(points) == 1:
        return points[0]
    bad = [p for p in points if p.status != Status.OK]
    if bad:
        worst = min(bad, key=lambda p: _SEVERITY.index(p.status))
        where = f"in {of} {points.index(worst) + 1} of {len(points)}"
        return replace(worst, reason=f"{where}: {worst.reason}" if worst.reason else where)
    first = points[0]
    details = first.details
    if all(p.details.kernel_ms for p in points):  # the second clock's times, process after process as the samples
        details = replace(details, kernel_ms=tuple(k for p in points for k in p.details.kernel_ms))
    return replace(first, rel_err=max(p.rel_err for p in points), details=details,
                   samples_ms=tuple(s for p in points for s in p.samples_ms), telemetry=_telemetry(points),
                   processes=tuple(n for p in points for n in (p.processes or (len(p.samples_ms),))))
