"""The HTML report (views/report.py, views/svg.py): one self-contained page with every table and chart, marks
that match the run, comparisons of later runs with the first, and text from a run never taken as markup."""

import json
import re
from html.parser import HTMLParser
import time
from dataclasses import replace
from pathlib import Path


from gpubench.results import Point, RunStatus, load
from gpubench.views import report

REPO = Path(__file__).resolve().parent.parent
LAB = REPO / "results" / "nvidia-h200" / "lab-a.json.gz"


def point_data(html: str) -> list:
    """The points a page's tables are built from (its data blocks, one per run)."""
    blocks = re.findall(r'<script type="application/json" class="point-data"[^>]*>(.*?)</script>', html, re.S)
    return [p for b in blocks for p in json.loads(b.replace("<\\/", "</"))]


def marks(html: str) -> int:
    return len(re.findall(r'<circle [^>]*class="mark"', html))


def test_the_page_is_self_contained(make_run):
    html = report.render([("a.json", make_run(clocks=1980))])
    assert html.startswith("<!doctype html>") and "<style>" in html and "<script>" in html
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)  # nothing loaded from anywhere: works offline
    assert "@media print" in html and 'name="viewport"' in html  # printable, readable on a phone


def test_every_chart_has_a_mark_per_drawn_point(make_run):
    run = make_run(clocks=1980)
    charts = report.size_charts(run)
    assert [c.title for _, c in charts] == ["gemm · N×N×N", "conv · stride 1 pad 1"]
    gemm = charts[0][1]
    assert {s.key for s in gemm.series} == {"tiled", "cublas"} and all(len(s.points) == 2 for s in gemm.series)
    assert [s.reference for s in gemm.series if s.key == "cublas"] == [True]  # the library, drawn as reference
    roof = report.roofline_chart(run)
    assert sum(len(s.points) for s in roof.series) == 6 and len(roof.ceilings) == 2
    html = report.render([("a.json", run)])
    assert marks(html) == sum(len(s.points) for _, c in charts for s in c.series) + 6


def test_the_labs_tables_and_every_point_are_on_the_page(make_run):
    run = make_run(clocks=1980)
    html = report.render([("a.json", run)])
    rows = point_data(html)
    assert len(rows) == len(run.points) and rows[0]["cells"][:3] == ["gemm", "tiled", "128x128x8/8x8"]
    assert "gemm · tiled" in html and "Environment" in html and "eng0" in html  # the cuDNN engine, per point


def test_a_second_run_is_compared_with_the_first(make_run):
    base, new = make_run(), make_run(seed=1, scale={("tiled", 2048): 1.3})
    html = report.render([("base.json", base), ("new.json", new)])
    assert "new.json against base.json" in html and "regression: 1 point(s) slower" in html
    assert re.search(r"slower</td><td[^>]*>gemm tiled 128x128x8/8x8 2048", html)


def test_an_incomplete_run_says_so(make_run):
    run = make_run()
    run.status = RunStatus.INTERRUPTED
    assert "This run is interrupted" in report.render([("a.json", run)])


def test_text_from_a_run_is_never_markup(make_run):
    run = make_run()
    evil = "</script><script>alert(1)</script>"
    run.points = [replace(p, variant=evil) if i == 0 else p for i, p in enumerate(run.points)]
    run.points.append(Point(run.points[1].problem, "x", "-", "error", reason=evil))
    html = report.render([("a.json", run)])
    tags = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append(tag)

    Tags().feed(html)
    assert tags.count("script") == 2  # the points' data block and the page's own script: no third one
    assert "<script>alert(1)" not in html.split("<main>")[1].split("<script type=\"application/json\"")[0]


def test_the_saved_lab_run_renders_with_every_section():
    run = load(LAB)
    html = report.render([(str(LAB), run)])
    assert len(point_data(html)) == len(run.points) == 352  # 33 of its 385 measured twice, each read as one
    assert html.count("<figure") == 6  # gemm, four conv series (strides, paddings) and the roofline


def synthetic_points(make_run, n: int):
    """A run of n points (copies of a small run's, each its own problem size)."""
    run = make_run(clocks=1980, samples=10)
    base = run.points
    points = []
    for i in range(n):
        p = base[i % len(base)]
        problem = replace(p.problem, m=p.problem.m + i, n=p.problem.n + i, k=p.problem.k + i) \
            if p.op == "gemm" else replace(p.problem, height=p.problem.height + i, width=p.problem.width + i)
        points.append(replace(p, problem=problem))
    run.points = points
    return run


def test_rendering_grows_linearly_with_the_points(make_run):
    """Twenty thousand points render in about ten times what two thousand take (not a hundred)."""
    small, large = synthetic_points(make_run, 2000), synthetic_points(make_run, 20000)
    def seconds(runs):
        t = time.perf_counter()
        report.render(runs)
        return time.perf_counter() - t

    seconds([("s.json", small)])  # warm imports
    # the least of several of each: noise only adds time, so each least is the nearest to the render's own cost
    t_small = min(seconds([("s.json", small)]) for _ in range(3))
    t_large = min(seconds([("l.json", large)]) for _ in range(2))
    assert t_large < 25 * t_small, (t_small, t_large)


def test_a_series_of_many_marks_is_one_path_of_dots():
    from gpubench.views.svg import TIPS, Chart, Series

    chart = Chart("t", "x", "y", series=[Series("a", "a", [(i + 1, i + 1) for i in range(TIPS + 1)])])
    svg = chart.to_svg()
    assert "<circle" not in svg and f'data-marks="{TIPS + 1}"' in svg and svg.count("h0") == TIPS + 1


def test_a_run_whose_file_name_is_not_utf8_is_reported(make_run, tmp_path):
    """A results file named in another encoding (b"\\xff.json": Python holds the byte as a lone surrogate, which
    no UTF-8 writer takes): its name is on the page as U+FFFD, where the report used to fail with "the output
    takes only utf-8"."""
    import os

    from gpubench.usecases import commands
    from gpubench.results import save

    odd = tmp_path / os.fsdecode(b"\xff.json")
    save(make_run(), odd)
    page = commands.write_report([str(odd)], str(tmp_path / "r.html"), False, 0.05, False)
    assert "\ufffd.json" in page.read_text(encoding="utf-8")


def test_a_caption_of_several_lines_keeps_its_lines():
    """The run's two-mode caption names a point a line (views/modes.py); the page keeps them apart."""
    from gpubench.views.report import table_html
    from gpubench.views.tables import Table

    html = table_html(Table("t", ["a"], caption="‡ marks two modes\n‡ gemm tiled 2048: two modes: 7.6 and 9 ms"))
    assert "‡ marks two modes<br>‡ gemm tiled 2048" in html


def test_an_x_of_zero_is_drawn_on_a_linear_axis_inside_the_frame():
    """A declared op's last dim can be 0 (a flag such as causal), which no log axis holds."""
    from gpubench.views.svg import Chart, Series

    chart = Chart("t", "causal", "GFLOPS", series=[Series("a", "a", [(0, 100.0), (1, 200.0)])])
    xs = [float(x) for x in re.findall(r'<circle cx="([-\d.]+)"', chart.to_svg())]
    assert len(xs) == 2 and 0 < xs[0] < xs[1]


def test_the_saved_declared_attention_run_renders():
    run = load(REPO / "results" / "nvidia-h200" / "example-attention.json.gz")
    html = report.render([("example-attention.json.gz", run)])
    assert marks(html) > 0 and "<svg" in html
