"""The HTML report: one self-contained page for one or more saved runs (`gpubench report`).

For each run: its status and environment, a chart of GFLOPS (GEMM) or GB/s (conv) against size per series of
problems (views/plot.py decides what a series is, so the page and the PNG never disagree), the roofline
against the run's measured ceilings, the lab's tables (views/run.py's, as HTML), and every point in one
sortable, filterable table whose rows open to their detail: the samples' distribution, clocks, power, energy,
throttling and the library's engine. For two or more runs, each later run is compared with the first
(compare.py's verdicts and intervals), or, with `across`, the same points are set side by side per GPU.

Everything is inline (styles, SVG charts from views/svg.py, a small script for sorting, filtering and the
details), so the file opens offline, prints, and reads on a phone. Without the script the page is still
complete: every table and chart is plain HTML and SVG.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources

from gpubench.analysis import roofline
from gpubench.analysis.compare import ORDER, Report, compare
from gpubench.results import Point, Run, RunStatus, Status
from gpubench.views import plot
from gpubench.views.compare import across_tables, changes_table
from gpubench.views.profile import deltas_table
from gpubench.views.run import best_points, display_name, run_tables
from gpubench.views.svg import Chart, Series
from gpubench.views.tables import Table


def _asset(name: str) -> str:
    return (resources.files("gpubench.views") / "report_assets" / name).read_text(encoding="utf-8")


def table_html(table: Table, cls: str = "lab") -> str:
    """A Table (views/tables.py) as an HTML table; cell styles become classes."""
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    rows = []
    for row in table.rows:
        cells = "".join(f'<td class="{c.style}{" num" if i >= table.left else ""}">{escape(c.text)}</td>'
                        for i, c in enumerate(row))
        rows.append(f"<tr>{cells}</tr>")
    caption = f"<caption>{escape(table.title)}</caption>" if table.title else ""
    note = f'<p class="note">{escape(table.caption).replace(chr(10), "<br>")}</p>' if table.caption else ""
    return f'<table class="{cls}">{caption}<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>{note}'


def _chart_html(chart: Chart, op=None) -> str:
    legend = "".join(f'<li data-key="{escape(k, quote=True)}"{" class=reference" if ref else ""}>'
                     f'<span style="background:{c}"></span>{escape(label)}</li>' for k, label, c, ref in chart.legend())
    where = f' data-op="{escape(str(op))}"' if op else ""
    return f'<figure{where}>{chart.to_svg()}<ul class="legend">{legend}</ul></figure>'


def size_charts(run: Run) -> list[tuple[object, Chart]]:
    """Per op and series of problems: each variant's best configuration against size, the library as reference."""
    charts = []
    for op in run.ops():
        for series in sorted({plot._panel(p) for p in run.points if p.op == op} - {None}):
            by_flops = plot.by_flops(run, op)
            chart = Chart(f"{op} · {series}", plot.axis(run, op), "GFLOPS" if by_flops else "GB/s")
            baselines = set(run.baselines(op))
            for name, points in plot._series(run, op, series).items():
                chart.series.append(Series(name.split(" ")[0], name, [
                    (p.problem.plot_x, plot._rate(p, p.median_ms, by_flops)) for p in points],
                    reference=name.split(" ")[0] in baselines))
            copy = run.environment.get("device", {}).get("copy_gbps")
            if not by_flops and copy and chart.series:
                xs = [x for s in chart.series for x, _ in s.points]
                chart.ceilings.append((f"device copy {copy:,} GB/s", [(min(xs), copy), (max(xs), copy)]))
            if chart.series:
                charts.append((op, chart))
    return charts


