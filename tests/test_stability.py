"""`gpubench stability`: the A/A statistics, the stability run (assembled, split, analysed) and the command on the
CPU backend end to end."""

import math
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.analysis import stability
from gpubench.cli import cli
from gpubench.core.errors import GpubenchError
from gpubench.measure import stability as aa
from gpubench.measure.kernel_clock import CompareClock
from gpubench.measure.stability import Duration, PointRuns
from gpubench.results import RunStatus, Status
from gpubench.results.pooled import pooled
from gpubench.views.stability import classes_table, pairs_line

# --- the statistics -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ms, expected", [(0.0099, Duration.UNDER_10_US), (0.01, Duration.TENS_OF_US),
                                          (0.0999, Duration.TENS_OF_US), (0.1, Duration.SUB_MS),
                                          (0.999, Duration.SUB_MS), (1.0, Duration.OVER_1_MS)])
def test_duration_classes_split_at_10_us_100_us_and_1_ms(ms, expected):
    assert aa.duration(ms) == expected


def test_identical_medians_need_only_the_threshold_and_the_interval():
    assert aa.sd([1.0, 1.0, 1.0]) == 0
    assert aa.decided(0.0, 0.0, 0.05) == pytest.approx(0.05)
    assert aa.decided(0.0, math.log(1.01), 0.05) == pytest.approx(1.05 * 1.01 - 1)


def test_a_wider_run_to_run_spread_needs_a_larger_change_and_threshold():
    small, large = aa.sd([1.0, 1.01, 0.99]), aa.sd([1.0, 1.05, 0.95])
    assert aa.decided(large, 0.0, 0.05) > aa.decided(small, 0.0, 0.05) > 0.05
    assert aa.bound(large, 132, 0.05) > aa.bound(small, 132, 0.05)
    # z at 1 - 0.05 / (2 * 132) is 3.55: a 1% run-to-run SD gives a family-wise bound of about 5.1%
    assert aa.bound(0.01, 132, 0.05) == pytest.approx(math.exp(3.554 * math.sqrt(2) * 0.01) - 1, rel=1e-3)


def test_a_class_suggests_at_least_its_largest_a_a_change_rounded_up_to_half_a_percent():
    points = (PointRuns("a", (1.0, 1.062, 1.0), 3, 1, 0, 0.001), PointRuns("b", (1.0, 1.0, 1.0), 3, 0, 0, 0.001))
    (c,) = aa.classes(list(points), 0.05, 0.05)
    assert c.duration == Duration.OVER_1_MS and c.false_rate == pytest.approx(1 / 6)
    assert c.largest == pytest.approx(0.062) and c.suggested >= 0.065 and round(c.suggested / 0.005, 9) % 1 == 0
    assert aa.rounded_up(0.05) == pytest.approx(0.05) and aa.rounded_up(0.0501) == pytest.approx(0.055)


# --- the stability run -----------------------------------------------------------------------------------------


def runs_of(make_run, shifts, k=1):
    """One run per shift, every OK point's samples scaled by it; k processes per point (each the same samples)."""
    out = []
    for i, shift in enumerate(shifts):
        run = make_run(seed=i + 1)
        run.points = [pooled([replace(p, samples_ms=tuple(s * shift for s in p.samples_ms))] * k)
                      if p.status == Status.OK else p for p in run.points]
        out.append(run)
    return out


def test_a_stability_run_holds_every_run_and_splits_back_into_them(make_run):
    runs = runs_of(make_run, [1.0, 1.02, 0.99], k=2)
    run = stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=["gpubench"],
                             status=RunStatus.COMPLETE)
    assert stability.is_stability(run) and not stability.is_stability(runs[0])
    ok = [p for p in run.points if p.status == Status.OK]
    assert ok and all(len(p.processes) == 6 for p in ok)
    for original, rebuilt in zip(runs, stability.split(run)):
        assert [(p.samples_ms, p.processes) for p in rebuilt.points] == [(p.samples_ms, p.processes)
                                                                          for p in original.points]


def test_a_stability_run_keeps_each_runs_launch_floors(make_run):
    runs = runs_of(make_run, [1.0, 1.0])
    runs[0].settings["launch_floors_us"] = [3.25, 3.41, 3.40]  # a run on a GPU: its candidates, the kept first
    run = stability.assemble(runs, suite="s", asked=2, threshold=0.05, alpha=0.05, command=[],
                             status=RunStatus.COMPLETE)
    assert run.settings[stability.KEY]["launch_floors_us"] == [[3.25, 3.41, 3.40], None]


