"""Views of a history (gpubench/analysis/history.py): the table of series and their latest changes, and its HTML page
with one chart per series that changed (medians by run, each change marked with its commit range)."""

from __future__ import annotations


from gpubench.analysis.history import Series, typical_noise
from gpubench.views.report import _asset, _chart_html, table_html
from gpubench.views.svg import Chart
from gpubench.views.svg import Series as Line
from gpubench.views.tables import Cell, Table


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def history_table(series: list[Series], threshold: float, changed_only: bool = True) -> Table:
    """One row per series (per series that changed, by default): its runs, its last median and its latest change."""
    table = Table(f"history: {len(series)} series, {sum(bool(s.changes) for s in series)} with a change",
                  ["GPU", "driver", "point", "runs", "last ms", "changes", "latest change", "size", "interval",
                   "confidence", "commits"], left=3)
    for s in sorted(series, key=lambda s: (not s.regressed(threshold), s.gpu, s.label)):
        c = s.latest
        if changed_only and c is None:
            continue
        style = "fail" if s.regressed(threshold) else ""
        last = s.entries[-1].median_ms
        row = [Cell(s.gpu), Cell(s.driver), Cell(s.label), Cell(str(len(s.entries))), Cell(f"{last:.4g}"),
               Cell(str(len(s.changes)))]
        if c is None:
            row += [Cell("-")] * 5
        else:
            row += [Cell(f"run {c.at + 1}", style), Cell(_pct(c.ratio), style),
                    Cell(f"{_pct(c.low)} … {_pct(c.high)}"), Cell(f"{c.confidence:.1%}"), Cell(c.commits)]
        table.rows.append(row)
    noise = typical_noise(series)
    table.caption = (f"series: one point on one GPU model and driver, ordered by commit time; a change is a "
                     f"slowdown to fail on above {threshold:.0%}" + (f"; typical run-to-run noise {noise:.1%}"
                                                                      if noise else ""))
    return table


def history_chart(s: Series) -> Chart:
    chart = Chart(f"{s.label} · {s.gpu}", "run (by commit time)", "median ms", x_log=False)
    chart.series.append(Line(s.label, s.label, [(i + 1, e.median_ms) for i, e in enumerate(s.entries)]))
    chart.marks = [(c.at + 0.5, f"{_pct(c.ratio)} {c.commits}") for c in s.changes]
    return chart


def history_html(series: list[Series], threshold: float) -> str:
    changed = [s for s in series if s.changes]
    charts = "".join(_chart_html(history_chart(s)) for s in changed[:200])
    more = f"<p>{len(changed) - 200} more series changed; the table lists them all.</p>" if len(changed) > 200 else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>gpubench history</title>'
            f'<style>{_asset("report.css")}</style></head><body><header><h1>gpubench history</h1></header><main>'
            f'{table_html(history_table(series, threshold, changed_only=False), "history")}'
            f'<h2>Series that changed</h2><div class="charts">{charts or "<p>No series changed.</p>"}</div>{more}'
            f'</main></body></html>')