def roofline_chart(run: Run) -> Chart | None:
    """Every variant's best points at their arithmetic intensity, under the peaks and bandwidths the run measured."""
    c = roofline.ceilings(run)
    points = [p for p in best_points([p for p in run.points if p.status == Status.OK]).values() if p.min_bytes]
    if not c or not points:
        return None
    chart = Chart(f"roofline · {run.device}", roofline.intensity_label(points), "GFLOPS")
    intensity = [roofline.intensity(p) for p in points]
    lo, hi = min(intensity + [0.1]) / 2, max(intensity + [1e3]) * 2
    for name, peak in roofline.peaks(run):
        bandwidth = c.get("copy_gbps")
        if peak and bandwidth:
            knee = peak / bandwidth
            chart.ceilings.append((f"{name} {peak:,} GFLOPS · DRAM {bandwidth:,} GB/s",
                                   [(lo, lo * bandwidth), (knee, peak), (hi, peak)]))
    for name in dict.fromkeys(display_name(p) for p in points):
        mine = [p for p in points if display_name(p) == name]
        chart.series.append(Series(name.split(" ")[0], name, [(roofline.intensity(p), p.gflops) for p in mine],
                                   joined=False))
    return chart


def _num(x, fmt: str = ",.3f") -> str:
    return "" if x is None else format(x, fmt)


LARGE = 2000  # points in a run above which its long tables start folded

POINT_COLUMNS = ("op", "variant", "config", "problem", "status", "median ms", "IQR %", "GFLOPS", "GB/s",
                 "share of bound", "rel_err", "SM MHz", "power W", "J / call", "throttled", "engine")


def _point_cells(p: Point, run: Run) -> list[str]:
    t, tel, d = p.timing, p.telemetry or {}, p.details
    share = roofline.share(p, run)
    return [str(p.op), p.variant, p.config, p.problem.full_label, str(p.status),
            _num(p.median_ms, ",.4f"), _num(t.rel_iqr * 100 if t else None, ".1f"), _num(p.gflops, ",.0f"),
            _num(p.gbps, ",.0f"), _num(share * 100 if share else None, ".0f"),
            _num(p.rel_err, ".1e"), _num(tel.get("sm_mhz"), ",.0f"), _num(p.kernel_power_w, ",.0f"),
            _num(tel.get("joules_per_call"), ".3g"), _num(tel.get("throttled"), "d"), d.engine or ""]


def _point_data(p: Point, run: Run) -> dict:
    return {"cells": _point_cells(p, run), "samples": list(p.samples_ms), "telemetry": p.telemetry or {},
            "details": p.details.record(), "reason": p.reason}


NUMERIC = range(5, 15)  # the columns of POINT_COLUMNS that hold numbers (right-aligned, sorted as numbers)


def points_section(run: Run, index: int) -> str:
    """Every point's row. The rows are built in the page from the data block below the table (a page of them at
    a time, filtered and sorted there), so that a run of tens of thousands of points opens in a moment."""
    head = "".join(f'<th data-col="{j}" tabindex="0"{" class=num" if j in NUMERIC else ""}>{escape(c)}</th>'
                   for j, c in enumerate(POINT_COLUMNS))
    data = json.dumps([_point_data(p, run) for p in run.points], separators=(",", ":"), allow_nan=False)
    data = data.replace("</", "<\\/")  # a "</script>" inside a reason must not end the block
    return (f'<table class="points" id="points-{index}" data-count="{len(run.points)}"><thead><tr>{head}</tr>'
            f'</thead><tbody></tbody></table><p class="more"></p>'
            f'<script type="application/json" class="point-data" data-table="points-{index}">{data}</script>')


def _environment(run: Run, name: str) -> str:
    device, software = run.environment.get("device", {}), run.environment.get("software", {})
    rows = [("file", name), ("status", run.status), ("points", len(run.points)), ("created", run.created),
            ("gpubench", f"{run.gpubench_version} at {software.get('git_commit') or 'an unknown commit'}"),
            ("command", " ".join(run.command))]
    rows += [(k, v) for k, v in device.items() if not isinstance(v, dict)]
    rows += [(f"ceiling {k}", v) for k, v in (device.get("ceilings") or {}).items()]
    rows += [(k, v) for k, v in software.items() if k != "git_commit"]
    body = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return f'<details class="env"><summary>Environment</summary><table class="kv">{body}</table></details>'


