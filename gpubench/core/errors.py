"""The exceptions that carry a user-facing message, each one line.

:class:`GpubenchError` reaches the terminal as ``gpubench: error: <message>`` with exit code 2 and no traceback
(gpubench/core/exit_codes.py has the whole table). Messages say what is wrong and what is allowed.
"""


class GpubenchError(Exception):
    """A user-facing problem (bad input, missing GPU or library, unreadable file): one line, exit 2."""


class NoDevice(GpubenchError):
    """No GPU to run on (no driver, no device, no PyCUDA or CuPy): args[0] says what is missing; the message adds
    the way around it, which a command without a CPU backend (`tune`) words its own way."""

    ADVICE = "or use --backend cpu"

    def __str__(self) -> str:
        return f"{self.args[0]}, {self.ADVICE}"


class NoDeviceInTheApi(NoDevice):
    """NoDevice where the library API is the caller: the way around it is the functions' keyword, not the flag."""

    ADVICE = 'or pass backend="cpu"'


class OtherBackendOnly(GpubenchError):
    """What was asked runs on another backend only (arrays="torch" on the CPU): the call is fine, the place is not."""


class CompileError(GpubenchError):
    """nvcc rejected a kernel: the message names the file and nvcc's first error; `log` holds nvcc's whole output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class GpubenchWarning(UserWarning):
    """Something worth one line that stops nothing (the command line writes it as ``gpubench: warning: ...``, or
    with the subclass's LABEL)."""

    LABEL = "warning"


class Skip(Exception):
    """This point cannot run here (it does not fit, or the device cannot launch it): recorded as skipped."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the coordinator: stopped like Ctrl-C (finished points kept, workers ended), and
    the exit code names the signal (gpubench/core/exit_codes.py)."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def one_line(text: str) -> str:
    """One line of printable text: whitespace runs become a space, and any other character a terminal or a UTF-8
    writer would not take as it is (an escape sequence, a NUL, a lone surrogate) is written out as Python would."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))


def parser_complaint(e: ValueError) -> str:
    """What a JSON or TOML parser's ValueError says, for a one-line error: Python's limit on an integer's digits
    (4300) advises calling a Python function, which is no advice about a file."""
    text = str(e)
    return "a number has more than 4300 digits" if "integer string conversion" in text else text
