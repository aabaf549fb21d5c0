"""Many GPUs: a sweep's tasks spread over Dask workers, one per GPU, each running gpubench's own Worker.

On one node, dask-cuda's LocalCUDACluster starts one Dask worker process per GPU, each pinned to its device
(CUDA_VISIBLE_DEVICES); across nodes, `--scheduler ADDRESS` joins any Dask cluster whose workers own one GPU
each (dask-cuda-worker, dask-jobqueue under Slurm). Inside every Dask worker the points run exactly as on one
GPU: in a gpubench.execution.worker.Worker process with its watchdog, so a kernel that faults or hangs costs its point
and nothing else, whichever GPU it ran on. One isolation mechanism, local or distributed.

Two modes:
  shard      each shape's task goes to whichever worker is free, biggest shapes first; the points come back
             into one run file, each naming the GPU it ran on. A Dask worker that dies loses nothing that
             finished: its unfinished task runs again elsewhere, and the run records it.
  replicate  every worker runs every task: the same suite on every GPU, to find the one that is slow.

Dask is an optional extra (`pip install 'gpubench[cluster]'`; dask-cuda too for `--gpus` on the GPU backend).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import replace

from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import CompileError, GpubenchError, NoDevice
from gpubench.core.gpus import GpuSelection
from gpubench.results import Point
from gpubench.execution.tasks import ShapeTask
from gpubench.execution.worker import Incident, IncidentKind, Worker, WorkerOptions

MISSING = ("multi-GPU runs use Dask, which is not installed: pip install 'gpubench[cluster]' (dask, distributed and, "
           "for --backend cuda, dask-cuda)")

# --- on each Dask worker ----------------------------------------------------------------------------------------

_LOCAL: dict = {}  # this Dask worker's gpubench Worker, kept across tasks (a CUDA context is slow to make)


def _local(options: WorkerOptions) -> Worker:
    worker = _LOCAL.get(options)
    if worker is None:
        from distributed import get_worker

        label = str(get_worker().name)
        worker = _LOCAL[options] = Worker(replace(options, label=label))
        worker.start()
    return worker


def remote_describe(options: WorkerOptions) -> dict:
    """The device this Dask worker's gpubench Worker owns, and its environment."""
    worker = _local(options)
    return {**worker.info, "environment": worker.environment(), "label": worker.options.label}


def remote_check(variants: list, options: WorkerOptions) -> str | None:
    """The variants loaded on this Dask worker (backends.Backend.check): None, or what stops them."""
    try:
        _local(options).check(variants)
    except GpubenchError as e:
        return str(e)
    return None


def remote_first_calls(tasks: list[ShapeTask], options: WorkerOptions) -> tuple[dict, list[dict], str | None]:
    """The first calls made on this Dask worker (Worker.first_calls): (milliseconds by point, incidents, None), or
    what stopped them (code that does not compile)."""
    worker = _local(options)
    before = len(worker.incidents)
    try:
        made, _ = worker.first_calls(tasks, lambda point: None)  # a point recorded there runs again in the sweep
    except GpubenchError as e:
        return {}, [], str(e)
    return made, [i.as_dict() for i in worker.incidents[before:]], None


def remote_run(task: ShapeTask, options: WorkerOptions) -> tuple[str, list[Point], list[dict]]:
    """Run one task here; (this worker's label, the points, incidents) come back as the task's result."""
    worker = _local(options)
    before = len(worker.incidents)
    points: list[Point] = []
    worker.run(task, points.append)
    return worker.options.label, points, [i.as_dict() for i in worker.incidents[before:]]


def remote_stop() -> int:
    """The run was stopped: end this Dask worker's gpubench Workers now (their points, their GPU); returns how many."""
    workers = list(_LOCAL.values())
    _LOCAL.clear()
    for worker in workers:
        worker.stop()
    return len(workers)


# --- the coordinator ----------------------------------------------------------------------------------------------


