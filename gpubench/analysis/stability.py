"""A stability run (`gpubench stability`, an A/A test): a suite run R times in fresh processes, kept as one run,
and what its pairwise comparisons say.

**As a run.** A stability run is an ordinary results file, so every command that reads runs reads it: each point
holds the samples of all R runs one after another (gpubench/results/pooled.py), `Point.processes` counting each
run's (each process's, where a run measured its points in K processes: R·K counts, K per run), and its median and
every table are over all of them. `settings["stability"]` marks it and records the R runs (STABILITY's keys).
`gpubench show` adds the A/A tables below to its usual ones; `compare` takes it as a run whose points were measured
in R·K processes.

**What it says.** Each of the R runs is rebuilt from the file (its samples, its processes), every pair of runs is
compared as `gpubench compare` would compare them (its threshold, its alpha, its intervals), and any slower or
faster verdict between identical code is a false one. gpubench/measure/stability.py turns that, with the spread of
each point's R run medians, into the per-class figures.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path

from gpubench.analysis.compare import Verdict, compare, point_label
from gpubench.analysis.kernel_times import by_kernel_clock
from gpubench.core.errors import GpubenchError
from gpubench.measure.kernel_clock import CompareClock
from gpubench.measure.stability import ClassRuns, Duration, PointRuns, classes
from gpubench.results import Point, Run, RunStatus, Status, load, neighbours
from gpubench.results.pooled import pooled

KEY = "stability"  # the settings key that marks a stability run: {suite, runs, asked, threshold, alpha, wall_s}


def is_stability(run: Run) -> bool:
    return isinstance(run.settings.get(KEY), dict)


def assemble(runs: list[Run], *, suite: str, asked: int, threshold: float, alpha: float, command: list[str],
             status: RunStatus) -> Run:
    """The stability run of R finished runs of one suite: each point pooled over the runs (in run order)."""
    first = runs[0]
    keys = [p.key() for p in first.points]
    by_run = [{p.key(): p for p in r.points} for r in runs]
    points = [pooled([b[k] for b in by_run if k in b], of="run") for k in keys]
    settings = {**first.settings, KEY: {"suite": suite, "runs": len(runs), "asked": asked, "threshold": threshold,
                                        "alpha": alpha, "wall_s": [r.settings.get("wall_s") for r in runs],
                                        "created": [r.created for r in runs],
                                        "launch_floors_us": [r.settings.get("launch_floors_us") for r in runs]}}
    company = neighbours.merged([neighbours.of(r.settings) for r in runs])  # every run's, not the first's alone
    settings.pop(neighbours.KEY, None)
    if company is not None:
        settings[neighbours.KEY] = company.as_dict()
    incidents = [{**i, "where": f"run {n + 1}: {i.get('where', '')}"} for n, r in enumerate(runs) for i in r.incidents]
    return Run(backend=first.backend, environment=first.environment, settings=settings, command=command,
               points=points, status=status, variants=first.variants, incidents=incidents)


def _runs(run: Run) -> int:
    value = run.settings[KEY].get("runs")
    if type(value) is not int or value < 2:
        raise GpubenchError(f"a stability run records how many runs it holds (settings.{KEY}.runs, at least 2), "
                            f"got {value!r:.40}")
    return value


def split(run: Run) -> list[Run]:
    """The R runs a stability run holds, rebuilt: each point's samples, processes and kernel times (the second
    clock's, where the runs recorded them) of that run (points that did not pass in every run stay as they are in
    each, and are not compared)."""
    r = _runs(run)
    rebuilt: list[list[Point]] = [[] for _ in range(r)]
    for p in run.points:
        groups = p.process_samples
        if p.status != Status.OK or len(groups) % r:
            for points in rebuilt:
                points.append(p)
            continue
        size = len(groups) // r
        kernel = p.details.kernel_ms if len(p.details.kernel_ms) == len(p.samples_ms) else ()
        start = 0
        for i in range(r):
            mine = groups[i * size:(i + 1) * size]
            taken = sum(len(g) for g in mine)
            details = replace(p.details, kernel_ms=kernel[start:start + taken]) if kernel else p.details
            start += taken
            rebuilt[i].append(replace(p, samples_ms=tuple(s for g in mine for s in g), details=details,
                                      processes=tuple(len(g) for g in mine) if size > 1 else ()))
    return [Run(run.backend, run.environment, {}, points=points, status=RunStatus.COMPLETE, variants=run.variants)
            for points in rebuilt]


@dataclass(frozen=True)
class StabilityReport:
    suite: str
    runs: int
    threshold: float
    alpha: float
    points: list[PointRuns]
    classes: list[ClassRuns]
    clock: CompareClock = CompareClock.EVENTS  # which samples were compared: the events', or CUPTI's kernel times
    processes: int = 1  # worker processes a run measured each point in (--processes)
    pairs_with_false: int = 0  # pairs of runs with at least one false verdict: what a CI gate between them meets

    @property
    def pairs(self) -> int:
        return self.runs * (self.runs - 1) // 2


def has_kernel_times(run: Run) -> bool:
    """Whether every measured point of the run kept the second clock's time of each sample (timed --clock both)."""
    measured = [p for p in run.points if p.status == Status.OK and p.samples_ms]
    return bool(measured) and all(len(p.details.kernel_ms) == len(p.samples_ms) for p in measured)


