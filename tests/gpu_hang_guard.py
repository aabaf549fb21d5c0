"""A GPU test's guard against a hang. A kernel that waits on a barrier that never completes (a ring slot awaiting
more bytes than its copies bring) holds the whole device call until the call's own limit, and every test after it
with it. Past `GPUBENCH_GPU_TEST_SECONDS` (240 by default) the test's process prints every thread's stack to the
terminal and exits: pytest-xdist reports that test as crashed and starts a new worker, and the run goes on."""

import faulthandler
import os
import sys
from contextlib import contextmanager

DEFAULT_SECONDS = 240.0  # a GPU test compiles its kernels and checks a few problems: a minute at most so far


def seconds() -> float:
    return float(os.environ.get("GPUBENCH_GPU_TEST_SECONDS", DEFAULT_SECONDS))


def terminal_fd(config) -> int:
    """Where the stacks go: the terminal's stderr as pytest keeps it for its own faulthandler (during a test, fd
    capture has put a file in fd 2's place, and the process's exit would take that file with it)."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        return config.stash[fault_handler_stderr_fd_key]
    except (ImportError, KeyError):
        return sys.__stderr__.fileno()


def guard(request):
    """The autouse fixture's body (tests/conftest.py): a test with the gpu marker runs guarded, any other as it is.
    A test that starts a process of its own must end it before the limit: the exit runs no teardown."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    with guarded(request.config):
        yield


@contextmanager
def guarded(config, limit: float | None = None):
    """Run the body with the process's exit armed `limit` seconds on (disarmed when the body ends)."""
    faulthandler.dump_traceback_later(seconds() if limit is None else limit, exit=True, file=terminal_fd(config))
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