@contextmanager
def _deaf_to_ctrl_c():
    """Dask worker processes started in here ignore SIGINT (a disposition a child inherits): Ctrl-C in the
    terminal reaches the whole process group, and it is the coordinator's to handle (it ends them), not theirs
    to print tracebacks about. SIGINT is blocked in this thread meanwhile too, so that one which comes is kept
    pending for it rather than discarded, and interrupts the command once the workers are up (unless a thread
    from before, such as a BLAS thread of NumPy's, takes it: the kernel may hand it any thread not blocking it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending one is delivered here


@contextmanager
def _workers_must_start():
    """A local Dask cluster whose workers cannot start (their Python cannot be run, no process or memory left, a
    port refused) raises "Nanny failed to start." with the reason several causes down: one line naming that."""
    try:
        yield
    except (RuntimeError, OSError, TimeoutError) as e:
        root = e
        while root.__cause__ is not None and root.__cause__ is not root:
            root = root.__cause__
        why = f"{type(root).__name__}: {root}" if root is not e else str(e)
        raise GpubenchError(f"--gpus: the local Dask workers could not start ({why})") from None


class Cluster:
    """Runs tasks on Dask workers (the Executor that gpubench/execution/sweep.py drives), in shard or replicate mode."""

    def __init__(self, options: WorkerOptions, *, gpus: GpuSelection | None = None, scheduler: str | None = None,
                 replicate: bool = False):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise GpubenchError(MISSING) from None
        self.options, self.replicate = options, replicate
        self.incidents: list[Incident] = []
        self._local_cluster = None
        # Dask starts its worker processes as `python -c ...`, which puts the current directory first on their
        # path: a socket.py or numpy.py of the user's there would be imported for the library's (PYTHONSAFEPATH).
        os.environ["PYTHONSAFEPATH"] = "1"
        if scheduler:
            try:
                self.client = Client(scheduler, timeout="30s")
            except (OSError, TimeoutError, ValueError) as e:  # ValueError: an address Dask cannot parse
                raise GpubenchError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({e})") from None
        elif options.backend == BackendKind.CUDA:
            try:
                from dask_cuda import LocalCUDACluster
            except ImportError:  # Dask itself is there (imported above): name the part that is not
                raise GpubenchError("multi-GPU runs on the GPU need dask-cuda (one Dask worker per GPU), which is not "
                                    "installed: pip install 'gpubench[cluster]'") from None
            from gpubench.measure.telemetry import device_count

            visible = (gpus or GpuSelection()).visible(device_count())
            with _deaf_to_ctrl_c(), _workers_must_start():
                self._local_cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, threads_per_worker=1,
                                                       dashboard_address=None, silence_logs=50)
            self.client = Client(self._local_cluster)
        else:  # the CPU backend: N worker processes, to try (and test) the mechanism without a GPU
            n = (gpus or GpuSelection()).workers()
            with _deaf_to_ctrl_c(), _workers_must_start():
                self._local_cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                   dashboard_address=None, silence_logs=50)
            self.client = Client(self._local_cluster)
        self.workers: dict[str, dict] = {}  # address -> describe()
        self.info: dict | None = None

    # -- life cycle --

    def start(self) -> dict:
        """Every worker's device, checked alike; returns the first one's description (the plan needs one)."""
        from distributed import wait

        addresses = list(self.client.scheduler_info()["workers"])
        if not addresses:
            raise GpubenchError("the Dask cluster has no workers")
        futures = {a: self.client.submit(remote_describe, self.options, workers=[a], allow_other_workers=False,
                                         pure=False) for a in addresses}
        wait(list(futures.values()))
        for address, future in futures.items():
            if future.status == "error":
                e = future.exception()
                kind = NoDevice if isinstance(e, NoDevice) else GpubenchError
                raise kind(f"Dask worker {address} could not open the {self.options.backend} backend: "
                           f"{e.args[0] if isinstance(e, NoDevice) else e}")
            self.workers[address] = future.result()
        archs = {w.get("arch") for w in self.workers.values()}
        if len(archs) > 1:
            raise GpubenchError(f"the cluster's GPUs differ in architecture ({', '.join(map(str, archs))}): kernels "
                                "compile per architecture, so run each kind on its own")
        self.info = next(iter(self.workers.values()))
        return self.info

    def check(self, variants: list) -> None:
        """What the variants need, loaded on one worker (the others share the project's files) before any point."""
        error = self.client.submit(remote_check, variants, self.options, workers=[next(iter(self.workers))],
                                   pure=False).result()
        if error:
            raise GpubenchError(error)

    def first_calls(self, tasks: list[ShapeTask], on_point) -> tuple[dict, set]:
        """The Python variants' first calls (Worker.first_calls) made on one worker before any point: CompileError
        for code that does not compile; the other workers compile at their own first points. A first call that
        faults or hangs there is an incident, and its point runs in the sweep as any other (on every GPU where
        the run is replicated): none is recorded here."""
        if not tasks:
            return {}, set()
        made, incidents, error = self.client.submit(remote_first_calls, tasks, self.options,
                                                    workers=[next(iter(self.workers))], pure=False).result()
        if error:
            raise CompileError(error)
        self.incidents += [Incident(**i) for i in incidents]
        return made, set()

    def environment(self, precisions=None) -> dict:
        """The first device's environment, with every device listed under `devices` (each read when its worker
        started, before the plan was known: every precision's ceiling)."""
        workers = sorted(self.workers.values(), key=lambda w: w["label"])
        env = dict(workers[0]["environment"])
        env["devices"] = [{"worker": w["label"], **w["environment"].get("device", {})} for w in workers]
        return env

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self._local_cluster is not None:
                self._local_cluster.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- running --

    def device_of(self, label: str) -> str:
        """What a point records as its GPU: name, PCI bus id and UUID where known; the worker's name where those
        do not tell the devices apart (CPU workers)."""
        def describe(w):
            d = w["environment"].get("device", {})
            bits = [d.get("name"), d.get("pci_bus_id"), (d.get("telemetry") or {}).get("uuid")]
            return " ".join(str(b) for b in bits if b)

        names = [describe(w) for w in self.workers.values()]
        for w in self.workers.values():
            if w["label"] == label:
                name = describe(w)
                return name if name and names.count(name) == 1 else f"{name} (worker {label})".strip()
        return f"worker {label}"

    def run_all(self, work: list[ShapeTask], on_point) -> None:
        ordered = sorted(work, key=lambda t: -t.shape.flops)  # the biggest shapes first: least waiting at the end
        self._pinned: dict = {}  # replicate mode: future -> the worker it must run on
        if self.replicate:
            for a in self.workers:
                for t in ordered:
                    f = self.client.submit(remote_run, t, self.options, workers=[a], allow_other_workers=False,
                                           pure=False)
                    self._pinned[f] = a
            futures = list(self._pinned)
        else:
            futures = [self.client.submit(remote_run, t, self.options, pure=False, priority=len(ordered) - i)
                       for i, t in enumerate(ordered)]
        try:
            self._collect(futures, on_point)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP
            self._stop(futures)
            raise

    def _stop(self, futures: list) -> None:
        """No task goes on anywhere and no gpubench worker keeps its GPU: a cluster of our own is closed next, but
        the workers of one joined through --scheduler outlive this process."""
        self.client.cancel(futures)
        try:
            self.client.run(remote_stop)
        except Exception:  # noqa: BLE001 - a worker already gone has nothing left to stop
            pass

    def _collect(self, futures: list, on_point) -> None:
        """Each task's points as it finishes, in whatever order the workers finish them."""
        from distributed import as_completed

        pending = set(futures)
        for future in as_completed(futures, with_results=False):
            pending.discard(future)
            if future.status == "cancelled":
                continue
            if future.status == "error":
                self.incidents.append(Incident(IncidentKind.DIED, "a task", f"{type(future.exception()).__name__}: "
                                                                 f"{future.exception()}"))
                continue
            label, points, incidents = future.result()
            device = self.device_of(label)
            for i in incidents:
                self.incidents.append(Incident(i["kind"], f"{device}: {i['where']}", i["detail"], i["time"]))
            for p in points:
                on_point(replace(p, device=device))
            self._notice_departures(pending)

    def _notice_departures(self, pending: set) -> None:
        """Record workers that left mid-sweep (Dask reruns their unfinished tasks elsewhere; in replicate mode a
        task pinned to a departed worker cannot run anywhere else, so it is cancelled and recorded)."""
        alive = set(self.client.scheduler_info()["workers"])
        for address in [a for a in self.workers if a not in alive]:
            info = self.workers.pop(address)
            note = "its unfinished task ran again on another worker" if not self.replicate else \
                "its remaining tasks were cancelled"
            self.incidents.append(Incident(IncidentKind.DIED, f"Dask worker {info['label']} ({address})",
                                           f"left mid-sweep; {note}", time.time()))
            for f in [f for f in pending if self._pinned.get(f) == address]:
                f.cancel()
