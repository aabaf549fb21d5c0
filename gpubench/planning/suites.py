"""Suites: named sweeps in a TOML file, expanded into points in one place.

    name = "quick"
    description = "about a minute"
    timeout = 30            # seconds a point may take before the watchdog ends it (--timeout overrides)
    [defaults]              # timing for every sweep: warmup, reps, budget, max_noise, max_time, flush,
                            # decide (a threshold, 0 = off), discard_throttled,
                            # pace ("idle", the default, or "sustained"), settle (seconds, for sustained),
                            # cooldown (seconds of idle before each point),
                            # preheat (seconds of GPU burn after the GPU idled),
                            # processes (worker processes that each measure every point, interleaved),
                            # clock ("events", or "both": CUPTI's kernel times beside them), graph (calls per
                            # captured CUDA graph, 0: none)
    reps = 30
    [[sweep]]
    name = "gemm"
    op = "gemm"             # gemm | conv
    variants = ["tiled", "cublas"]
    sizes = [1024, 2048]    # gemm: square sizes (and/or mnk = [[M, N, K], ...]); conv: H = W
    block_sizes = [16, 32]  # for the block-size variants (default 8, 16, 24, 32)
    # conv only: strides = [1, 2, 3], batch, in_channels, out_channels, kernel, padding ("same", "valid", n)
    dtypes = ["fp32", "bf16"]   # precisions (default fp32); each variant runs those it takes
    layouts = ["nn", "nt"]      # memory layouts (default the lab's: nn, nchw)

A suite's `tf32 = true` (or `gpubench run --tf32`) is the old spelling of dtypes = ["tf32"] for every sweep.

Variant names are the GPU's (a project's own included); with --backend cpu a sweep runs those of them the CPU
backend has, or its NumPy variants, so any suite can be tried without a GPU. Shapes that cannot run (a filter
larger than its padded input) are left out with the reason; a file that is wrong is refused with one line
naming the key. Every value goes through the same checks as the command line's (gpubench/planning/plan.py).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from gpubench.core.backend_kind import BackendKind
from gpubench.core import paths
from gpubench.planning import plan
from gpubench.core.errors import GpubenchError, parser_complaint
from gpubench.planning.plan import DEFAULTS
from gpubench import ops
from gpubench.ops.params import toml_ints as _ints
from gpubench.specs.parse import LAB_BLOCK_SIZES
from gpubench.specs.catalog import Catalog
from gpubench.specs.variant import Axis
from gpubench.execution.sweep import Sweep

TIMING_KEYS = {"warmup", "reps", "budget", "max_noise", "max_time", "flush", "decide", "discard_throttled", "pace",
               "settle", "cooldown", "preheat", "places", "processes", "clock", "graph"}
PRECISION_KEYS = {"dtypes", "layouts"}
SWEEP_KEYS = {"name", "op", "variants", "configs", "block_sizes", *TIMING_KEYS, *PRECISION_KEYS}  # and the op's own params
TOP_KEYS = {"name", "description", "tf32", "timeout", "defaults", "sweep"}


@dataclass
class Suite:
    name: str
    description: str
    tf32: bool
    sweeps: list[Sweep]
    timeout_s: float | None = None  # the watchdog's seconds a point, where the suite sets it


def suites_dir() -> Path:
    """The shipped suites (package data)."""
    return paths.configs_dir()


def _timing(table: dict, base: dict, where: str, backend: str = BackendKind.CUDA):
    """The sweep's timing: [defaults] overridden by the sweep's own keys, checked by plan.policy."""
    values = {"decide": plan.default_decide(backend), "preheat": plan.default_preheat(backend),
              "places": plan.default_places(backend), **base,
              **{k: table[k] for k in TIMING_KEYS if k in table}}
    if isinstance(values.get("budget"), int) and not isinstance(values.get("budget"), bool):
        values["budget"] = float(values["budget"])
    return plan.policy(**values, where=lambda key: f"{where}.{key}")


def _names_text(table: dict, key: str, where: str) -> str | None:
    """A list of names (dtypes, layouts) as the command line writes it, for plan's parser; None if not given."""
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v and "," not in v for v in value):
        raise GpubenchError(f"{where}.{key} must be a non-empty list of names, e.g. [\"fp32\", \"bf16\"]")
    return ",".join(value)


