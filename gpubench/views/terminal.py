"""What the commands print: a run's tables, the catalog, kernel checks, a saved run in the format asked for.
The use cases (gpubench/usecases/commands.py) return what these show; the click commands choose which."""

from __future__ import annotations

import signal
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table as RichTable

from gpubench.core.paths import shown_path
from gpubench.results import RunStatus, neighbours
from gpubench.specs.variant import Axis
from gpubench.views import compare as compare_view
from gpubench.views import run as run_view
from gpubench.views.tables import escape, plural, to_markdown, to_rich


class _Console(Console):
    """rich's console, except that a pipe closed by its reader is the caller's to handle (reader_may_leave):
    rich's own answer is to exit 1, which is compare's exit code for a regression; and with no automatic
    highlighting (gpubench styles what it means to), whose regular expressions take time quadratic in a line's
    length: a 100,000-character name from a file took compare 47 s."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, highlight=False, **kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def console(stderr: bool = False) -> Console:
    """A console that keeps wide tables whole when output goes to a file or a pipe."""
    try:
        c = _Console(stderr=stderr)
    except ValueError:  # COLUMNS or LINES that str.isdigit takes and int() does not (², a 5000-digit number)
        return _Console(stderr=stderr, width=160, height=25)
    return c if c.is_terminal else _Console(stderr=stderr, width=max(c.width, 160))


def print_run(run, out: Console, threshold: float = run_view.NOISE_THRESHOLD) -> None:
    for table in run_view.run_tables(run, threshold):
        out.print(to_rich(table))
        out.print()


def _aa_tables(run) -> list:
    """A stability run's A/A tables (gpubench/views/stability.py), by the events and, where its runs kept them, by
    the kernels' own times; none for another run, or one of a single run."""
    from gpubench.analysis import stability
    from gpubench.measure.kernel_clock import CompareClock
    from gpubench.views import stability as stability_view

    if not stability.is_stability(run) or run.settings[stability.KEY].get("runs", 0) < 2:
        return []
    clocks = [CompareClock.EVENTS, CompareClock.KERNEL] if stability.has_kernel_times(run) else [CompareClock.EVENTS]
    return [t for clock in clocks for t in stability_view.tables(stability.analyse(run, clock=clock))]


def saved_run(saved, name: str, fmt: str, threshold: float, echo) -> None:
    """`gpubench show`: a saved run (app.SavedRun) as tables, Markdown, CSV or its JSON; a stability run with its
    A/A tables after the run's own."""
    run = saved.run
    company = neighbours.warning(neighbours.of(run.settings))
    if fmt == "json":
        echo(run.to_json())
    elif fmt == "csv":
        echo(run_view.to_csv(run), nl=False)
    elif fmt == "markdown":
        echo("\n".join(to_markdown(t) for t in run_view.run_tables(run, threshold) + _aa_tables(run)))
        if company:
            echo(f"\n> {company}")
    else:
        out = console()
        status = str(run.status)
        if saved.abandoned:
            status += " (but no gpubench run is writing it: ended outright?)"
        points = plural(len(run.points), "point")
        out.print(escape(f"{shown_path(name)}: {run.device}, {points}, {status}, {run.created}"), style="bold")
        if company:
            out.print(f"[yellow]{escape(company)}[/]")
        print_run(run, out, threshold)
        for table in _aa_tables(run):
            out.print(to_rich(table))
            out.print()


@contextmanager
def reader_may_leave():
    """Printing into a pipe whose reader stops early (`gpubench compare ... | head`): the rest of the output is
    dropped, and the command still exits with its own code, not as if it had failed (compare's exit code is the
    verdict a CI gate reads)."""
    import os
    import sys

    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # Python flushes stdout again at exit: let that go nowhere
        os.dup2(devnull, sys.stdout.fileno())


