"""The exceptions that carry a user-facing message, each one line.

:class:`GpubenchError` reaches the terminal as ``gpubench: error: <message>`` with exit code 2 and no traceback
(gpubench/exit_codes.py has the whole table). Messages say what is wrong and what is allowed.
"""


class GpubenchError(Exception):
    """A user-facing problem (bad input, missing GPU or library, unreadable file): one line, exit 2."""


class CompileError(GpubenchError):
    """nvcc rejected a kernel: the message names the file and nvcc's first error; `log` holds nvcc's whole output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class Skip(Exception):
    """This point cannot run here (it does not fit, or the device cannot launch it): recorded as skipped."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the coordinator: stopped like Ctrl-C (finished points kept, workers ended), and
    the exit code names the signal (gpubench/exit_codes.py)."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")
