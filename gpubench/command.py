"""The click group every gpubench command belongs to: whatever ends a command becomes one line on stderr and the
exit code gpubench/core/exit_codes.py gives it (a GpubenchError or a bad option: 2; Ctrl-C: 130; SIGTERM: 143; SIGHUP:
129), never a traceback."""

from __future__ import annotations

import signal
import sys
import threading
import warnings
from contextlib import contextmanager

import click

from gpubench.core.errors import GpubenchError, GpubenchWarning, Terminated, one_line
from gpubench.core.exit_codes import Exit

# Signals that stop a command as Ctrl-C does: `kill`, a CI job's timeout and the end of a Slurm job send SIGTERM;
# a closed terminal sends SIGHUP; batch systems warn of a job's end with SIGUSR1 or SIGUSR2 (whose default action
# would end the process on the spot, leaving its file marked running). SIGQUIT stays the way to end it at once.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
                     if hasattr(signal, name))
_stopping = False  # set by the first stop: the clean-up it starts keeps every stop signal ignored to the end


def _stop(signum, frame):
    # Once, whichever comes first: the clean-up that follows (the last point's save, the file marked interrupted,
    # the workers ended) must not be cut short by a second signal, Ctrl-C included, nor its exit code changed.
    global _stopping
    _stopping = True
    for s in (signal.SIGINT, *STOP_SIGNALS):
        signal.signal(s, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextmanager
def stop_signals_as_interrupts():
    """Ctrl-C raises KeyboardInterrupt, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt), in the main
    thread for the command's length; after the first, every one of them is ignored until the process ends."""
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopping = False
    before = {s: signal.signal(s, _stop) for s in (signal.SIGINT, *STOP_SIGNALS)}
    try:
        yield
    finally:
        if not _stopping:  # a stopped command goes on to its one line and exit deaf to another signal
            for s, handler in before.items():
                signal.signal(s, handler)


class _Stopped(BaseException):
    """A command's KeyboardInterrupt (Ctrl-C, or a stop signal's Terminated) carried past click's main, which
    answers one by writing an empty line to stderr (to close a terminal's ^C) before gpubench's one line."""

    def __init__(self, stop: KeyboardInterrupt):
        super().__init__(stop)
        self.stop = stop


class OneValueEach(click.Command):
    """An option that takes one value and is given twice (`--sizes 16 --sizes 17`, `-o a.json -o b.json`) is
    refused: click kept the last value and dropped the others without a word. Flags and repeatable options
    (--mnk, --kernel) may repeat."""

    def parse_args(self, ctx, args):
        single = {name: o for o in self.params if isinstance(o, click.Option) and not (o.multiple or o.is_flag or o.count)
                  for name in o.opts + o.secondary_opts}
        seen: dict[str, list[str]] = {}  # by the option's first name: -o and --output are one option
        tokens = iter(args)
        for token in tokens:
            if token == "--":
                break
            name, eq, value = token.partition("=") if token.startswith("--") else (token[:2], "", token[2:])
            option = single.get(name if token.startswith("-") else "")
            if option is None:
                continue
            if not eq and not value:  # the value is the next word
                value = next(tokens, "")
            seen.setdefault(option.opts[-1], []).append(value)
        for name, values in seen.items():
            if len(values) > 1:
                raise click.UsageError(f"{name} is given {len(values)} times ({', then '.join(map(repr, values))}): it "
                                       "takes one value (a list is comma-separated), so give it once", ctx)
        return super().parse_args(ctx, args)


class _Commands(click.Group):
    command_class = OneValueEach  # a group's commands (tune gemm)


class OneLineErrors(click.Group):
    """Every user error becomes one line on stderr and exit code 2; commands return their own exit code."""

    command_class = OneValueEach
    group_class = _Commands

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as stop:
            raise _Stopped(stop) from None
        except BrokenPipeError:  # the output's reader left (`gpubench list | head -1`): not this command's failure
            if not _reader_left():  # another pipe (a worker's) broke: that one is an error
                raise
            _quiet_stdout()  # (click's own answer to a closed pipe is exit 1, a failed point's code)
            return Exit.OK

    def main(self, args=None, prog_name=None, **extra):
        if sys.stdout is None:  # started with stdout closed (>&-): what it shows would be lost without a word
            _say("gpubench: error: the standard output is closed (>&-): give it somewhere to write, e.g. >/dev/null",
                 Exit.USAGE)
        warnings.showwarning = _one_line_warnings(warnings.showwarning)
        try:
            with stop_signals_as_interrupts():
                rc = super().main(args=args, prog_name=prog_name or "gpubench", standalone_mode=False, **extra)
        except GpubenchError as e:
            _say(f"gpubench: error: {one_line(str(e))}", Exit.USAGE)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `gpubench`: help, not an error
            click.echo(e.ctx.get_help())
            sys.exit(Exit.OK)
        except click.ClickException as e:
            _say(f"gpubench: error: {one_line(e.format_message())}", Exit.USAGE)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except OSError as e:  # a path or directory the OS refuses (too long, read-only, unwritable cache...)
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            what = e.strerror or str(e) or type(e).__name__
            if not where and isinstance(e, FileNotFoundError) and _cwd_gone():
                what = "the current directory no longer exists (deleted?): cd into one that does"
            _say(f"gpubench: error: {one_line(where + what)}", Exit.USAGE)
        except UnicodeEncodeError as e:  # an output that cannot take the tables' · and × (PYTHONIOENCODING=ascii)
            _say(f"gpubench: error: the output takes only {e.encoding}, and gpubench's tables need more "
                 "(set PYTHONIOENCODING=utf-8)", Exit.USAGE)
        except (click.Abort, KeyboardInterrupt, _Stopped) as e:
            # click turns a KeyboardInterrupt it meets (while parsing) into Abort
            stop = e.__cause__ if isinstance(e, click.Abort) else e.stop if isinstance(e, _Stopped) else e
            signum = stop.signum if isinstance(stop, Terminated) else None
            if signum is None and isinstance(e, _Stopped) and _is_terminal(sys.stderr):
                _say("", None)  # the line break after the terminal's ^C (click's own answer, kept for Ctrl-C)
            _say(f"gpubench: {stop if signum else 'interrupted'}", Exit.stopped_by(signum))
        sys.exit(int(rc) if isinstance(rc, int) else Exit.OK)


def _one_line_warnings(shown):
    """warnings.showwarning for the command line: gpubench's own warnings as one line (`gpubench: warning: ...`),
    any other as `shown` writes it."""
    if getattr(shown, "one_line", False):
        return shown

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, GpubenchWarning):
            _say(f"gpubench: {category.LABEL}: {one_line(str(message))}", None)
        else:
            shown(message, category, filename, lineno, file, line)

    show.one_line = True
    return show


def _say(line: str, code: int | None):
    """The one line on stderr, and the exit code (None: go on), which stands even where stderr cannot be written
    (closed, a full disk, a reader gone)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, UnicodeEncodeError, AttributeError):  # a closed file; AttributeError: None,
        pass  # the stream of a process started with it closed (2>&-)
    if code is None:
        return
    _quiet_stdout()
    sys.exit(code)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def _cwd_gone() -> bool:
    import os

    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def _reader_left() -> bool:
    """Whether stdout is a pipe (or socket) nobody reads any more: the kernel reports POLLERR on it."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture), or no poll
        return False


def _quiet_stdout() -> None:
    """Point stdout at /dev/null where it can no longer be written, so that Python's flush at exit has nowhere
    to fail (and print a traceback about it)."""
    import os

    try:
        sys.stdout.flush()
    except AttributeError:  # no stdout: a process started with it closed
        pass
    except (OSError, ValueError):
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
