"""What the property batteries (tests/test_properties*.py) share: a stand-in for the worker and the Dask cluster,
so that thousands of generated command lines take seconds while everything in front of them (parsing, the
plan's checks, output paths, the results file) is the real code; and the one assertion every answer must pass:
the documented exit code, no traceback, one line on stderr for an error, and nothing written where it was not
asked for.

The trials this distils ran each case as a real process (its exit code, stderr, the files and processes left behind)
of gpubench installed from its wheel and run from a scratch directory, as a careless or malicious user on a machine
without a GPU, each case written down before it ran: every option and argument, every environment variable gpubench
reads (GPUBENCH_*, CUDA_HOME, XDG_*, HOME, TMPDIR, TERM, COLUMNS, NO_COLOR, LANG and LC_ALL without UTF-8,
PYTHONWARNINGS=error), stdout and stderr closed or full, a reader that leaves (`| head -1`, which is no error), and
stop signals at every stage (SIGINT once and twice, SIGTERM, SIGHUP, SIGUSR1/2, SIGTSTP and SIGCONT) during sweeps,
`--gpus 2`, `--replicate` and the readers of a 20,000-point run. What they found that lives in other modules' tests:
a stop signal during the clean-up no longer cuts it short, SIGUSR1 and SIGUSR2 end a run as SIGTERM does (138, 140),
a user's function that raises KeyboardInterrupt or a BaseException is its point's error rather than the worker's
death, a process a user's kernel forked ends with the run, and a closed stdout is one line on stderr, exit 2. Not
tried: permissions as a user other than root.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from click.testing import CliRunner

from gpubench import ops
from gpubench.cli import cli
from gpubench.core.exit_codes import Exit

SETTINGS = dict(deadline=None, derandomize=True, database=None)
QUICK_SHARE = 4  # the default run takes a quarter of each battery ...
QUICK_LEAST = 25  # ... but never fewer than this many examples


def examples(full: int) -> int:
    """A battery's number of examples: `full` under `pytest --hypothesis-profile=full` (the strength it was written
    with; .ci/run runs it too), a quarter of it by default, so that the README's test command stays quick. The
    examples are derandomized, so both runs see the same ones every time; tools/mutate.py's planted bugs
    (tools/mutations.toml, the `battery` ones) are what the quick share must still catch."""
    from hypothesis import settings

    if settings.get_current_profile_name() == "full":
        return full
    return min(full, max(QUICK_LEAST, full // QUICK_SHARE))

# The exit codes each command may give for any input (gpubench/core/exit_codes.py; nothing really runs here, so a
# sweep never fails a point or finds a slow GPU).
ALLOWED = {
    "gemm": {Exit.OK, Exit.USAGE}, "conv": {Exit.OK, Exit.USAGE}, "run": {Exit.OK, Exit.USAGE},
    "show": {Exit.OK, Exit.USAGE}, "plot": {Exit.OK, Exit.USAGE}, "report": {Exit.OK, Exit.USAGE},
    "compare": {Exit.OK, Exit.FAILED, Exit.USAGE, Exit.INCONCLUSIVE},
    "history": {Exit.OK, Exit.FAILED, Exit.USAGE},
    "list": {Exit.OK, Exit.USAGE}, "check": {Exit.OK, Exit.USAGE}, "tune": {Exit.OK, Exit.USAGE},
    "env": {Exit.OK, Exit.USAGE}, "ab": {Exit.OK, Exit.FAILED, Exit.USAGE, Exit.INCONCLUSIVE},
    "sweep": {Exit.OK, Exit.USAGE}, "profile": {Exit.OK, Exit.USAGE}, "stability": {Exit.OK, Exit.FAILED, Exit.USAGE},
    **{op.name: {Exit.OK, Exit.USAGE} for op in ops.builtin()},  # each op's own command, as gemm's and conv's
}


class StandInWorker:
    """Opens like a CPU worker, refuses like a machine without a GPU, and runs no points."""

    def __init__(self, options, **spread):
        self.options, self.incidents, self.workers = options, [], {}

    def start(self):
        if self.options.backend == "cuda":
            from gpubench.core.errors import NoDevice

            raise NoDevice("PyCUDA is not installed: pip install 'gpubench[gpu]'")
        return {"device": "CPU: stand-in", "arch": None, "max_threads": None, "libraries": {}}

    def environment(self, precisions=None):
        return {"device": {"name": "CPU: stand-in", "kind": "cpu"}, "software": {}}

    def check(self, variants):  # what a real worker imports of a project's Python variants before running
        pass

    def first_calls(self, tasks, on_point):  # ... and their first calls (where Triton compiles)
        return {}, set()

    def run_all(self, work, on_point):
        pass

    def run(self, task, on_point):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def stand_in(monkeypatch) -> None:
    """Replace what would run points (a worker process, a Dask cluster, nvcc) for the rest of a test."""
    from gpubench.execution import cluster
    from gpubench.execution import executors
    from gpubench.execution import nvcc

    monkeypatch.setattr(executors, "Worker", StandInWorker)  # every executor comes from the one factory
    monkeypatch.setattr(cluster, "Cluster", StandInWorker)
    monkeypatch.setattr(nvcc, "compile_all", lambda jobs, threads=None: [])  # compiling is tested in test_nvcc


def invoke(args: list[str]):
    return CliRunner().invoke(cli, args, catch_exceptions=True)


def assert_answered_well(result, command: str) -> None:
    """The documented exit code, no traceback, and an error as one line on stderr saying what is wrong."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code in ALLOWED[command], (result.exit_code, result.output)
    if result.exit_code == Exit.USAGE:
        err = result.stderr
        assert err.startswith("gpubench: error: ") and err.count("\n") == 1, err
        assert err[:-1].isprintable(), err  # no escape sequence from a file name or a corrupt file reaches a terminal
        assert len(err.split(": ", 2)[-1].strip()) > 3, err  # it says something
        assert "the output takes only" not in err, err  # CliRunner's output takes UTF-8: text gpubench made is at fault


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
