from dataclasses import replace

import pytest

from gpubench.core.dtypes import DType
from gpubench.views import run as view
from gpubench.views import tables
from gpubench.views.tables import to_markdown
from gpubench.results import Details, Point, Status


def cells(table):
    return [[c.text for c in row] for row in table.rows]


def test_gemm_tables_follow_the_lab_layout(make_run):
    run = make_run()
    tables = view.run_tables(run)
    titles = [t.title for t in tables]
    assert titles[:2] == ["gemm · tiled — ms / GFLOPS", "gemm · cublas — ms / GFLOPS"]
    tiled = tables[0]
    assert tiled.columns == ["size", "128x128x8/8x8"]
    assert [r[0] for r in cells(tiled)] == ["1024", "2048"]
    assert all(" / " in r[1] for r in cells(tiled))


def test_summary_gives_percent_of_cublas(make_run):
    run = make_run()
    summary = view.summary_table(run, "gemm")
    rows = {(r[0], r[1]): r for r in cells(summary)}
    tiled, cublas = (p for p in run.points if p.op == "gemm" and p.problem.m == 1024)  # synthetic medians near 4.0 and 2.5 ms
    assert rows[("1024", "tiled")][6] == f"{100 * cublas.median_ms / tiled.median_ms:.0f}%"
    assert rows[("1024", "tiled")][6] in ("62%", "63%") and rows[("1024", "cublas")][6] == "100%"


def test_conv_comparison_marks_the_fastest(make_run):
    table = view.comparison_table(make_run(), "conv")
    assert table.columns == ["size", "stride", "sliding", "cudnn"]
    (row,) = table.rows
    assert row[2].style == "best" and row[3].style == ""
    summary = {r[2]: r for r in cells(view.summary_table(make_run(), "conv"))}
    assert summary["sliding"][7] == "2.00×" and summary["cudnn"][7] == "1.00×"


def test_failures_and_skips_show_in_cells(make_run):
    run = make_run()
    run.points[0] = replace(run.points[0], status=Status.FAIL, reason="rel_err 1e-2 over tolerance 1e-04", rel_err=1e-2)
    run.points[1] = Point(run.points[1].problem, "tiled", run.points[1].config, Status.SKIPPED, reason="no room")
    text = cells(view.config_tables(run, "gemm")[0])
    assert text[0][1].startswith("FAIL") and text[1][1] == "skipped"
    md = to_markdown(view.config_tables(run, "gemm")[0])
    assert "**FAIL" in md


def test_noisy_points_are_flagged(make_run):
    run = make_run(noise=0.2)
    tables = view.run_tables(run)
    assert any(c.style == "noisy" for t in tables for row in t.rows for c in row)
    assert "too wide to support" in tables[-1].caption


def test_markdown_table_shape(make_run):
    md = to_markdown(view.summary_table(make_run(), "gemm"))
    lines = md.splitlines()
    assert lines[2].startswith("| size | variant |") and lines[3].startswith("|---|---|---|")
    assert len(lines) == 4 + 4 + 2  # header block, four points, caption


def test_tf32_rows_say_so(make_run):
    run = make_run()
    run.points[2] = replace(run.points[2], problem=replace(run.points[2].problem, dtype=DType.TF32))
    assert "cublas [TF32]" in [t.title.split(" · ")[1].split(" —")[0] for t in view.config_tables(run, "gemm")]


def test_csv_has_one_row_per_point(make_run):
    run = make_run()
    text = view.to_csv(run).splitlines()
    assert text[0].split(",") == view.csv_columns(run)
    assert len(text) == 1 + len(run.points)
    assert text[1].startswith("gemm,tiled,1024,1024,1024,")


def test_speedups_are_against_the_baseline_the_run_recorded(make_run):
    """A GPU run's conv speed-ups are relative to cuDNN even when it has an `im2col` row (the CPU's library), and
    a run that recorded another baseline is read with that one: the reader needs no registry of today's."""
    run = make_run()
    sliding = next(p for p in run.points if p.variant == "sliding")
    run.points.append(replace(sliding, variant="im2col", samples_ms=[x * 4 for x in sliding.samples_ms]))
    rows = {r[2]: r for r in cells(view.summary_table(run, "conv"))}
    assert rows["cudnn"][7] == "1.00×" and rows["im2col"][7] == "0.50×"
    run.variants = [v | {"baseline": v["name"] == "sliding"} for v in run.variants]
    rows = {r[2]: r for r in cells(view.summary_table(run, "conv"))}
    assert rows["sliding"][7] == "1.00×" and rows["cudnn"][7] == "0.50×"


