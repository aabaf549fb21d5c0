"""How a command ends when it is told to stop: SIGTERM (kill, a CI timeout, the end of a Slurm job), SIGHUP (the
terminal closed) and Ctrl-C stop a real sweep alike: every finished point saved, the run marked interrupted, one
line, the exit code of the table, and no process of the run left behind (the worker, the Dask workers)."""

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from conftest import SIZES, saved_points, start_sweep, survivors

from gpubench import results
from gpubench.execution.cluster import _deaf_to_ctrl_c
from gpubench.core.exit_codes import Exit


def stop_mid_sweep(proc: subprocess.Popen, project: Path, signum: int, roots=()) -> tuple[int, list, str]:
    """Wait for two finished points, note every process of the run (descendants of it, or of `roots`), send the
    signal (Ctrl-C: to the whole process group, as a terminal does); returns the points saved before it, the
    processes and stderr."""
    deadline = time.monotonic() + 90
    while saved_points(project / "r.json") < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep never got going"
        time.sleep(0.05)
    before = saved_points(project / "r.json")
    family = [p for root in roots or [psutil.Process(proc.pid)] for p in root.children(recursive=True)]
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=90)
    return before, family, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2],
                         ids=lambda s: s.name)
def test_a_signal_mid_sweep_keeps_every_finished_point_and_leaves_no_process(slow_project, signum):
    proc = start_sweep(slow_project)
    before, family, err = stop_mid_sweep(proc, slow_project, signum)
    assert proc.returncode == Exit.stopped_by(signum) == 128 + signum
    assert family, "the run had no worker process"
    assert survivors(family) == []
    run = results.load(slow_project / "r.json")
    assert run.status == "interrupted"
    n = len(run.points)
    assert before <= n < len(SIZES)
    assert [p.problem.m for p in run.points] == SIZES[:n] and all(p.status == "ok" for p in run.points)
    how = "interrupted" if signum == signal.SIGINT else f"terminated by {signum.name}"
    assert f"{how}: {n} of {len(SIZES)} points saved to r.json" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_ends_every_dask_worker_without_a_traceback(slow_project, signum):
    pytest.importorskip("distributed")
    proc = start_sweep(slow_project, "--gpus", "2")
    before, family, err = stop_mid_sweep(proc, slow_project, signum)
    assert proc.returncode == 128 + signum, err
    assert len(family) >= 4  # two Dask workers, each with its gpubench worker
    assert survivors(family) == []
    run = results.load(slow_project / "r.json")
    assert run.status == "interrupted" and before <= len(run.points) < len(SIZES)
    assert all(p.status == "ok" for p in run.points)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_a_joined_cluster_outlives_the_run_but_its_gpubench_workers_do_not(slow_project):
    """--scheduler: the Dask workers are not ours to end, but the gpubench worker each runs points in (on a GPU,
    the process holding the device) is ended when the run is stopped."""
    distributed = pytest.importorskip("distributed")
    with _deaf_to_ctrl_c(), distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                     dashboard_address=None, silence_logs=50) as cluster:
        dask_workers = [psutil.Process(n.process.process.pid) for n in cluster.workers.values()]
        proc = start_sweep(slow_project, "--scheduler", cluster.scheduler_address)
        _, ours, err = stop_mid_sweep(proc, slow_project, signal.SIGTERM, roots=dask_workers)
        assert proc.returncode == Exit.TERMINATED, err
        assert len(ours) >= 2 and survivors(ours) == []
        assert all(w.is_running() for w in dask_workers)


def test_a_worker_ends_with_its_coordinator_even_when_that_is_killed_outright(slow_project):
    """SIGKILL cannot be handled: the worker (a session of its own, out of reach of the terminal's signals)
    notices its parent has gone and ends, rather than keep running a point, and the device, for nobody."""
    proc = start_sweep(slow_project, hang_from=SIZES[2])
    _, family, _ = stop_mid_sweep(proc, slow_project, signal.SIGKILL)
    assert family and survivors(family) == []


