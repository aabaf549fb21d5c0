"""gpubench/views/profile.py and the views that use it: what limits each point in `show` and the report, the
counters of the slower points in `compare`, and the roofline placing profiled points by their measured bytes."""

from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.analysis import roofline
from gpubench.views import profile as view
from gpubench.views.run import run_tables
from gpubench.views.tables import to_markdown
from ncu_fakes import profiled_run

# --- the views ------------------------------------------------------------------------------------------------


def test_the_limits_table_is_shown_only_for_profiled_runs(make_run):
    assert view.limits_table(make_run()) is None
    tables = run_tables(profiled_run(make_run))
    text = to_markdown(tables[-1])
    assert tables[-1].title.startswith("what limits each point")
    assert "compute-bound: SM at 90% of peak, stalled on barrier" in text
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in text
    assert "not profiled: ncu could not profile it" in text and "ncu 2025.1.1.0" in text


def test_show_prints_what_limits_each_point(make_run, run_file):
    r = CliRunner().invoke(cli, ["show", run_file(profiled_run(make_run)), "--format", "markdown"])
    assert r.exit_code == 0 and "compute-bound: SM at 90% of peak" in r.output


def test_the_report_shows_the_limits(make_run, tmp_path, run_file):
    out = tmp_path / "r.html"
    r = CliRunner().invoke(cli, ["report", run_file(profiled_run(make_run)), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "what limits each point" in out.read_text()


def test_compare_shows_the_counters_of_the_slower_points(make_run, run_file):
    base = profiled_run(make_run, fixture="set-nvjet-bf16-h100.txt")
    new = profiled_run(make_run, fixture="set-sliding-stream-h200.txt", scale={("cublas", 1024): 1.5})
    r = CliRunner().invoke(cli, ["compare", run_file(base, "b.json"), run_file(new, "n.json"), "--format", "markdown"])
    assert r.exit_code == 1, r.output
    assert "counters of the slower points" in r.output
    assert "compute-bound: SM at 90% of peak, stalled on barrier" in r.output
    assert "L2-bound: L2 at 75% of peak" in r.output
    assert "| SM % | 90 | 52 | -42.7% |" in r.output and "|  | occ % |  | 24 |  |" in r.output


def test_the_roofline_uses_measured_bytes_where_profiled(make_run):
    run = profiled_run(make_run, fixture="set-tc-wgmma-14-h100.txt", clocks=1980)
    p = next(p for p in run.points if p.variant == "cublas")
    moved = p.details.profile.dram_bytes
    assert roofline.measured_bytes(p) == moved and roofline.intensity(p) == p.flops / moved
    assert roofline.bound(p, run)[0] == min(p.flops / moved * 3000, 60000)  # fp32: the FFMA peak
    plain = next(p for p in run.points if p.op == "conv")
    assert roofline.intensity(plain) == plain.flops / plain.min_bytes
    assert "measured by Nsight Compute" in roofline.intensity_label(run.points)