def comparison(c, base: str, new: str, fmt: str, across: bool, code: int, echo) -> None:
    """`gpubench compare`: verdicts (or, --across, two GPU models side by side) as tables, Markdown or JSON."""
    if fmt == "json":
        echo(compare_view.to_json_report(c.report, code))
    elif across:
        tables = compare_view.across_tables(c.report, c.base.device, c.new.device)
        if fmt == "markdown":
            echo("\n".join(to_markdown(t) for t in tables))
        else:
            for t in tables:
                console().print(to_rich(t))
    elif fmt == "markdown":
        echo(compare_view.to_markdown_report(c.report, shown_path(base), shown_path(new)))
    else:
        compare_view.print_rich(c.report, console(), shown_path(base), shown_path(new))


AXES = {Axis.BLOCK: "block sizes", Axis.NONE: "-", Axis.TUNED: "per shape, from `gpubench tune`"}


def listing(found) -> None:
    """`gpubench list`: the variants, the shipped suites, the project."""
    table = RichTable("op", "backend", "variant", "configurations", "what it is", "from", title="variants",
                      title_justify="left")
    for v in found.variants:
        axis = AXES.get(v.space.axis) or ", ".join(c.label for c in v.space.configs)
        where = "gpubench" if v.entry.builtin else str(v.entry.origin)
        extra = "" if v.entry.lab or not v.entry.builtin else " (extra)"
        table.add_row(*(escape(x) for x in (v.op, v.backend, v.name + extra, axis, v.entry.summary, where)))
    out = console()
    out.print(table)
    shipped = RichTable("suite", "what it runs", title="suites (gpubench run NAME)", title_justify="left")
    for name, description in found.suites:
        shipped.add_row(escape(name), escape(description))
    out.print(shipped)
    if found.project.path:
        out.print(escape(f"project: {found.project.path}"))


def checks(project, rows) -> None:
    """`gpubench check`: the project, then each build and whether nvcc took it."""
    out = console()
    out.print(escape(f"project: {project.path or 'none found'}; {len(project.variants)} variant(s) of your own, "
                     "specs valid"))
    for v, c, a, error in rows:
        status = "[green]ok[/]" if error is None else "[red]failed[/]"
        out.print(f"{status} {escape(f'{v.op} {v.name} {c.label} {a}')}")
    if rows and all(e is None for *_, e in rows):
        out.print(f"{len(rows)} builds compiled")


class LiveDisplay:
    """A run session on the terminal: notes and a progress bar on stderr (gone once the run ends)."""

    def __init__(self, notes: tuple[str, ...] = ()):
        self.err = console(stderr=True)
        self.notes = list(notes)  # said once the run has passed its checks (with its first progress bar)

    def skipped(self, what: str, why: str) -> None:
        self.err.print(f"[dim]{escape(f'skipped {what}: {why}')}[/]")

    def unlocked_clocks(self, t: dict) -> None:
        self.err.print(f"[yellow]note:[/] SM clocks are not locked (idle at {t.get('sm_clock_idle_mhz')} MHz, up to "
                       f"{t.get('sm_clock_max_mhz')} MHz): each point records its clocks, and steadier numbers come "
                       f"with `sudo nvidia-smi -lgc {t.get('sm_clock_max_mhz')}` (undo: `sudo nvidia-smi -rgc`)")

    @contextmanager
    def progress(self, label: str, total: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        while self.notes:
            self.err.print(f"[yellow]note:[/] {escape(self.notes.pop(0))}")
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.err, transient=True) as progress:
            bar = progress.add_task(label, total=total)

            def advance(point) -> None:
                progress.update(bar, advance=1, description=escape(
                    f"{point.op} {point.variant} {point.config} {point.problem.label}"))

            yield advance


def chosen_line(floors: list[float]) -> str:
    """Which worker timed the run: the kept launch floor of how many candidates (gpubench/execution/launch_floor.py)."""
    others = ", ".join(f"{f:.3f}" for f in floors[1:])
    return (f"timed in the process whose empty launch cost least: {floors[0]:.3f} µs, of {len(floors)} opened "
            f"(the others {others} µs)")


