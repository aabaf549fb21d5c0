"""Worker isolation: a kernel that crashes its process, hangs or leaves the backend unusable costs that point
only; every finished point is kept and the rest of the task runs in a fresh process."""

import pytest

from gpubench.specs import files
from gpubench.execution.messages import Begin, Broken, End, Finished
from gpubench.execution import worker as worker_module
from gpubench.core.errors import GpubenchError
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Status
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.measure.timing import TimingPolicy
from gpubench.specs.variant import NO_CONFIG
from gpubench.execution.worker import Worker, WorkerOptions

FAST = TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=0.0)

KERNELS = """
import os, signal, time
import numpy as np

def good(A, B, C, M, N, K):
    np.matmul(A, B, out=C)

def crash(A, B, C, M, N, K):
    os.kill(os.getpid(), signal.SIGSEGV)

def hang(A, B, C, M, N, K):
    while True:
        time.sleep(0.05)

def hog(A, B, C, M, N, K):
    scratch = np.empty((2**40, 2**20), dtype=np.float32)  # 4 EiB: numpy's MemoryError, as an over-large temporary

def oom(A, B, C, M, N, K):
    os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does
"""


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    (root / "k.py").write_text(KERNELS)
    tables = [{"name": n, "op": "gemm", "source": "k.py", "kernel": n, "args": ["A", "B", "C", "M", "N", "K"]}
              for n in ("good", "crash", "hang", "hog", "oom")]
    return {v.name: v for v in files.parse_specs({"variant": tables}, "gpubench.toml", root)}


def shape_task(variants, names, size=24):
    points = tuple(PointTask(i, variants[n], NO_CONFIG, FAST) for i, n in enumerate(names))
    return ShapeTask("t", GemmShape(size, size, size), 0, points)


def test_crash_and_hang_cost_one_point_each(variants):
    got: list[Point] = []
    with Worker(WorkerOptions("cpu", timeout_s=2.0)) as worker:
        worker.run(shape_task(variants, ["good", "crash", "good", "hang", "good"]), got.append)
        worker.run(shape_task(variants, ["good"], size=16), got.append)  # the worker goes on after it all
        assert worker.restarts == 2
        kinds = [i.kind for i in worker.incidents]
    assert [(p.variant, p.status) for p in got] == [("good", "ok"), ("crash", "error"), ("good", "ok"),
                                                    ("hang", "timeout"), ("good", "ok"), ("good", "ok")]
    assert "killed by SIGSEGV" in got[1].reason and "timed out after 2 s" in got[3].reason
    assert kinds == ["died", "timeout"]


def test_a_point_out_of_host_memory_is_skipped_not_an_error(variants, monkeypatch):
    """A MemoryError inside the variant, and a worker the OOM killer ends (SIGKILL while the kernel's count of OOM
    kills rose), are points that do not fit: skipped, saying so. A SIGKILL from anyone else stays an error."""
    kills = iter(range(100))
    monkeypatch.setattr(worker_module, "oom_kills", lambda: next(kills))  # rises between any two readings
    got: list[Point] = []
    with Worker(WorkerOptions("cpu", timeout_s=20.0)) as worker:
        worker.run(shape_task(variants, ["hog", "good", "oom", "good"]), got.append)
        monkeypatch.setattr(worker_module, "oom_kills", lambda: 0)
        worker.run(shape_task(variants, ["oom"]), got.append)
    assert [(p.variant, p.status) for p in got] == [("hog", "skipped"), ("good", "ok"), ("oom", "skipped"),
                                                    ("good", "ok"), ("oom", "error")]
    assert got[0].reason.startswith("does not fit in host memory (MemoryError")
    assert "OOM killer" in got[2].reason and "killed by SIGKILL" in got[4].reason


def test_a_backend_that_cannot_open_is_one_line():
    with pytest.raises(GpubenchError) as e:
        Worker(WorkerOptions("cuda")).start()  # no GPU stack here (or a GPU: then this test has nothing to say)
    assert "\n" not in str(e.value)


def test_a_missing_gpu_keeps_its_type_across_the_process():
    """The backend's NoDevice reaches the coordinator as itself, so that each command words its advice (tune has
    no --backend cpu to suggest)."""
    import importlib.util

    from gpubench.core.errors import NoDevice

    if importlib.util.find_spec("pycuda") is not None:
        pytest.skip("a GPU stack is installed here")
    with pytest.raises(NoDevice) as e:
        Worker(WorkerOptions("cuda")).start()
    assert str(e.value).endswith(", or use --backend cpu")


class Scripted(Worker):
    """A Worker whose 'process' replays scripted events: the coordinator's side alone, without spawning."""

    def __init__(self, scripts):
        super().__init__(WorkerOptions("cpu", timeout_s=1.0))
        self.scripts = scripts
        self.sent = []

    def start(self):
        worker = self
        script = list(self.scripts.pop(0))

        class Conn:
            def send(self, msg):
                worker.sent.append(msg)

            def poll(self, timeout):
                return True

            def recv(self):
                return script.pop(0)

            def close(self):
                pass

        class Proc:
            returncode = 0

            def poll(self):
                return None if script else 0

            def wait(self, timeout=None):
                return 0

            def kill(self):
                pass

        self.conn, self.process, self.info = Conn(), Proc(), {"device": "scripted"}
        return self.info


def test_a_broken_backend_is_replaced_and_the_rest_of_the_task_runs(variants):
    task = shape_task(variants, ["good", "good", "good"])
    p = [Point(GemmShape(24, 24, 24), "good", "-", Status.SKIPPED) for _ in range(3)]
    broken = [Begin(-1), Begin(0), Finished(0, p[0]), Begin(1), Finished(1, p[1]),
              Broken("CUDA error: an illegal memory access was encountered")]
    fresh = [Begin(-1), Begin(2), Finished(2, p[2]), End()]
    worker = Scripted([broken, fresh])
    got = []
    worker.run(task, got.append)
    assert got == p
    assert [i.kind for i in worker.incidents] == ["broken"] and "illegal memory" in worker.incidents[0].detail
    second = worker.sent[-1].task  # the task sent to the fresh worker holds only what was not done
    assert [x.index for x in second.points] == [2]


class SearchingWorker(Worker):
    """A worker whose first calls report a plan search, as a Made(searched=True) from cuDNN's does."""

    def _follow(self, task, on_point, made=None):
        done = super()._follow(task, on_point, made)
        self.searched = made is not None
        return done


def test_a_process_that_searched_plans_is_ended_and_the_sweep_is_timed_in_a_fresh_one(variants):
    got: list[Point] = []
    with SearchingWorker(WorkerOptions("cpu", timeout_s=30.0)) as worker:
        worker.start()
        searched_in = worker.process.pid
        worker.first_calls([shape_task(variants, ["good"]), shape_task(variants, ["good"], size=16)], got.append)
        assert worker.process is None and worker.renewals == 1  # ended once the calls were made
        worker.run(shape_task(variants, ["good"]), got.append)
        assert worker.process.pid != searched_in and worker.restarts == 0  # a fresh process, not a fault's restart
    assert [(p.variant, p.status) for p in got] == [("good", "ok")]
