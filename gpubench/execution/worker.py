"""Worker processes: each owns one device and runs tasks, so the coordinator survives whatever a kernel does.

A kernel can fault (an out-of-bounds write leaves a sticky error that poisons the whole CUDA context), crash the
process, or never finish. So points never run in the process that keeps the results. The coordinator holds a
:class:`Worker`: a child process (a fresh interpreter, `python -m gpubench.execution.child`, so it starts with no CUDA
state, and so it may be started from inside a Dask worker, whose daemon processes may not fork children of
their own through multiprocessing) that talks over a socket pair, opens the backend and runs
:class:`~gpubench.execution.tasks.ShapeTask` after task, sending back each finished point at once. The coordinator
watches every step with a watchdog. When a point

* raises and leaves the backend unhealthy (a sticky CUDA error), the worker records it as an error and exits;
* kills the process (a segfault), the coordinator records the point as an error with the cause (the OOM killer:
  skipped, as any point that does not fit in memory is);
* runs past the watchdog, the coordinator kills the process and records the point as timed out;

and in each case starts a fresh process, in a fresh context, for the task's remaining points. Nothing finished
is lost: it was already sent. The same Worker runs inside each Dask worker when a sweep spans several GPUs
(gpubench/execution/cluster.py), so isolation works one way everywhere.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable

from gpubench.execution import launch_floor, messages as m
from gpubench.execution.incidents import Incident, IncidentKind, end_group, exit_text, oom_kills
from gpubench.core.dtypes import DType
from gpubench.core.errors import CompileError, GpubenchError
from gpubench.results import Point, Status
from gpubench.execution.tasks import SETUP, ShapeTask, first_call_key, unmeasured

DEFAULT_TIMEOUT_S = 300.0  # the watchdog: generous for one point (the lab's slowest takes a few seconds)
START_TIMEOUT_S = 180.0  # opening a backend: CUDA context, libraries, the copy-bandwidth probe


@dataclass(frozen=True)
class WorkerOptions:
    backend: str
    device: str | None = None  # CUDA_VISIBLE_DEVICES for the process (None: inherit the parent's)
    timeout_s: float = DEFAULT_TIMEOUT_S
    label: str | None = None  # the worker's name in a cluster (GPUBENCH_WORKER in the process)
    candidates: int = 1  # processes opened at each start, the one with the lowest launch floor kept (launch_floor.py)


class Worker:
    """One worker process, started on first use and again after every fault."""

    def __init__(self, options: WorkerOptions):
        self.options = options
        self.process = None
        self.conn = None
        self.info: dict | None = None  # the backend's describe(): device, arch, limits, libraries
        self.incidents: list[Incident] = []
        self.starts = 0
        self.stopped = False  # the run was stopped (stop()): no process is started again
        self.provisional: dict[int, Point] = {}  # the running task's points finished but for their energy
        self.searched = False  # the process ran a library's plan search (first_calls then ends it)
        self.renewals = 0  # processes ended after a plan search, not for a fault
        self.floors_us: list[float] = []  # the last start's candidates' launch floors, the kept one first
        self.spawned: list[int] = []  # every process started here, kept or not (pids: the run's own on the GPU)

    def pids(self) -> set[int]:
        """Every process this Worker has started: the run's own, when other processes on the GPU are listed
        (gpubench/execution/neighbours.py)."""
        return set(self.spawned)

    @property
    def restarts(self) -> int:
        return max(0, self.starts - 1)

    # -- life cycle --

    def start(self) -> dict:
        """A fresh process with its backend open: its describe(). Where options.candidates > 1, that many open at
        once (a second batch where their launch floors do not tell the groups apart) and the one whose launches
        cost least is kept (launch_floor.py); the others are ended. A candidate that cannot open (a GPU in
        exclusive-process mode admits one context) is dropped; the start fails only where none opens."""
        self.starts += 1
        spawned, opened, infos, floors, refusals = [], [], [], None, []
        try:
            for _ in range(launch_floor.BATCHES if self.options.candidates > 1 else 1):
                for _ in range(self.options.candidates):
                    spawned.append(self._spawn())
                batch = spawned[-self.options.candidates:]
                for each in batch:
                    try:
                        infos.append(self._hello(*each))
                        opened.append(each)
                    except GpubenchError as refused:
                        refusals.append(refused)
                        self._reap()
                if not opened:
                    raise refusals[0]
                floors = self._floors(opened)
                if floors is None or launch_floor.contrasted(floors):
                    break
        except BaseException:  # Ctrl-C while they start, or no candidate opened: leave nothing behind
            for each in spawned:
                self.process, self.conn = each
                self._reap()
            raise
        keep = 0 if floors is None else launch_floor.chosen(floors)
        self.floors_us = [] if floors is None else launch_floor.recorded(floors, keep)
        for i, each in enumerate(opened):
            if i != keep:
                self.process, self.conn = each
                self.close()
        self.process, self.conn = opened[keep]
        self.info = infos[keep]
        return self.info

    def _spawn(self) -> tuple[subprocess.Popen, Connection]:
        """A child process, told its options (it opens its backend and answers Hello or Refused)."""
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])  # the same gpubench, however it was found
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        # A session of its own: Ctrl-C in the terminal reaches the coordinator alone, which then ends the worker.
        # -P: the current directory is not put first on its path, so that a socket.py or numpy.py of the user's
        # there is never imported for the library's (a project's own modules are found beside them: user_code).
        process = subprocess.Popen([sys.executable, "-P", "-m", "gpubench.execution.child", str(theirs.fileno()),
                                    str(os.getpid())],
                                   pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        self.spawned.append(process.pid)
        theirs.close()
        conn = Connection(ours.detach())
        conn.send(m.Start(self.options))
        return process, conn

    def _hello(self, process, conn) -> dict:
        self.process, self.conn = process, conn
        match self._receive(START_TIMEOUT_S, "opening the backend"):
            case m.Refused(error):  # the backend's own error (its type too: NoDevice is worded by the command)
                raise error if isinstance(error, GpubenchError) else GpubenchError(str(error))
            case m.Hello(info):
                return info
            case answer:
                raise GpubenchError(f"the {self.options.backend} worker answered {answer!r:.80} to its options")

    def _floors(self, opened: list) -> list[list[float]] | None:
        """Each opened process's launch floor, timed by each in turn, ROUNDS times (launch_floor.py); None where
        there is one process, or where the backend launches nothing (the CPU)."""
        if len(opened) == 1:
            return None
        floors: list[list[float]] = [[] for _ in opened]
        for _ in range(launch_floor.ROUNDS):
            for i, each in enumerate(opened):
                self.process, self.conn = each
                self.conn.send(m.Floor())
                us = self._receive(START_TIMEOUT_S, "timing its launch floor").us
                if us is None:
                    return None
                floors[i].append(us)
        return floors

    def _alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _exitcode(self) -> int | None:
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """End the process at once, from any thread, and start no other: the run was stopped (a Dask worker told
        so by its coordinator; the task running here then ends with an error nobody waits for)."""
        self.stopped = True
        process = self.process
        if process is not None and process.poll() is None:
            end_group(process.pid)

    def _ensure_started(self) -> None:
        if self.stopped:
            raise GpubenchError("the run was stopped")
        if not self._alive():
            self._reap()
            self.start()

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.send(m.Stop())
            except (OSError, BrokenPipeError):
                pass
        if self._exitcode() is not None:  # ended and reaped: a process a user's kernel forked and left running
            end_group(self.process.pid)  # keeps the group (and its number) alive; it would outlive the run,
        self._reap()  # holding the run's stdout (`gpubench gemm ... | tee log` waited for it)

    def _reap(self) -> None:
        """Make sure the process is gone (killing it if need be), with any process a kernel forked, and forget it."""
        if self.process is not None:
            if self.process.returncode is None:  # not reaped yet, so its number still names its group alone
                end_group(self.process.pid)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests --

    def _receive(self, timeout_s: float, doing: str):
        """The next message, or GpubenchError if the process died or stayed silent past timeout_s."""
        if not self.conn.poll(timeout_s):
            self._reap()
            raise GpubenchError(f"the {self.options.backend} worker did not answer within {timeout_s:.0f} s while "
                                f"{doing}")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            code = self._exitcode()
            self._reap()
            raise GpubenchError(f"the {self.options.backend} worker died while {doing} ({exit_text(code)})") from None

    def environment(self, precisions: list[DType] | None = None) -> dict:
        """The environment the run records, its ceilings measured for `precisions` (None: every one)."""
        self._ensure_started()
        self.conn.send(m.Environment(precisions))
        return self._receive(START_TIMEOUT_S, "reading the environment").record

    def check(self, variants: list) -> None:
        """The backend loads what the variants need (backends.Backend.check): GpubenchError if one cannot."""
        self._ensure_started()
        self.conn.send(m.Check(variants))
        error = self._receive(START_TIMEOUT_S, "loading the variants").error
        if error:
            raise GpubenchError(error)

    def first_calls(self, tasks: list[ShapeTask], on_point: Callable[[Point], None]) -> tuple[dict, set]:
        """Each task's one point prepared before the sweep (tasks.first_call): a Python variant's first call (where
        it compiles: CompileError, one line, for the first whose code does not compile), or a library's plan search.
        A first call that faults, hangs past the watchdog or kills the process is that point's outcome, recorded as
        run() records it (an incident, the point to on_point, a fresh process for the rest). A process that
        searched plans is ended once the calls are made, and the sweep is timed in a fresh one that reads the
        choices kept (tasks.first_calls says why). Returns the first calls' milliseconds and the points recorded
        here, both by runner.first_call_key."""
        made: dict[tuple, float] = {}
        done: set[tuple] = set()
        try:
            for task in tasks:
                self._ensure_started()
                self.conn.send(m.FirstCall(task))
                if self._follow(task, on_point, made):
                    done.add(first_call_key(task, task.points[0]))
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the call cut short goes, and its process (the GPU too)
            self._reap()
            raise
        if self.searched:
            self.renew()
        return made, done

    def renew(self) -> None:
        """End the process in good order; the next request starts a fresh one (not counted as a restart: it
        replaces no fault). Not spawned while the searches run: a process opening then would read NVML's idle
        clock off a busy GPU (telemetry.Nvml), and every point's throttle flags are set against it."""
        self.searched = False
        if self._alive():
            self.close()
            self.renewals += 1
            self.starts -= 1

    def run_all(self, work: list[ShapeTask], on_point: Callable[[Point], None]) -> None:
        for task in work:
            self.run(task, on_point)

    def run(self, task: ShapeTask, on_point: Callable[[Point], None]) -> None:
        """Run every point of the task, whatever happens to the process; on_point gets each one as it finishes."""
        pending = task
        try:
            while pending.points:
                self._ensure_started()
                self.conn.send(m.RunTask(pending))
                pending = pending.without(self._follow(pending, on_point))
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the point cut short goes, and its process (the GPU too)
            self._keep_provisional(set(), on_point)  # finished but for their energy: saved as they are
            self._reap()
            raise

    def _follow(self, task: ShapeTask, on_point, made: dict | None = None) -> set[int]:
        """Read the task's events until it ends or the worker is lost; returns the indices now recorded. A first
        call's events (runner.first_call) add its milliseconds to `made`, or end in CompileError."""
        done: set[int] = set()
        self.provisional = {}
        rejected = None
        current = SETUP
        timeout = self.options.timeout_s
        oom_before = oom_kills()
        while True:
            if not self.conn.poll(timeout):
                what = self._where(task, current)
                self.incidents.append(Incident(IncidentKind.TIMEOUT, what,
                                               f"no answer within {timeout:g} s; worker restarted"))
                self._reap()
                self._keep_provisional(done, on_point)
                return done | self._record_lost(task, current, done, Status.TIMEOUT,
                                                f"timed out after {timeout:g} s (--timeout); the worker was restarted",
                                                on_point)
            try:
                event = self.conn.recv()
            except (EOFError, OSError):
                code = self._exitcode()
                what = self._where(task, current)
                self.incidents.append(Incident(IncidentKind.DIED, what, exit_text(code)))
                self._reap()
                self._keep_provisional(done, on_point)
                if code == -signal.SIGKILL and oom_kills() > oom_before:  # the kernel ran out of host memory
                    return done | self._record_lost(task, current, done, Status.SKIPPED,
                                                    "does not fit in host memory: the kernel's OOM killer ended the "
                                                    "worker process; a new one took over", on_point)
                return done | self._record_lost(task, current, done, Status.ERROR,
                                                f"the worker process died ({exit_text(code)}); a new one took over",
                                                on_point)
            match event:
                case m.Begin(index):
                    current = index
                case m.Provisional(index, point):
                    self.provisional[index] = point
                case m.Finished(index, point):
                    self.provisional.pop(index, None)
                    done.add(index)
                    on_point(point)
                case m.Broken(reason):
                    self.incidents.append(Incident(IncidentKind.BROKEN, self._where(task, current), reason))
                    self._exitcode()
                    self._reap()
                    self._keep_provisional(done, on_point)
                    return done
                case m.Made(index, ms, searched):
                    made[first_call_key(task, next(p for p in task.points if p.index == index))] = ms
                    self.searched |= searched
                case m.Rejected(message):
                    rejected = message
                case m.End():
                    self._keep_provisional(done, on_point)  # none: the task sends every point before it ends
                    if rejected:
                        raise CompileError(rejected)
                    return done

    def _keep_provisional(self, done: set[int], on_point) -> None:
        """The points the worker sent as finished but for their energy (gpubench/execution/energy_queue.py), recorded as they
        are: the process that was to read their energy is gone (a later point faulted, hung or killed it, or the
        run was stopped)."""
        for index in sorted(self.provisional):
            done.add(index)
            on_point(self.provisional[index])
        self.provisional = {}

    @staticmethod
    def _where(task: ShapeTask, current: int) -> str:
        shape = f"{task.shape.op} {task.shape.full_label}"
        if current == SETUP:
            return f"{shape} (inputs and reference)"
        p = next(p for p in task.points if p.index == current)
        return f"{shape} {p.variant.name} {p.config.label}"

    @staticmethod
    def _record_lost(task, current, done, status, reason, on_point) -> set[int]:
        """The running point gets the status; if the shape's setup was running, every point left does."""
        lost = [p for p in task.points if p.index not in done and (current == SETUP or p.index == current)]
        if current == SETUP:
            reason = "making the inputs and reference: " + reason
        for p in lost:
            on_point(unmeasured(task.shape, p, status, reason))
        return {p.index for p in lost}
