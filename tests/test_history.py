"""gpubench history: series across runs, change points found where they are and not where they are not, a CI
gate on the latest change, and runs from different GPUs or drivers kept apart."""

from datetime import datetime, timedelta

import numpy as np
import pytest

from gpubench.analysis import history as h
from gpubench.core.exit_codes import Exit
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Run, RunStatus

T0 = datetime(2026, 1, 1)


def noisy_series(seed: int, step_at: int | None = None, step: float = 1.05, noise: float = 0.01, n: int = 30):
    """30 runs' medians with 1% log-normal noise (run-to-run noise on one GPU), a step planted where asked."""
    rng = np.random.default_rng(seed)
    values = np.exp(rng.normal(0, noise, n))
    if step_at is not None:
        values[step_at:] *= step
    s = h.Series("G", "d", "gemm x")
    s.entries = [h.Entry(f"r{i}", f"c{i:02d}", T0 + timedelta(hours=i), float(v)) for i, v in enumerate(values)]
    return s


def test_a_planted_5_percent_step_at_run_20_is_found_there():
    (change,) = h.detect(noisy_series(7, step_at=20))
    assert change.at == 20 and change.slower and 1.03 < change.ratio < 1.07
    assert change.low > 1 and change.confidence > 0.95 and change.commits == "c19..c20"


def test_the_step_is_found_in_almost_every_noisy_series():
    found = [h.detect(noisy_series(1000 + seed, step_at=20)) for seed in range(100)]
    assert sum(any(c.at == 20 for c in f) for f in found) >= 90


def test_false_positive_rate_of_unchanged_series_is_at_most_5_percent():
    false_alarms = sum(bool(h.detect(noisy_series(seed))) for seed in range(100))
    assert false_alarms <= 5


def test_a_faster_step_is_a_change_but_not_a_regression():
    s = noisy_series(3, step_at=15, step=0.9)
    s.changes = h.detect(s)
    assert s.latest is not None and not s.latest.slower and not s.regressed(0.05)