def _sweep(table: dict, index: int, backend: str, base: dict, catalog: Catalog, tf32: bool = False) -> Sweep:
    where = f"sweep[{index}]"
    if not isinstance(table, dict):
        raise GpubenchError(f"{where} must be a table ([[sweep]])")
    op = table.get("op")
    if not isinstance(op, str) or op not in ops.names():
        raise GpubenchError(f"{where}.op must be one of {', '.join(ops.names())}, got {op!r}")
    keys = SWEEP_KEYS | ops.get(op).suite_keys
    unknown = set(table) - keys
    if unknown:
        raise GpubenchError(f"{where} has unknown key(s) {', '.join(sorted(unknown))} for op {op}; allowed are "
                            f"{', '.join(sorted(keys))}")
    name = plan.check_name(table.get("name", f"{op}-{index}"), f"{where}.name")
    skipped = []
    names = table.get("variants")
    if names is not None and not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise GpubenchError(f"{where}.variants must be a non-empty list of variant names (leave the key out for "
                            "the defaults)")
    if names and backend == BackendKind.CPU:  # suites name GPU variants; the CPU backend runs what it has of them
        known_anywhere = {v.name for v in catalog.all if v.op == op}
        bad = [n for n in names if n not in known_anywhere]
        if bad:
            raise GpubenchError(f"{where}.variants: unknown {op} variant(s) {', '.join(bad)}; allowed are "
                                f"{', '.join(sorted(known_anywhere))}")
        here = [n for n in names if n in {v.name for v in catalog.variants(op, BackendKind.CPU)}]
        if len(here) < len(names):
            skipped.append((f"{name}: variants {', '.join(n for n in names if n not in here)}",
                            "not on the cpu backend; it runs its NumPy variants"))
        names = here or None
    chosen, pins = _narrowed(plan.variants(catalog, op, backend, names or None, f"{where}.variants"),
                             table.get("configs"), f"{where}.configs", backend)
    if "block_sizes" in table and backend != BackendKind.CPU:  # the CPU backend has no thread blocks to give them to
        plan.check_block_option(chosen, f"{where}.block_sizes")
    blocks = plan.block_sizes(_ints(table.get("block_sizes", list(LAB_BLOCK_SIZES)), f"{where}.block_sizes"),
                              f"{where}.block_sizes")
    timing = _timing(table, base, where, backend)
    shapes, more = ops.get(op).problems({**table, "name": name}, where, strict=False)
    skipped += more
    dtypes = plan.dtypes_asked(_names_text(table, "dtypes", where), tf32, f"{where}.dtypes")
    layouts = plan.layouts_asked(_names_text(table, "layouts", where), op, f"{where}.layouts")
    # A suite's variants are a menu, as on the CPU backend: those that take none of the sweep's precisions are
    # left out, saying why (a named variant of the command line would be an error).
    asked = plan.precisions(chosen, dtypes, layouts, named=set(), where=where, strict=False)
    skipped += [(f"{name}: {what}", why) for what, why in asked.skipped]
    shapes = plan.in_precisions(shapes, asked.dtypes, asked.layouts)
    _check_pins(pins, asked.variants, shapes, f"{where}.configs")
    return plan.sweep(name, op, asked.variants, shapes, blocks, timing, skipped, where, pinned=pins)




def _labels(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value)


