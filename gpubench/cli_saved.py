"""The commands that read saved runs and need no GPU: show, compare, plot, report and history. Each parses its
options (gpubench/options.py), calls one use case (gpubench/usecases/commands.py), chooses a view
(gpubench/views/terminal.py) and returns an exit code; gpubench/cli.py puts them in the `gpubench` group."""

from __future__ import annotations

import click

from gpubench import options
from gpubench.core.exit_codes import Exit
from gpubench.options import group
from gpubench.usecases import commands as app
from gpubench.views import terminal


@click.command()
@group(options.SHOWING)
def show(file, example, fmt, threshold):
    """Re-render a saved run (no GPU needed).

    \b
    Examples:
      gpubench show --example               # the H200 lab run shipped with gpubench
      gpubench show run.json --format csv > run.csv
    """
    from gpubench.core import paths

    if (file is None) == (not example):
        raise click.UsageError("give a results FILE or --example (the H200 lab run shipped with gpubench), not both"
                               if example else "give a results FILE, or --example for the run shipped with gpubench")
    if example:
        file = str(paths.example_run())  # its first line names the file: report, plot and compare take it too
    saved = app.load_run(file, threshold)
    with terminal.reader_may_leave():
        terminal.saved_run(saved, file, fmt, threshold, click.echo)
    return Exit.OK


@click.command()
@group(options.COMPARING)
def compare(base, new, threshold, alpha, fmt, strict_env, fail_on_inconclusive, across, allow_partial, clock,
            thresholds):
    """Compare two saved runs point by point and fail only on a real regression.

    \b
    Exit codes:
      0  no significant regression (improvements never fail)
      1  at least one point significantly slower by more than --threshold
      2  usage error, unreadable or incompatible files, a run not complete (without --allow-partial)
      3  only inconclusive results, with --fail-on-inconclusive

    A point whose samples sit in two modes, in either run, is inconclusive rather than slower or faster where the
    two runs share a mode: its median moved because the modes' shares changed, which a rerun can undo. Such a
    point fails CI (3) only with --fail-on-inconclusive; the notes name it and its modes.

    \b
    Examples:
      gpubench compare results/baseline.json new.json
      gpubench compare base.json new.json --format markdown > comment.md
      gpubench compare h100.json h200.json --across      # two GPU models, side by side
      gpubench compare idle.json sustained.json --across # one GPU rested and under sustained load
      gpubench compare a.json b.json --clock kernel      # by CUPTI's kernel times (runs timed with --clock both)
      gpubench compare a.json b.json --thresholds aa.json # each duration class at what an A/A run suggests
    """
    c = app.compare_runs(base, new, threshold, alpha, strict_env, allow_partial, across, clock, thresholds)
    code = Exit.OK if across else c.report.exit_code(fail_on_inconclusive)
    with terminal.reader_may_leave():
        terminal.comparison(c, base, new, fmt, across, code, click.echo)
    return code


@click.command()
@group(options.PLOTTING)
def plot(file, output, force, roofline):
    """Plot a saved run: GFLOPS (GEMM) or GB/s (conv) against size, one line per variant, bands from the spread;
    or, with --roofline, GFLOPS against arithmetic intensity under the GPU's measured ceilings. Needs the plot
    extra: pip install 'gpubench[plot]' (matplotlib).

    \b
    Examples:
      gpubench plot results/nvidia-h200/lab.json.gz -o lab.png
      gpubench plot run.json --roofline -o roofline.svg
    """
    click.echo(f"wrote {app.plot_run(file, output, force, roofline)}")
    return Exit.OK


@click.command()
@group(options.REPORTING)
def report(runs, output, force, threshold, across):
    """One HTML page for saved runs: charts, roofline, the lab's tables, every point with its samples and
    telemetry; each later run compared with the first. Opens offline, prints.

    \b
    Examples:
      gpubench report results/nvidia-h200/lab-a.json.gz -o lab.html
      gpubench report base.json new.json -o compare.html
    """
    click.echo(f"wrote {app.write_report(list(runs), output, force, threshold, across)}")
    return Exit.OK


@click.command()
@group(options.HISTORY)
def history(runs, threshold, alpha, html, force, every):
    """Every point's median across saved runs (files or directories) by commit time, and the commits where it
    stepped; exit 1 when a point's latest change is a slowdown beyond --threshold. Needs the history extra:
    pip install 'gpubench[history]' (ruptures).

    \b
    Examples:
      gpubench history results/nvidia-h200/
      gpubench history ci-runs/ --threshold 0.03 --html history.html
    """
    outcome = app.run_history(list(runs), threshold, alpha, html, force)
    with terminal.reader_may_leave():
        terminal.history(outcome, every, click.echo)
    return outcome.exit_code
