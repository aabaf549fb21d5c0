"""The use-case layer's checks before anything runs: what the device must allow, and the output's claim (two runs
never write one file); and what a run records around its points (the other processes on its GPU)."""

import time
from contextlib import ExitStack

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SIZES, saved_points, start_sweep

from gpubench import results
from gpubench.specs import catalog
from gpubench.usecases import session
from gpubench.cli import cli
from gpubench.core.exit_codes import Exit
from gpubench.usecases.session import check_device, device_launches
from gpubench.core.errors import GpubenchError
from gpubench.ops.gemm import GemmShape
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.measure.timing import TimingPolicy

FAST = TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=0.0)
TMA = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "tf32-tma")  # a persistent grid: min(tiles, SMS)


def work(variant, shape=GemmShape(4096, 4096, 4096)):
    return [ShapeTask("t", shape, 0, tuple(PointTask(i, variant, c, FAST) for i, c in enumerate(variant.space.configs)))]


def test_a_persistent_grid_is_sized_by_the_devices_multiprocessors():
    """4096² in 256 × 128 tiles is 512 tiles, more than either GPU's SMs: the grid is the device's SM count, so a
    launch path that ignored it (or used a sample count) would give the same grid for both devices."""
    (task,) = work(TMA)
    for sms in (114, 132):
        check_device([task], {"max_threads": 1024, "sms": sms, "arch": "sm_90"}, [TMA])
        (main,) = device_launches(task, task.points[0], {"sms": sms})
        assert main.grid == (sms, 1, 1)


def test_a_block_larger_than_the_device_allows_is_one_line_naming_the_variant():
    with pytest.raises(GpubenchError, match=r"variant 'tf32-tma': configuration .* launches blocks of 384 threads; "
                                            r"this GPU allows at most 256"):
        check_device(work(TMA), {"max_threads": 256, "sms": 132, "arch": "sm_90"}, [TMA])


# --- output paths: refused before anything runs, naming the option ----------------------------------------------


@pytest.mark.parametrize("given,words", [
    ("", "-o is empty (an unset variable?)"),
    ("  ", "-o is empty"),
    (".json", "-o .json: give a name before .json, e.g. run.json"),
    (".json.gz", "-o .json.gz: give a name before .json.gz, e.g. run.json.gz"),
    ("run.gz", "a results file ends in .json or .json.gz"),
    ("sub/.JSON", "give a name before .JSON"),
    ("run.txt", "a results file ends in .json"),
    ("a-file/run.json", "a-file is a file, not a directory"),
    ("a-file/deeper/run.json", "a-file is a file, not a directory"),
    ("a\0b.json", "a file path of printable characters"),
    ("line\n.json", "a file path of printable characters"),
    ("x" * 251 + ".json", "the file name is too long (256 bytes"),
    ("x" * 240 + ".json", "the file name is too long (245 bytes; at most 242"),  # its temporary would not fit
    ("a-dir", "a results file ends in .json"),
    ("a-dir.json", "is a directory"),
])
def test_bad_output_paths_are_one_line_naming_the_option(tmp_path, monkeypatch, given, words):
    from gpubench.usecases.session import check_output

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-dir.json").mkdir()
    with pytest.raises(GpubenchError) as e:
        check_output(given, force=True)
    assert str(e.value).startswith("-o") and words in str(e.value), str(e.value)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_the_longest_name_that_fits_is_taken(tmp_path):
    from gpubench.core.paths import name_max, temporary
    from gpubench.usecases.session import check_output

    room = name_max(tmp_path) - len(temporary(tmp_path / "x").name) + 1  # the temporary adds this much to a name
    fits = tmp_path / ("y" * (room - len(".json")) + ".json")
    assert check_output(fits, force=False) == fits
    with pytest.raises(GpubenchError, match="too long"):
        check_output(tmp_path / ("y" * (room - len(".json") + 1) + ".json"), force=False)


def test_an_environment_variable_that_cannot_be_a_directory_names_itself(tmp_path, monkeypatch):
    from gpubench.core import paths

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("GPUBENCH_CACHE", str(tmp_path / "a-file" / "cache"))
    with pytest.raises(GpubenchError, match="GPUBENCH_CACHE=.* cannot be made a directory"):
        paths.cache_dir()
    monkeypatch.setenv("GPUBENCH_CACHE", str(tmp_path / "new" / "cache"))
    assert paths.cache_dir().is_dir()


