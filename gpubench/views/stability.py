"""The A/A test's views: a stability run's per-class summary and its points (gpubench/analysis/stability.py's
report), as tables that gpubench/views/tables.py writes as rich or Markdown."""

from __future__ import annotations

import math
import statistics

from gpubench.analysis.stability import StabilityReport
from gpubench.measure.kernel_clock import CompareClock
from gpubench.views.tables import Cell, Table


def _pct(x: float) -> str:
    return "∞" if math.isinf(x) else f"{100 * x:.1f}%"


def _rate(n: int, of: int) -> str:
    return f"{n}/{of} ({100 * n / of:.1f}%)" if of else "-"


def _by(report: StabilityReport) -> str:
    return ", by the kernels' own times (CUPTI)" if report.clock == CompareClock.KERNEL else ""


def classes_table(report: StabilityReport) -> Table:
    """Per duration class: how often identical code got a verdict, the between-run spread, what could be decided."""
    table = Table(f"A/A: {report.runs} runs of {report.suite}, {report.pairs} pairs compared at "
                  f"{report.threshold:.0%} (alpha {report.alpha:g}){_by(report)}",
                  ["class", "points", "false verdicts", "inconclusive", "run-to-run SD", "largest A/A change",
                   "decided at 95% power", "suggested threshold"], left=1,
                  caption="false verdicts: slower or faster between identical code, over every point of every pair; "
                          "run-to-run SD: of the log run medians, pooled over the class; decided at 95% power: the "
                          "smallest slowdown a comparison at the threshold calls slower in 95% of pairs; suggested "
                          "threshold: the larger of the family-wise normal bound and the largest A/A change, rounded "
                          "up to 0.5% (gpubench/measure/stability.py)")
    for c in report.classes:
        table.rows.append([
            Cell(str(c.duration)), Cell(str(len(c.points))),
            Cell(_rate(c.false_verdicts, c.comparisons), "fail" if c.false_verdicts else ""),
            Cell(f"{100 * c.inconclusive_rate:.1f}%"), Cell(_pct(c.sd)), Cell(_pct(c.largest)), Cell(_pct(c.decided)),
            Cell(_pct(c.suggested)),
        ])
    return table


def points_table(report: StabilityReport) -> Table:
    """Every point, the widest run-to-run spread first."""
    table = Table(f"A/A per point (widest spread first){_by(report)}",
                  ["point", "class", "median ms", "largest A/A change", "run-to-run SD", "false verdicts",
                   "inconclusive", "decided at 95% power"], left=1)
    for p in sorted(report.points, key=lambda p: -p.largest):
        table.rows.append([
            Cell(p.label), Cell(str(p.duration)), Cell(f"{statistics.median(p.medians_ms):.4g}"),
            Cell(_pct(p.largest)), Cell(_pct(p.sd)),
            Cell(f"{p.false_verdicts}/{p.pairs}", "fail" if p.false_verdicts else ""),
            Cell(f"{p.inconclusive}/{p.pairs}", "noisy" if p.inconclusive else ""),
            Cell(_pct(p.decided(report.threshold))),
        ])
    return table


def tables(report: StabilityReport) -> list[Table]:
    return [classes_table(report), points_table(report)]


def pairs_line(report: StabilityReport, path) -> str:
    """How many pairs of identical runs a gate between them would have failed, and what to do where any would."""
    each = (f"{report.processes} processes a run" if report.processes > 1 else "one process a run") + (
        ", by the kernels' own times" if report.clock == CompareClock.KERNEL else "")
    at = f"at {report.threshold:.0%}"
    if report.pairs == 1:
        head = f"the one pair of runs ({each}) had {'a' if report.pairs_with_false else 'no'} false verdict {at}"
        if not report.pairs_with_false:
            return head
    elif not report.pairs_with_false:
        return f"none of the {report.pairs} pairs of runs ({each}) had a false verdict {at}"
    else:
        head = f"{report.pairs_with_false} of the {report.pairs} pairs of runs ({each}) had a false verdict {at}"
    if report.processes == 1:
        return (f"{head}: between processes, measure with --processes 2 (its intervals count the spread between "
                f"them), or judge with gpubench compare BASE NEW --thresholds {path}")
    return f"{head}: judge with gpubench compare BASE NEW --thresholds {path}"
