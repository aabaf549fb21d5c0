"""Tuned configurations: the configuration `gpubench tune` found fastest, per device, variant and shape.

They are read from, in this order: the project's directory (gpubench.toml: ``tuned = "DIR"``), the user's
(<user config>/tuned; GPUBENCH_TUNED moves it), and the ones shipped with gpubench (configs/tuned/). Each
holds one file per device, ``<device-slug>.json``. `gpubench tune` writes to the project's directory when the
project names one, else to the user's; never into the installed package.

A tuned variant runs, for each shape, the entry for that shape, else the entry of the nearest size (by the
log of its FLOPs), else its own first configuration. The sweep resolves this before the backend sees it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from gpubench.core import paths
from gpubench.core.errors import GpubenchError
from gpubench import ops
from gpubench.ops import shape_from
from gpubench.results import Details
from gpubench.specs.variant import Axis, Config, Variant


def slug(device: str) -> str:
    """The stem of a device's tuned file: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    return paths.slug(device, fallback="device")


def shipped_dir() -> Path:
    return paths.configs_dir() / "tuned"


def _entry_problem(entry) -> dict:
    """An entry's problem record as today's shapes write it (files from before 0.2 wrote a GEMM shape as
    [M, N, K]; files from before the precision axis leave out dtype and layout, which read as fp32 and nn)."""
    shape = entry["shape"]
    if isinstance(shape, list):
        shape = {"m": shape[0], "n": shape[1], "k": shape[2]}
    try:
        return _shape(shape).record()
    except GpubenchError:
        return shape


def _shape(record: dict):
    """The problem a tuned entry's record describes: the op whose shape reads it back (GpubenchError: none)."""
    for op in ops.builtin():
        try:
            return shape_from(op.name, record)
        except GpubenchError:
            continue
    raise GpubenchError(f"no op's problem has the keys {', '.join(record)}")


def _flops(problem: dict) -> float:
    """The problem's FLOPs through its shape, or the product of its sizes for a record no shape reads back."""
    try:
        return _shape(problem).flops
    except GpubenchError:
        return float(math.prod(v for v in problem.values() if isinstance(v, int) and v > 0))


def read(path: Path) -> list[dict]:
    """The entries of one tuned file, checked; a file that is wrong is refused in one line."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise GpubenchError(f"tuned configurations {path} cannot be read ({e}): delete it or run `gpubench tune` "
                            "again") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    ok = isinstance(entries, list) and all(
        isinstance(e, dict) and isinstance(e.get("variant"), str) and isinstance(e.get("params"), dict)
        and all(type(v) is int for v in e["params"].values())
        and (isinstance(e.get("shape"), dict) or (isinstance(e.get("shape"), list) and len(e["shape"]) == 3))
        for e in entries)
    if not ok:
        raise GpubenchError(f"tuned configurations {path} are corrupt (each entry needs variant, shape and integer "
                            "params): delete the file or run `gpubench tune` again")
    return entries


class Tuned:
    """The tuned configurations one device can use."""

    def __init__(self, device: str, project_dir: Path | None = None):
        self.device = device
        dirs = [d for d in (project_dir, paths.tuned_dir(), shipped_dir()) if d is not None]
        self.files = [d / f"{slug(device)}.json" for d in dirs]
        self.entries = [(path, e) for path in self.files if path.is_file() for e in read(path)]
        self.write_dir = project_dir or paths.tuned_dir()

    def lookup(self, variant: str, shape) -> tuple[dict, Path, bool] | None:
        """(params, file, exact) of the entry for this shape or the nearest size; None when none was tuned."""
        mine = [(path, e) for path, e in self.entries if e["variant"] == variant]
        if not mine:
            return None
        want, size = shape.record(), math.log(shape.flops)

        def distance(item):  # the earlier file wins a tie (project, then user, then shipped)
            exact = _entry_problem(item[1]) == want
            return (0 if exact else 1, abs(math.log(_flops(_entry_problem(item[1]))) - size),
                    self.files.index(item[0]))

        path, entry = min(mine, key=distance)
        return entry["params"], path, _entry_problem(entry) == want

    def resolve(self, variant: Variant, shape, config: Config) -> tuple[Config, Details]:
        """The configuration a point of `variant` runs at `shape`, and what to record about where it came from."""
        if variant.space.axis != Axis.TUNED:
            return config, Details()
        found = self.lookup(variant.name, shape)
        if found is None:
            return config, Details(tuned=False)
        params, path, exact = found
        return variant.space.config(params), Details(tuned=True, tuned_from=str(path), tuned_exact=exact)

    def save(self, variant: str, shape, config: Config, record: dict) -> Path:
        """Keep a winner (replacing the entry for the same variant and shape) in the writable directory."""
        path = self.write_dir / f"{slug(self.device)}.json"
        entries = read(path) if path.is_file() else []
        entries = [e for e in entries if not (e["variant"] == variant and _entry_problem(e) == shape.record())]
        entries.append({"variant": variant, "shape": shape.record(), "params": config.values,
                        "label": config.label, **record})
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"device": self.device, "entries": entries}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        self.entries = [(p, e) for p, e in self.entries if p != path] + [(path, e) for e in entries]
        return path
