"""Many workers through Dask, on the CPU (a LocalCluster of CPU workers stands in for a node's GPUs): sharded and
replicated sweeps, a worker killed mid-sweep, a slow worker flagged."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.cli import cli
from gpubench.core.gpus import GpuSelection
from gpubench.planning.plan import Spread
from gpubench.core.errors import GpubenchError

pytest.importorskip("distributed")

KERNELS = """
import os, signal, time
from pathlib import Path
import numpy as np

def mm(A, B, C, M, N, K):
    np.matmul(A, B, out=C)

def slow_on_worker_1(A, B, C, M, N, K):
    if os.environ.get("GPUBENCH_WORKER") == "1":
        time.sleep(0.003)
    np.matmul(A, B, out=C)

def kills_its_dask_worker_once(A, B, C, M, N, K):
    marker = Path(os.environ["MARKER"])
    if M == 40 and not marker.exists():
        marker.write_text(os.environ.get("GPUBENCH_WORKER", "?"))
        os.kill(os.getppid(), signal.SIGKILL)  # the Dask worker that started this gpubench worker
        time.sleep(60)
    np.matmul(A, B, out=C)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text(KERNELS)
    tables = "".join(f'[[variant]]\nname = "{n}"\nop = "gemm"\nsource = "k.py"\nkernel = "{n}"\n'
                     f'args = ["A", "B", "C", "M", "N", "K"]\n' for n in ("mm", "slow_on_worker_1",
                                                                         "kills_its_dask_worker_once"))
    (tmp_path / "gpubench.toml").write_text(tables)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MARKER", str(tmp_path / "killed"))
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--reps", "5", *args])


def test_shard_runs_every_point_once_and_names_the_worker(project):
    r = invoke("--variants", "numpy,mm", "--sizes", "16,24,32,40,48,56", "--gpus", "2", "-o", "s.json")
    assert r.exit_code == 0, r.output
    run = results.load("s.json")
    keys = [p.key() for p in run.points]
    assert len(keys) == 12 and len(set(keys)) == 12 and all(p.status == "ok" for p in run.points)
    assert len({p.device for p in run.points}) == 2  # both workers took shapes, and each point names its own
    assert [d["worker"] for d in run.environment["devices"]] == ["0", "1"]
    assert run.settings["gpus"] == "2" and run.settings["wall_s"] >= 0  # tenths of a second: a fast sweep is 0.0


def test_replicate_flags_the_slow_worker_and_exits_4(project):
    r = invoke("--variants", "slow_on_worker_1", "--sizes", "16,24,32", "--gpus", "2", "--replicate", "-o", "r.json")
    assert r.exit_code == 4, r.output
    assert "SLOW GPU" in r.output and "(worker 1)" in r.output
    run = results.load("r.json")
    assert len(run.points) == 6 and run.settings["replicate"]
    shown = CliRunner().invoke(cli, ["show", "r.json"])
    assert "GPUs against the node's median" in shown.output and "SLOW" in shown.output


def test_a_worker_killed_mid_sweep_loses_no_finished_point(project):
    r = invoke("--variants", "kills_its_dask_worker_once", "--sizes", "16,24,32,40,48,56,64", "--gpus", "2",
               "--timeout", "60", "-o", "k.json")
    assert (project / "killed").exists()  # the plant went off
    run = results.load("k.json")
    assert sorted(p.problem.m for p in run.points) == [16, 24, 32, 40, 48, 56, 64]
    assert all(p.status == "ok" for p in run.points), [(p.problem.m, p.status, p.reason) for p in run.points]
    assert r.exit_code == 0, r.output
    assert any(i["kind"] == "died" and "Dask worker" in i["where"] for i in run.incidents), run.incidents


@pytest.mark.parametrize("text,want,visible", [
    ("all", GpuSelection(), None), ("2", GpuSelection(count=2), "0,1"), ("0,2", GpuSelection(indices=(0, 2)), "0,2"),
    (" 1 ", GpuSelection(count=1), "0"), ("id:3", GpuSelection(indices=(3,)), "3"),
])
def test_gpu_selections(text, want, visible):
    assert GpuSelection.parse(text) == want and want.visible(4) == visible
    assert GpuSelection.parse(str(want)) == want  # a run records the selection as text it can be read back from


def test_one_gpu_other_than_the_first_runs_without_dask():
    from gpubench.execution.executors import open_executor
    from gpubench.execution.worker import Worker

    executor = open_executor("cpu", gpus=GpuSelection.parse("id:1"))
    assert isinstance(executor, Worker) and executor.options.device == "1"
    with pytest.raises(GpubenchError, match="this machine has 2 GPU"):
        GpuSelection(count=3).visible(2)


@pytest.mark.parametrize("text", ["0", "-1", "a", "0,0", "1,,2", "", "id:", "id:1,1", "²", "id:²", "0,³", "٣", "1_0",
                                  "257", "id:256", "0,999", "99999999999999999999999", "9" * 5000])
