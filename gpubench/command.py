"""The click group every gpubench command belongs to: whatever ends a command becomes one line on stderr and the
exit code gpubench/exit_codes.py gives it (a GpubenchError or a bad option: 2; Ctrl-C: 130), never a traceback."""

from __future__ import annotations

import sys

import click

from gpubench.errors import GpubenchError
from gpubench.exit_codes import Exit


class OneLineErrors(click.Group):
    """Every user error becomes one line on stderr and exit code 2; commands return their own exit code."""

    def main(self, args=None, prog_name=None, **extra):
        try:
            rc = super().main(args=args, prog_name=prog_name or "gpubench", standalone_mode=False, **extra)
        except GpubenchError as e:
            click.echo(f"gpubench: error: {_one_line(str(e))}", err=True)
            sys.exit(Exit.USAGE)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `gpubench`: help, not an error
            click.echo(e.ctx.get_help())
            sys.exit(Exit.OK)
        except click.ClickException as e:
            click.echo(f"gpubench: error: {_one_line(e.format_message())}", err=True)
            sys.exit(Exit.USAGE)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except OSError as e:  # a path or directory the OS refuses (too long, read-only, unwritable cache...)
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            click.echo(f"gpubench: error: {where}{e.strerror or e}", err=True)
            sys.exit(Exit.USAGE)
        except UnicodeEncodeError as e:  # an output that cannot take the tables' · and × (PYTHONIOENCODING=ascii)
            sys.stderr.write(f"gpubench: error: the output takes only {e.encoding}, and gpubench's tables need more "
                             "(set PYTHONIOENCODING=utf-8)\n")
            sys.exit(Exit.USAGE)
        except (click.Abort, KeyboardInterrupt):
            click.echo("gpubench: interrupted", err=True)
            sys.exit(Exit.INTERRUPTED)
        sys.exit(int(rc) if isinstance(rc, int) else Exit.OK)


def _one_line(text: str) -> str:
    return " ".join(text.split())
