"""gpubench/analysis/kernel_times.py and `compare --clock kernel`: two runs compared by CUPTI's kernel times of their
timed calls, where the events' samples moved by the launch path alone."""

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.analysis.kernel_times import by_kernel_clock
from gpubench.cli import cli
from gpubench.core.errors import GpubenchError


def with_kernels(run, events_shift_ms: float, kernel_scale: float = 1.0):
    """Each point's kernel times set from its samples, then its event samples moved by `events_shift_ms` a call (the
    launch path, outside the kernels)."""
    points = []
    for p in run.points:
        kernel = tuple(t * kernel_scale for t in p.samples_ms)
        points.append(replace(p, samples_ms=tuple(t + events_shift_ms for t in p.samples_ms),
                              details=replace(p.details, kernel_ms=kernel)))
    return replace(run, points=points)


def saved(run, path):
    results.save(run, path)
    return str(path)


def test_a_run_by_its_kernel_clock_takes_each_points_kernel_times_as_its_samples(make_run):
    run = with_kernels(make_run(), 0.003)
    read = by_kernel_clock(run, "a.json")
    assert [p.samples_ms for p in read.points] == [p.details.kernel_ms for p in run.points]


def test_a_point_without_kernel_times_is_refused_in_one_line(make_run):
    with pytest.raises(GpubenchError, match=r"a.json: \d+ measured point\(s\) have no kernel times .*--clock both"):
        by_kernel_clock(make_run(), "a.json")


def test_a_launch_path_shift_reads_slower_by_the_events_and_same_by_the_kernels(make_run, tmp_path):
    base = with_kernels(make_run(), 0.0)
    new = with_kernels(make_run(), 0.5 * base.points[0].median_ms)  # every call 50% longer outside its kernels
    a, b = saved(base, tmp_path / "a.json"), saved(new, tmp_path / "b.json")
    by_events = CliRunner().invoke(cli, ["compare", a, b, "--format", "json"])
    by_kernels = CliRunner().invoke(cli, ["compare", a, b, "--format", "json", "--clock", "kernel"])
    assert by_events.exit_code == 1 and json.loads(by_events.output)["counts"]["slower"] > 0
    assert by_kernels.exit_code == 0, by_kernels.output
    report = json.loads(by_kernels.output)
    assert report["clock"] == "kernel" and report["counts"]["slower"] == 0 and report["counts"]["same"] > 0


def test_a_kernel_that_slowed_reads_slower_by_the_kernels_too(make_run, tmp_path):
    a = saved(with_kernels(make_run(), 0.0), tmp_path / "a.json")
    b = saved(with_kernels(make_run(), 0.0, kernel_scale=1.2), tmp_path / "b.json")
    r = CliRunner().invoke(cli, ["compare", a, b, "--clock", "kernel", "--format", "markdown"])
    assert r.exit_code == 1 and "by the kernels' own times" in r.output


def test_compare_by_kernels_of_runs_without_them_is_exit_2_in_one_line(make_run, tmp_path):
    a = saved(make_run(), tmp_path / "a.json")
    r = CliRunner().invoke(cli, ["compare", a, a, "--clock", "kernel"])
    assert r.exit_code == 2 and "no kernel times" in r.output and "Traceback" not in r.output