def test_noise_threshold_is_a_parameter(make_run):
    run = make_run(noise=0.03)  # IQR/median about 4%
    flagged = lambda t: sum(c.style == "noisy" for table in view.run_tables(run, t) for r in table.rows for c in r)
    assert flagged(0.01) > 0 and flagged(0.2) == 0


def test_details_name_the_engine_and_im2col_share(make_run):
    run = make_run()
    p = next(p for p in run.points if p.variant == "cudnn")
    assert view.details(replace(p, details=Details(engine="eng0", plans=12))) == "eng0 (of 12 plans)"
    p = replace(p, details=Details(parts_ms={"im2col": p.median_ms / 4}))
    assert view.details(p) == f"im2col {p.median_ms / 4:.3f} ms (25%)"
    p = replace(p, details=Details(parts_ms={"winograd_filter": p.median_ms / 20}))  # any step timed on its own
    assert view.details(p) == f"winograd_filter {p.median_ms / 20:.3f} ms (5%)"


def test_hardware_table_shows_clocks_energy_roofline_and_the_floor(make_run):
    run = make_run(clocks=1980)
    table = view.hardware_table(run, "gemm")
    rows = {(r[0], r[1]): r for r in cells(table)}
    tiled = rows[("1024", "tiled")]
    assert tiled[3] == "1,980" and tiled[4] == "0/40" and tiled[5] == "400"
    assert tiled[8].endswith("compute") and "FP32 60,000 GFLOPS" in table.caption and "SM clocks not locked" in table.caption
    assert view.hardware_table(make_run(), "gemm") is None  # nothing to show without telemetry or ceilings


def test_a_point_at_the_floor_says_so(make_run):
    from gpubench.analysis import roofline

    run = make_run(clocks=1980)
    p = run.points[0]
    run.environment["device"]["floor_ms"] = p.median_ms / 1.5
    assert roofline.near_floor(p, run)
    assert "≤2× the floor" in cells(view.hardware_table(run, "gemm"))[0][-1]


def _two_modes_run(make_run):
    """The synthetic run with its 2048 tiled GEMM's samples in two clusters: 16 at 7.6 ms, 24 at 9.0 ms."""
    run = make_run()
    i = next(i for i, p in enumerate(run.points) if p.variant == "tiled" and p.problem.m == 2048)
    fast, slow = [d for d in range(-4, 5) if d] * 2, [d for d in range(-6, 7) if d] * 2  # symmetric about 0
    samples = [7.6 * (1 + 0.002 * d) for d in fast] + [9.0 * (1 + 0.002 * d) for d in slow]
    run.points[i] = replace(run.points[i], samples_ms=samples)
    return run, run.points[i]


def test_a_point_with_two_modes_is_marked_and_named_in_the_caption(make_run):
    run, p = _two_modes_run(make_run)
    assert p.timing.rel_iqr > view.NOISE_THRESHOLD  # wide enough for "~": the two modes' mark takes its place
    tables = view.run_tables(run)
    marked = [c for t in tables for row in t.rows for c in row if "‡" in c.text]
    assert marked and all("~" not in c.text and c.style == "noisy" for c in marked)
    assert cells(view.config_tables(run, "gemm")[0])[1][1].startswith("‡")
    caption = tables[-1].caption
    assert "‡ marks a point whose samples sit in two modes" in caption and "~ marks" not in caption
    assert "‡ gemm tiled 128x128x8/8x8 2048: two modes: 7.6 and 9 ms (40%/60%); median 8.919 ms, at the slower mode" \
        in caption.splitlines()
    assert "‡ gemm tiled 128x128x8/8x8 2048" in to_markdown(tables[-1])


