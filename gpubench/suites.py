"""Suites: named sweeps in a TOML file, expanded into points in one place.

    name = "quick"
    description = "about a minute"
    [defaults]              # timing for every sweep: warmup, reps, budget, max_noise, max_time, flush
    reps = 30
    [[sweep]]
    name = "gemm"
    op = "gemm"             # gemm | conv
    variants = ["tiled", "cublas"]
    sizes = [1024, 2048]    # gemm: square sizes (and/or mnk = [[M, N, K], ...]); conv: H = W
    block_sizes = [16, 32]  # for the block-size variants (default 8, 16, 24, 32)
    # conv only: strides = [1, 2, 3], batch, in_channels, out_channels, kernel, padding ("same", "valid", n)

Variant names are the GPU's; with --backend cpu every sweep runs the CPU backend's NumPy variants of its op
instead, so any suite can be tried without a GPU. Shapes that cannot run (a filter larger than its padded
input) are left out with the reason; a file that is wrong is refused with one line naming the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from gpubench import registry
from gpubench.errors import GpubenchError
from gpubench.problems import GemmShape, conv_shape
from gpubench.sweep import Sweep
from gpubench.timing import TimingPolicy

TIMING_KEYS = {"warmup": int, "reps": int, "budget": float, "max_noise": float, "max_time": float, "flush": bool}
GEMM_KEYS = {"name", "op", "variants", "sizes", "mnk", "block_sizes", *TIMING_KEYS}
CONV_KEYS = {"name", "op", "variants", "sizes", "strides", "block_sizes", "batch", "in_channels", "out_channels",
             "kernel", "padding", *TIMING_KEYS}
TOP_KEYS = {"name", "description", "tf32", "defaults", "sweep"}


@dataclass
class Suite:
    name: str
    description: str
    tf32: bool
    sweeps: list[Sweep]


def suites_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "configs"


def _ints(value, where: str) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise GpubenchError(f"{where} must be a positive integer or a list of them, got {value!r}")
    return values


def _policy(table: dict, base: TimingPolicy, where: str) -> TimingPolicy:
    fields = base.as_dict()
    for key, kind in TIMING_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and value < 0):
            raise GpubenchError(f"{where}.{key} must be a non-negative {kind.__name__}, got {value!r}")
        name = {"budget": "budget_s", "max_time": "max_time_s"}.get(key, key)
        fields[name] = value
    fields["min_reps"] = min(fields["min_reps"], fields["reps"])
    return TimingPolicy(**fields)


def _sweep(table: dict, index: int, backend: str, base: TimingPolicy) -> Sweep:
    where = f"sweep[{index}]"
    op = table.get("op")
    if op not in registry.OPS:
        raise GpubenchError(f"{where}.op must be one of {', '.join(registry.OPS)}, got {op!r}")
    unknown = set(table) - (GEMM_KEYS if op == "gemm" else CONV_KEYS)
    if unknown:
        raise GpubenchError(f"{where} has unknown key(s) {', '.join(sorted(unknown))} for op {op}")
    name = str(table.get("name", f"{op}-{index}"))
    skipped = []
    names = table.get("variants")
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise GpubenchError(f"{where}.variants must be a list of variant names")
    if names:
        known = {v.name for v in registry.VARIANTS if v.op == op}
        bad = [n for n in names if n not in known]
        if bad:
            raise GpubenchError(f"{where}.variants: unknown {op} variant(s) {', '.join(bad)}; allowed are "
                                f"{', '.join(sorted(known))}")
        if backend == "cpu":  # suites name GPU variants; the CPU backend runs its own NumPy ones instead
            skipped.append((f"{name}: variants {', '.join(names)}", "the cpu backend runs its NumPy variants"))
            names = None
    variants = registry.select(op, backend, names or None)
    blocks = tuple(_ints(table.get("block_sizes", list(registry.LAB_BLOCK_SIZES)), f"{where}.block_sizes"))
    if max(blocks) > registry.MAX_BLOCK_SIZE:
        raise GpubenchError(f"{where}.block_sizes: allowed 1..{registry.MAX_BLOCK_SIZE}")
    if op == "gemm":
        shapes = [GemmShape(s, s, s) for s in _ints(table.get("sizes", []), f"{where}.sizes")] if "sizes" in table \
            else []
        for t in table.get("mnk", []):
            m, n, k = _ints(t, f"{where}.mnk") if isinstance(t, list) and len(t) == 3 else (0, 0, 0)
            if not m:
                raise GpubenchError(f"{where}.mnk entries must be [M, N, K], got {t!r}")
            shapes.append(GemmShape(m, n, k))
    else:
        shapes = []
        dims = {key: _ints(table.get(key, default), f"{where}.{key}")[0]
                for key, default in (("batch", 1), ("in_channels", 3), ("out_channels", 1), ("kernel", 3))}
        for size in _ints(table.get("sizes", [512]), f"{where}.sizes"):
            for stride in _ints(table.get("strides", [1]), f"{where}.strides"):
                try:
                    shapes.append(conv_shape(size, stride, padding=table.get("padding", "same"), **dims))
                except GpubenchError as e:
                    skipped.append((f"{name}: size {size} stride {stride}", str(e)))
    if not shapes:
        raise GpubenchError(f"{where} has no shapes to run (give sizes{' or mnk' if op == 'gemm' else ''})")
    return Sweep(name, op, variants, shapes, blocks, _policy(table, base, where), skipped)


def load(path: str | Path, backend: str = "cuda") -> Suite:
    path = Path(path)
    if not path.is_file():
        candidate = suites_dir() / f"{path.stem}.toml"
        if path.suffix == "" and candidate.is_file():
            path = candidate
        else:
            raise GpubenchError(f"suite {path} does not exist (the shipped ones are in {suites_dir()})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise GpubenchError(f"suite {path} is not valid TOML: {e}") from None
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise GpubenchError(f"suite {path} has unknown key(s) {', '.join(sorted(unknown))}; allowed are "
                            f"{', '.join(sorted(TOP_KEYS))}")
    sweeps = data.get("sweep")
    if not isinstance(sweeps, list) or not sweeps:
        raise GpubenchError(f"suite {path} has no [[sweep]] tables")
    defaults = data.get("defaults", {})
    unknown = set(defaults) - set(TIMING_KEYS)
    if unknown:
        raise GpubenchError(f"suite {path}: [defaults] has unknown key(s) {', '.join(sorted(unknown))}")
    base = _policy(defaults, TimingPolicy(), "defaults")
    try:
        expanded = [_sweep(t, i, backend, base) for i, t in enumerate(sweeps)]
    except GpubenchError as e:
        raise GpubenchError(f"suite {path}: {e}") from None
    return Suite(str(data.get("name", path.stem)), str(data.get("description", "")), bool(data.get("tf32", False)),
                 expanded)


def shipped() -> list[tuple[str, str]]:
    """(name, description) of every suite in configs/."""
    out = []
    for p in sorted(suites_dir().glob("*.toml")):
        try:
            out.append((p.stem, str(tomllib.loads(p.read_text()).get("description", ""))))
        except tomllib.TOMLDecodeError:
            out.append((p.stem, "(not valid TOML)"))
    return out
