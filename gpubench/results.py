"""The results model: a run is a list of points plus the environment they were measured in.

Pure data and JSON I/O, nothing about rendering. A run is written to disk after every point (atomically:
a temporary file then a rename), so an interrupted or crashed sweep keeps everything that finished.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from gpubench import __version__
from gpubench.errors import GpubenchError
from gpubench.timing import Stats, summarize

SCHEMA = "gpubench-run"
SCHEMA_VERSION = 1

STATUSES = ("ok", "fail", "skipped", "error")

GEMM_KEYS = ("m", "n", "k")
CONV_KEYS = ("batch", "in_channels", "out_channels", "height", "width", "kernel", "stride", "padding")


@dataclass
class Point:
    """One measured (or skipped) combination of variant, configuration and problem shape."""

    op: str
    variant: str
    config: str  # the variant's axis value: block size ("16"), tile configuration, or "-"
    params: dict  # the problem shape (GEMM_KEYS or CONV_KEYS)
    status: str  # ok | fail (verification over tolerance) | skipped (did not fit, not supported) | error
    reason: str = ""
    rel_err: float | None = None
    tolerance: float | None = None
    flops: float = 0.0
    min_bytes: float = 0.0
    samples_ms: list[float] = field(default_factory=list)
    stats: dict | None = None
    gflops: float | None = None
    gbps: float | None = None
    extra: dict = field(default_factory=dict)  # tf32, engine, im2col_ms, stop reason, ...

    @classmethod
    def measured(cls, op, variant, config, params, *, samples_ms, flops, min_bytes, rel_err, tolerance, extra):
        stats = summarize(samples_ms)
        ok = rel_err is not None and rel_err <= tolerance
        return cls(
            op, variant, config, params, "ok" if ok else "fail",
            reason="" if ok else f"rel_err {rel_err:.2e} over tolerance {tolerance:.0e}",
            rel_err=rel_err, tolerance=tolerance, flops=flops, min_bytes=min_bytes,
            samples_ms=list(samples_ms), stats=stats.as_dict(),
            gflops=flops / stats.median / 1e6, gbps=min_bytes / stats.median / 1e6, extra=extra,
        )

    @property
    def median_ms(self) -> float | None:
        return self.stats["median"] if self.stats else None

    @property
    def timing(self) -> Stats | None:
        return Stats(**self.stats) if self.stats else None

    @property
    def tf32(self) -> bool:
        return bool(self.extra.get("tf32"))

    def shape_key(self) -> tuple:
        keys = GEMM_KEYS if self.op == "gemm" else CONV_KEYS
        return tuple(self.params.get(k) for k in keys)

    def key(self) -> tuple:
        """What identifies a point across runs (compare matches on this)."""
        return (self.op, self.variant, self.config, self.shape_key(), self.tf32)

    def shape_label(self) -> str:
        p = self.params
        if self.op == "gemm":
            return str(p["m"]) if p["m"] == p["n"] == p["k"] else f"{p['m']}x{p['n']}x{p['k']}"
        hw = str(p["height"]) if p["height"] == p["width"] else f"{p['height']}x{p['width']}"
        if (p["batch"], p["in_channels"], p["out_channels"], p["kernel"]) == (1, 3, 1, 3):
            return hw  # the lab's shape: the size says it all
        return f"{p['batch']}x{p['in_channels']}x{hw} k{p['out_channels']} {p['kernel']}x{p['kernel']}"


@dataclass
class Run:
    backend: str
    environment: dict
    settings: dict
    command: list[str] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    status: str = "running"  # running | complete | interrupted
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    gpubench_version: str = __version__
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    @property
    def device(self) -> str:
        return self.environment.get("device", {}).get("name", "unknown device")

    def ops(self) -> list[str]:
        return sorted({p.op for p in self.points}, key=("gemm", "conv").index)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, allow_nan=True)


def save(run: Run, path: str | Path) -> Path:
    """Write atomically: readers (and a crash mid-write) never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(run.to_json())
    os.replace(tmp, path)
    return path


class RunWriter:
    """Appends points to a run and rewrites its file after each one."""

    def __init__(self, run: Run, path: str | Path):
        self.run, self.path = run, Path(path)
        save(run, self.path)

    def add(self, point: Point) -> None:
        self.run.points.append(point)
        save(self.run, self.path)

    def finish(self, status: str) -> Path:
        self.run.status = status
        return save(self.run, self.path)


def _point_from_dict(d: dict, where: str) -> Point:
    names = {f.name for f in fields(Point)}
    missing = [n for n in ("op", "variant", "config", "params", "status") if n not in d]
    if missing:
        raise GpubenchError(f"{where} lacks {', '.join(missing)}")
    if d["status"] not in STATUSES:
        raise GpubenchError(f"{where} has status {d['status']!r}; allowed are {', '.join(STATUSES)}")
    return Point(**{k: v for k, v in d.items() if k in names})


def load(path: str | Path) -> Run:
    """Read a saved run, turning every way a file can be wrong into one line that says which."""
    path = Path(path)
    if not path.is_file():
        raise GpubenchError(f"results file {path} does not exist")
    text = path.read_text(errors="replace")
    if not text.strip():
        raise GpubenchError(f"results file {path} is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise GpubenchError(f"results file {path} is not valid JSON (truncated or corrupt?): {e}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise GpubenchError(f"{path} is not a gpubench results file (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise GpubenchError(f"{path} has schema version {version}; this gpubench reads version {SCHEMA_VERSION}")
    try:
        points = [_point_from_dict(p, f"{path}: point {i}") for i, p in enumerate(data.get("points", []))]
        names = {f.name for f in fields(Run)}
        return Run(**{**{k: v for k, v in data.items() if k in names and k != "points"}, "points": points})
    except TypeError as e:
        raise GpubenchError(f"results file {path} is corrupt: {e}") from None
