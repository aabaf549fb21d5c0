"""Running points on a backend: what happens inside the process that owns a device.

The unit of work is a :class:`ShapeTask`: one problem shape and the (variant, configuration) points to run on
it, every configuration already resolved (tuned ones included) by the coordinator. For the shape the inputs
are drawn fresh and the float64 reference is computed once; then each point's output is poisoned with NaN, the
variant runs once and is compared with the reference, and only then is it timed.

:func:`run_task` yields events rather than returning a list, so that whoever drives it (gpubench/execution/worker.py)
can pass on every finished point at once and knows which point was running if the process dies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Iterator

from gpubench.execution.messages import Begin, Broken, Event, Finished, Made, Rejected
from gpubench.execution.energy_queue import EnergyQueue, Held
from gpubench.core.errors import CompileError, Skip
from gpubench.core.phases import phase
from gpubench.results import Details, Point, Status
from gpubench.core.dtypes import PRECISIONS
from gpubench import ops
from gpubench.ops.base import Shape
from gpubench.measure.timing import TimingPolicy, measure, summarize
from gpubench.specs.runners import searches_kept_plans
from gpubench.specs.variant import Config, Variant

PART_POLICY_REPS = 10  # sub-steps (im2col's unfold, a Winograd filter transform) are timed with fewer repetitions
SETUP = -1  # the index that stands for "making the shape's inputs and reference"


@dataclass(frozen=True)
class PointTask:
    index: int  # the point's place in its ShapeTask, kept when a task is split after a failure
    variant: Variant
    config: Config
    policy: TimingPolicy
    note: Details = field(default_factory=Details, compare=False)  # recorded with the point (e.g. tuned: True)


@dataclass(frozen=True)
class ShapeTask:
    sweep: str
    shape: Shape
    seed: int
    points: tuple[PointTask, ...]

    def without(self, done: set[int]) -> ShapeTask:
        return ShapeTask(self.sweep, self.shape, self.seed, tuple(p for p in self.points if p.index not in done))


# --- points that did not measure --------------------------------------------------------------------------------


def unmeasured(shape: Shape, point: PointTask, status: Status, reason: str) -> Point:
    return Point(shape, point.variant.name, point.config.label, status, reason=reason, details=point.note)


def describe_error(err: BaseException) -> str:
    """What a point's error says, by its type and its message's first line (a user's exception may even fail to
    say anything: its __str__ raising is no reason to lose the worker)."""
    try:
        text = str(err).strip().splitlines()
    except Exception:  # noqa: BLE001 - whatever a user's __str__ raises
        text = ["(its message could not be read)"]
    return f"{type(err).__name__}: {text[0] if text else ''}"


# --- one point --------------------------------------------------------------------------------------------------


def verify(backend, prepared, ref, shape) -> float:
    """Poison the output, run once, and return ||out − ref|| / ||ref|| (inf if anything is NaN or unwritten)."""
    return timed_verify(backend, prepared, ref, shape)[0]


def timed_verify(backend, prepared, ref, shape) -> tuple[float, float]:
    """verify's rel_err, and the seconds its call took on the host (launch to finish): the warm-up it was."""
    backend.poison(prepared.output)
    backend.clock.sync()
    started = time.perf_counter()
    prepared.run()
    backend.clock.sync()
    ran_s = time.perf_counter() - started
    return backend.rel_err(prepared.output, ref, shape), ran_s


def scales_of(backend, shape, inputs) -> dict[str, float]:
    """The dequantisation scale of each input that has one (fp8), by input name, for the point's record."""
    return {name: backend.scale(inputs, name) for name in ops.of(shape).scales if name in inputs}


def timed(backend, prepared, policy: TimingPolicy, aside=None, warm_s: float = 0.0) -> tuple:
    """measure() of the prepared call on the point's clock: the backend's, its timed calls tagged for the second
    clock (CUPTI) where the policy asks for both, each call a CUDA graph's launch with --graph. Returns (the timing,
    the details the second clock recorded: kernel_ms and kernels, or nothing)."""
    trace = timing = None
    clock = backend.clock
    if not policy.cooldown_s:  # a cool-down asks for a rested card on purpose
        with phase("preheat"):
            backend.preheat(policy.preheat_s)
    try:
        trace = backend.kernel_tracer(policy)  # None where there is no second clock
        clock = trace.clock(clock) if trace else clock
        clock = backend.timed_clock(clock, policy, prepared)
        with phase("measure"):
            timing = measure(prepared.run, clock, policy, backend.telemetry, aside, warm_s=warm_s)
    finally:
        second = trace.finish(len(timing.samples_ms) if timing else 0, policy.graph or 1) if trace else {}
        if hasattr(clock, "close"):  # a graph's clock lets its graphs go
            clock.close()
        backend.worked()
    return timing, second


