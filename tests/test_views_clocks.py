"""gpubench/views/clocks.py: the run's two clocks in its tables (each point's ratio, the marks, the caption)."""

from gpubench.measure.kernel_clock import Clocks
from gpubench.ops.gemm import GemmShape
from gpubench.results import Details, Point, Run, RunStatus
from gpubench.views import clocks
from gpubench.views.run import run_tables


def _point(variant, event_ms, kernel_ms, kernels=("sm90_gemm",)):
    return Point.measured(GemmShape(64, 64, 64), variant, "-", samples_ms=[event_ms] * 5, rel_err=0, tolerance=1e-3,
                          details=Details(kernel_ms=[kernel_ms] * 5, kernels=kernels))


def _run(points, asked=Clocks.BOTH, backend="cuda"):
    return Run(backend, {"device": {"name": "NVIDIA H200"}}, {"sweeps": [{"timing": {"clocks": str(asked)}}]},
               points=points, status=RunStatus.COMPLETE)


def test_each_point_shows_its_ratio_and_a_mark_where_the_clocks_differ():
    near, far = _point("cublas", 0.0102, 0.0100), _point("tiled", 0.0120, 0.0100, ("a", "b", "c"))
    assert clocks.detail(near) == "events/CUPTI 1.020 (sm90_gemm)"
    assert clocks.detail(far) == f"events/CUPTI 1.200 {clocks.MARK} (a, b …)"
    assert clocks.detail(Point.measured(GemmShape(8, 8, 8), "x", "-", samples_ms=[1.0], rel_err=0,
                                        tolerance=1e-3)) == ""


def test_the_caption_gives_the_ratios_distribution_and_names_the_points_that_differ():
    text = clocks.caption(_run([_point("cublas", 0.0102, 0.0100), _point("tiled", 0.0120, 0.0100)]))
    assert text.startswith("two clocks on 2 point(s): events/CUPTI median 1.110")
    assert f"{clocks.MARK} marks a point whose event time and CUPTI kernel time differ by more than 5%" in text
    assert "tiled" in text.splitlines()[-1] and "12.00 µs" in text
    tables = run_tables(_run([_point("cublas", 0.0102, 0.0100)]))
    assert "two clocks on 1 point(s)" in tables[-1].caption


def test_a_run_that_asked_for_both_clocks_without_cupti_says_so_in_one_line():
    bare = Point.measured(GemmShape(64, 64, 64), "cublas", "-", samples_ms=[0.01] * 5, rel_err=0, tolerance=1e-3)
    text = clocks.caption(_run([bare]))
    assert "no CUPTI kernel times were recorded" in text and "\n" not in text
    assert clocks.caption(_run([bare], asked=Clocks.EVENTS)) == ""
    assert clocks.caption(_run([bare], backend="cpu")) == ""
