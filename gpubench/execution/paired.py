"""A/B inside one process: two points of one problem, prepared once on the same inputs, timed call by call in turn.

A :class:`PairedTask` is a ShapeTask of exactly two points (A, then B) that the worker runs as rounds rather than
one point after another. Both calls are prepared once, on the same inputs and writing the same output (a small
buffer's place alone moves a short kernel by several percent: placement.py), their workspaces kept, and both are
verified. Whether their calls are queued in batches is decided once (measure/interleaved.py's `calibrate`). Then
each round times A's and B's calls in turn, counterbalanced, A B B A ... in even rounds and B A A B ... in odd ones,
so neither side holds one parity of place or always goes first (measure/interleaved.py). Each round gives two points, A's and B's, with the same telemetry, sent
as they finish (events as :func:`gpubench.execution.tasks.run_task` sends them). The coordinator pairs the i-th
point of A with the i-th of B. Rounds go on until `rounds` are done or `max_time_s` has gone by (after at least
MIN_ROUNDS). With the second clock (--clock both), each round is traced once and CUPTI's kernel times are split
between the sides the same way as the samples.

A lost worker ends the A/B (no retry: the rounds so far stand, and a fresh process would not be the same process).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Iterator

from gpubench.core.errors import Skip
from gpubench.core.phases import phase
from gpubench.core.dtypes import PRECISIONS
from gpubench.execution.messages import Begin, Broken, Finished
from gpubench.execution.tasks import ShapeTask, describe_error, timed_verify, unmeasured
from gpubench.measure import interleaved
from gpubench.measure.paired import MIN_ROUNDS
from gpubench.results import Point, Status


@dataclass(frozen=True)
class PairedTask(ShapeTask):
    rounds: int = 400  # at most this many rounds ...
    max_time_s: float = 40.0  # ... within this many seconds of rounds (at least MIN_ROUNDS whatever it takes)

    def without(self, done: set[int]) -> ShapeTask:
        """Nothing to retry: the rounds sent stand (see the module's docstring)."""
        return ShapeTask(self.sweep, self.shape, self.seed, ())

    def run_rounds(self, backend, inputs, ref) -> Iterator:
        return run_rounds(backend, self, inputs, ref)


def order(round_index: int) -> tuple[int, int]:
    """Which side's call comes first in a round: A (0) in even rounds, B (1) in odd ones."""
    return (0, 1) if round_index % 2 == 0 else (1, 0)


def run_rounds(backend, task: PairedTask, inputs, ref) -> Iterator:
    """Prepare and verify both points, then time them call by call in rounds; yields run_task's events."""
    prepared, rel_errs = [], []
    try:
        for p in task.points:
            yield Begin(p.index)
            try:
                unfit = p.variant.scope.unfit(task.shape.dims())
                if unfit:
                    raise Skip(f"{p.variant.name} {unfit}")
                with phase("prepare"):  # B writes A's output: the same buffers, inputs and output alike
                    shared = prepared[0].output if prepared else None
                    prepared.append(backend.prepare(p.variant, p.config, task.shape, inputs, shared))
                with phase("verify"):
                    rel_errs.append(timed_verify(backend, prepared[-1], ref, task.shape)[0])
            except Skip as why:
                yield Finished(p.index, unmeasured(task.shape, p, Status.SKIPPED, str(why)))
                return
            except Exception as e:  # noqa: BLE001 - the A/B ends here, saying why
                yield Finished(p.index, unmeasured(task.shape, p, Status.ERROR, describe_error(e)))
                if not backend.healthy():
                    yield Broken(describe_error(e))
                return
        runs = tuple(made.run for made in prepared)
        policy = task.points[0].policy
        started = time.perf_counter()
        batch = None
        for r in range(task.rounds):
            if r >= MIN_ROUNDS and time.perf_counter() - started >= task.max_time_s:
                break
            first = order(r)[0]
            yield Begin(task.points[first].index)
            try:
                if batch is None:
                    with phase("preheat"):  # the GPU in its working state before the first round (preheat.py)
                        backend.preheat(policy.preheat_s)
                    batch = interleaved.calibrate(runs, backend.clock, policy)
                with phase("round"):
                    points = _round(backend, task, prepared, rel_errs, first, batch)
            except interleaved.SideFailed as failed:
                p, why = task.points[failed.side], failed.__cause__
                if isinstance(why, Skip):
                    yield Finished(p.index, unmeasured(task.shape, p, Status.SKIPPED, str(why)))
                    return
                yield Finished(p.index, unmeasured(task.shape, p, Status.ERROR, describe_error(why)))
                if not backend.healthy():
                    yield Broken(describe_error(why))
                return
            except Exception as e:  # noqa: BLE001 - not a call's (the second clock, a record): the side begun
                p = task.points[first]
                yield Finished(p.index, unmeasured(task.shape, p, Status.ERROR, describe_error(e)))
                if not backend.healthy():
                    yield Broken(describe_error(e))
                return
            for p, point in zip(task.points, points):
                yield Finished(p.index, point)
            if any(point.status != Status.OK for point in points):  # a side that failed its check is not compared
                return
    finally:
        backend.worked()  # the preheat's idle gap counts from the last round, as from a point's timing (tasks.timed)
        for made in prepared:
            made.release()


def _round(backend, task: PairedTask, prepared, rel_errs, first: int, batch: int) -> tuple[Point, Point]:
    """One round of both sides' calls in turn, on the backend's clock (traced by the second clock where the policy
    asks for it): A's point and B's."""
    policy = task.points[0].policy
    trace = backend.kernel_tracer(policy)
    measured = None
    try:
        clock = trace.clock(backend.clock) if trace else backend.clock
        measured = interleaved.measure_round(tuple(made.run for made in prepared), clock, policy, first, batch,
                                             backend.telemetry)
    finally:
        seconds = trace.finish_sides(measured.sides if measured else []) if trace else ({}, {})
    sides = zip(task.points, prepared, rel_errs, measured.timings, seconds)
    return tuple(_point(backend, task, p, made, rel_err, timing, second) for p, made, rel_err, timing, second in sides)


def _point(backend, task: PairedTask, p, made, rel_err: float, timing, second: dict) -> Point:
    shape = task.shape
    details = replace(p.note.merged(made.details), stop=timing.stop, flushed=p.policy.flush and backend.flushes,
                      batch=timing.batch if timing.batch > 1 else None, pace=p.policy.pace,
                      accumulator=PRECISIONS[shape.dtype].accumulator, **second)
    return Point.measured(shape, p.variant.name, p.config.label, samples_ms=timing.samples_ms, rel_err=rel_err,
                          tolerance=backend.tolerance(p.variant, shape), details=details,
                          telemetry=timing.telemetry())