def run_of(device: str, driver: str, commit: str, created: datetime, ms: float, seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    point = Point.measured(GemmShape(256, 256, 256), "tiled", "64x64", samples_ms=list(ms * np.exp(rng.normal(0, 0.002, 20))),
                           rel_err=1e-7, tolerance=1e-4)
    return Run("cuda", {"device": {"name": device, "driver": driver}, "software": {"git_commit": commit}}, {},
               points=[point], status=RunStatus.COMPLETE, created=created.isoformat())


def test_series_never_mix_gpus_or_drivers_and_follow_commit_time():
    runs = [(f"a{i}", run_of("H100", "580", f"c{i}", T0 + timedelta(days=9 - i), 1.0 + i)) for i in range(6)]
    runs += [(f"b{i}", run_of("H200", "580", f"c{i}", T0, 1.0)) for i in range(3)]
    runs += [(f"d{i}", run_of("H100", "590", f"c{i}", T0, 1.0)) for i in range(2)]
    times = {f"c{i}": T0 + timedelta(hours=i) for i in range(6)}  # commit order: c0 first, whatever the runs' dates
    series = h.series_of(runs, times)
    assert sorted((s.gpu, s.driver, len(s.entries)) for s in series) == [("H100", "580", 6), ("H100", "590", 2),
                                                                         ("H200", "580", 3)]
    h100 = next(s for s in series if (s.gpu, s.driver) == ("H100", "580"))
    assert [e.commit for e in h100.entries] == [f"c{i}" for i in range(6)]


def test_the_gate_fails_when_the_latest_change_is_a_slowdown(tmp_path):
    from gpubench.usecases import commands
    from gpubench.results import save

    for i in range(12):
        ms = 1.0 if i < 8 else 1.10
        save(run_of("H100", "580", f"c{i}", T0 + timedelta(hours=i), ms, seed=i), tmp_path / f"r{i:02d}.json")
    outcome = commands.run_history([str(tmp_path)], 0.05, 0.05, str(tmp_path / "h.html"), False)
    (s,) = outcome.series
    assert s.latest.at == 8 and outcome.exit_code == Exit.FAILED
    assert "c7..c8" in (tmp_path / "h.html").read_text()
    assert commands.run_history([str(tmp_path)], 0.15, 0.05, None, False).exit_code == Exit.OK  # a 10% step under 15%


def test_a_directory_s_compressed_runs_are_in_its_history(tmp_path):
    """Runs saved as .json.gz beside plain ones are found in a directory and read as the same series."""
    from gpubench.usecases import commands
    from gpubench.results import save

    for i in range(4):
        name = f"r{i}.json.gz" if i % 2 else f"r{i}.json"
        save(run_of("H100", "580", f"c{i}", T0 + timedelta(hours=i), 1.0, seed=i), tmp_path / name)
    (tmp_path / "notes.gz").write_bytes(b"not a run")  # a .gz that is not .json.gz is not searched
    outcome = commands.run_history([str(tmp_path)], 0.05, 0.05, None, False)
    assert [e.commit for e in outcome.series[0].entries] == ["c0", "c1", "c2", "c3"] and not outcome.passed_over


def test_history_of_a_directory_without_runs_is_one_line(tmp_path):
    from gpubench.usecases import commands
    from gpubench.core.errors import GpubenchError

    with pytest.raises(GpubenchError, match="no results files"):
        commands.run_history([str(tmp_path)], 0.05, 0.05, None, False)


def test_a_stray_file_in_a_directory_is_passed_over_but_one_named_is_an_error(tmp_path):
    """A package.json or a half-written file beside the runs must not hide a directory's history; the same file
    named on its own is still refused with one line."""
    from gpubench.usecases import commands
    from gpubench.core.errors import GpubenchError
    from gpubench.results import save

    for i in range(3):
        save(run_of("H100", "580", f"c{i}", T0 + timedelta(hours=i), 1.0, seed=i), tmp_path / f"r{i}.json")
    (tmp_path / "package.json").write_text('{"name": "x"}')
    (tmp_path / "torn.json").write_bytes(b"\xff\xfe{")
    outcome = commands.run_history([str(tmp_path)], 0.05, 0.05, None, False)
    assert len(outcome.series) == 1 and len(outcome.series[0].entries) == 3
    assert sorted(p.split(":")[0] for p in outcome.passed_over) == [str(tmp_path / "package.json"),
                                                                  str(tmp_path / "torn.json")]
    with pytest.raises(GpubenchError, match="torn.json"):
        commands.run_history([str(tmp_path / "r0.json"), str(tmp_path / "torn.json")], 0.05, 0.05, None, False)
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "package.json").write_text("{}")
    with pytest.raises(GpubenchError, match="no gpubench results"):
        commands.run_history([str(tmp_path / "only")], 0.05, 0.05, None, False)


def test_history_grows_linearly_with_the_points(make_run):
    """Five runs of 20,000 points take about ten times what five of 2,000 take (series screened by one split scan
    each before any search), page included."""
    import time

    from test_views_report import synthetic_points

    from gpubench.views.history import history_html

    def seconds(n):
        run = synthetic_points(make_run, n)
        runs = [(f"r{i}", run) for i in range(5)]
        started = time.perf_counter()
        series = h.history(runs, times={})
        history_html(series, 0.05)
        return time.perf_counter() - started

    seconds(200)  # imports (ruptures brings SciPy)
    # the least of several of each: noise only adds time, so each least is the nearest to the work's own cost
    small, large = min(seconds(2000) for _ in range(3)), min(seconds(20000) for _ in range(2))
    assert large < 25 * small, (small, large)


def test_a_change_too_small_to_find_is_screened_out_before_the_search():
    flat = np.log([e.median_ms for e in noisy_series(5).entries])
    stepped = np.log([e.median_ms for e in noisy_series(5, step_at=20).entries])
    assert not h._may_change(flat, h._noise(flat)) and h._may_change(stepped, h._noise(stepped))


def test_a_runs_commit_is_never_handed_to_git_as_an_option(tmp_path, monkeypatch):
    """A results file is data: a git_commit such as --output=FILE must not reach git's command line."""
    import subprocess

    called = []
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: called.append(args) or subprocess.CompletedProcess(
        args, 1, "", ""))
    assert h.commit_times({f"--output={tmp_path / 'x'}", "abc+dirty", "c0 c1"}) == {}
    assert called == []
    h.commit_times({"4c2f1e9"})
    assert called and called[0][-1] == "4c2f1e9"


