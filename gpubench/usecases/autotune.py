"""Autotuning: search a variant's parameters per GPU and shape, keep the winners, let sweeps use them.

A variant is tunable when its spec has a ``[variant.search]`` space (the built-in `tuned` GEMM has one:
tiles, warp tiles, thread tiles, swizzle bands, a register cap). `gpubench tune gemm` samples that space,
keeping only configurations that meet the spec's constraints, compiles them in parallel, and verifies and
times each one per shape in a worker process, exactly as a sweep runs a point (a candidate that faults or
hangs costs that candidate only). Then it refines: every configuration one parameter away from the best few
is tried too. The fastest verified configuration per shape goes to the tuned configurations
(gpubench/specs/tuned.py), which the variant's sweeps then resolve per shape.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from pathlib import Path

from gpubench.core.backend_kind import BackendKind
from gpubench.specs import backend_choice
from gpubench.core import environment
from gpubench.views.tables import escape
from gpubench.core.errors import GpubenchError
from gpubench.execution.executors import open_executor
from gpubench.execution.neighbours import watch_for
from gpubench.results import Status
from gpubench.results.neighbours import KEY, warning
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.measure.timing import TimingPolicy
from gpubench.specs.tuned import Tuned
from gpubench.specs.variant import Config, Variant
from gpubench.planning.plan import Spread

SEARCH_POLICY = TimingPolicy(warmup=2, reps=10, min_reps=5, budget_s=0.3)
REFINE_FROM = 2  # local search: the neighbours of this many of the best configurations, per round


def space(variant: Variant) -> list[Config]:
    """Every configuration of the variant's search space that meets its constraints."""
    if not variant.space.search:
        raise GpubenchError(f"variant {variant.name!r} has no search space ([variant.search] in its spec) to tune")
    names = [k for k, _ in variant.space.search]
    out = []
    for values in itertools.product(*(v for _, v in variant.space.search)):
        config = variant.space.config(dict(zip(names, values)))
        if variant.space.satisfies(config) is None:
            out.append(config)
    return out


def candidates(variant: Variant, count: int, seed: int = 0) -> list[Config]:
    """The variant's own configuration first, then a reproducible sample of the valid search space."""
    valid = space(variant)
    random.Random(seed).shuffle(valid)
    chosen = {c.label: c for c in variant.space.configs}
    for c in valid:
        if len(chosen) >= count:
            break
        chosen.setdefault(c.label, c)
    return list(chosen.values())


def neighbours(variant: Variant, config: Config) -> list[Config]:
    """Every valid configuration that differs from this one in exactly one searched parameter."""
    out = []
    for key, values in variant.space.search:
        for value in values:
            if value != config.values.get(key):
                c = variant.space.config({**config.values, key: value})
                if variant.space.satisfies(c) is None:
                    out.append(c)
    return out


def _time(executor, variant: Variant, shape, seed: int, configs: list[Config], report, shares: int = 1) -> list:
    """Verify and time each configuration on one shape, in `shares` tasks (one per GPU of a cluster); (median ms,
    config) for those that pass."""
    points = [PointTask(i, variant, c, SEARCH_POLICY) for i, c in enumerate(configs)]
    work = [ShapeTask("tune", shape, seed, tuple(points[k::shares])) for k in range(shares) if points[k::shares]]
    by_label = {c.label: c for c in configs}
    timed = []

    def done(point):
        if point.status == Status.OK:
            timed.append((point.median_ms, by_label[point.config]))
        report(shape, by_label[point.config], point)

    executor.run_all(work, done)
    return timed


def buildable(variant: Variant, configs: list[Config], arch: str | None) -> list[Config]:
    """The configurations nvcc compiles (all of them at once, in parallel); the rest are dropped."""
    if not arch:
        return configs
    from gpubench.execution import nvcc

    failed = {job for job, _ in nvcc.compile_all([j for c in configs for j in variant.builds(c, arch)])}
    return [c for c in configs if not failed & set(variant.builds(c, arch))]


def search(executor, variant: Variant, shape, seed: int, configs: list[Config], refine: int, arch, report,
           shares: int = 1):
    """The best (ms, config) for one shape, and every (ms, config) that passed, fastest first."""
    timed = _time(executor, variant, shape, seed, buildable(variant, configs, arch), report, shares)
    tried = {c.label for c in configs}
    for _ in range(refine):
        best_few = [c for _, c in sorted(timed, key=lambda t: t[0])[:REFINE_FROM]]
        near = list({n.label: n for c in best_few for n in neighbours(variant, c) if n.label not in tried}.values())
        tried |= {n.label for n in near}
        timed += _time(executor, variant, shape, seed, buildable(variant, near, arch), report, shares)
    if not timed:
        raise GpubenchError(f"no candidate configuration of {variant.name} ran for {shape.label}")
    ranked = sorted(timed, key=lambda t: t[0])
    return ranked[0], ranked


@dataclass(frozen=True)
class Search:
    """How hard `gpubench tune` looks: configurations sampled from the space, then rounds of local search."""

    candidates: int
    refine: int


def run(variant: Variant, shapes: list, search_for: Search, seed: int, timeout_s: float, tuned_dir: Path | None,
        out, spread: Spread = Spread()) -> Path:
    """Tune `variant` for each shape on this machine's GPU (or spread over several: spread's gpus or scheduler,
    all of one model); returns the file the winners went to."""
    best_ms: dict = {}

    def report(shape, config, point):
        if point.status != Status.OK:
            out.print(f"[dim]{escape(f'{shape.label} {config.label}: {point.status} ({point.reason})')}[/]")
        elif point.median_ms < best_ms.get(shape, float("inf")):
            best_ms[shape] = point.median_ms
            out.print(escape(f"{shape.label} {config.label}: {point.median_ms:.3f} ms, {point.gflops:,.0f} GFLOPS "
                             "(best so far)"))

    if variant.backend == BackendKind.CUDA and spread.scheduler is None:  # this machine's GPUs: say at once when
        backend_choice.check_gpu_stack()  # it can have none (a worker that finds out takes seconds)
    configs = candidates(variant, search_for.candidates, seed)
    with open_executor(variant.backend, timeout_s=timeout_s, gpus=spread.gpus,
                       scheduler=spread.scheduler) as executor:
        info = executor.start()
        shares = len(getattr(executor, "workers", None) or [0])
        models = {w["device"] for w in (getattr(executor, "workers", None) or {"": info}).values()}
        if len(models) > 1:
            raise GpubenchError(f"tuning spreads one search over GPUs of one model; these differ: {', '.join(models)}")
        store = Tuned(info["device"], tuned_dir)
        path = None
        watch = watch_for(variant.backend, info)
        for i, shape in enumerate(shapes):
            # Other processes on the GPU, looked for before and after each shape's search: a winner picked while
            # another process computed may not be the winner on a quiet GPU.
            company = watch.start(executor) if watch else None
            (ms, winner), ranked = search(executor, variant, shape, seed + i, configs, search_for.refine,
                                          info.get("arch"),
                                          report, shares)
            record = {"ms": ms, "gflops": shape.flops / ms / 1e6, "tried": len(ranked),
                      "runner_up": [c.label for _, c in ranked[1:4]], "gpubench_commit": environment.git_commit()}
            if watch:
                company = watch.end(executor, company)
                record[KEY] = company.as_dict()
                if line := warning(company):
                    out.print(f"[yellow]{escape(f'{shape.label}: {line}')}[/]")
            path = store.save(variant.name, shape, winner, record)
    return path