def analyse(run: Run, threshold: float | None = None, alpha: float | None = None,
            clock: CompareClock = CompareClock.EVENTS) -> StabilityReport:
    """Every pair of the stability run's R runs compared (at the run's own threshold and alpha unless given), by
    the events or, for runs timed with both clocks, by CUPTI's kernel times (`clock`): where the two disagree, what
    moved between processes is the launch path, not the kernels."""
    if not is_stability(run):
        raise GpubenchError("not a stability run (it has no settings.stability): `gpubench stability SUITE` makes one")
    recorded = run.settings[KEY]
    threshold = threshold if threshold is not None else float(recorded.get("threshold", 0.05))
    alpha = alpha if alpha is not None else float(recorded.get("alpha", 0.05))
    runs = split(run)
    if clock == CompareClock.KERNEL:
        runs = [by_kernel_clock(r, f"run {i + 1} of the stability run") for i, r in enumerate(runs)]
    seen: dict[tuple, dict] = {}
    pairs_with_false = 0
    for a, b in combinations(runs, 2):
        changes = compare(a, b, threshold, alpha).changes
        pairs_with_false += any(c.verdict in (Verdict.SLOWER, Verdict.FASTER) for c in changes)
        for c in changes:
            s = seen.setdefault(c.base.key(), {"pairs": 0, "false": 0, "inconclusive": 0, "half": []})
            s["pairs"] += 1
            s["false"] += c.verdict in (Verdict.SLOWER, Verdict.FASTER)
            s["inconclusive"] += c.verdict == Verdict.INCONCLUSIVE
            s["half"].append((math.log(c.high) - math.log(c.low)) / 2 if 0 < c.low and math.isfinite(c.high)
                             else math.inf)
    points = []
    by_run = [{q.key(): q for q in r.points} for r in runs]
    for p in run.points:
        s = seen.get(p.key())
        if s is None:
            continue
        medians = tuple(statistics.median(b[p.key()].samples_ms) for b in by_run)
        points.append(PointRuns(point_label(p), medians, s["pairs"], s["false"], s["inconclusive"],
                                statistics.median(s["half"])))
    processes = max((len(p.processes) for p in runs[0].points if p.status == Status.OK), default=0) or 1
    return StabilityReport(str(recorded.get("suite", "")), len(runs), threshold, alpha, points,
                           classes(points, threshold, alpha), CompareClock(clock), processes, pairs_with_false)


def suggested_thresholds(run: Run | str | Path) -> dict[Duration, float]:
    """A stability run's (or its file's) suggested threshold of each duration class it measured: what `gpubench
    compare --thresholds` judges those classes' points by (GpubenchError, one line, for a run that is not one)."""
    return {c.duration: c.suggested for c in analyse(run if isinstance(run, Run) else load(run)).classes}
