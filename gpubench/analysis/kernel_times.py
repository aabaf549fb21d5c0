"""A saved run read by its second clock: each point's samples taken from CUPTI's kernel times of the same timed calls
(`gpubench compare --clock kernel`), for runs timed with `--clock both`.

The events around a call time its kernels and whatever the launch path adds between them and the events: on an H200
3.1 µs a call under 20 µs, about the empty kernel's floor (docs/measuring/ab-and-clocks.md). Where that part moves
between two processes (a cold lab run read 0.3 µs a call slower than a warm one, docs/measuring/preheat.md), every
short point moves with it, whatever the code did. Compared by the kernels' own times, only the kernels count. Both
runs must have been timed with both clocks: a point without kernel times is refused, in one line.
"""

from __future__ import annotations

from dataclasses import replace

from gpubench.analysis.compare import point_label
from gpubench.core.errors import GpubenchError
from gpubench.results import Run, Status


def by_kernel_clock(run: Run, name: str) -> Run:
    """`run` with each measured point's samples replaced by its kernel times (its per-process counts kept where they
    still add up, else dropped); GpubenchError naming the first measured point that has none."""
    missing = [p for p in run.points if p.status == Status.OK and p.samples_ms and not p.details.kernel_ms]
    if missing:
        first = missing[0]
        raise GpubenchError(f"{name}: {len(missing)} measured point(s) have no kernel times (the first: "
                            f"{point_label(first)}); compare --clock kernel reads runs timed with --clock both: compare "
                            f"by the events (--clock events), or time both runs with both clocks")
    points = []
    for p in run.points:
        kernel = p.details.kernel_ms
        if p.status == Status.OK and kernel:
            processes = p.processes if sum(p.processes) == len(kernel) else ()
            p = replace(p, samples_ms=tuple(kernel), processes=processes)
        points.append(p)
    return replace(run, points=points)