def run_point(backend, shape, point: PointTask, inputs, ref, queue: EnergyQueue | None = None) -> Point | Held:
    """The point measured. With a `queue`, a point whose energy window did not come during its own calls is
    returned as Held, its buffers kept, for the queue to take that window at a later refresh (energy_queue.py);
    the queue's earlier windows are taken here when a refresh is due."""
    variant, policy = point.variant, point.policy
    unfit = variant.scope.unfit(shape.dims())
    if unfit:
        raise Skip(f"{variant.name} {unfit}")
    with phase("prepare"):
        prepared = backend.prepare(variant, point.config, shape, inputs)
    kept = False
    try:
        with phase("verify"):
            rel_err, ran_s = timed_verify(backend, prepared, ref, shape)
        earlier = queue.moment if queue is not None else None
        if earlier:
            earlier()
        # the point's energy window (or an earlier point's waiting one), taken when a refresh is due
        prepared = backend.spread(variant, point.config, shape, inputs, prepared, policy.places)  # small buffers: more places
        aside = backend.energy_aside(prepared.run, policy, earlier)
        timing, second = timed(backend, prepared, policy, aside, ran_s)
        if not timing.samples_ms:
            return unmeasured(shape, point, Status.SKIPPED,
                              f"every sample was taken while throttled ({', '.join(timing.telemetry()['reasons'])}) "
                              f"within {policy.max_time_s:g} s (--discard-throttled)")
        # A part's median is a note, not a point: no sampling on for noise or decidability.
        part_policy = TimingPolicy(**{**policy.as_dict(), "reps": PART_POLICY_REPS, "max_noise": None, "decide": None})
        with phase("parts"):
            between = (lambda _: aside(timing)) if aside else None  # the window runs the point's whole call
            parts_ms = {name: summarize(measure(part, backend.clock, part_policy, aside=between).samples_ms).median
                        for name, part in prepared.parts.items()}
        details = point.note.merged(prepared.details)
        if point.note.first_call_ms is not None:  # the worker made the first call before the sweep (first_call)
            details = replace(details, first_call_ms=point.note.first_call_ms)
        details = replace(details, stop=timing.stop,
                          flushed=policy.flush and backend.flushes, batch=timing.batch if timing.batch > 1 else None,
                          pace=policy.pace, settled_s=timing.settled_s,
                          parts_ms=parts_ms, accumulator=PRECISIONS[shape.dtype].accumulator,
                          scales=scales_of(backend, shape, inputs), graph=policy.graph or None, **second)
        readings = timing.telemetry()
        measured = lambda: Point.measured(shape, variant.name, point.config.label,  # noqa: E731
                                          samples_ms=timing.samples_ms, rel_err=rel_err,
                                          tolerance=backend.tolerance(variant, shape), details=details,
                                          telemetry=readings)
        if readings is not None and queue is not None and backend.window_wanted(timing):
            kept = True
            return Held(point.index, measured(), release=prepared.release,
                        window=lambda: backend.energy_later(prepared.run, policy.flush, shape.flops, timing))
        if readings is not None:
            with phase("energy"):
                readings.update(backend.energy(prepared.run, policy.flush, shape.flops, timing) or {})
        return measured()
    finally:
        if not kept:
            with phase("release"):
                prepared.release()


def first_calls(work: list[ShapeTask]) -> list[ShapeTask]:
    """What the worker prepares before any point is timed, each point as a task of its own:
    - the first point of each Python variant, configuration, precision and layout in the sweep's order (what a
      Triton kernel is compiled anew for, besides the sizes): its first call (Triton's JIT, a RawKernel's compile);
    - every point of a library variant that searches its plans (cuDNN's `cudnn`): where the backend keeps no choice
      for it, the search runs here and the choice is kept (backends/cuda/plan_cache.py).
    A process that searched is not timed in (Worker.first_calls): on an H200 every kernel launched after cuDNN's
    plan search cost about 0.35 µs more on the GPU, for the rest of the process (docs/measuring/preheat.md)."""
    seen, out = set(), []
    for task in work:
        for p in task.points:
            runner = p.variant.code.runner
            key = (p.variant.name, p.config.label, task.shape.dtype, task.shape.layout, task.shape.fused.epilogue)
            if runner.FUNCTION and key not in seen:
                seen.add(key)
                out.append(ShapeTask(task.sweep, task.shape, task.seed, (p,)))
            elif searches_kept_plans(runner):
                out.append(ShapeTask(task.sweep, task.shape, task.seed, (p,)))
    return out