def test_a_ctrl_c_while_dask_workers_start_is_kept_for_after(tmp_path):
    """The Dask workers start with SIGINT ignored (theirs to inherit); a Ctrl-C meanwhile is kept pending for the
    coordinator, and interrupts it once they are up, rather than being discarded (the run went on to the end)."""
    import sys

    code = ("import signal, threading, time\nfrom gpubench.execution.cluster import _deaf_to_ctrl_c\ntry:\n"
            "    with _deaf_to_ctrl_c():\n        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)\n"
            "        time.sleep(0.2)\n    time.sleep(0.2)\n    print('lost')\nexcept KeyboardInterrupt:\n"
            "    print('kept')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout == "kept\n", p.stdout + p.stderr


def test_what_a_kernel_forks_ends_with_the_run(slow_project):
    """A user's function that starts processes of its own (a pool, a helper): they belong to the worker's session
    and end with it when the run is stopped, rather than outliving it."""
    (slow_project / "k.py").write_text(
        "import os, time\nimport numpy as np\n\ndef slow(A, B, C, M, N, K):\n    pid = os.fork()\n"
        "    if pid == 0:\n        time.sleep(600)\n        os._exit(0)\n"
        "    with open('forked.txt', 'a') as f:\n        f.write(f'{pid}\\n')\n"
        "    time.sleep(0.05)\n    np.matmul(A, B, out=C)\n")
    proc = start_sweep(slow_project)
    stop_mid_sweep(proc, slow_project, signal.SIGTERM)
    assert proc.returncode == Exit.TERMINATED
    forked = [psutil.Process(int(pid)) for pid in (slow_project / "forked.txt").read_text().split()
              if psutil.pid_exists(int(pid))]
    left = survivors(forked)
    for p in left:  # not to outlive the test either
        p.kill()
    assert left == []


def test_what_a_kernel_forks_ends_with_a_run_that_finishes_too(slow_project):
    """The same process, left running by a run that was not stopped: it outlived the run, holding its stdout (a
    pipe's reader, `gpubench gemm ... | tee log`, waited for it)."""
    (slow_project / "k.py").write_text(
        "import os, time\nimport numpy as np\n\ndef slow(A, B, C, M, N, K):\n    pid = os.fork()\n"
        "    if pid == 0:\n        time.sleep(600)\n        os._exit(0)\n"
        "    with open('forked.txt', 'a') as f:\n        f.write(f'{pid}\\n')\n    np.matmul(A, B, out=C)\n")
    proc = start_sweep(slow_project)
    assert proc.wait(timeout=120) == Exit.OK, proc.stderr.read()
    pids = (slow_project / "forked.txt").read_text().split()
    left = survivors([psutil.Process(int(pid)) for pid in pids if psutil.pid_exists(int(pid))])
    for p in left:
        p.kill()
    assert pids and left == []


@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_after_the_first_stop_every_stop_signal_is_ignored(first):
    """The clean-up a stop starts (the last save, the file marked interrupted, the workers ended) must not be cut
    short by a second signal of another kind: SIGTERM and then Ctrl-C 10 ms later ended a run with exit 130 and
    "gpubench: interrupted", the saved count's line lost, the clean-up interrupted wherever it was."""
    from gpubench.command import stop_signals_as_interrupts

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with pytest.raises(KeyboardInterrupt) as stop:
            with stop_signals_as_interrupts():
                os.kill(os.getpid(), first)
                time.sleep(1)  # the handler raises in here
        assert getattr(stop.value, "signum", signal.SIGINT) == first
        for second in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            assert signal.getsignal(second) is signal.SIG_IGN
            os.kill(os.getpid(), second)  # ignored: nothing is raised here
        time.sleep(0.05)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def test_sigterm_then_ctrl_c_keeps_the_terms_code_and_line(slow_project):
    proc = start_sweep(slow_project)
    deadline = time.monotonic() + 90
    while saved_points(slow_project / "r.json") < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    run = results.load(slow_project / "r.json")
    assert proc.returncode == Exit.TERMINATED, err
    assert run.status == "interrupted" and f"terminated by SIGTERM: {len(run.points)} of {len(SIZES)} points" in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1], ids=lambda s: s.name)
def test_a_stop_while_reading_is_one_line_on_stderr(monkeypatch, signum):
    """A stop signal during show, compare, plot or report (no sweep to save): click wrote an empty line to stderr
    before gpubench's own (its answer to a terminal's ^C), so the error was two lines."""
    from click.testing import CliRunner

    from gpubench.usecases import commands
    from gpubench.cli import cli
    from gpubench.core.errors import Terminated

    def stopped(*a, **k):
        raise Terminated(signum)

    monkeypatch.setattr(commands, "load_run", stopped)
    r = CliRunner().invoke(cli, ["show", "any.json"])
    assert r.exit_code == Exit.stopped_by(signum) and r.stderr == f"gpubench: terminated by {signum.name}\n", \
        repr(r.stderr)
