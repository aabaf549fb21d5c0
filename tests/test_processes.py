"""--processes K: every point measured in K worker processes, in lockstep by task; samples kept per process."""

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.cli import cli
from gpubench.core.errors import GpubenchError
from gpubench.execution import processes as processes_module
from gpubench.execution.executors import open_executor
from gpubench.execution.processes import Processes, order
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.execution.worker import WorkerOptions
from gpubench.measure.timing import TimingPolicy
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Status
from gpubench.results.pooled import pooled
from gpubench.specs.runners import PythonRunner
from gpubench.specs.variant import NO_CONFIG, Code, Variant


def point(samples, status=Status.OK, variant="v", reason="", telemetry=None):
    if status.timed:
        return Point.measured(GemmShape(8, 8, 8), variant, "-", samples_ms=samples, rel_err=0.0 if status == Status.OK
                              else 1.0, tolerance=1e-3, telemetry=telemetry)
    return Point(GemmShape(8, 8, 8), variant, "-", status, reason=reason)


# --- the model ----------------------------------------------------------------------------------------------------


def test_a_point_keeps_its_samples_per_process_and_summarises_them_all():
    p = pooled([point([1.0, 1.1, 1.2]), point([2.0, 2.1])])
    assert p.processes == (3, 2) and p.samples_ms == (1.0, 1.1, 1.2, 2.0, 2.1)
    assert p.process_samples == ((1.0, 1.1, 1.2), (2.0, 2.1))
    assert p.median_ms == 1.2 and p.timing.n == 5


def test_every_process_keeps_its_kernel_times_beside_its_samples():
    def timed(samples, kernel):
        p = point(samples)
        return replace(p, details=replace(p.details, kernel_ms=kernel))

    both = pooled([timed([1.0, 1.1], (0.7, 0.8)), timed([2.0], (1.5,))])
    assert both.details.kernel_ms == (0.7, 0.8, 1.5)  # the second process's kernel time is not dropped
    one_without = pooled([timed([1.0, 1.1], (0.7, 0.8)), point([2.0])])
    assert one_without.details.kernel_ms == (0.7, 0.8)  # not aligned with the samples: the first's, as before


def test_a_one_process_point_has_one_group_and_saves_no_processes_key():
    p = point([1.0, 2.0])
    assert p.processes == () and p.process_samples == ((1.0, 2.0),)
    assert "processes" not in p.to_dict()  # files written before --processes render byte for byte as they did


def test_process_counts_that_do_not_add_up_are_refused():
    with pytest.raises(ValueError, match="processes must count"):
        replace(point([1.0, 2.0, 3.0]), processes=(1, 1))
    with pytest.raises(ValueError, match="processes must count"):
        replace(point([1.0, 2.0]), processes=(2, 0))


def test_a_point_measured_in_processes_survives_a_save_and_load(tmp_path, make_run):
    run = make_run()
    run.points = [pooled([p, p]) if p.status == Status.OK else p for p in run.points]
    again = results.load(results.save(run, tmp_path / "r.json"))
    assert again == run and any(len(p.processes) == 2 for p in again.points)


def test_a_corrupt_processes_key_is_one_line_naming_the_point(tmp_path, make_run):
    path = results.save(make_run(), tmp_path / "r.json")
    data = json.loads(path.read_text())
    data["points"][0]["processes"] = [1, 2]
    path.write_text(json.dumps(data))
    with pytest.raises(GpubenchError, match="point 0 .*processes must count"):
        results.load(path)


def test_a_point_must_pass_in_every_process_and_says_which_did_not():
    p = pooled([point([1.0]), point([], Status.ERROR, reason="boom"), point([], Status.SKIPPED, reason="no")])
    assert p.status == Status.ERROR and p.reason == "in process 2 of 3: boom"
    failed = pooled([point([1.0]), point([1.0], Status.FAIL)], of="run")
    assert failed.status == Status.FAIL and failed.reason.startswith("in run 2 of 2: rel_err")


def test_telemetry_of_the_processes_is_summed_where_it_counts_and_a_median_elsewhere():
    a = point([1.0], telemetry={"sm_mhz": 1980, "sm_mhz_min": 1900, "throttled": 1, "reasons": ["power"]})
    b = point([1.0], telemetry={"sm_mhz": 1800, "sm_mhz_min": 1700, "throttled": 2, "reasons": ["thermal"]})
    c = point([1.0], telemetry={"sm_mhz": 1900, "sm_mhz_min": 1850, "throttled": 0, "reasons": []})
    t = pooled([a, b, c]).telemetry
    assert t == {"sm_mhz": 1900, "sm_mhz_min": 1700, "throttled": 3, "reasons": ["power", "thermal"]}


def test_pooling_points_already_measured_in_processes_keeps_every_process():
    twice = pooled([point([1.0, 1.0]), point([2.0])])
    assert pooled([twice, twice], of="run").processes == (2, 1, 2, 1)


# --- the schedule -----------------------------------------------------------------------------------------------


def test_each_task_starts_one_process_further_along():
    assert [order(i, 3) for i in range(4)] == [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]


