"""The worker process itself: `python -m gpubench.execution.child FD PID`, started by a coordinator's
:class:`~gpubench.execution.worker.Worker`. It opens the backend its options name, then serves the coordinator's
requests (the environment, a check of the variants, first calls, tasks) over the socket pair FD, sending each
event as it happens, until told to stop or until the coordinator (PID) is gone."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection

from gpubench.core import phases
from gpubench.core.errors import GpubenchError
from gpubench.execution import messages as m
from gpubench.execution.tasks import describe_error, first_call, run_task
from gpubench.execution.incidents import end_group
from gpubench.execution.worker import WorkerOptions


def _exit_with(parent: int) -> None:
    """End this process when the one that started it has gone (killed, or a Dask worker shut down): a point
    left running with nobody to report to would only keep the device."""
    while os.getppid() == parent:
        time.sleep(0.5)
    end_group(os.getpid())
    os._exit(1)


def _serve(conn, options: WorkerOptions) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle; it stops us
    if options.device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = options.device  # before any CUDA library loads
    if options.label is not None:
        os.environ["GPUBENCH_WORKER"] = options.label
    from gpubench.core import environment
    from gpubench.backends import open_backend

    try:
        with phases.phase("open backend"):
            backend = open_backend(options.backend)
        conn.send(m.Hello(backend.describe()))
    except Exception as e:  # noqa: BLE001 - whatever stops the backend opening is reported, in one line
        conn.send(m.Refused(e if isinstance(e, GpubenchError) else GpubenchError(describe_error(e))))
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        match request:
            case m.Environment(precisions):
                with phases.phase("environment"):
                    conn.send(m.EnvironmentRecord(environment.collect(backend, precisions)))
            case m.Check(variants):
                try:
                    backend.check(variants)
                    conn.send(m.Checked(None))
                except GpubenchError as e:
                    conn.send(m.Checked(str(e)))
            case m.RunTask(task):
                _stream(conn, "task", run_task(backend, task))
            case m.FirstCall(task):
                _stream(conn, "first call", first_call(backend, task))
            case m.Floor():
                with phases.phase("launch floor"):
                    conn.send(m.FloorTimed(backend.launch_floor_us()))
            case _:  # Stop
                return


def _stream(conn, what: str, events) -> None:
    """Send a task's events as they come, then End; leave at once after Broken."""
    with phases.phase(what):
        for event in events:
            with phases.phase("send"):
                conn.send(event)
            if isinstance(event, m.Broken):
                # A faulted CUDA context makes every clean-up call fail noisily (CuPy's and PyCUDA's
                # finalizers): leave without them. The coordinator starts a fresh process.
                conn.close()
                os._exit(0)
    phases.save("worker")
    conn.send(m.End())


def main(argv: list[str]) -> None:
    """The worker process: `python -m gpubench.execution.child FD PID`, FD one end of a socket pair to the coordinator,
    PID the coordinator's process (this one ends when it does)."""
    threading.Thread(target=_exit_with, args=(int(argv[2]),), daemon=True).start()
    conn = Connection(int(argv[1]))
    try:
        start = conn.recv()
        _serve(conn, start.options)
    except (EOFError, OSError):  # the coordinator went away mid-message: nobody is left to tell
        os._exit(1)


if __name__ == "__main__":
    main(sys.argv)