def _narrowed(chosen: list, asked, where: str, backend: str) -> tuple[list, dict[str, dict[str, tuple[str, ...]]]]:
    """The sweep's variants, those named in its `configs` table running only the configurations it lists, by label
    and in its order (e.g. `configs = { "tc-wgmma-tma" = ["192x128x64 s4 c1 u1 d1 q1"] }`: the rounds of a target
    run the configuration fixed for them, not all of them). A variant may instead be given a table of the sweep's
    problems, by label, each with its own list (`{ "fp8-grouped" = { "4x8192x4096x7168 FP8 CONTIGUOUS-BLOCK" =
    ["128x160 s5 c2 g8 u1 d1 q1 t1"], ... } }`): each problem then runs its own. Returns the variants and those
    pins, {variant: {problem label: labels}}."""
    if asked is None:
        return chosen, {}
    example = ('{ "tc-wgmma-tma" = ["192x128x64 s4 c1 u1 d1 q1"] }, or to tables of problem labels to such lists')
    if not isinstance(asked, dict) or not asked:
        raise GpubenchError(f"{where} must be a table of variant names to lists of configuration labels, e.g. {example}")
    for name, labels in asked.items():
        if not (_labels(labels) or (isinstance(labels, dict) and labels and all(
                isinstance(problem, str) and _labels(x) for problem, x in labels.items()))):
            raise GpubenchError(f"{where}.{name} must be a non-empty list of configuration labels, or a table of the "
                                f"sweep's problems to such lists; a sweep's configs look like {example}")
    pins = {name: {problem: tuple(dict.fromkeys(x)) for problem, x in labels.items()}
            for name, labels in asked.items() if isinstance(labels, dict)}
    asked = {name: list(dict.fromkeys(x for labels in pins[name].values() for x in labels)) if name in pins
             else labels for name, labels in asked.items()}
    by_name = {v.name: v for v in chosen}
    unknown = [name for name in asked if name not in by_name]
    if unknown and backend != BackendKind.CPU:  # the CPU backend runs none of the GPU variants named
        raise GpubenchError(f"{where}: {', '.join(unknown)} is not among the sweep's variants "
                            f"({', '.join(by_name)})")
    out = []
    for v in chosen:
        if v.name not in asked:
            out.append(v)
            continue
        if v.name in pins and v.space.axis == Axis.BLOCK:
            raise GpubenchError(f"{where}.{v.name} takes its configurations from the sweep's block_sizes: give it "
                                "a list, or set block_sizes, not a table of problems")
        labels = {c.label: c for c in v.space.configs}
        missing = [x for x in asked[v.name] if x not in labels]
        if missing:
            raise GpubenchError(f"{where}: {v.name} has no configuration {missing[0]!r}; allowed are "
                                f"{', '.join(repr(x) for x in labels)}")
        out.append(replace(v, space=replace(v.space, configs=tuple(labels[x] for x in asked[v.name]))))
    return out, {name: p for name, p in pins.items() if name in by_name}


def _check_pins(pins: dict[str, dict[str, tuple[str, ...]]], variants: list, shapes: list, where: str) -> None:
    """A variant's table of problems names each problem of the sweep that it runs, and no other."""
    for v in variants:
        if v.name not in pins:
            continue
        runs = [s.full_label for s in shapes if v.scope.takes(s) is None]
        named = pins[v.name]
        stray = [p for p in named if p not in runs]
        if stray:
            raise GpubenchError(f"{where}: {v.name} names problem {stray[0]!r}, which it does not run in this sweep; "
                                f"its problems are {', '.join(repr(p) for p in runs)}")
        missing = [p for p in runs if p not in named]
        if missing:
            raise GpubenchError(f"{where}: {v.name} names no configuration for problem {missing[0]!r}; a table of "
                                f"problems names every one the variant runs: {', '.join(repr(p) for p in runs)}")


def find(name: str | Path) -> Path:
    """A suite file: a path, or the name of a shipped suite."""
    path = Path(name)
    if not str(name).strip():
        raise GpubenchError(f"the suite is empty: give a suite file or one of the shipped suites ({_names()})")
    if path.is_file():
        return path
    candidate = suites_dir() / f"{path.stem}.toml"
    bare = "/" not in str(name) and os.sep not in str(name)  # ./lab.toml names a file here, never the shipped lab
    if path.suffix in ("", ".toml") and bare and candidate.is_file():
        return candidate
    if path.is_dir():
        raise GpubenchError(f"suite {name} is a directory: give a suite file (.toml) or one of the shipped suites "
                            f"({_names()})")
    if path.exists():
        raise GpubenchError(f"suite {name} is not a file: give a suite file (.toml) or one of the shipped suites "
                            f"({_names()})")
    raise GpubenchError(f"suite {name} does not exist: give a suite file or one of the shipped suites ({_names()})")


