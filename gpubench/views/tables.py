"""Tables as plain data (:class:`Table` of :class:`Cell`) and their writers: rich for the terminal, Markdown for
pull requests and notes. The run's views (run.py) and the comparison's (compare.py) build tables; nothing here
knows what a run is."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cell:
    text: str
    style: str = ""  # "" | "best" | "fail" | "skip" | "error" | "noisy"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""
    left: int = 1  # how many leading (label) columns are left-aligned; the rest are numbers


LISTED = 12  # entries a mark's caption names one a line; the rest are counted


def marked_caption(mark: str, meaning: str, entries: list[str], rest: str) -> str:
    """A mark's caption: what it means, then the first LISTED marked entries a line each, then how many more and
    where to find them (`rest`); "" when nothing is marked."""
    if not entries:
        return ""
    lines = [f"{mark} {meaning}"] + [f"{mark} {e}" for e in entries[:LISTED]]
    if len(entries) > LISTED:
        lines.append(f"{mark} and {len(entries) - LISTED} more ({rest})")
    return "\n".join(lines)


RICH_STYLES = {"best": "bold green", "fail": "bold red", "error": "red", "skip": "dim", "noisy": "yellow"}


RICH_ROWS = 500  # above this, a table is written as aligned text: rich lays out every cell (~1 ms a row)


def to_rich(table: Table):
    """A rich table whose title and caption are lines of their own, as wide as the terminal (as a rich table's title
    they would wrap at the table's width, which a narrow table makes a few words); one of more than RICH_ROWS rows
    as aligned text in the same styles, which takes time linear in its cells and small (a 20,000-point run's tables
    in a second or two, where rich takes half a minute)."""
    if len(table.rows) > RICH_ROWS:
        return _Aligned(table)
    from rich.console import Group
    from rich.table import Table as RichTable
    from rich.text import Text

    t = RichTable()
    for i, c in enumerate(table.columns):
        t.add_column(escape(c), justify="left" if i < table.left else "right")
    for row in table.rows:
        t.add_row(*(f"[{RICH_STYLES[c.style]}]{escape(c.text)}[/]" if c.style else escape(c.text) for c in row))
    parts = [Text(table.title, style="table.title"), t]
    if table.caption:
        parts.append(Text(table.caption, style="table.caption"))
    return Group(*parts)


def plural(n: int, word: str) -> str:
    """1 point, 2 points."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class _Aligned:
    """A long table as lines of padded cells (a rich renderable: segments straight to the console, no layout)."""

    def __init__(self, table: Table):
        self.table = table

    def __rich_console__(self, console, options):
        from rich.segment import Segment
        from rich.style import Style

        t = self.table
        widths = [len(c) for c in t.columns]
        for row in t.rows:
            widths = [max(w, len(c.text)) for w, c in zip(widths, row)]

        def pad(text: str, i: int) -> str:
            return text.ljust(widths[i]) if i < t.left else text.rjust(widths[i])

        styles = {name: Style.parse(spec) for name, spec in RICH_STYLES.items()}
        yield Segment(t.title + "\n", Style(italic=True))
        yield Segment("  ".join(pad(c, i) for i, c in enumerate(t.columns)) + "\n", Style(bold=True))
        yield Segment("  ".join("─" * w for w in widths) + "\n")
        for row in t.rows:
            text, style = "", None  # neighbouring cells of one style go out as one segment
            for i, c in enumerate(row):
                cell = ("  " if i else "") + pad(c.text, i)
                if styles.get(c.style) is not style and text:
                    yield Segment(text, style)
                    text = ""
                text, style = text + cell, styles.get(c.style)
            yield Segment(text + "\n", style)
        if t.caption:
            yield Segment(t.caption + "\n", Style(dim=True))


def escape(text) -> str:
    """Text from a run or a user's spec, shown literally by rich (no "[bold]" or "[/]" taken as markup)."""
    from rich.markup import escape as rich_escape

    return rich_escape(str(text))


def to_markdown(table: Table) -> str:
    def fmt(c: Cell) -> str:
        text = c.text.replace("|", r"\|")
        return f"**{text}**" if c.style in ("best", "fail") and text else text

    lines = [f"**{table.title}**", "", "| " + " | ".join(table.columns) + " |",
             "|" + "|".join(["---" if i < table.left else "---:" for i in range(len(table.columns))]) + "|"]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in table.rows]
    for line in table.caption.splitlines():  # a paragraph a line: Markdown would run them into one
        lines += ["", f"_{line}_"]
    return "\n".join(lines) + "\n"
