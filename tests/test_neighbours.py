"""Listing the other processes on the run's GPU (gpubench/execution/neighbours.py), against a scripted NVML: the
run's own processes left out, what NVML cannot answer recorded as not checked, never raised."""

import sys
from types import SimpleNamespace

import pytest

from gpubench.execution import neighbours, worker as worker_module
from gpubench.execution.neighbours import Watch
from gpubench.execution.worker import Worker, WorkerOptions
from gpubench.results.neighbours import GpuNeighbours, Neighbour, warning

BUS = "00000000:19:00.0"
ME, WORKER, STRANGER, OTHER = 1000, 1001, 4242, 4343


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    def __str__(self):
        return "Not Supported"


class FakeNvml:
    """The pynvml calls the watch makes, answering from `compute` and `graphics` (pid -> bytes, or None)."""

    NVMLError = NVMLError

    def __init__(self, compute=None, graphics=None, refuse=None, refuse_graphics=True):
        self.compute, self.graphics = dict(compute or {}), dict(graphics or {})
        self.refuse, self.refuse_graphics = refuse, refuse_graphics
        self.opened = []
        self.asked = 0  # lists given

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        self.opened.append(bus)
        return "handle"

    @staticmethod
    def _processes(table):
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in table.items()]

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        assert handle == "handle"
        self.asked += 1
        if self.refuse:
            raise self.refuse
        return self._processes(self.compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle):
        if self.refuse_graphics:
            raise NVMLError_NotSupported()
        return self._processes(self.graphics)

    def nvmlSystemGetProcessName(self, pid):
        return b"/usr/bin/python3"


class Executor:
    """What the watch asks of an executor: every process it has started."""

    def __init__(self, *pids):
        self.started = set(pids)

    def pids(self):
        return set(self.started)


def watch(nvml, sessions=None, names=None) -> Watch:
    names = names if names is not None else {STRANGER: "python -m pytest -n 8 tests", OTHER: "train.py"}
    return Watch(BUS, nvml, me=ME, name_of=names.get, session=(sessions or {}).get)


MIB = 2**20


def test_the_run_itself_and_its_workers_are_left_out_and_a_stranger_is_named():
    nvml = FakeNvml({ME: 300 * MIB, WORKER: 600 * MIB, STRANGER: 612 * MIB})
    record = watch(nvml).start(Executor(WORKER))
    assert nvml.opened == [BUS]
    assert record.start == (Neighbour(STRANGER, "python -m pytest -n 8 tests", 612),) and record.unchecked is None
    assert warning(record).startswith("1 other process was computing on this GPU during the run (pid 4242 (python -m "
                                      "pytest -n 8 tests); seen at its start): times and cuDNN's plan choices")


def test_every_worker_and_what_a_worker_started_are_the_runs_own():
    """--processes K (several workers), a launch-floor candidate ended a moment ago but still listed, and a process
    a user's kernel forked from a worker (its session is the worker's): none of them is a neighbour."""
    candidate, forked = 1002, 5555
    nvml = FakeNvml({WORKER: None, 1003: None, candidate: None, forked: None, OTHER: None})
    record = watch(nvml, sessions={forked: WORKER, OTHER: 1}).start(Executor(WORKER, 1003, candidate))
    assert [n.pid for n in record.start] == [OTHER]
    assert record.start[0].used_mib is None  # NVML did not say


def test_a_graphics_context_counts_too_once_per_process():
    nvml = FakeNvml({WORKER: None, STRANGER: 10 * MIB}, graphics={STRANGER: 20 * MIB, OTHER: 5 * MIB},
                    refuse_graphics=False)
    record = watch(nvml).start(Executor(WORKER))
    assert [(n.pid, n.used_mib) for n in record.start] == [(STRANGER, 20), (OTHER, 5)]


def test_nobody_else_is_checked_and_no_warning():
    record = watch(FakeNvml({WORKER: 600 * MIB, ME: None})).start(Executor(WORKER))
    assert record.start == () and record.unchecked is None and warning(record) is None


def test_not_supported_is_recorded_as_not_checked_without_a_warning():
    record = watch(FakeNvml(refuse=NVMLError_NotSupported())).start(Executor(WORKER))
    assert record.start is None and not record.checked
    assert record.unchecked == "NVML could not list the processes on this GPU (Not Supported)"
    assert warning(record) is None