def test_a_default_output_stays_under_results_whatever_the_suites_name(tmp_path, monkeypatch):
    from gpubench.usecases.session import default_output

    from contextlib import ExitStack

    monkeypatch.chdir(tmp_path)
    with ExitStack() as claims:
        path = default_output("CPU: x", "../../up and away", claims)
    assert path.parent == Path("results") / "cpu-x" and path.name.startswith("up-and-away-")


LT = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "cublaslt")


def test_fp8_on_a_gpu_without_fp8_tensor_cores_is_refused_before_anything_runs():
    from gpubench.core.dtypes import DType
    from gpubench.ops.gemm import GemmLayout

    fp8 = work(LT, GemmShape(4096, 4096, 4096, DType.FP8, GemmLayout.NT))
    ampere = {"max_threads": 1024, "sms": 108, "arch": "sm_80", "device": "NVIDIA A100",
              "dtypes": ["fp32", "tf32", "fp16", "bf16", "int8"], "libraries": {"cublaslt": "13.1.0"}}
    with pytest.raises(GpubenchError, match=r"fp8 needs tensor cores this GPU \(NVIDIA A100, sm_80\) does not have; "
                                            r"it computes in fp32, tf32, fp16, bf16, int8"):
        check_device(fp8, ampere, [LT])
    check_device(fp8, {**ampere, "arch": "sm_90", "dtypes": [*ampere["dtypes"], "fp8"]}, [LT])
    check_device(fp8, {"arch": None}, [LT])  # the CPU backend says nothing about tensor cores


# --- one run per output file ------------------------------------------------------------------------------------


def test_a_second_run_on_the_same_output_is_refused_naming_the_first(slow_project):
    """Two real gpubench processes given the same -o (--force too): the second is refused at once, in one line
    naming the first's process, and the first saves every one of its points."""
    first = start_sweep(slow_project, "--force")
    deadline = time.monotonic() + 60
    while saved_points(slow_project / "r.json") < 1:
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    for extra in (["--force"], []):
        second = start_sweep(slow_project, *extra)
        out, err = second.communicate(timeout=60)
        assert second.returncode == Exit.USAGE, err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"-o r.json is being written by another gpubench run (pid {first.pid} on" in err
    _, err = first.communicate(timeout=120)
    assert first.returncode == Exit.OK, err
    run = results.load(slow_project / "r.json")
    assert run.status == "complete" and [p.problem.m for p in run.points] == SIZES
    assert not (slow_project / ".r.json.lock").exists()  # released at the end
    third = start_sweep(slow_project, "--force", sizes=[16])  # and so a later run may take the path
    assert third.wait(timeout=60) == Exit.OK


def test_the_claim_is_released_when_a_run_stops_on_an_error(tmp_path, monkeypatch):
    def refuse(*args):
        raise GpubenchError("the device refused")

    monkeypatch.setattr(session, "check_device", refuse)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "-o", str(tmp_path / "r.json")])
    assert r.exit_code == Exit.USAGE and "the device refused" in r.output
    assert not (tmp_path / ".r.json.lock").exists()
    with results.Claim(tmp_path / "r.json") as again:
        assert again.acquire()


def test_two_runs_without_an_output_in_the_same_second_get_names_of_their_own(tmp_path, monkeypatch):
    claims = ExitStack()
    with claims:
        first = session.default_output("CPU: x", "gemm", claims)
        second = session.default_output("CPU: x", "gemm", claims)  # the first is still being written (claimed)
        assert first != second and first.parent == second.parent