def test_a_median_between_the_two_modes_is_said_to_lie_between_them(make_run):
    """A point under CPU load: modes at 0.21 and 11.6 ms, median 5.0 ms; the caption said its median was the
    larger mode's."""
    run = make_run()
    i = next(i for i, p in enumerate(run.points) if p.variant == "tiled" and p.problem.m == 2048)
    samples = [0.21 * (1 + 0.01 * d) for d in range(-7, 7)] + [4.9, 5.1] + [11.6 * (1 + 0.01 * d) for d in range(-7, 7)]
    run.points[i] = p = replace(run.points[i], samples_ms=samples)
    assert p.modes is not None and p.median_ms == pytest.approx(5.0)
    caption = view.run_tables(run)[-1].caption
    (line,) = [line for line in caption.splitlines() if "two modes: " in line]
    assert ": two modes: 0.211 and 11.54 ms (53%/47%); median 5 ms, between the two modes" in line, line
    assert "its median is the mode" not in caption and "where it lies" in caption


def test_a_run_without_two_modes_says_nothing_of_them(make_run):
    tables = view.run_tables(make_run(noise=0.2))
    assert not any("‡" in c.text for t in tables for row in t.rows for c in row)
    assert "‡" not in tables[-1].caption and "~ marks" in tables[-1].caption


def test_the_caption_lists_a_few_and_counts_the_rest(make_run, monkeypatch):
    run, _ = _two_modes_run(make_run)
    both = [replace(p, samples_ms=run.points[1].samples_ms) if p.op == "gemm" else p for p in run.points]
    run.points = both
    monkeypatch.setattr(tables, "LISTED", 2)
    lines = view.run_tables(run)[-1].caption.splitlines()
    assert len([line for line in lines if ": two modes:" in line]) == 2
    assert lines[-1] == "‡ and 2 more (the CSV view gives every point's modes)"


def test_csv_gives_each_points_modes(make_run):
    run, p = _two_modes_run(make_run)
    rows = list(__import__("csv").DictReader(view.to_csv(run).splitlines()))
    row = next(r for r in rows if r["variant"] == "tiled" and r["m"] == "2048")
    assert (row["fast_mode_ms"], row["slow_mode_ms"], row["fast_mode_share"]) == ("7.6", "9", "0.4")
    assert all(r["fast_mode_ms"] == "" for r in rows if r is not row)


def test_show_marks_the_saved_cudnn_point_with_two_modes():
    from pathlib import Path

    from gpubench.results import load

    run = load(Path(__file__).resolve().parent.parent / "results/nvidia-h100-80gb-hbm3/tc-conv-tma-s32.json.gz")
    summary = {(r[0], r[2]): r for r in cells(view.summary_table(run, "conv"))}
    assert summary[("128x256x14 k256 3x3", "cudnn [BF16 NHWC]")][3] == "- ‡"
    caption = view.run_tables(run)[-1].caption
    assert "‡ conv cudnn 128x256x14 k256 3x3 s1 BF16 NHWC: two modes: 45.54 and 53.7 µs (38%/62%)" in caption


def test_a_ratio_between_two_power_states_is_marked_and_given_per_clock(make_run):
    run = make_run(clocks=1980)
    i = next(i for i, p in enumerate(run.points) if p.variant == "tiled" and p.problem.m == 2048)
    run.points[i] = replace(run.points[i], telemetry={**run.points[i].telemetry, "sm_mhz": 1800, "throttled": 40})
    table = view.summary_table(run, "gemm")
    row = next(r for r in cells(table) if r[0] == "2048" and r[1] == "tiled")
    assert row[6].endswith("⚡")
    assert sum(c.endswith("⚡") for r in cells(table) for c in r) == 1  # the other ratios are one state
    lines = table.caption.splitlines()
    assert lines[1].startswith("⚡ marks a ratio between points in different power states")
    assert lines[2].startswith("⚡ gemm tiled 128x128x8/8x8 2048: ") and "1,800 MHz (capped) against 1,980 MHz" in lines[2]


def test_one_power_state_adds_no_mark(make_run):
    table = view.summary_table(make_run(clocks=1980), "gemm")
    assert "⚡" not in table.caption and not any("⚡" in c for r in cells(table) for c in r)
