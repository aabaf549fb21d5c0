"""Reading, rendering and comparing grow linearly with a run's points: `show` (tables, Markdown, CSV) and `compare`
of a 20,000-point run against the same of a 2,000-point one, each timed as the process's CPU time (what other
work on the machine disturbs least) and asserted as a ratio to the linear one, 10, never as a wall time.

Timed with Python's cyclic collector off, so that what is measured is gpubench's own work: the collector's
share grows with the heap whatever the code does (results.load already keeps it off a loaded run). Linear code
shows 9 to 16 here (a larger heap costs a little more per point); a quadratic step (each row looking through all
the points) shows a hundred. The limit sits at their geometric middle, 30, so that neither side's noise crosses it."""

import gc
import random
import time
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.results import Point, Run, Status, save

SMALL, LARGE = 2_000, 20_000
LINEAR_LIMIT = 30  # time(LARGE) / time(SMALL): 10 is linear, 100 quadratic


def long_run(n: int, seed: int) -> Run:
    """n points the way a long sweep makes them: GEMM and conv shapes, variants with several configurations,
    a library baseline, a few failed points."""
    rng = random.Random(seed)
    points, size = [], 8
    while len(points) < n:
        gemm, conv = GemmShape(size, size, size), conv_shape(size, 1 + size % 3)
        for shape, variant, config, base in ((gemm, "numpy", "-", 1.0), (gemm, "tiled", "64x64", 1.6),
                                             (gemm, "tiled", "128x128", 1.3), (conv, "sliding", "16", 2.0),
                                             (conv, "numpy-im2col", "-", 1.0)):
            ms = 1e-6 * base * size ** 2
            samples = [ms * (1 + rng.gauss(0, 0.02)) for _ in range(10)]
            if rng.random() < 0.01:
                points.append(Point(shape, variant, config, Status.ERROR, reason="RuntimeError: planted"))
            else:
                points.append(Point.measured(shape, variant, config, samples_ms=samples, rel_err=1e-7, tolerance=1e-4))
        size += 1
    return Run(backend="cpu", environment={"device": {"name": "CPU: test"}}, settings={}, points=points[:n],
               status="complete", created="2026-11-22T00:00:00+00:00")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    files = {}
    for n in (SMALL, LARGE):
        for side in ("base", "new"):
            files[n, side] = str(save(long_run(n, seed=hash(side) % 100), root / f"{side}-{n}.json"))
    return files


def cpu_seconds(args: list[str], repeat: int) -> float:
    """The least CPU time of `repeat` runs of the command, in this process (no interpreter start counted)."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            started = time.process_time()
            result = CliRunner().invoke(cli, args)
            best = min(best, time.process_time() - started)
            assert result.exit_code in (0, 1, 3), result.output[-300:]
    finally:
        gc.enable()
    return best


@pytest.mark.parametrize("command", [["show", "{base}"], ["show", "{base}", "--format", "markdown"],
                                     ["show", "{base}", "--format", "csv"], ["compare", "{base}", "{new}"]],
                         ids=["show", "markdown", "csv", "compare"])
def test_rendering_and_comparing_are_linear_in_the_points(runs, command):
    def args(n):
        return [a.format(base=runs[n, "base"], new=runs[n, "new"]) for a in command]

    cpu_seconds(args(SMALL), 1)  # warm: imports, caches
    small, large = cpu_seconds(args(SMALL), 3), cpu_seconds(args(LARGE), 2)
    assert large / small < LINEAR_LIMIT, f"{small:.2f} s for {SMALL} points, {large:.2f} s for {LARGE}"


def test_rendering_is_linear_in_the_length_of_a_name(tmp_path):
    """A name from a file (here a variant's that only the new run has, 10,000 characters against 100,000) costs
    time in proportion to its length: rich's automatic highlighting, which gpubench's consoles leave off, is
    quadratic in a line's length (a 100,000-character variant name took `compare` 47 s)."""
    base = save(long_run(8, seed=1), tmp_path / "base.json")

    def args(length):
        run = long_run(8, seed=1)
        run.points = [replace(p, variant="v" * length) if i == 0 else p for i, p in enumerate(run.points)]
        return ["compare", str(base), str(save(run, tmp_path / f"name-{length}.json"))]

    short, long = args(10_000), args(100_000)
    cpu_seconds(short, 1)  # warm
    small, large = cpu_seconds(short, 3), cpu_seconds(long, 1)
    assert large / small < LINEAR_LIMIT, f"{small:.2f} s for 10,000 characters, {large:.2f} s for 100,000"