def run_section(name: str, run: Run, index: int) -> str:
    warn = "" if run.status == RunStatus.COMPLETE else \
        f'<p class="warning">This run is {escape(str(run.status))}: it holds only the points it finished.</p>'
    charts = size_charts(run)
    roof = roofline_chart(run)
    figures = "".join(_chart_html(c, op) for op, c in charts) + (_chart_html(roof) if roof else "")
    if len(run.points) > LARGE:  # tens of thousands of rows would slow the page for every reader
        tables = (f'<p class="note">{len(run.points):,} points: the lab\'s tables are left out of the page '
                  f'(`gpubench show {escape(name)}` prints them); every point is in the table below.</p>')
    else:
        tables = "".join(table_html(t) for t in run_tables(run))
    return (f'<section class="run" id="run-{index}"><h2>{escape(run.device)} · {escape(name)}</h2>{warn}'
            f'{_environment(run, name)}<h3>Charts</h3><div class="charts">{figures or "<p>No series to draw.</p>"}'
            f'</div><h3>The lab\'s tables</h3><div class="tables">{tables}</div>'
            f'<h3>Every point</h3><p class="hint">Click a column to sort, a row for its samples and telemetry.</p>'
            f'{points_section(run, index)}</section>')


def comparison_section(base_name: str, base: Run, new_name: str, new: Run, threshold: float,
                       across: bool) -> str:
    report: Report = compare(base, new, threshold)
    if not report.changes and not report.not_measured:
        return ""  # nothing in common (another suite): the runs are shown, not compared
    counts = ", ".join(f"{report.count(v)} {v}" for v in ORDER)
    changed = [changes_table(report, include_same=False)] + (across_tables(report, base.device, new.device)
                                                              if across else [])
    deltas = deltas_table(report)  # the counters of the slower points, where both runs profiled them
    changed += [deltas] if deltas else []
    return (f'<section class="comparison"><h2>{escape(new_name)} against {escape(base_name)}</h2>'
            f'<p class="outcome">{escape(report.outcome)}: {escape(counts)} (threshold {threshold:.0%}; intervals '
            f'hold together at 95%)</p>{"".join(table_html(t, "changes") for t in changed)}'
            f'<details><summary>Every point compared</summary>{table_html(changes_table(report), "changes")}'
            f'</details></section>')


def render(runs: list[tuple[str, Run]], *, threshold: float = 0.05, across: bool = False) -> str:
    """The whole page for these runs (name, run), the first being the base of the comparisons of the later runs
    that share points with it."""
    title = " · ".join(dict.fromkeys(r.device for _, r in runs))
    sections = [run_section(name, run, i) for i, (name, run) in enumerate(runs)]
    base_name, base = runs[0]
    comparisons = [comparison_section(base_name, base, name, run, threshold, across) for name, run in runs[1:]]
    variants = sorted({p.variant for _, r in runs for p in r.points})
    ops = sorted({str(p.op) for _, r in runs for p in r.points})
    statuses = sorted({str(p.status) for _, r in runs for p in r.points})

    def options(values):
        return "".join(f'<option value="{escape(v, quote=True)}">{escape(v)}</option>' for v in values)

    filters = (f'<form class="filters" onsubmit="return false"><label>op <select name="op"><option value="">all</option>'
               f'{options(ops)}</select></label> <label>variant <select name="variant"><option value="">all</option>'
               f'{options(variants)}</select></label> <label>status <select name="status"><option value="">all'
               f'</option>{options(statuses)}</select></label> <label>search <input name="text" type="search">'
               f'</label></form>')
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>gpubench · {escape(title)}</title><style>{_asset("report.css")}</style></head>'
            f'<body><header><h1>gpubench report · {escape(title)}</h1>'
            f'<p>{len(runs)} run(s): {escape(", ".join(n for n, _ in runs))}</p>{filters}</header>'
            f'<main>{"".join(comparisons)}{"".join(sections)}</main>'
            f'<script>{_asset("report.js")}</script></body></html>')
