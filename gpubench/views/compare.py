"""The comparison's views: a gpubench.analysis.compare.Report as rich tables, Markdown for a pull request, or JSON; and
two GPU models side by side (--across)."""

from __future__ import annotations

import json
import math

from gpubench.measure.kernel_clock import CompareClock
from gpubench.analysis.compare import Change, Report, Verdict, point_label
from gpubench.analysis.shift import SHORT_MS, shared_shift
from gpubench.results import neighbours
from gpubench.views.profile import deltas_table
from gpubench.views.tables import Cell, Table, escape, plural, to_markdown, to_rich

VERDICT_STYLE = {Verdict.SLOWER: "fail", Verdict.FASTER: "best", Verdict.INCONCLUSIVE: "noisy", Verdict.SAME: ""}
COUNTED = (Verdict.SLOWER, Verdict.FASTER, Verdict.SAME, Verdict.INCONCLUSIVE)  # the order counts are told in


def _pct(r: float) -> str:
    return "∞" if math.isinf(r) else f"{(r - 1) * 100:+.1f}%"


def _interval(c: Change) -> str:
    if math.isinf(c.high):
        return "too few samples"
    return f"{_pct(c.low)} … {_pct(c.high)}"


def changes_table(report: Report, include_same: bool = True) -> Table:
    table = Table("changes (new vs base time; interval family-wise at "
                  f"{1 - report.alpha:.0%} over {plural(len(report.changes), 'point')})",
                  ["verdict", "point", "base ms", "new ms", "change", "interval"], left=2)
    for c in report.changes:
        if c.verdict == Verdict.SAME and not include_same:
            continue
        label = c.label + (" (source changed)" if report.source_changed(c.new) else "")
        if c.engine_change:
            label += f" (engine {c.engine_change[0]} → {c.engine_change[1]})"
        if c.clock_change and c.verdict != Verdict.SAME:
            label += f" (SM clock {c.clock_change[0]:,.0f} → {c.clock_change[1]:,.0f} MHz)"
        if c.base.modes or c.new.modes:
            label += " (two modes: a mode flip)" if c.mode_flip else " (two modes)"
        table.rows.append([Cell(c.verdict, VERDICT_STYLE[c.verdict]), Cell(label), Cell(f"{c.base.median_ms:.4g}"),
                           Cell(f"{c.new.median_ms:.4g}"), Cell(_pct(c.ratio)), Cell(_interval(c))])
    return table


def geomean_table(report: Report) -> Table:
    table = Table("geometric mean of new/base per variant", ["variant", "change", "points"], left=1)
    counts: dict[str, int] = {}
    for c in report.changes:
        counts[f"{c.new.op} {c.new.variant}"] = counts.get(f"{c.new.op} {c.new.variant}", 0) + 1
    for name, g in report.geomeans().items():
        table.rows.append([Cell(name), Cell(_pct(g)), Cell(str(counts[name]))])
    return table


def _two_modes(c: Change) -> str:
    """Which run's samples sit in two modes, and where: "base: two modes: 45.54 and 53.7 µs (38%/62%)"."""
    sides = [f"{name}: {p.modes.describe()}" for name, p in (("base", c.base), ("new", c.new)) if p.modes]
    return "; ".join(sides)


def mode_notes(report: Report) -> list[str]:
    """Why a point with two modes got its verdict: inconclusive where the runs share a mode (a flip of the modes'
    shares can move its median that far), standing where they share none."""
    lines = []
    for c in report.changes:
        if c.mode_flip:
            was = Verdict.SLOWER if c.ratio > 1 else Verdict.FASTER
            lines.append(f"inconclusive, not {was}: {c.label}: {_two_modes(c)}; the runs share a time within "
                         f"{c.threshold:.0%}, so the medians differ by how many samples each mode held, which "
                         "another run of the same code can change")
        elif c.verdict in (Verdict.SLOWER, Verdict.FASTER) and (c.base.modes or c.new.modes):
            lines.append(f"{c.verdict} with two modes: {c.label}: {_two_modes(c)}; the runs share no mode, so "
                         "the change is more than the modes' shares")
    return lines