def test_bad_gpu_selections(text):
    with pytest.raises(GpubenchError, match="--gpus"):
        GpuSelection.parse(text)


@pytest.mark.parametrize("address,words", [
    ("myhost", "needs a port"), ("", "--scheduler is empty"), ("  ", "--scheduler is empty"),
    ("tcp://myhost", "needs a port"), ("myhost:0", "needs a port"), ("myhost:70000", "needs a port"),
    ("myhost:８７８６", "needs a port"), ("udp://myhost:8786", "unknown protocol 'udp'"), (":8786", "not a host name"),
    ("my host:8786", "not a host name"), ("tcp://a/b:8786", "not a host name"),
])
def test_bad_scheduler_addresses_are_one_line_before_dask_starts(address, words):
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "--scheduler", address])
    assert r.exit_code == 2 and r.output.startswith("gpubench: error: ") and r.output.count("\n") == 1, r.output
    assert words in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "10.0.0.5:8786", "tls://node-1.example:8786",
                                     "[::1]:8786"])
def test_good_scheduler_addresses_pass(address):
    from gpubench.planning.plan import check_scheduler

    assert check_scheduler(f" {address} ") == address


def test_replicate_needs_several_gpus():
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "--replicate"])
    assert r.exit_code == 2 and "give --gpus" in r.output


def test_without_dask_the_options_say_what_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_dask(name, *a, **k):
        if name.split(".")[0] in ("distributed", "dask", "dask_cuda"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "--gpus", "2"])
    assert r.exit_code == 2 and "pip install 'gpubench[cluster]'" in r.output and r.output.count("\n") == 1


def test_tune_spreads_its_candidates_over_the_workers(tmp_path):
    from gpubench.usecases import autotune as tune
    from gpubench.specs import files
    from gpubench.ops.gemm import GemmShape

    (tmp_path / "k.py").write_text("import os, numpy as np\n"
                                   "def blocked(A, B, C, M, N, K, TILE):\n"
                                   "    open(os.environ['SEEN'] + os.environ['GPUBENCH_WORKER'], 'a').write('x')\n"
                                   "    np.matmul(A, B, out=C)\n")
    (variant,) = files.parse_specs({"variant": [{
        "name": "blocked", "op": "gemm", "source": "k.py", "kernel": "blocked", "args": ["A", "B", "C", "M", "N", "K"],
        "configs": [{"TILE": 1}], "label": "t{TILE}", "search": {"TILE": [1, 2, 3, 4, 5, 6]}}]}, "gpubench.toml", tmp_path)
    import os

    os.environ["SEEN"] = str(tmp_path / "seen-")
    try:
        path = tune.run(variant, [GemmShape(16, 16, 16)], tune.Search(candidates=6, refine=0), seed=0, timeout_s=60,
                        tuned_dir=tmp_path, out=type("Out", (), {"print": lambda self, text: None})(),
                        spread=Spread(gpus=GpuSelection(count=2)))
    finally:
        del os.environ["SEEN"]
    assert json.loads(Path(path).read_text())["entries"][0]["tried"] == 6
    assert sorted(p.name for p in tmp_path.glob("seen-*")) == ["seen-0", "seen-1"]  # both workers timed some


def test_dask_workers_that_cannot_start_are_one_line(tmp_path, monkeypatch):
    """Dask's answer to a worker process that cannot start (its Python cannot be run by this user, no memory or
    processes left) is RuntimeError("Nanny failed to start."), the reason a few causes down: it reached the user as
    a traceback and exit 1."""
    import distributed

    def refused(*a, **k):
        try:
            raise PermissionError(13, "Permission denied", "/opt/python/bin/python")
        except PermissionError as e:
            raise RuntimeError("Nanny failed to start.") from e

    monkeypatch.setattr(distributed, "LocalCluster", refused)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "--gpus", "2", "-o",
                                 str(tmp_path / "r.json")])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "--gpus: the local Dask workers could not start (PermissionError: [Errno 13] Permission denied: " \
           "'/opt/python/bin/python')" in r.output
    assert list(tmp_path.iterdir()) == []  # no results file, no claim left


def test_without_dask_cuda_the_message_names_it_not_dask(monkeypatch):
    """Dask itself installed, dask-cuda not: "multi-GPU runs use Dask, which is not installed" was untrue."""
    import sys

    from gpubench.specs import backend_choice

    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # an import of it raises ImportError
    monkeypatch.setattr(backend_choice, "gpu_stack_missing", lambda: None)  # tune's first check: PyCUDA, CuPy
    r = CliRunner().invoke(cli, ["tune", "gemm", "--sizes", "64", "--gpus", "2"])
    assert r.exit_code == 2 and "need dask-cuda (one Dask worker per GPU), which is not installed" in r.output, \
        r.output
