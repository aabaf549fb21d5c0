"""Autotuning: search gemm_warptile's tile parameters per GPU and shape, keep the winners, let sweeps use them.

`gpubench tune gemm` draws candidates from registry.SEARCH_SPACE (filtered by what the kernel can compile
and launch), compiles them in parallel, and for every shape verifies and times each one with the `dbuf`
variant's kernel (gemm_warptile.cu, double-buffered). Then it refines: every configuration one parameter
away from the best few is tried too (a step of local search after the random sample). The fastest verified configuration per shape is written to configs/tuned/<device>.json (the file is
rewritten after each shape, so an interrupted search keeps what it found). The registry's `tuned` variant
runs, for each shape, the entry of the same shape, or else of the nearest size.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpubench import environment, nvcc, registry
from gpubench.errors import CompileError, GpubenchError
from gpubench.problems import GemmShape
from gpubench.registry import Config, warp_config
from gpubench.sweep import verify
from gpubench.timing import TimingPolicy, measure

TUNED_VARIANT = "tuned"  # the registry variant that reads the cache ...
SEARCH_VARIANT = "dbuf"  # ... and the one (same kernel, a fixed configuration) the search runs
SEARCH_POLICY = TimingPolicy(warmup=2, reps=10, min_reps=5, budget_s=0.3)
REFINE_FROM = 2  # local search: the neighbours of this many of the best configurations, per round


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"


def cache_path(device: str) -> Path:
    base = os.environ.get("GPUBENCH_TUNED")
    root = Path(base) if base else Path(__file__).resolve().parent.parent / "configs" / "tuned"
    return root / f"{slug(device)}.json"


def load(device: str) -> dict:
    path = cache_path(device)
    if not path.is_file():
        return {"device": device, "entries": []}
    try:
        data = json.loads(path.read_text())
        assert isinstance(data.get("entries"), list)
        return data
    except (ValueError, AssertionError, AttributeError):
        raise GpubenchError(f"tuning cache {path} is corrupt: delete it or run `gpubench tune gemm` again") from None


def _config(params: dict) -> Config:
    keys = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "STAGES", "SWIZZLE", "MIN_BLOCKS")
    return warp_config(*(params[k] for k in keys))


def lookup(device: str, variant: str, shape: GemmShape) -> Config | None:
    """The tuned configuration for this shape, or for the nearest tuned shape (by log of M·N·K)."""
    entries = [e for e in load(device)["entries"] if e.get("variant") == variant]
    if not entries:
        return None
    size = math.log(shape.m * shape.n * shape.k)

    def distance(e):
        m, n, k = e["shape"]
        return (0 if (m, n, k) == (shape.m, shape.n, shape.k) else 1, abs(math.log(m * n * k) - size))

    return _config(min(entries, key=distance)["params"])


def candidates(count: int, seed: int = 0) -> list[Config]:
    """The registry's own configuration first, then a reproducible sample of the valid search space."""
    space = registry.SEARCH_SPACE
    valid = [dict(zip(space, vals)) for vals in itertools.product(*space.values())]
    valid = [p for p in valid if registry.valid_warp_config(p)]
    random.Random(seed).shuffle(valid)
    chosen = {c.label: c for c in registry.get("gemm", "cuda", SEARCH_VARIANT).configs}
    for p in valid:
        if len(chosen) >= count:
            break
        chosen.setdefault(_config(p).label, _config(p))
    return list(chosen.values())


def neighbours(config: Config) -> list[Config]:
    """Every valid configuration that differs from this one in exactly one parameter."""
    out = []
    for key, values in registry.SEARCH_SPACE.items():
        for value in values:
            p = {**config.values, key: value}
            if value != config.values[key] and registry.valid_warp_config(p):
                out.append(_config(p))
    return out


def precompile(backend, variant, configs: list[Config]) -> list[Config]:
    """Compile every candidate in parallel (nvcc runs outside the GIL); drop the ones nvcc rejects."""
    def build(c: Config):
        try:
            nvcc.compile_cubin(variant.source, backend.arch, c.values)
            return c
        except CompileError:
            return None

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return [c for c in pool.map(build, configs) if c is not None]


def _time_configs(backend, variant, shape, inputs, ref, configs: list[Config], on_result) -> list[tuple[float, Config]]:
    """Verify and time each configuration on one shape; (median ms, config) for those that pass."""
    timed = []
    for config in configs:
        try:
            prepared = backend.prepare(variant, config, shape, inputs)
            err = verify(backend, prepared, ref)
            if not err <= variant.tolerance:
                on_result(shape, config, None, f"rel_err {err:.1e}")
                continue
            samples = sorted(measure(prepared.run, backend.clock, SEARCH_POLICY).samples_ms)
        except Exception as e:  # a candidate that cannot launch here is just not a candidate
            on_result(shape, config, None, str(e).splitlines()[0] if str(e) else type(e).__name__)
            continue
        timed.append((samples[len(samples) // 2], config))
        on_result(shape, config, timed[-1][0], "")
    return timed


def tune(backend, shapes: list[GemmShape], configs: list[Config], seed: int, refine: int = 1,
         on_result=lambda *a: None) -> Path:
    variant = registry.get("gemm", "cuda", SEARCH_VARIANT)
    configs = precompile(backend, variant, configs)
    device = backend.device_name
    cache = load(device)
    for i, shape in enumerate(shapes):
        inputs = backend.inputs(shape, seed + i)
        ref = backend.reference(shape, inputs)
        timed = _time_configs(backend, variant, shape, inputs, ref, configs, on_result)
        tried = {c.label for c in configs}
        for _ in range(refine):
            best_few = [c for _, c in sorted(timed, key=lambda t: t[0])[:REFINE_FROM]]
            near = {n.label: n for c in best_few for n in neighbours(c) if n.label not in tried}
            tried |= set(near)
            timed += _time_configs(backend, variant, shape, inputs, ref,
                                   precompile(backend, variant, list(near.values())), on_result)
        if not timed:
            raise GpubenchError(f"no candidate configuration ran for {shape.label}")
        ms, best = min(timed, key=lambda t: t[0])
        cache["entries"] = [e for e in cache["entries"]
                            if not (e["variant"] == TUNED_VARIANT and e["shape"] == [shape.m, shape.n, shape.k])]
        cache["entries"].append({
            "variant": TUNED_VARIANT, "shape": [shape.m, shape.n, shape.k], "params": best.values,
            "label": best.label, "ms": ms, "gflops": shape.flops / ms / 1e6, "tried": len(timed),
            "runner_up": [c.label for _, c in sorted(timed, key=lambda t: t[0])[1:4]],
        })
        cache["device"] = device
        cache["gpubench_commit"] = environment.git_commit()
        path = cache_path(device)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cache, indent=1) + "\n")
        backend.collect()
    return cache_path(device)
