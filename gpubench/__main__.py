"""`python -m gpubench` and the `gpubench` script. The command line's own imports (click, rich, NumPy) take a few
hundred milliseconds before command.py's handling of Ctrl-C, SIGTERM and SIGHUP begins: a signal then ends the
process at once with the same one line and exit code, rather than an import's traceback (a KeyboardInterrupt inside
NumPy's import even surfaces as an ImportError)."""

import os
import signal
import sys

from gpubench.core.exit_codes import Exit

STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
              if hasattr(signal, name))


def _stopped_while_starting(signum, frame):
    said = "interrupted" if signum == signal.SIGINT else f"terminated by {signal.Signals(signum).name}"
    try:
        os.write(2, f"gpubench: {said}\n".encode())
    except OSError:
        pass
    os._exit(Exit.stopped_by(None if signum == signal.SIGINT else signum))  # nothing has started: nothing to save


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # deleted: command.py says so once a command needs it
        return None


def main():
    before = {s: signal.signal(s, _stopped_while_starting) for s in STOPS}
    if sys.path and sys.path[0] in ("", _cwd()):  # `python -m gpubench` put the current directory first: a
        del sys.path[0]  # socket.py or numpy.py of the user's there must not be imported for the library's
    from gpubench.cli import cli

    for s, handler in before.items():
        signal.signal(s, handler)
    cli()


if __name__ == "__main__":
    main()
