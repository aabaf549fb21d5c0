"""A/B inside one process: two points of one problem, prepared once on the same inputs, measured in alternation.

A :class:`PairedTask` is a ShapeTask of exactly two points (A, then B) that the worker runs as rounds rather than
one point after another: both calls are prepared once, on the same inputs and writing the same output (a small
buffer's place alone moves a short kernel by several percent: placement.py), their workspaces kept, both verified, then
each round measures A and B back to back under a short policy, in the order AB in even rounds and BA in odd ones
(so neither always follows the other). Each round's two points are sent as they finish (events as
:func:`gpubench.execution.tasks.run_task` sends them); the coordinator pairs the i-th point of A with the i-th of B.
Rounds go on until `rounds` are done or `max_time_s` has gone by (after at least MIN_ROUNDS).

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
from gpubench.execution.tasks import ShapeTask, describe_error, timed, timed_verify, unmeasured
from gpubench.measure.paired import MIN_ROUNDS
from gpubench.results import Point, Status


@dataclass(frozen=True)
class PairedTask(ShapeTask):
    rounds: int = 30  # at most this many rounds ...
    max_time_s: float = 45.0  # ... within this many seconds of rounds (at least MIN_ROUNDS whatever it takes)

    def without(self, done: set[int]) -> ShapeTask:
        """Nothing to retry: the rounds sent stand (see the module's docstring)."""
        return ShapeTask(self.sweep, self.shape, self.seed, ())

    def run_rounds(self, backend, inputs, ref) -> Iterator:
        return run_rounds(backend, self, inputs, ref)


def order(round_index: int) -> tuple[int, int]:
    """Which point goes first in a round: A (0) in even rounds, B (1) in odd ones."""
    return (0, 1) if round_index % 2 == 0 else (1, 0)


def run_rounds(backend, task: PairedTask, inputs, ref) -> Iterator:
    """Prepare and verify both points, then alternate them in rounds; yields run_task's events."""
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
        started = time.perf_counter()
        for r in range(task.rounds):
            if r >= MIN_ROUNDS and time.perf_counter() - started >= task.max_time_s:
                break
            for i in order(r):
                p = task.points[i]
                yield Begin(p.index)
                try:
                    with phase("round"):
                        point = _measured(backend, task, p, prepared[i], rel_errs[i])
                except Skip as why:
                    point = unmeasured(task.shape, p, Status.SKIPPED, str(why))
                except Exception as e:  # noqa: BLE001 - recorded; the A/B ends
                    yield Finished(p.index, unmeasured(task.shape, p, Status.ERROR, describe_error(e)))
                    if not backend.healthy():
                        yield Broken(describe_error(e))
                    return
                yield Finished(p.index, point)
                if point.status != Status.OK:  # a call that went wrong once is not compared
                    return
    finally:
        for made in prepared:
            made.release()


def _measured(backend, task: PairedTask, p, made, rel_err: float) -> Point:
    shape = task.shape
    timing, second = timed(backend, made, p.policy)
    if not timing.samples_ms:
        return unmeasured(shape, p, Status.SKIPPED, "every sample was taken while throttled (--discard-throttled)")
    details = replace(p.note.merged(made.details), stop=timing.stop, flushed=p.policy.flush and backend.flushes,
                      batch=timing.batch if timing.batch > 1 else None, pace=p.policy.pace,
                      settled_s=timing.settled_s, accumulator=PRECISIONS[shape.dtype].accumulator,
                      graph=p.policy.graph or None, **second)
    return Point.measured(shape, p.variant.name, p.config.label, samples_ms=timing.samples_ms, rel_err=rel_err,
                          tolerance=backend.tolerance(p.variant, shape), details=details,
                          telemetry=timing.telemetry())