def notes(report: Report) -> list[str]:
    lines = mode_notes(report)
    few = report.too_few
    if few:
        fewest = min(min(len(c.base.samples_ms), len(c.new.samples_ms)) for c in few)
        needed = report.samples_needed
        lines.append(f"{plural(len(few), 'point')} had too few samples to decide: among "
                     f"{plural(len(report.changes), 'point')} a verdict needs at least {needed} a side, these have as "
                     f"few as {fewest} (and noisy times need more); rerun both with --decide {report.threshold:g}: "
                     f"each point then samples on until a verdict at {report.threshold:.0%} is in reach, for up to "
                     "--max-time seconds")
    for c in report.source_changes:
        where = c.new_source if c.new_source == c.base_source else f"{c.base_source} → {c.new_source}"
        lines.append(f"source changed: {c.op} {c.name} ({where}): sha256 {c.base_sha[:12]} → {c.new_sha[:12]}")
    for name, a, b in report.env_diffs:
        lines.append(f"environment differs: {name}: {a} → {b}")
    between = sum(c.between for c in report.changes)
    if between:
        lines.append(f"{between} of {plural(len(report.changes), 'interval')} from the spread between worker "
                     "processes (--processes: a bootstrap over processes, then samples)")
    moved = report.floor_moved
    if moved is not None:
        a, b = report.floors_ms
        lines.append(f"the empty-kernel floor moved: {a * 1000:.3f} → {b * 1000:.3f} µs ({_pct(moved)}): kernels of a "
                     "few microseconds move with the process as well as with the code")
    company = neighbours.compared(*report.gpu_neighbours)
    if company:
        lines.append(company)
    launched = report.launch_moved
    if launched is not None:
        a, b = report.launch_floors_us
        lines.append(f"the runs' timing processes launch differently: an empty launch {a:.3f} → {b:.3f} µs "
                     f"({_pct(launched)}); short calls carry that difference (docs/measuring/processes.md)")
    shift = shared_shift(report.changes)
    if shift is not None:
        lines.append(f"{shift.moved} of the {shift.short} calls under {SHORT_MS * 1000:g} µs ran {shift.direction}, "
                     f"by a median {shift.per_call_us:+.2f} µs a call ({shift.share:+.1%}): a time the run's short "
                     "calls share, as the process that timed them adds, more than a change of each kernel "
                     "(docs/measuring/preheat.md; gpubench stability measures it between processes)")
    for c in report.changes:
        if c.verdict == Verdict.SLOWER and c.clock_change and c.clock_change[1] < c.clock_change[0]:
            lines.append(f"slower with the SM clock down: {c.label} ({c.clock_change[0]:,.0f} → "
                         f"{c.clock_change[1]:,.0f} MHz): the GPU's clock may explain it, not the code")
    if report.only_base:
        lines.append(f"{len(report.only_base)} point(s) of the base are missing from the new run")
    for p in report.only_base:
        lines.append(f"only in base: {point_label(p)}")
    for p in report.only_new:
        lines.append(f"only in new: {point_label(p)}")
    for b, n in report.not_measured:
        broken = "BROKEN, " if (b, n) in report.broken else ""
        lines.append(f"{broken}not compared ({b.status} → {n.status}): {point_label(n)}"
                     + (f": {n.reason}" if broken and n.reason else ""))
    return lines


def _counts(report: Report) -> str:
    return ", ".join(f"{report.count(v)} {v}" for v in COUNTED) + _clock(report)


def _clock(report: Report) -> str:
    """What the samples were, where not the events': said beside the counts."""
    return "; by the kernels' own times (CUPTI)" if report.clock == CompareClock.KERNEL else ""


def _thresholds(report: Report) -> str:
    """The threshold, or each duration class's where it has its own (compare --thresholds)."""
    if not report.by_duration:
        return f"threshold {report.threshold:.0%}"
    own = ", ".join(f"{d} {t:.1%}" for d, t in report.by_duration.items())
    return f"thresholds {own}, else {report.threshold:.0%}"


def print_rich(report: Report, console, base_name: str, new_name: str) -> None:
    style = "bold red" if report.count(Verdict.SLOWER) or report.broken else "bold green"
    console.print(f"[bold]{escape(base_name)}[/] → [bold]{escape(new_name)}[/]: {escape(_thresholds(report))}; "
                  f"{_counts(report)}")
    console.print(to_rich(changes_table(report)))
    console.print(to_rich(geomean_table(report)))
    deltas = deltas_table(report)
    if deltas:
        console.print(to_rich(deltas))
    for line in notes(report):
        console.print(f"[yellow]{escape(line)}[/]")
    console.print(f"[{style}]{escape(report.outcome)}[/]")