def test_runs_without_a_zone_or_a_time_are_placed_or_refused_in_one_line():
    from gpubench.core.errors import GpubenchError

    naive = run_of("H100", "580", "x", T0, 1.0)
    naive.created = "2026-11-20T00:00:00"  # no zone: taken as UTC beside the others
    aware = run_of("H100", "580", "y", T0, 1.0)
    aware.created = "2026-01-01T00:00:00+00:00"
    (s,) = h.series_of([("a", naive), ("b", aware)], {})
    assert [e.run for e in s.entries] == ["b", "a"]  # compared (T0 is January), not refused as naive beside aware
    timeless = run_of("H100", "580", "z", T0, 1.0)
    timeless.created = ""
    with pytest.raises(GpubenchError, match="neither a commit git knows nor when it was made"):
        h.series_of([("a", aware), ("c", timeless)], {})


def test_the_history_page_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """--html --force over an earlier page, and the write fails (a full disk, a stopped run): the earlier page
    stays as it was (the page used to be written in place) and the failure is one line."""
    from gpubench.usecases import commands
    from gpubench.core.errors import GpubenchError
    from gpubench.results import save

    save(run_of("H100", "580", "c0", T0, 1.0), tmp_path / "r.json")
    page = tmp_path / "h.html"
    page.write_text("the earlier page")

    def full_disk(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(commands.os, "replace", full_disk)
    with pytest.raises(GpubenchError, match="cannot write the history page to .*No space left on device"):
        commands.run_history([str(tmp_path / "r.json")], 0.05, 0.05, str(page), True)
    assert page.read_text() == "the earlier page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.html", "r.json"]  # no temporary file left


def test_a_run_holding_a_point_twice_counts_it_once(tmp_path):
    """A point given twice in one file (merged or edited by hand) was counted as two runs of it in the series
    ("runs 3" from two files); it is read as one point, and a note says so."""
    from gpubench.usecases import commands
    from gpubench.results import save
    from gpubench.results.schema import PointsMerged

    save(run_of("H100", "580", "c0", T0, 1.0), tmp_path / "a.json")
    twice = run_of("H100", "580", "c1", T0 + timedelta(hours=1), 1.0)
    twice.points = twice.points * 2
    save(twice, tmp_path / "b.json")
    with pytest.warns(PointsMerged, match="b.json: 1 point"):
        outcome = commands.run_history([str(tmp_path)], 0.05, 0.05, None, False)
    assert [len(s.entries) for s in outcome.series] == [2] and not outcome.passed_over


def test_a_history_with_no_change_says_so_in_one_line(tmp_path):
    """It printed a table with a title and no rows."""
    from click.testing import CliRunner

    from gpubench.cli import cli
    from gpubench.results import save

    for i in range(4):
        save(run_of("H100", "580", f"c{i}", T0 + timedelta(hours=i), 1.0, seed=i), tmp_path / f"r{i}.json")
    r = CliRunner().invoke(cli, ["history", str(tmp_path)])
    assert r.exit_code == 0 and r.output == "no point changed: 1 series compared across 4 runs (--all lists them)\n", \
        r.output
    every = CliRunner().invoke(cli, ["history", str(tmp_path), "--all"])
    assert every.exit_code == 0 and "history: 1 series, 0 with a change" in every.output


def test_without_ruptures_the_refusal_and_the_help_name_the_extra(tmp_path, monkeypatch):
    import sys

    from click.testing import CliRunner

    from gpubench.cli import cli
    from gpubench.results import save

    for i in range(3):
        save(run_of("H100", "580", f"c{i}", T0 + timedelta(hours=i), 1.0, seed=i), tmp_path / f"r{i}.json")
    monkeypatch.setitem(sys.modules, "ruptures", None)  # import ruptures raises ImportError
    r = CliRunner().invoke(cli, ["history", str(tmp_path)])
    assert r.exit_code == 2 and r.output == "gpubench: error: history needs ruptures: pip install " \
                                            "'gpubench[history]'\n", r.output
    assert "pip install 'gpubench[history]'" in " ".join(CliRunner().invoke(cli, ["history", "--help"]).output.split())
    assert "pip install 'gpubench[history]'" in CliRunner().invoke(cli, ["--help"]).output
