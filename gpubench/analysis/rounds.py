"""A/B over saved rounds: each kernel's ratio to a baseline, one results file a round (one process each).

Where `gpubench ab` alternates two calls inside one process, this reads rounds that ran as separate processes
(tools/gpu/gemm_ab.sh: the baseline and the kernels measured on the same problems in each round, each round its own
`gpubench run`). In each round every kernel point is paired with the baseline's point of the same problem and its
ratio taken, baseline median time / kernel median time (above 1: the kernel is faster). A pair counts only where
both points passed and ran clock-unclamped: no sample flagged by NVML as power- or thermally-capped, and their
median SM clocks equal (a capped point compares power limits, not kernels); `any_state` counts every measured
pair (a layer where one side is always the limiter's). The baseline may be several variants (a problem's
libraries): in each round it is the one with the lowest median of those that ran and passed there (`fastest_of`),
and each row keeps which one that was. Over the rounds each ratio gets its median and the sign
test's interval for it (stats.median_interval): the spread from process to process, which is what a 0.5%
difference has to stand out of.

The screening rule (`screen`): each other kernel's mean over the problems of its median ratio (clean pairs), less
the reference kernel's over the same problems; those at or above it pass, at most `keep`, the best first.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from gpubench.measure.stats import MedianInterval, median_interval
from gpubench.results import Point, Run, Status


@dataclass(frozen=True)
class Row:
    """One kernel configuration on one problem against the baseline, over the rounds."""

    problem: str  # the shape: precision, layout, size ("bf16 nn 4096")
    kernel: str  # variant and configuration
    ratios: tuple[float | None, ...]  # per round, in the order given; None: not a clean pair in that round
    why_not: tuple[str, ...]  # per round: why the pair did not count ("" where it did)
    baseline_tflops: float | None  # the baseline's median TFLOP/s over its clean rounds
    baselines: tuple[str, ...] = ()  # per round, the baseline variant that stood there ("" where none was in it)

    @property
    def clean(self) -> list[float]:
        return [r for r in self.ratios if r is not None]

    def interval(self, level: float) -> MedianInterval | None:
        return median_interval(self.clean, level) if self.clean else None


def measured(p: Point) -> str:
    """Why this point cannot be paired in any power state ("" when it can): not ok, or no samples."""
    return "" if p.status == Status.OK and p.samples_ms else f"{p.variant} {p.status}"


def unclamped(p: Point) -> str:
    """Why this point cannot be paired ("" when it can): not ok, no telemetry, or capped samples."""
    if why := measured(p):
        return why
    t = p.telemetry or {}
    if "throttled" not in t or "sm_mhz" not in t:
        return f"{p.variant}: no clock telemetry"
    if t["throttled"]:
        return f"{p.variant} {t['sm_mhz']:.0f} MHz, {t['throttled']} capped"
    return ""


def pair(base: Point, ours: Point, any_state: bool = False) -> str:
    """Why the pair does not count ("" when it does)."""
    if any_state:
        return measured(base) or measured(ours)
    why = unclamped(base) or unclamped(ours)
    if not why and base.telemetry["sm_mhz"] != ours.telemetry["sm_mhz"]:
        why = f"clocks {base.telemetry['sm_mhz']:.0f} / {ours.telemetry['sm_mhz']:.0f} MHz"
    return why


def problem_of(p: Point) -> str:
    return problem_text(p.problem)


def problem_text(shape) -> str:
    """A problem as the rows name it: precision, layout, size ("bf16 nn 4096")."""
    return " ".join(str(x) for x in (getattr(shape, "dtype", ""), getattr(shape, "layout", ""), shape.label) if str(x))


def fastest_of(points: Iterable[Point]) -> Point | None:
    """Of one problem's baseline points in one round, the one with the lowest median among those measured (ok, with
    samples); where none was, the first (its status says why no pair counts), or None where there are none."""
    points = list(points)
    ok = [p for p in points if not measured(p)]
    return min(ok, key=lambda p: p.median_ms) if ok else (points[0] if points else None)


def rows(runs: list[Run], baseline: str | Collection[str], any_state: bool = False) -> list[Row]:
    """Every (problem, kernel) of the runs against the baseline's point of the same problem in the same run; a
    baseline of several variants stands, in each run and problem, by the fastest of them that passed."""
    names = {baseline} if isinstance(baseline, str) else set(baseline)
    keys: dict[tuple[str, str], None] = {}
    per_run = []
    for run in runs:
        libraries: dict[str, list[Point]] = {}
        for p in run.points:
            if p.variant in names:
                libraries.setdefault(problem_of(p), []).append(p)
        base = {problem: fastest_of(points) for problem, points in libraries.items()}
        ours = {(problem_of(p), f"{p.variant} {p.config}"): p for p in run.points if p.variant not in names}
        per_run.append((base, ours))
        for key in ours:
            keys.setdefault(key)
    out = []
    for problem, kernel in keys:
        ratios, why_not, base_tflops, stood = [], [], [], []
        for base, ours in per_run:
            b, o = base.get(problem), ours.get((problem, kernel))
            why = "not in this round" if b is None or o is None else pair(b, o, any_state)
            ratios.append(None if why else b.median_ms / o.median_ms)
            why_not.append(why)
            stood.append("" if b is None else b.variant)
            if b is not None and not unclamped(b):
                base_tflops.append(b.gflops / 1e3)
        out.append(Row(problem, kernel, tuple(ratios), tuple(why_not),
                       statistics.median(base_tflops) if base_tflops else None, tuple(stood)))
    return out


def verdict(m: MedianInterval | None, level: float) -> str:
    if m is None:
        return "no clean round"
    if m.level < level:
        return f"{m.n} clean rounds: too few for a {100 * level:.0f}% interval"
    if m.low >= 1:
        return "at or past 1.00"
    if m.high < 1:
        return f"below 1.00 by {100 * (1 - m.median):.1f}% (at most {100 * (1 - m.high):.1f}%)"
    return "within the interval of 1.00"


def fastest_layouts(table: list[Row]) -> dict[str, str]:
    """For each precision and size, the problem the baseline is fastest in (its median TFLOP/s over rounds)."""
    best: dict[str, tuple[float, str]] = {}
    for r in table:
        if r.baseline_tflops is None:
            continue
        parts = r.problem.split()  # precision, layout, size: grouped by precision and size
        group = " ".join(parts[:1] + parts[2:])
        if group not in best or r.baseline_tflops > best[group][0]:
            best[group] = (r.baseline_tflops, r.problem)
    return {problem: group for group, (_, problem) in best.items()}


def screen(table: list[Row], reference: str, keep: int) -> tuple[list[tuple[str, float, int]], list[str]]:
    """Each kernel's mean median ratio less the reference's, over the problems where both have a clean pair (kernel,
    difference, problems; best first), and the kernels that pass: at or above the reference, the `keep` best."""
    medians = {(r.problem, r.kernel): statistics.median(r.clean) for r in table if r.clean}
    ours = {p: m for (p, k), m in medians.items() if k == reference}
    scores = []
    for kernel in dict.fromkeys(r.kernel for r in table if r.kernel != reference):
        both = [p for (p, k) in medians if k == kernel and p in ours]
        if both:
            scores.append((kernel, statistics.fmean(medians[p, kernel] - ours[p] for p in both), len(both)))
    scores.sort(key=lambda s: -s[1])
    return scores, [k for k, diff, _ in scores if diff >= 0][:keep]