def first_call(backend, task: ShapeTask) -> Iterator[Event]:
    """The task's one point prepared on its own inputs and released: a Python variant's first call made, or a
    library's plans searched (nothing at all where the backend keeps a choice for the point: plan_search_due).
    Yields run_task's events (Begin, Finished, Broken) and Made for a call made, or Rejected for code that does not
    compile (CompileError). A first call that faults recorded the point (its error) and
    leaves the backend unusable, as in run_task; anything else it raises is left to the point, which meets it
    again when it runs and records it as it always does."""
    point = task.points[0]
    if not point.variant.code.runner.FUNCTION and not backend.plan_search_due(point.variant, task.shape):
        return
    searches = backend.plan_searches
    yield Begin(SETUP)
    try:
        inputs = backend.inputs(task.shape, task.seed)
    except Exception:  # noqa: BLE001 - the shape's own task makes them again and records what stops them
        return
    yield Begin(point.index)
    try:
        prepared = backend.prepare(point.variant, point.config, task.shape, inputs)
        prepared.release()
    except CompileError as e:
        yield Rejected(str(e))
        return
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as e:  # noqa: BLE001 - a fault, a refusal, a user's KeyboardInterrupt: see above
        if not backend.healthy():
            yield Finished(point.index, unmeasured(task.shape, point, Status.ERROR, describe_error(e)))
            yield Broken(describe_error(e))
        return
    finally:
        del inputs
        backend.collect()
    yield Made(point.index, prepared.details.first_call_ms, backend.plan_searches != searches)


def with_first_calls(work: list[ShapeTask], made: dict[tuple, float], done: set[tuple]) -> list[ShapeTask]:
    """The tasks with each first call the worker made before the sweep (by first_call_key) recorded in its point's
    note, since that call is the one that compiled, and without the points already recorded there (done: a first
    call that faulted, hung or killed the worker is that point's outcome)."""
    def noted(task: ShapeTask, p: PointTask) -> PointTask:
        ms = made.get(first_call_key(task, p))
        return p if ms is None else replace(p, note=replace(p.note, first_call_ms=ms))

    kept = [replace(t, points=tuple(noted(t, p) for p in t.points if first_call_key(t, p) not in done)) for t in work]
    return [t for t in kept if t.points]


def first_call_key(task: ShapeTask, point: PointTask) -> tuple:
    return task.sweep, task.shape, task.seed, point.variant.name, point.config.label


# --- one shape --------------------------------------------------------------------------------------------------


def run_task(backend, task: ShapeTask) -> Iterator[Event]:
    """Run a task's points in order. Yields Begin before each step (SETUP for the shape's data), Finished (or
    Provisional, waiting for its energy) after each point, and Broken if the backend cannot go on, after which
    nothing more runs here."""
    yield Begin(SETUP)
    try:
        with phase("inputs"):
            inputs = backend.inputs(task.shape, task.seed)
        with phase("reference"):
            ref = backend.reference(task.shape, inputs)
    except Skip as why:
        for p in task.points:
            yield Finished(p.index, unmeasured(task.shape, p, Status.SKIPPED, str(why)))
        return
    except Exception as e:  # the shape's data could not be made: every point of it says why
        for p in task.points:
            yield Finished(p.index, unmeasured(task.shape, p, Status.ERROR, "making the inputs and reference: "
                                               + describe_error(e)))
        if not backend.healthy():
            yield Broken(describe_error(e))
        return
    own_rounds = getattr(task, "run_rounds", None)  # a task that runs its points its own way (an A/B: paired.py)
    if own_rounds is not None:
        try:
            yield from own_rounds(backend, inputs, ref)
        finally:
            del inputs, ref
            backend.collect()
        return
    queue = EnergyQueue(backend)
    try:
        for p in task.points:
            queue.moment()
            yield Begin(p.index)
            try:
                with phase("point"):
                    point = run_point(backend, task.shape, p, inputs, ref, queue)
            except Skip as why:
                point = unmeasured(task.shape, p, Status.SKIPPED, str(why))
            except backend.out_of_memory as e:  # the variant's own allocations (a temporary, a workspace)
                backend.collect()
                point = unmeasured(task.shape, p, Status.SKIPPED, f"does not fit in {backend.memory_name} "
                                                                  f"({describe_error(e)})")
            except CompileError as e:
                point = unmeasured(task.shape, p, Status.ERROR, str(e))
            except (SystemExit, GeneratorExit):  # a user's sys.exit ends the worker: its exit code is the reason
                raise
            except BaseException as e:  # a failing point is recorded; the sweep goes on (a user's function may
                point = unmeasured(task.shape, p, Status.ERROR, describe_error(e))  # raise anything: the worker
                # takes no signal itself, the coordinator ends it by killing its process group)
                if not backend.healthy():
                    yield from queue.give_up()
                    yield Finished(p.index, point)
                    yield Broken(describe_error(e))
                    return
            yield from queue.add(point if isinstance(point, Held) else Held(p.index, point))
        with phase("energy"):
            yield from queue.drain()
    finally:
        queue.give_back()
        del inputs, ref
        try:
            with phase("collect"):
                backend.collect()
        except Exception:  # a faulted CUDA context refuses even this; the process is about to be replaced
            pass