def test_a_stability_run_keeps_the_other_processes_of_every_run_not_the_firsts_alone(make_run):
    from gpubench.results import neighbours
    from gpubench.results.neighbours import GpuNeighbours, Neighbour

    runs = runs_of(make_run, [1.0, 1.0, 1.0])
    records = [GpuNeighbours(start=(), end=()), GpuNeighbours(start=(Neighbour(7, "train.py"),), end=()),
               GpuNeighbours(start=(), end=(Neighbour(7, "train.py"), Neighbour(9)))]
    for run, record in zip(runs, records):
        run.settings[neighbours.KEY] = record.as_dict()
    run = stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=[],
                             status=RunStatus.COMPLETE)
    kept = neighbours.of(run.settings)
    assert kept == GpuNeighbours(start=(Neighbour(7, "train.py"),), end=(Neighbour(7, "train.py"), Neighbour(9)))
    assert kept.checked
    runs[1].settings[neighbours.KEY] = GpuNeighbours(unchecked="NVML could not list ...").as_dict()
    run = stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=[],
                             status=RunStatus.COMPLETE)
    kept = neighbours.of(run.settings)
    assert not kept.checked and kept.unchecked == "run 2: NVML could not list ..." and len(kept.others) == 2
    for r in runs:
        del r.settings[neighbours.KEY]
    assert neighbours.KEY not in stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=[],
                                                    status=RunStatus.COMPLETE).settings


def test_identical_runs_give_no_false_verdict_and_a_shifted_run_gives_them(make_run):
    same = stability.assemble(runs_of(make_run, [1.0, 1.0, 1.0]), suite="s", asked=3, threshold=0.05, alpha=0.05,
                              command=[], status=RunStatus.COMPLETE)
    report = stability.analyse(same)
    assert report.runs == 3 and report.pairs == 3 and report.points
    assert all(c.false_verdicts == 0 for c in report.classes)
    shifted = stability.assemble(runs_of(make_run, [1.0, 1.0, 1.3]), suite="s", asked=3, threshold=0.05,
                                 alpha=0.05, command=[], status=RunStatus.COMPLETE)
    report = stability.analyse(shifted)
    assert sum(c.false_verdicts for c in report.classes) > 0
    assert all(p.largest == pytest.approx(0.3, rel=0.05) for p in report.points)
    assert all(c.suggested >= 0.3 for c in report.classes)


def test_the_report_counts_the_pairs_a_gate_between_them_would_fail(make_run):
    def report(shifts, k=1):
        return stability.analyse(stability.assemble(runs_of(make_run, shifts, k=k), suite="s", asked=len(shifts),
                                                    threshold=0.05, alpha=0.05, command=[], status=RunStatus.COMPLETE))

    calm = report([1.0, 1.0, 1.0])
    assert (calm.pairs_with_false, calm.processes) == (0, 1)
    assert pairs_line(calm, "aa.json") == "none of the 3 pairs of runs (one process a run) had a false verdict at 5%"
    one_off = report([1.0, 1.0, 1.3])  # the third run against each of the others: two pairs of three
    assert one_off.pairs_with_false == 2
    line = pairs_line(one_off, "aa.json")
    assert line.startswith("2 of the 3 pairs of runs (one process a run) had a false verdict at 5%")
    assert "--processes 2" in line and "--thresholds aa.json" in line
    two = report([1.0, 1.0, 1.3], k=2)
    one_pair = "the one pair of runs (one process a run) had"
    assert pairs_line(report([1.0, 1.0]), "aa.json") == f"{one_pair} no false verdict at 5%"
    assert pairs_line(report([1.0, 1.3]), "aa.json").startswith(f"{one_pair} a false verdict at 5%: ")
    assert two.processes == 2 and two.pairs_with_false == 2
    line = pairs_line(two, "aa.json")
    assert "(2 processes a run)" in line and "--processes" not in line and "--thresholds aa.json" in line


def with_kernel_times(runs, shifts):
    """Each run's points given CUPTI kernel times that do not move (0.7 of the unshifted samples): the events' shift
    lies in the launch path."""
    out = []
    for run, shift in zip(runs, shifts):
        run.points = [replace(p, details=replace(p.details, kernel_ms=tuple(0.7 * x / shift for x in p.samples_ms)))
                      if p.status == Status.OK else p for p in run.points]
        out.append(run)
    return out


def test_a_shift_in_the_launch_path_alone_is_false_by_the_events_and_absent_by_the_kernels(make_run):
    shifts = [1.0, 1.0, 1.3]
    runs = with_kernel_times(runs_of(make_run, shifts, k=2), shifts)
    run = stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=[],
                             status=RunStatus.COMPLETE)
    assert stability.has_kernel_times(run)
    for original, rebuilt in zip(runs, stability.split(run)):  # each run gets its own processes' kernel times back
        assert [p.details.kernel_ms for p in rebuilt.points] == [p.details.kernel_ms for p in original.points]
    events = stability.analyse(run)
    kernels = stability.analyse(run, clock=CompareClock.KERNEL)
    assert events.pairs_with_false == 2 and kernels.pairs_with_false == 0
    assert kernels.clock == CompareClock.KERNEL and "by the kernels' own times" in pairs_line(kernels, "aa.json")
    assert "kernels' own times (CUPTI)" in classes_table(kernels).title and "CUPTI" not in classes_table(events).title


