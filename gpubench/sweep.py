"""Running sweeps: expand (shape × variant × configuration) into points, check each, time it, save it.

For every shape the inputs are drawn fresh and the float64 reference is computed once; then, for every
variant and configuration, the output is poisoned with NaN, the variant runs once and is compared with the
reference, and only then is it timed. Each finished point is written to the results file at once, so an
interrupted sweep keeps what it measured. A point that does not fit or cannot launch is recorded as skipped;
one that raises is recorded as an error; neither stops the sweep.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Iterator

from gpubench.backends import Skip
from gpubench.errors import CompileError
from gpubench.registry import Config, Variant
from gpubench.results import Point, RunWriter
from gpubench.timing import TimingPolicy, measure

PART_POLICY_REPS = 10  # sub-steps (im2col's unfold) are timed with fewer repetitions


@dataclass
class Sweep:
    """One named sweep: an op, its variants, its shapes and the block sizes for block-axis variants."""

    name: str
    op: str
    variants: list[Variant]
    shapes: list
    block_sizes: tuple[int, ...]
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why) left out when expanding

    def points(self) -> Iterator[tuple[object, Variant, Config]]:
        for shape in self.shapes:
            for variant in self.variants:
                for config in variant.configs_for(self.block_sizes):
                    yield shape, variant, config

    def __len__(self) -> int:
        return sum(1 for _ in self.points())


def _skipped(shape, variant: Variant, config: Config, reason: str) -> Point:
    return Point(shape.op, variant.name, config.label, shape.params(), "skipped", reason=reason,
                 flops=shape.flops, min_bytes=shape.min_bytes)


def _error(shape, variant: Variant, config: Config, err: BaseException) -> Point:
    text = str(err).strip().splitlines()
    reason = f"{type(err).__name__}: {text[0] if text else ''}"
    return Point(shape.op, variant.name, config.label, shape.params(), "error", reason=reason,
                 flops=shape.flops, min_bytes=shape.min_bytes)


def verify(backend, prepared, ref) -> float:
    """Poison the output, run once, and return ||out − ref|| / ||ref|| (inf if anything is NaN or unwritten)."""
    backend.poison(prepared.output)
    prepared.run()
    backend.clock.sync()
    return backend.rel_err(prepared.output, ref)


def run_point(backend, shape, variant: Variant, config: Config, inputs, ref, policy: TimingPolicy) -> Point:
    prepared = backend.prepare(variant, config, shape, inputs)
    try:
        rel_err = verify(backend, prepared, ref)
        timing = measure(prepared.run, backend.clock, policy)
        extra = dict(prepared.extra, stop=timing.stop, flushed=policy.flush and backend.flushes)
        part_policy = TimingPolicy(**{**policy.as_dict(), "reps": PART_POLICY_REPS, "max_noise": None})
        for name, part in prepared.parts.items():
            part_samples = measure(part, backend.clock, part_policy).samples_ms
            extra[f"{name}_ms"] = sorted(part_samples)[len(part_samples) // 2]
        label = extra.pop("params", config.label)  # a tuned variant reports the configuration it resolved to
        return Point.measured(
            shape.op, variant.name, label, shape.params(), samples_ms=timing.samples_ms,
            flops=shape.flops, min_bytes=shape.min_bytes, rel_err=rel_err, tolerance=backend.tolerance(variant),
            extra=extra,
        )
    finally:
        prepared.release()


def run_sweeps(backend, sweeps: list[Sweep], writer: RunWriter, seed: int,
               on_point: Callable[[Point], None] = lambda p: None) -> str:
    """Run every point of every sweep; returns the run's final status ("complete" or "interrupted")."""
    reported: set[str] = set()
    try:
        for sweep in sweeps:
            for i, shape in enumerate(sweep.shapes):
                todo = [(v, c) for v in sweep.variants for c in v.configs_for(sweep.block_sizes)]
                try:
                    inputs = backend.inputs(shape, seed + i)
                    ref = backend.reference(shape, inputs)
                except Skip as why:
                    for v, c in todo:
                        point = _skipped(shape, v, c, str(why))
                        writer.add(point)
                        on_point(point)
                    continue
                for variant, config in todo:
                    try:
                        point = run_point(backend, shape, variant, config, inputs, ref, sweep.policy)
                    except Skip as why:
                        point = _skipped(shape, variant, config, str(why))
                    except CompileError as e:
                        if str(e) not in reported:  # nvcc's message once, in full, then one line per point
                            reported.add(str(e))
                            print(f"gpubench: {e}", file=sys.stderr)
                        point = _error(shape, variant, config, e)
                    except Exception as e:  # a failing point is recorded; the sweep goes on
                        point = _error(shape, variant, config, e)
                    writer.add(point)
                    on_point(point)
                del inputs, ref
                backend.collect()
    except KeyboardInterrupt:
        writer.finish("interrupted")
        return "interrupted"
    writer.finish("complete")
    return "complete"