def test_the_kernels_compile_while_the_worker_starts(monkeypatch):
    """The worker's start (a Python process and a CUDA context: seconds) and nvcc overlap: the worker below
    starts only once a compile for NVML's architecture has begun, so a session that compiled after the worker
    started would wait out the timeout and fail."""
    import threading

    from gpubench.execution.sweep import Sweep

    compiling = threading.Event()
    arches = []

    def precompile(work, arch):
        arches.append(arch)
        compiling.set()
        return 0

    class Starting:
        def start(self):
            assert compiling.wait(5), "nothing was compiling while the worker started"
            return {"arch": "sm_90"}

    monkeypatch.setattr(session, "precompile", precompile)
    monkeypatch.setattr(session.telemetry, "one_arch", lambda: "sm_90")
    request = session.RunRequest(sweeps=[Sweep("t", "gemm", [TMA], [GemmShape(512, 512, 512)], (), FAST)], label="t")
    assert session.start_while_compiling(Starting(), request) == {"arch": "sm_90"}
    assert arches == ["sm_90"]
    monkeypatch.setattr(session.telemetry, "one_arch", lambda: None)  # no NVML: no guess, the start alone
    compiling.clear()
    assert session.start_while_compiling(type("Plain", (), {"start": lambda self: {}})(), request) == {}
    assert arches == ["sm_90"]


# --- other processes on the GPU: looked for before the first call and after the last point ------------------------


def test_a_run_records_the_other_processes_on_its_gpu_and_says_so(monkeypatch, tmp_path, capsys):
    """A stand-in worker on a CUDA GPU that runs no points, and a scripted NVML in which another process arrives
    while the sweep runs: the saved run holds both looks, and the run's outcome says so in one line."""
    from contextlib import contextmanager

    from test_neighbours import BUS, ME, MIB, STRANGER, WORKER, FakeNvml

    from gpubench.execution.neighbours import Watch
    from gpubench.execution.sweep import Sweep
    from gpubench.results.neighbours import KEY, GpuNeighbours, Neighbour
    from gpubench.views import terminal

    nvml = FakeNvml({WORKER: 500 * MIB})
    looks = []

    class Alone:
        incidents = []

        def start(self):
            return {"device": "NVIDIA H200", "arch": None, "pci_bus_id": BUS, "libraries": {}}

        def pids(self):
            return {WORKER}

        def check(self, variants):
            pass

        def first_calls(self, tasks, on_point):
            looks.append(nvml.asked)  # the plan searches come after the first look
            return {}, set()

        def environment(self, precisions=None):
            return {"device": {"name": "NVIDIA H200", "kind": "cuda"}, "software": {}}

        def run_all(self, work, on_point):
            nvml.compute[STRANGER] = 2048 * MIB  # someone else's job starts mid-run

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    class Quiet:
        def skipped(self, what, why):
            pass

        def unlocked_clocks(self, telemetry):
            pass

        @contextmanager
        def progress(self, label, total):
            yield lambda point: None

    monkeypatch.setattr(session.RunRequest, "executor", lambda self: Alone())
    monkeypatch.setattr(session.telemetry, "one_arch", lambda: None)
    monkeypatch.setattr(session.neighbours, "Watch",
                        lambda bus: Watch(bus, nvml, me=ME, name_of={STRANGER: "python train.py"}.get,
                                          session=lambda pid: None))
    request = session.RunRequest(sweeps=[Sweep("t", "gemm", [TMA], [GemmShape(512, 512, 512)], (), FAST)], label="t",
                                 output=str(tmp_path / "r.json"))
    outcome = session.run_sweeps(request, Quiet())
    assert looks == [1] and nvml.asked == 2
    saved = results.load(tmp_path / "r.json")
    assert GpuNeighbours.from_dict(saved.settings[KEY]) == GpuNeighbours(
        start=(), end=(Neighbour(STRANGER, "python train.py", 2048),))
    terminal.run_outcome(outcome)
    err = " ".join(capsys.readouterr().err.split())
    assert "1 other process was computing on this GPU during the run (pid 4242 (python train.py); seen at its " \
           "end): times and cuDNN's plan choices may be off" in err, err


def test_a_cpu_run_records_no_gpu_neighbours(tmp_path, monkeypatch):
    """The CPU backend has no GPU to share: its run keeps no record (and shows no line)."""
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--variants", "numpy", "--sizes", "32", "--warmup", "0",
                                 "--reps", "5", "-o", "r.json"])
    assert r.exit_code == 0, r.output
    assert "gpu_neighbours" not in results.load(tmp_path / "r.json").settings