def test_show_prints_a_stability_runs_tables_by_each_clock_it_kept(make_run, tmp_path):
    shifts = [1.0, 1.0]
    run = stability.assemble(with_kernel_times(runs_of(make_run, shifts), shifts), suite="s", asked=2,
                             threshold=0.05, alpha=0.05, command=[], status=RunStatus.COMPLETE)
    results.save(run, tmp_path / "aa.json")
    shown = CliRunner().invoke(cli, ["show", str(tmp_path / "aa.json")])
    assert shown.exit_code == 0 and shown.output.count("A/A: 2 runs of s") == 2, shown.output
    assert "by the kernels' own times (CUPTI)" in shown.output


def test_a_stability_run_without_kernel_times_is_read_by_the_events_only(make_run):
    run = stability.assemble(runs_of(make_run, [1.0, 1.0]), suite="s", asked=2, threshold=0.05, alpha=0.05,
                             command=[], status=RunStatus.COMPLETE)
    assert not stability.has_kernel_times(run)
    with pytest.raises(GpubenchError, match="no kernel times"):
        stability.analyse(run, clock=CompareClock.KERNEL)


def test_a_run_without_the_stability_record_is_refused_in_one_line(make_run):
    with pytest.raises(Exception, match="not a stability run"):
        stability.analyse(make_run())


# --- the command on the CPU backend ----------------------------------------------------------------------------

TINY = """name = "tiny"
[defaults]
reps = 5
budget = 0
[[sweep]]
name = "g"
op = "gemm"
variants = ["numpy"]
sizes = [16, 24]
"""


def test_stability_runs_the_suite_three_times_and_saves_one_run(tmp_path):
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY)
    out, kept = tmp_path / "aa.json", tmp_path / "runs"
    r = CliRunner().invoke(cli, ["stability", str(suite), "--backend", "cpu", "-R", "3", "-o", str(out),
                                 "--keep-runs", str(kept)])
    assert r.exit_code == 0, r.output
    assert "A/A: 3 runs of" in r.output and "false verdicts" in r.output
    run = results.load(out)
    assert stability.is_stability(run) and run.status == RunStatus.COMPLETE
    assert run.settings["stability"]["runs"] == 3
    assert [p.processes for p in run.points] == [(5, 5, 5), (5, 5, 5)]
    assert sorted(p.name for p in kept.iterdir()) == ["run-01.json", "run-02.json", "run-03.json"]
    shown = CliRunner().invoke(cli, ["show", str(out)])
    assert shown.exit_code == 0 and "A/A per point" in shown.output
    compared = CliRunner().invoke(cli, ["compare", str(out), str(out)])
    assert compared.exit_code == 0 and "2 of 2 intervals from the spread between worker processes" in compared.output
    assert f"--thresholds {out}" in r.output  # how to gate by its classes' thresholds
    gated = CliRunner().invoke(cli, ["compare", str(kept / "run-01.json"), str(kept / "run-02.json"),
                                     "--thresholds", str(out), "--format", "json"])
    assert gated.exit_code == 0 and '"thresholds_by_duration"' in gated.output, gated.output


def test_stability_without_backend_takes_the_default_backend_as_run_does(tmp_path, monkeypatch):
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY)
    monkeypatch.setenv("GPUBENCH_BACKEND", "cpu")  # the rule `run` follows: no --backend, then the environment's
    r = CliRunner().invoke(cli, ["stability", str(suite), "-R", "2", "-o", str(tmp_path / "aa.json")])
    assert r.exit_code == 0, r.output
    assert results.load(tmp_path / "aa.json").backend == "cpu"


def test_stability_needs_two_runs_at_least(tmp_path):
    r = CliRunner().invoke(cli, ["stability", "quick", "--backend", "cpu", "-R", "1", "-o", str(tmp_path / "a.json")])
    assert r.exit_code == 2 and "--runs 1: an A/A test compares runs in pairs: 2 to 100" in r.output


def test_an_interrupted_stability_run_keeps_the_runs_that_finished(tmp_path, monkeypatch):
    from gpubench.usecases import stability as usecase

    real, calls = usecase.commands.run_suite, []

    def second_cut_short(*args, **kwargs):
        outcome = real(*args, **kwargs)
        calls.append(args[1].output.output)
        return replace(outcome, status=RunStatus.INTERRUPTED) if len(calls) == 2 else outcome

    monkeypatch.setattr(usecase.commands, "run_suite", second_cut_short)
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY)
    r = CliRunner().invoke(cli, ["stability", str(suite), "--backend", "cpu", "-R", "3", "-o", str(tmp_path / "a.json")])
    assert r.exit_code == 130, r.output
    run = results.load(tmp_path / "a.json")
    assert run.status == RunStatus.INTERRUPTED and run.settings["stability"]["runs"] == 1
    assert [p.processes for p in run.points] == [(), ()] and all(p.timing.n == 5 for p in run.points)
    assert len(calls) == 2 and results.load(calls[1]).points  # the run cut short keeps its own file
    assert "the run cut short is under" in r.output