def test_without_nvidia_ml_py_nothing_is_checked(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` fails
    record = Watch(BUS, me=ME).start(Executor(WORKER))
    assert record == GpuNeighbours(unchecked="NVML's Python package (nvidia-ml-py) is not installed")


def test_a_gpu_nvml_cannot_open_is_not_checked():
    class Closed(FakeNvml):
        def nvmlDeviceGetHandleByPciBusId(self, bus):
            raise NVMLError("Not Found")

    record = watch(Closed()).start(Executor(WORKER))
    assert record.start is None and record.unchecked == "NVML could not open the GPU (Not Found)"


@pytest.mark.parametrize("listed,words", [
    ({}, "NVML lists no process on this GPU, not even the run's own worker"),
    ({123456: None, 123457: None}, "NVML does not list the run's own worker"),  # another pid namespace's numbers
])
def test_pids_that_cannot_be_told_from_the_runs_own_are_not_checked(listed, words):
    """A container whose process ids are not the driver's: the run's own worker would be named as a neighbour."""
    record = watch(FakeNvml(listed)).start(Executor(WORKER))
    assert record.start is None and record.unchecked.startswith(words) and warning(record) is None


def test_an_executor_that_does_not_know_its_workers_is_not_checked():
    """A Dask cluster's workers are processes on other hosts (or inside Dask's own workers)."""
    record = watch(FakeNvml({WORKER: None})).start(SimpleNamespace())
    assert record.start is None and "not known here" in record.unchecked


def test_the_end_adds_what_came_during_the_run_and_says_when():
    nvml = FakeNvml({WORKER: None})
    w, executor = watch(nvml), Executor(WORKER)
    record = w.start(executor)
    nvml.compute.update({OTHER: 2 * MIB, 7777: None})  # arrived while the run ran; the worker was renewed too
    executor.started.add(7777)
    record = w.end(executor, record)
    assert record.start == () and [n.pid for n in record.end] == [OTHER] and record.checked
    assert "1 other process was computing on this GPU during the run (pid 4343 (train.py); seen at its end)" \
        in warning(record)


def test_an_end_nvml_refuses_keeps_the_start():
    nvml = FakeNvml({WORKER: None, STRANGER: None})
    w = watch(nvml)
    record = w.start(Executor(WORKER))
    nvml.refuse = NVMLError("Unknown Error")
    record = w.end(Executor(WORKER), record)
    assert [n.pid for n in record.start] == [STRANGER] and record.end is None and not record.checked
    assert record.unchecked == "at the end: NVML could not list the processes on this GPU (Unknown Error)"
    assert "seen at its start" in warning(record)


def test_no_end_look_where_the_start_could_not_look():
    nvml = FakeNvml({})
    w = watch(nvml)
    record = w.start(Executor(WORKER))
    nvml.compute = {WORKER: None, STRANGER: None}
    assert w.end(Executor(WORKER), record) == record


def test_a_name_is_the_command_line_made_printable_else_nvmls():
    nvml = FakeNvml({WORKER: None, STRANGER: None, OTHER: None})
    (first, second) = watch(nvml, names={STRANGER: "a\nb\x1b[31m"}).start(Executor(WORKER)).start
    assert first.name == "a b [31m" and second.name == "/usr/bin/python3"


def test_a_workers_every_process_is_kept_as_its_own(monkeypatch):
    """Worker._spawn keeps each process's id: the kept one, the candidates it ends, a fresh one after a fault."""
    import os

    started, ends = iter([31, 32, 33]), []

    def popen(*args, pass_fds, **kwargs):  # the child's end of the socket kept open, as a child would
        ends.append(os.dup(pass_fds[0]))
        return SimpleNamespace(pid=next(started))

    monkeypatch.setattr(worker_module.subprocess, "Popen", popen)
    w = Worker(WorkerOptions("cpu"))
    for _ in range(3):
        _, conn = w._spawn()
        conn.close()
    for end in ends:
        os.close(end)
    assert w.pids() == {31, 32, 33}


def test_command_line_reads_this_machines_processes():
    import os

    assert "pytest" in neighbours.command_line(os.getpid()) or "python" in neighbours.command_line(os.getpid())
    assert neighbours.command_line(2**31 - 2) is None


def test_a_watch_is_made_for_cuda_runs_only_and_says_why_without_a_gpu_id():
    """`run`, `ab` and `tune` take their watch here: none on the CPU backend; on CUDA one that records why it
    cannot look where the worker named no GPU."""
    from gpubench.core.backend_kind import BackendKind

    assert neighbours.watch_for(BackendKind.CPU, {"pci_bus_id": "00000000:19:00.0"}) is None
    watch = neighbours.watch_for(BackendKind.CUDA, {})
    assert isinstance(watch, Watch) and watch.start(object()).unchecked == "the worker did not say which GPU it runs on"
