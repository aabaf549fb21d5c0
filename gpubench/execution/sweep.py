"""Sweeps: named sets of (shape × variant × configuration) points, turned into tasks and run by workers.

A :class:`Sweep` is what a command line or a suite asks for. :func:`tasks` expands sweeps into one
:class:`~gpubench.execution.tasks.ShapeTask` per shape, with every configuration resolved (a tuned variant's one
included) before anything runs, so the backend only ever runs what it is given. :func:`run` hands the tasks
to an executor (a :class:`~gpubench.execution.worker.Worker`, or a cluster of them) and writes each finished point to
the results file at once, so an interrupted sweep keeps what it measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol

from gpubench.core.phases import phase
from gpubench.results import Details, Point, RunStatus, RunWriter
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.measure.timing import TimingPolicy
from gpubench.specs.variant import Config, Variant


@dataclass
class Sweep:
    """One named sweep: an op, its variants, its shapes and the block sizes for block-axis variants. A shape has
    a precision and a layout; each variant runs the shapes it takes (`Scope.takes`), so `--dtype fp32,bf16` over
    a kernel that computes in fp32 only and cuBLAS gives the kernel's fp32 points and cuBLAS's in both."""

    name: str
    op: str
    variants: list[Variant]
    shapes: list
    block_sizes: tuple[int, ...]
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why) left out when expanding
    # {variant: {problem label: configuration labels}}: a suite's configurations pinned problem by problem
    pinned: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def configs(self, variant: Variant, shape) -> tuple[Config, ...]:
        """What `variant` runs on `shape`: its configurations (a block-size variant's, the sweep's sizes), or those
        the suite pinned for that problem, in the pinned order."""
        every = variant.space.configs_for(self.block_sizes)
        pinned = self.pinned.get(variant.name, {}).get(shape.full_label)
        if pinned is None:
            return tuple(every)
        by_label = {c.label: c for c in every}  # the suite checked each pinned label against these
        return tuple(by_label[x] for x in pinned)

    def points(self) -> Iterator[tuple[object, Variant, Config]]:
        for shape in self.shapes:
            for variant in self.variants:
                if variant.scope.takes(shape) is not None:
                    continue
                for config in self.configs(variant, shape):
                    yield shape, variant, config

    def __len__(self) -> int:
        return sum(1 for _ in self.points())

    def settings(self) -> dict:
        return {"name": self.name, "op": self.op, "variants": [v.name for v in self.variants],
                "dtypes": [str(d) for d in dict.fromkeys(s.dtype for s in self.shapes)],
                "layouts": [str(x) for x in dict.fromkeys(s.layout for s in self.shapes)],
                "block_sizes": list(self.block_sizes), "timing": self.policy.as_dict(), "skipped": self.skipped}


Resolve = Callable[[Variant, object, Config], tuple[Config, Details]]


def as_is(variant: Variant, shape, config: Config) -> tuple[Config, Details]:
    return config, Details()


def tasks(sweeps: list[Sweep], seed: int, resolve: Resolve = as_is) -> list[ShapeTask]:
    """One task per shape of each sweep, its points in sweep order; seeds are seed + the shape's index."""
    out = []
    for sweep in sweeps:
        for i, shape in enumerate(sweep.shapes):
            points = []
            for variant in sweep.variants:
                if variant.scope.takes(shape) is not None:
                    continue
                for config in sweep.configs(variant, shape):
                    resolved, note = resolve(variant, shape, config)
                    points.append(PointTask(len(points), variant, resolved, sweep.policy, note))
            if points:  # a precision or layout that none of the sweep's variants takes has nothing to run
                out.append(ShapeTask(sweep.name, shape, seed + i, tuple(points)))
    return out


class Executor(Protocol):
    """Runs tasks and reports each finished point (a Worker on one device; a cluster runs them concurrently)."""

    def run_all(self, work: list[ShapeTask], on_point: Callable[[Point], None]) -> None: ...


def run(executor: Executor, work: list[ShapeTask], writer: RunWriter,
        on_point: Callable[[Point], None] = lambda p: None) -> RunStatus:
    """Run every task; returns the run's final status (complete). An interruption (Ctrl-C, or SIGTERM/SIGHUP as
    errors.Terminated) leaves the file saved as interrupted, with every finished point, and goes on up."""

    def finished(point: Point) -> None:
        with phase("save point"):
            writer.add(point)
        on_point(point)

    try:
        executor.run_all(work, finished)
    except KeyboardInterrupt:
        writer.finish(RunStatus.INTERRUPTED)
        raise
    writer.finish(RunStatus.COMPLETE)
    return RunStatus.COMPLETE