def run_outcome(outcome) -> None:
    """A finished session: the run's tables, then on stderr what failed, what happened to workers, where it was
    saved, and any GPU slower than the node's median."""
    run, err = outcome.run, console(stderr=True)
    print_run(run, console())
    for p in run.failed():
        err.print(f"[red]{p.status.upper()}[/] " + escape(f"{p.op} {p.variant} {p.config} {p.problem.label}: "
                                                          f"{p.reason}"))
    for incident in run.incidents:
        err.print(f"[yellow]worker {escape(incident['kind'])}[/] " +
                  escape(f"at {incident['where']}: {incident['detail']}"))
    if company := neighbours.warning(neighbours.of(run.settings)):
        err.print(f"[yellow]{escape(company)}[/]")
    if outcome.status == RunStatus.INTERRUPTED:
        how = f"terminated by {signal.Signals(outcome.stopped_by).name}" if outcome.stopped_by else "interrupted"
        err.print(escape(f"{how}: {len(run.points)} of {plural(outcome.total, 'point')} saved to {outcome.path}"))
        return
    for note in getattr(outcome, "notes", []):
        err.print(f"[yellow]{escape(note)}[/]")
    before = run.settings.get("first_calls_s") or 0.0
    ahead = f", after {before:.1f} s of first calls and plan searches" if before >= 0.1 else ""
    err.print(escape(f"saved {plural(len(run.points), 'point')} to {outcome.path} in {run.settings['wall_s']:.1f} s"
                     + ahead))
    if floors := run.settings.get("launch_floors_us"):
        err.print(escape(chosen_line(floors)))
    for h in outcome.slow:
        clocks = f", SM {h.sm_mhz:,.0f} MHz" if h.sm_mhz else ""
        power = f", {h.power_w:,.0f} W" if h.power_w else ""
        err.print(f"[red]SLOW GPU[/] {escape(h.device)}: {(h.deviation - 1) * 100:+.1f}% against the node's "
                  f"median over {plural(h.points, 'point')}{clocks}{power}")


def stability_outcome(outcome) -> None:
    """`gpubench stability`: the A/A tables, then on stderr where the stability run was saved."""
    from gpubench.views import stability as stability_view

    err = console(stderr=True)
    reports = [r for r in (outcome.report, outcome.kernel_report) if r is not None]
    for report in reports:
        for table in stability_view.tables(report):
            console().print(to_rich(table))
            console().print()
    for p in outcome.run.failed():
        err.print(f"[red]{p.status.upper()}[/] " + escape(f"{point_label_of(p)}: {p.reason}"))
    if company := neighbours.warning(neighbours.of(outcome.run.settings)):
        err.print(f"[yellow]{escape(company)}[/]")
    runs = outcome.run.settings.get("stability", {}).get("runs", 0)
    if outcome.interrupted:
        err.print(escape(f"stopped after {plural(runs, 'finished run')}: saved to {outcome.path}; the run cut short is "
                         f"under {outcome.runs_dir}"))
    else:
        err.print(escape(f"saved the stability run ({plural(runs, 'run')}) to {outcome.path}"
                         + (f"; each run's own file is under {outcome.runs_dir}" if outcome.runs_dir else "")))
        for report in reports:
            err.print(escape(stability_view.pairs_line(report, outcome.path)), soft_wrap=True)
        if runs >= 2:
            err.print(escape(f"to judge each duration class by its suggested threshold: gpubench compare BASE NEW "
                             f"--thresholds {outcome.path}"), soft_wrap=True)  # a command to copy: one line


def point_label_of(p) -> str:
    return f"{p.op} {p.variant} {p.config} {p.problem.label}"


def history(outcome, every: bool, echo) -> None:
    """A history's table: the series that changed (every series with `every`), slowdowns to fail on first."""
    from gpubench.views.history import history_table

    if every or any(s.changes for s in outcome.series):
        console().print(to_rich(history_table(outcome.series, outcome.threshold, changed_only=not every)))
    else:  # a table of no rows says nothing of what was looked at
        runs = len({e.run for s in outcome.series for e in s.entries})
        echo(f"no point changed: {len(outcome.series)} series compared across {plural(runs, 'run')} "
             "(--all lists them)")
    for why in outcome.passed_over:
        echo(f"passed over {why}")
    if outcome.regressed:
        echo(f"{len(outcome.regressed)} series' latest change is a slowdown beyond {outcome.threshold:.0%}")