def to_markdown_report(report: Report, base_name: str, new_name: str) -> str:
    mark = "❌" if report.count(Verdict.SLOWER) or report.broken else "✅"
    out = [f"### gpubench compare: {mark} {report.outcome}", "",
           f"`{base_name}` → `{new_name}` · {_thresholds(report)} · {_counts(report)}", ""]
    if any(c.verdict != Verdict.SAME for c in report.changes):
        out.append(to_markdown(changes_table(report, include_same=False)))
    out.append(to_markdown(geomean_table(report)))
    deltas = deltas_table(report)
    if deltas:
        out.append(to_markdown(deltas))
    extra = notes(report)
    if extra:
        out += ["<details><summary>notes</summary>", "", *[f"- {line}" for line in extra], "", "</details>", ""]
    return "\n".join(out)


def _modes_record(p) -> dict | None:
    m = p.modes
    return None if m is None else {"fast_ms": m.fast_ms, "slow_ms": m.slow_ms, "fast_share": m.fast_share,
                                   "separation": m.separation}


def to_json_report(report: Report, exit_code: int) -> str:
    def point(c: Change) -> dict:
        return {"op": c.new.op, "variant": c.new.variant, "config": c.new.config, "problem": c.new.problem.record(),
                "tf32": c.new.tf32, "dtype": str(c.new.dtype), "layout": str(c.new.problem.layout), "base_ms": c.base.median_ms, "new_ms": c.new.median_ms, "ratio": c.ratio,
                "low": c.low, "high": c.high if math.isfinite(c.high) else None, "verdict": c.verdict,
                "sm_mhz": list(c.clock_change) if c.clock_change else None, "mode_flip": c.mode_flip,
                "between_processes": c.between, "threshold": c.threshold,
                "modes": {side: _modes_record(p) for side, p in (("base", c.base), ("new", c.new))}}

    return json.dumps({
        "outcome": report.outcome, "exit_code": exit_code, "threshold": report.threshold, "alpha": report.alpha,
        "thresholds_by_duration": {str(d): t for d, t in report.by_duration.items()},
        "clock": str(report.clock), "counts": {v: report.count(v) for v in COUNTED},
        "broken": [{"op": n.op, "variant": n.variant, "config": n.config, "problem": n.problem.record(), "status": n.status,
                    "reason": n.reason} for _, n in report.broken],
        "geomean": report.geomeans(), "changes": [point(c) for c in report.changes], "notes": notes(report),
        "source_changes": [c.__dict__ for c in report.source_changes],
    }, indent=1)


def across_tables(report: Report, base_device: str, new_device: str) -> list[Table]:
    """Two GPU models side by side: per point, each one's median and the ratio; per variant, the geometric mean. A
    point timed at two paces (one GPU rested and under sustained load) says so."""
    points = Table(f"{new_device} against {base_device}: time ratio per point (below 1: {new_device} is faster)",
                   ["point", f"{base_device} ms", f"{new_device} ms", "ratio", "speed-up"], left=1)
    for c in sorted(report.changes, key=lambda c: c.label):
        paces = f" ({c.base.pace} → {c.new.pace})" if c.base.pace != c.new.pace else ""
        points.rows.append([Cell(c.label + paces), Cell(f"{c.base.median_ms:.4g}"), Cell(f"{c.new.median_ms:.4g}"),
                            Cell(f"{c.ratio:.3f}"), Cell(f"{1 / c.ratio:.2f}×")])
    geo = Table("geometric mean per variant", ["variant", "ratio", "speed-up", "points"], left=1)
    counts: dict[str, int] = {}
    for c in report.changes:
        counts[f"{c.new.op} {c.new.variant}"] = counts.get(f"{c.new.op} {c.new.variant}", 0) + 1
    for name, g in report.geomeans().items():
        geo.rows.append([Cell(name), Cell(f"{g:.3f}"), Cell(f"{1 / g:.2f}×"), Cell(str(counts[name]))])
    return [points, geo]
