"""The record of other processes on a run's GPU (gpubench/results/neighbours.py): saved and read back with the run,
absent from older files without harm, refused in one line where corrupt, and said by `show` and `compare`."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.analysis import compare
from gpubench.cli import cli
from gpubench.results import neighbours
from gpubench.results.neighbours import KEY, GpuNeighbours, Neighbour
from gpubench.views import compare as compare_view

ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "results" / "nvidia-h200" / "ci-1.json.gz"  # saved before runs kept the record
PYTEST = Neighbour(4242, "python -m pytest -n 8 tests", 612)
TRAINER = Neighbour(4343, "python train.py", None)
WARNING = ("2 other processes were computing on this GPU during the run (pids 4242 (python -m pytest -n 8 tests), "
           "4343 (python train.py); seen at its start and end): times and cuDNN's plan choices may be off")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def with_company(make_run, record: GpuNeighbours, **kwargs):
    run = make_run(**kwargs)
    run.settings[KEY] = record.as_dict()
    return run


def test_the_record_survives_a_save_and_a_load(make_run, tmp_path):
    record = GpuNeighbours(start=(PYTEST,), end=(PYTEST, TRAINER))
    path = results.save(with_company(make_run, record), tmp_path / "run.json.gz")
    loaded = results.load(path)
    assert neighbours.of(loaded.settings) == record
    assert loaded.settings[KEY]["checked"] is True
    assert loaded.settings[KEY]["start"] == [{"pid": 4242, "name": "python -m pytest -n 8 tests", "used_mib": 612}]


def test_a_record_that_could_not_check_keeps_why(make_run, tmp_path):
    record = GpuNeighbours(unchecked="NVML could not list the processes on this GPU (Not Supported)")
    saved = results.save(with_company(make_run, record), tmp_path / "run.json")
    data = json.loads(saved.read_text())["settings"][KEY]
    assert data == {"start": None, "end": None, "checked": False, "unchecked": record.unchecked}
    assert neighbours.of(results.load(saved).settings) == record


def test_a_file_saved_before_the_record_reads_as_not_recorded_and_shows():
    run = results.load(OLD)
    assert KEY not in run.settings and neighbours.of(run.settings) is None
    r = invoke("show", OLD)
    assert r.exit_code == 0 and "other process" not in r.output, r.output
    assert invoke("compare", OLD, OLD).exit_code == 0


def test_show_warns_of_a_saved_runs_company(make_run, run_file):
    path = run_file(with_company(make_run, GpuNeighbours(start=(PYTEST, TRAINER), end=(TRAINER,))))
    r = invoke("show", path)
    assert r.exit_code == 0 and WARNING in " ".join(r.output.split()), r.output
    markdown = invoke("show", path, "--format", "markdown")
    assert markdown.exit_code == 0 and "> " + WARNING in " ".join(markdown.output.split("\n")), markdown.output


def test_show_says_nothing_of_a_run_alone_on_its_gpu_or_one_not_checked(make_run, run_file):
    for record in (GpuNeighbours(start=(), end=()), GpuNeighbours(unchecked="NVML's Python package ...")):
        r = invoke("show", run_file(with_company(make_run, record)))
        assert r.exit_code == 0 and "other process" not in r.output, r.output


def test_one_other_process_is_one_line_in_the_singular():
    line = neighbours.warning(GpuNeighbours(start=(), end=(Neighbour(77),)))
    assert line == ("1 other process was computing on this GPU during the run (pid 77; seen at its end): times and "
                    "cuDNN's plan choices may be off")


def test_compare_says_which_run_had_company(make_run, run_file):
    base = run_file(with_company(make_run, GpuNeighbours(start=(PYTEST,), end=())), "base.json")
    new = run_file(with_company(make_run, GpuNeighbours(start=(), end=())), "new.json")
    report = compare.compare(results.load(base), results.load(new))
    line = ("other processes were computing on the GPU during the base run (pid 4242 (python -m pytest -n 8 tests)): "
            "times and cuDNN's plan choices may be off, and so may the verdicts")
    assert line in compare_view.notes(report)
    r = invoke("compare", base, new)
    assert r.exit_code == 0 and line in " ".join(r.output.split()), r.output
    both = compare.compare(results.load(base), results.load(base))
    assert [n for n in compare_view.notes(both) if "other processes" in n] == [
        "other processes were computing on the GPU during the base run (pid 4242 (python -m pytest -n 8 tests)) and "
        "the new run (pid 4242 (python -m pytest -n 8 tests)): times and cuDNN's plan choices may be off, and so "
        "may the verdicts"]
    alone = compare.compare(results.load(new), results.load(new))
    assert not [n for n in compare_view.notes(alone) if "other processes" in n]


@pytest.mark.parametrize("record,words", [
    ("nobody", "is an object with start and end"),
    ({"start": "4242"}, "start is a list of processes"),
    ({"start": [{"name": "x"}]}, "each process is an object with a pid"),
    ({"start": [{"pid": -1}]}, "a process id is a positive whole number"),
    ({"end": [{"pid": 1, "used_mib": "lots"}]}, "used_mib is a whole number of MiB"),
    ({"unchecked": 3}, "unchecked is text"),
])
def test_a_corrupt_record_is_refused_in_one_line_naming_it(make_run, run_file, record, words):
    run = make_run()
    run.settings[KEY] = record
    r = invoke("show", run_file(run))
    assert r.exit_code == 2 and f"settings.{KEY}" in r.stderr and words in r.stderr, r.output
    assert r.stderr.count("\n") == 1
