"""The profiles' views: per point, what limits it (gpubench/analysis/limiter.py) beside the counters it follows from;
and, for `compare`, how the counters moved for the points found slower.

Only points that have a profile (taken, or with the reason it is missing) appear; a run without any shows nothing
new, so a saved run from before profiles renders as it always did.
"""

from __future__ import annotations

from gpubench.analysis import limiter
from gpubench.analysis.compare import Report, Verdict, point_label
from gpubench.results import Point, Run
from gpubench.results.profile import Profile
from gpubench.views.tables import Cell, Table

SHOWN = (  # (column, metric key, format) of the limits table and the deltas
    ("SM %", "sm_pct", ".0f"), ("DRAM %", "dram_pct", ".0f"), ("L2 %", "l2_pct", ".0f"),
    ("tensor %", "tensor", ".0f"), ("occ %", "occupancy_pct", ".0f"), ("regs", "registers", ".0f"),
)
TOTALS = (("DRAM MB", "dram_bytes", 1e-6, ",.1f"), ("L2 MB", "l2_bytes", 1e-6, ",.1f"),
          ("instructions M", "instructions", 1e-6, ",.1f"))
IN_TABLE = 1  # of TOTALS, how many the limits table shows (all of them are in the results file and the deltas)


def value(profile: Profile, key: str) -> float | None:
    """A metric by the views' key: the table's short names, "tensor" (the busier tensor pipe), or a total."""
    if key == "tensor":
        return limiter.tensor_pct(profile)
    if key == "dram_bytes":
        return profile.dram_bytes
    if key in profile.metrics:
        return profile.metrics[key]
    return profile.totals.get(key)


def _cell(x: float | None, fmt: str, scale: float = 1.0) -> Cell:
    return Cell("" if x is None else format(x * scale, fmt))


def profiled(points: list[Point]) -> list[Point]:
    return [p for p in points if p.details.profile is not None]


def kernel_text(profile: Profile) -> str:
    if not profile.taken:
        return ""
    others = profile.launches - 1
    return (profile.kernel or "") + (f" (+{others} launch{'es' if others > 1 else ''})" if others > 0 else "")


def limits_table(run: Run) -> Table | None:
    """Per profiled point: what limits it, in words, the kernel that decided it, and the counters behind it."""
    points = profiled(run.points)
    if not points:
        return None
    table = Table("what limits each point (Nsight Compute, one timed call)",
                  ["point", "kernel", "what limits it", *(c for c, _, _ in SHOWN),
                   *(c for c, *_ in TOTALS[:IN_TABLE]), "stalls (cycles/instruction)"], left=3)
    for p in points:
        pr = p.details.profile
        v = limiter.verdict(pr)
        stalls = ", ".join(f"{limiter.stall_words(r).split(' (')[0]} {x:.1f}" for r, x in pr.stalls)
        table.rows.append([Cell(point_label(p)), Cell(kernel_text(pr)),
                           Cell(v.words, "skip" if v.limit == limiter.Limit.UNPROFILED else ""),
                           *(_cell(value(pr, k), f) for _, k, f in SHOWN),
                           *(_cell(value(pr, k), f, s) for _, k, s, f in TOTALS[:IN_TABLE]), Cell(stalls)])
    tools = sorted({p.details.profile.tool for p in points if p.details.profile.tool})
    table.caption = ("percentages of each unit's peak, of the call's longest kernel (occ: warps active, % of the "
                     "SM's maximum; regs: a thread's); DRAM bytes summed over the call's kernels"
                     + (f"; {', '.join(tools)}" if tools else ""))
    return table


def deltas_table(report: Report) -> Table | None:
    """For each point the comparison found slower, with a profile in both runs: each counter, base → new."""
    slower = [c for c in report.changes if c.verdict == Verdict.SLOWER and c.base.details.profile is not None
              and c.new.details.profile is not None and c.base.details.profile.taken and c.new.details.profile.taken]
    if not slower:
        return None
    table = Table("counters of the slower points (Nsight Compute: base → new)",
                  ["point", "metric", "base", "new", "change"], left=2)
    for c in slower:
        b, n = c.base.details.profile, c.new.details.profile
        rows = [("what limits it", limiter.verdict(b).words, limiter.verdict(n).words, "")]
        if b.kernel != n.kernel:
            rows.append(("kernel", b.kernel or "", n.kernel or "", ""))
        for name, key, fmt in SHOWN:
            rows.append(_delta(name, value(b, key), value(n, key), fmt))
        for name, key, scale, fmt in TOTALS:
            rows.append(_delta(name, value(b, key), value(n, key), fmt, scale))
        rows.append(("top stall", _top(b), _top(n), ""))
        for i, (metric, before, after, change) in enumerate(r for r in rows if r is not None):
            table.rows.append([Cell(c.label if i == 0 else ""), Cell(metric), Cell(before), Cell(after), Cell(change)])
    return table


def _top(profile: Profile) -> str:
    return f"{limiter.stall_words(profile.stalls[0][0])} {profile.stalls[0][1]:.1f}" if profile.stalls else ""


def _delta(name: str, before: float | None, after: float | None, fmt: str, scale: float = 1.0):
    if before is None and after is None:
        return None
    change = f"{(after / before - 1) * 100:+.1f}%" if before and after is not None else ""
    return (name, "" if before is None else format(before * scale, fmt),
            "" if after is None else format(after * scale, fmt), change)
