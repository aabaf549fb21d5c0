"""Replicate runs: the same suite on every GPU of a node, and which GPU is slow.

Each point that every GPU measured is compared with the node's median for that point (the median of the GPUs'
medians); a GPU's deviation is the geometric mean of its ratios. A GPU whose deviation exceeds the threshold
is flagged, with its clocks and power from the run's telemetry where present, so that a job scheduler can use
`gpubench run ci --gpus all --replicate` as a health check (exit code 4: exit_codes.Exit.SLOW_GPU).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from gpubench.results import Run, Status

SLOW = 0.05  # a GPU 5% slower than the node's median, over the points every GPU measured, is flagged


@dataclass(frozen=True)
class Health:
    device: str
    points: int
    deviation: float  # geometric mean of this GPU's median / the node's median (1.02 = 2% slower)
    sm_mhz: float | None
    power_w: float | None
    slow: bool


def _median_of(readings: list[dict], key: str) -> float | None:
    values = [r[key] for r in readings if r.get(key)]
    return statistics.median(values) if values else None


def health(run: Run, threshold: float = SLOW) -> list[Health]:
    by_device: dict[str, dict] = {}
    for p in run.points:
        if p.status == Status.OK and p.device:
            by_device.setdefault(p.device, {})[p.key()] = p
    if len(by_device) < 2:
        return []
    common = set.intersection(*(set(points) for points in by_device.values()))
    node = {k: statistics.median(points[k].median_ms for points in by_device.values()) for k in common}
    out = []
    for device, points in by_device.items():
        ratios = [points[k].median_ms / node[k] for k in common]
        deviation = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else 1.0
        tele = [points[k].telemetry for k in common if points[k].telemetry]
        out.append(Health(device, len(ratios), deviation, _median_of(tele, "sm_mhz"), _median_of(tele, "power_w"),
                          deviation > 1 + threshold))
    return sorted(out, key=lambda h: -h.deviation)
