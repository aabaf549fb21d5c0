"""From parsed options to a saved run: open the backend, run the sweeps with a progress bar, print the tables.

The click commands stay thin: they parse and validate options, build :class:`~gpubench.sweep.Sweep` objects,
and call :func:`execute`.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from rich.console import Console

from gpubench import environment, render
from gpubench.backends import open_backend
from gpubench.results import Run, RunWriter
from gpubench.sweep import Sweep, run_sweeps

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def console(stderr: bool = False) -> Console:
    """A console that keeps wide tables whole when output goes to a file or a pipe."""
    c = Console(stderr=stderr)
    return c if c.is_terminal else Console(stderr=stderr, width=max(c.width, 160))


def default_path(device: str, label: str) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / slug / f"{label}-{stamp}.json"


def print_run(run: Run, console: Console, threshold: float = render.NOISE_THRESHOLD) -> None:
    for table in render.run_tables(run, threshold):
        console.print(render.to_rich(table))
        console.print()


def execute(sweeps: list[Sweep], *, backend_name: str, tf32: bool, seed: int, output: str | None, label: str,
            argv: list[str]) -> int:
    backend = open_backend(backend_name, tf32=tf32)
    # Thread blocks of B×B must fit the device, for the sweeps whose variants take the block-size axis.
    backend.check_block_sizes(sorted({b for s in sweeps if any(v.axis == "block" for v in s.variants)
                                      for b in s.block_sizes}))
    backend.check_variants([v for s in sweeps for v in s.variants])
    env = environment.collect(backend)
    settings = {
        "seed": seed, "tf32": tf32, "sweeps": [
            {"name": s.name, "op": s.op, "variants": [v.name for v in s.variants],
             "block_sizes": list(s.block_sizes), "timing": s.policy.as_dict(), "skipped": s.skipped}
            for s in sweeps
        ],
    }
    run = Run(backend=backend.name, environment=env, settings=settings, command=argv)
    path = Path(output) if output else default_path(run.device, label)
    writer = RunWriter(run, path)
    out, err = console(), console(stderr=True)
    for s in sweeps:
        for what, why in s.skipped:
            err.print(f"[dim]skipped {what}: {why}[/]")
    total = sum(len(s) for s in sweeps)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        task = progress.add_task(f"{label} on {run.device}", total=total)

        def advance(point):
            progress.update(task, advance=1,
                            description=f"{point.op} {point.variant} {point.config} {point.shape_label()}")

        status = run_sweeps(backend, sweeps, writer, seed, on_point=advance)
    print_run(run, out)
    bad = [p for p in run.points if p.status in ("fail", "error")]
    for p in bad:
        err.print(f"[red]{p.status.upper()}[/] {p.op} {p.variant} {p.config} {p.shape_label()}: {p.reason}")
    if status == "interrupted":
        err.print(f"interrupted: {len(run.points)} of {total} points saved to {path}")
        return EXIT_INTERRUPTED
    err.print(f"saved {len(run.points)} points to {path}")
    return EXIT_FAIL if bad else EXIT_OK