def _names() -> str:
    return ", ".join(n for n, _ in shipped())


def load(name: str | Path, backend: str = BackendKind.CUDA, catalog: Catalog | None = None,
         tf32: bool = False) -> Suite:
    """A suite's sweeps, every value checked; tf32 (--tf32) puts every sweep in tf32."""
    path = find(name)
    catalog = catalog or Catalog.with_user([])
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # -sig: an editor's byte-order mark
    except (OSError, UnicodeDecodeError) as e:
        raise GpubenchError(f"suite {path} cannot be read ({e})") from None
    except ValueError as e:  # TOMLDecodeError, or an integer of more digits than Python converts (4300)
        raise GpubenchError(f"suite {path} is not valid TOML: {parser_complaint(e)}") from None
    except RecursionError:  # tomllib recurses once per level of nesting
        raise GpubenchError(f"suite {path} is not a suite (arrays or tables nested too deeply)") from None
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise GpubenchError(f"suite {path} has unknown key(s) {', '.join(sorted(unknown))}; allowed are "
                            f"{', '.join(sorted(TOP_KEYS))}")
    sweeps = data.get("sweep")
    if not isinstance(sweeps, list) or not sweeps:
        raise GpubenchError(f"suite {path} has no [[sweep]] tables")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise GpubenchError(f"suite {path}: [defaults] must be a table")
    unknown = set(defaults) - TIMING_KEYS
    if unknown:
        raise GpubenchError(f"suite {path}: [defaults] has unknown key(s) {', '.join(sorted(unknown))}; allowed are "
                            f"{', '.join(sorted(TIMING_KEYS))}")
    for key, kind in (("name", str), ("description", str), ("tf32", bool)):
        if key in data and not isinstance(data[key], kind):
            raise GpubenchError(f"suite {path}: {key} must be a {kind.__name__}, got {data[key]!r:.60}")
    if "name" in data:
        plan.check_name(data["name"], f"suite {path}: name")
    timeout = data.get("timeout")
    if timeout is not None:
        timeout = plan.check_timeout(timeout, name=f"suite {path}: timeout:")
    try:
        base = {k: defaults[k] for k in TIMING_KEYS if k in defaults}
        _timing(defaults, {}, "defaults", backend)  # checked here, so a bad default is named as one
        tf32 = tf32 or data.get("tf32") is True
        expanded = [_sweep(t, i, backend, base, catalog, tf32) for i, t in enumerate(sweeps)]
    except GpubenchError as e:
        raise GpubenchError(f"suite {path}: {e}") from None
    _each_point_once(expanded, path)
    return Suite(str(data.get("name", path.stem)), str(data.get("description", "")), bool(data.get("tf32", False)),
                 expanded, timeout)


def _each_point_once(sweeps: list[Sweep], path: Path) -> None:
    """Sweeps that overlap would measure a point twice, and a results file holding a point twice cannot be compared:
    the first repeat is named, with the sweeps it is in."""
    first: dict[tuple, str] = {}
    for sweep in sweeps:
        for shape, variant, config in sweep.points():
            key = (sweep.op, shape, variant.name, config.label)
            if key in first:
                config_text = "" if config.label == "-" else f" {config.label}"
                raise GpubenchError(f"suite {path}: sweeps {first[key]} and {sweep.name} both measure "
                                    f"{sweep.op} {variant.name}{config_text} {shape.full_label}: a run holds each "
                                    "point once (narrow one sweep's sizes or variants)")
            first[key] = sweep.name


def shipped() -> list[tuple[str, str]]:
    """(name, description) of every shipped suite."""
    out = []
    for p in sorted(suites_dir().glob("*.toml")):
        try:
            out.append((p.stem, str(tomllib.loads(p.read_text(encoding="utf-8")).get("description", ""))))
        except (ValueError, RecursionError, OSError):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
            out.append((p.stem, "(not valid TOML)"))
    return out
