"""What the commands print: a run's tables, the catalog, kernel checks, a saved run in the format asked for.
The use cases (gpubench/app.py) return what these show; the click commands choose which."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from gpubench.variant import Axis
from gpubench.views import compare as compare_view
from gpubench.views import run as run_view
from gpubench.views.tables import escape, to_markdown, to_rich


def console(stderr: bool = False) -> Console:
    """A console that keeps wide tables whole when output goes to a file or a pipe."""
    c = Console(stderr=stderr)
    return c if c.is_terminal else Console(stderr=stderr, width=max(c.width, 160))


def print_run(run, out: Console, threshold: float = run_view.NOISE_THRESHOLD) -> None:
    for table in run_view.run_tables(run, threshold):
        out.print(to_rich(table))
        out.print()


def saved_run(run, name: str, fmt: str, threshold: float, echo) -> None:
    """`gpubench show`: a saved run as tables, Markdown, CSV or its JSON."""
    if fmt == "json":
        echo(run.to_json())
    elif fmt == "csv":
        echo(run_view.to_csv(run), nl=False)
    elif fmt == "markdown":
        echo("\n".join(to_markdown(t) for t in run_view.run_tables(run, threshold)))
    else:
        out = console()
        out.print(escape(f"{name}: {run.device}, {len(run.points)} points, {run.status}, {run.created}"), style="bold")
        print_run(run, out, threshold)


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
        echo(compare_view.to_markdown_report(c.report, base, new))
    else:
        compare_view.print_rich(c.report, console(), base, new)


AXES = {Axis.BLOCK: "block sizes", Axis.NONE: "-", Axis.TUNED: "per shape, from `gpubench tune`"}


def listing(found) -> None:
    """`gpubench list`: the variants, the shipped suites, the project."""
    table = RichTable("op", "backend", "variant", "configurations", "what it is", "from", title="variants",
                      title_justify="left")
    for v in found.variants:
        axis = AXES.get(v.axis) or ", ".join(c.label for c in v.configs)
        where = "gpubench" if v.builtin else str(v.origin)
        table.add_row(*(escape(x) for x in (v.op, v.backend, v.name + ("" if v.lab or not v.builtin else " (extra)"),
                                            axis, v.summary, where)))
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