class FakeWorker:
    """Runs a task by reporting one point per PointTask, its samples naming the worker; logs the calls."""

    log: list = []

    def __init__(self, options):
        self.me = len([w for w in FakeWorker.log if w[0] == "made"])
        FakeWorker.log.append(("made", self.me))
        self.incidents = []

    def run(self, task, on_point):
        FakeWorker.log.append(("run", task.seed, self.me))
        for p in task.points:
            if (task.seed, self.me) == (99, 0):  # the second to run task 99
                raise KeyboardInterrupt
            on_point(Point.measured(task.shape, p.variant.name, p.config.label, samples_ms=[1.0 + self.me] * 2,
                                    rel_err=0.0, tolerance=1e-3))


def tasks(k, seeds=(0, 1, 2), names=("a", "b")):
    policy = TimingPolicy(processes=k)
    variants = [Variant(name=n, op="gemm", backend="cpu", code=Code(PythonRunner())) for n in names]
    return [ShapeTask("s", GemmShape(8, 8, 8), seed, tuple(PointTask(i, v, NO_CONFIG, policy)
                                                            for i, v in enumerate(variants))) for seed in seeds]


@pytest.fixture
def fake_workers(monkeypatch):
    FakeWorker.log = []
    monkeypatch.setattr(processes_module, "Worker", FakeWorker)


def test_a_task_runs_in_every_process_before_the_next_task_starts(fake_workers):
    got = []
    Processes(WorkerOptions("cpu"), 2).run_all(tasks(2), got.append)
    runs = [(seed, w) for kind, *rest in FakeWorker.log if kind == "run" for seed, w in [rest]]
    assert runs == [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)]
    assert [(p.variant, p.processes) for p in got] == [("a", (2, 2)), ("b", (2, 2))] * 3
    assert got[0].process_samples == ((1.0, 1.0), (2.0, 2.0))  # in process order, whichever ran first


def test_a_sweep_of_one_process_runs_in_the_first_alone(fake_workers):
    got = []
    Processes(WorkerOptions("cpu"), 3).run_all(tasks(1, seeds=(0, 1)), got.append)
    assert [e for e in FakeWorker.log if e[0] == "run"] == [("run", 0, 0), ("run", 1, 0)]
    assert all(p.processes == () for p in got)


def test_an_interruption_keeps_every_point_a_process_finished(fake_workers):
    got = []
    with pytest.raises(KeyboardInterrupt):
        Processes(WorkerOptions("cpu"), 2).run_all(tasks(2, seeds=(0, 99)), got.append)
    assert [(p.variant, len(p.processes)) for p in got] == [("a", 2), ("b", 2), ("a", 0), ("b", 0)]


def test_processes_need_one_device():
    with pytest.raises(GpubenchError, match="--processes 2 .*one device"):
        open_executor("cpu", processes=2, replicate=True)
    assert isinstance(open_executor("cpu", processes=2), Processes)


# --- end to end on the CPU backend --------------------------------------------------------------------------------


def test_a_cpu_sweep_in_two_processes_saves_each_process_samples(tmp_path):
    out = tmp_path / "two.json"
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16,24", "--variants", "numpy", "--reps", "5",
                                 "--budget", "0", "--processes", "2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert [p.processes for p in run.points] == [(5, 5), (5, 5)]
    assert run.settings["sweeps"][0]["timing"]["processes"] == 2
    assert "2 processes: medians within" in r.output
    assert "2 point(s) measured in 2 processes: their processes' medians within" in r.output


def test_processes_out_of_range_is_one_line(tmp_path):
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "--processes", "17",
                                 "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "--processes is how many worker processes measure each point: 1 to 16" in r.output


def test_a_suite_sweep_may_ask_for_its_own_processes(tmp_path):
    from gpubench.planning import suites

    suite = tmp_path / "s.toml"
    suite.write_text('[defaults]\nprocesses = 2\n[[sweep]]\nname = "a"\nop = "gemm"\nsizes = [16]\n'
                     '[[sweep]]\nname = "b"\nop = "gemm"\nsizes = [24]\nprocesses = 1\n')
    loaded = suites.load(suite, "cpu")
    assert [s.policy.processes for s in loaded.sweeps] == [2, 1]
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["run", str(suite), "--backend", "cpu", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert [len(p.processes) for p in results.load(out).points] == [2, 0]


def test_a_bad_processes_key_names_its_place(tmp_path):
    from gpubench.planning import suites

    suite = tmp_path / "s.toml"
    suite.write_text('[[sweep]]\nname = "a"\nop = "gemm"\nsizes = [16]\nprocesses = "two"\n')
    with pytest.raises(GpubenchError, match=r"sweep\[0\]\.processes must be an integer"):
        suites.load(suite, "cpu")


def test_the_api_and_the_command_line_override_a_suite_processes(tmp_path):
    from gpubench import api

    suite = tmp_path / "s.toml"
    suite.write_text('[defaults]\nreps = 5\nbudget = 0\n[[sweep]]\nname = "a"\nop = "gemm"\nsizes = [16]\n')
    outcome = api.run_suite(str(suite), backend="cpu", output=tmp_path / "api.json", processes=3)
    assert outcome.run.points[0].processes == (5, 5, 5)
    r = CliRunner().invoke(cli, ["run", str(suite), "--backend", "cpu", "--processes", "2", "-o",
                                 str(tmp_path / "cli.json")])
    assert r.exit_code == 0 and results.load(tmp_path / "cli.json").points[0].processes == (5, 5)
