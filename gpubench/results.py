"""The results model: a run is a list of points plus the environment they were measured in.

Pure data and JSON I/O, nothing about rendering. A point keeps its raw samples; its statistics, GFLOPS and GB/s
are derived from them on demand (and written out too, for readers such as jq, but never read back). A run
also records what a reader needs without today's code: each variant's summary, source path and hash, and
which one is the baseline, and anything that went wrong with a worker.

A file is checked when it is read (types, required fields, finite positive samples, statuses that agree with
the errors) so that nothing downstream computes a verdict from garbage; files of the previous schema version
are migrated as they load. Saving is atomic (a temporary file, then a rename), so a crash or a full disk never
leaves a half-written or clobbered file.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path

from gpubench import __version__
from gpubench.errors import GpubenchError
from gpubench.timing import Stats, summarize

SCHEMA = "gpubench-run"
SCHEMA_VERSION = 2

STATUSES = ("ok", "fail", "error", "timeout", "skipped")
FAILED = ("fail", "error", "timeout")  # a point that ran and did not pass: the command exits 1
RUN_STATUSES = ("running", "complete", "interrupted")

GEMM_KEYS = ("m", "n", "k")
CONV_KEYS = ("batch", "in_channels", "out_channels", "height", "width", "kernel", "stride", "padding")
SHAPE_KEYS = {"gemm": GEMM_KEYS, "conv": CONV_KEYS}


@dataclass(eq=True)
class Point:
    """One measured (or failed, timed-out, skipped) combination of variant, configuration and problem shape."""

    op: str
    variant: str
    config: str  # the variant's axis value: block size ("16"), tile configuration, or "-"
    params: dict  # the problem shape (GEMM_KEYS or CONV_KEYS)
    status: str  # ok | fail (over tolerance) | error (raised or crashed) | timeout (watchdog) | skipped
    reason: str = ""
    rel_err: float | None = None
    tolerance: float | None = None
    flops: float = 0.0
    min_bytes: float = 0.0
    samples_ms: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # tf32, engine, im2col_ms, stop reason, tuned, ...
    device: str | None = None  # which GPU ran it, where a run used several
    telemetry: dict | None = None  # SM/memory clocks, power, throttled samples, joules per call (NVML)

    @classmethod
    def measured(cls, op, variant, config, params, *, samples_ms, flops, min_bytes, rel_err, tolerance, extra,
                 telemetry=None):
        ok = rel_err is not None and rel_err <= tolerance
        return cls(op, variant, config, params, "ok" if ok else "fail",
                   reason="" if ok else f"rel_err {rel_err:.2e} over tolerance {tolerance:.0e}",
                   rel_err=rel_err, tolerance=tolerance, flops=flops, min_bytes=min_bytes,
                   samples_ms=list(samples_ms), extra=extra, telemetry=telemetry)

    @cached_property
    def timing(self) -> Stats | None:
        return summarize(self.samples_ms) if self.samples_ms else None

    @property
    def median_ms(self) -> float | None:
        return self.timing.median if self.timing else None

    @property
    def gflops(self) -> float | None:
        return self.flops / self.median_ms / 1e6 if self.median_ms else None

    @property
    def gbps(self) -> float | None:
        return self.min_bytes / self.median_ms / 1e6 if self.median_ms else None

    @property
    def tf32(self) -> bool:
        return bool(self.extra.get("tf32"))

    def shape_key(self) -> tuple:
        return tuple(self.params.get(k) for k in SHAPE_KEYS[self.op])

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

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        t = self.timing
        d.update(stats=t.as_dict() if t else None, gflops=self.gflops, gbps=self.gbps)  # derived, for readers
        return d


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
    variants: list[dict] = field(default_factory=list)  # Variant.record() of every variant in the run
    incidents: list[dict] = field(default_factory=list)  # workers that died, hung or were left unusable
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    @property
    def device(self) -> str:
        return self.environment.get("device", {}).get("name", "unknown device")

    def ops(self) -> list[str]:
        return sorted({p.op for p in self.points}, key=("gemm", "conv").index)

    def baseline(self, op: str) -> str | None:
        """The variant this run measured `op` against, as recorded when it ran."""
        return next((v["name"] for v in self.variants if v.get("op") == op and v.get("baseline")), None)

    def failed(self) -> list[Point]:
        return [p for p in self.points if p.status in FAILED]

    def to_json(self) -> str:
        data = asdict(self)
        data["points"] = [p.to_dict() for p in self.points]
        return json.dumps(data, indent=1, allow_nan=True)


def save(run: Run, path: str | Path) -> Path:
    """Write atomically: readers (and a crash or a full disk mid-write) never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as f:
            f.write(run.to_json())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise GpubenchError(f"cannot write results to {path} ({e.strerror or e}); the file keeps its last "
                            "complete save") from None
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


# --- reading: schema check and migration ----------------------------------------------------------------------


class _Check:
    """Raises one line naming the file and the place in it."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, what: str):
        raise GpubenchError(f"results file {self.path} is corrupt: {where}{': ' if where else ''}{what}")

    def field(self, d: dict, key: str, kinds, where: str, required: bool = True):
        if key not in d:
            if required:
                self.fail(where, f"lacks {key}")
            return None
        value = d[key]
        if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
            self.fail(where, f"{key} has the wrong type ({value!r})")
        if not isinstance(value, kinds):
            self.fail(where, f"{key} has the wrong type ({type(value).__name__})")
        return value

    def number(self, d: dict, key: str, where: str, *, lo: float = 0.0, hi: float = 1e30, allow_inf: bool = False,
               optional: bool = False):
        value = self.field(d, key, (int, float, type(None)) if optional else (int, float), where, not optional)
        if value is None:
            return None
        try:
            value = float(value)
        except OverflowError:
            value = math.nan
        if math.isnan(value) or (math.isinf(value) and not allow_inf) or value < lo or (value > hi and
                                                                                        not math.isinf(value)):
            self.fail(where, f"{key} must be a number from {lo:g} to {hi:g}{'' if allow_inf else ', finite'}, "
                             f"got {d[key]!r:.40}")
        return value


def _point(d, i: int, check: _Check) -> Point:
    where = f"point {i}"
    if not isinstance(d, dict):
        check.fail(where, "is not an object")
    op = check.field(d, "op", str, where)
    if op not in SHAPE_KEYS:
        check.fail(where, f"op {op!r}; allowed are {', '.join(SHAPE_KEYS)}")
    where = f"point {i} ({op} {d.get('variant', '?')})"
    missing = [k for k in ("variant", "config", "params", "status") if k not in d]
    if missing:
        check.fail(where, f"lacks {', '.join(missing)}")
    variant, config = check.field(d, "variant", str, where), check.field(d, "config", str, where)
    status = check.field(d, "status", str, where)
    if status not in STATUSES:
        check.fail(where, f"status {status!r}; allowed are {', '.join(STATUSES)}")
    params = check.field(d, "params", dict, where)
    keys = SHAPE_KEYS[op]
    if set(params) != set(keys) or not all(type(params[k]) is int and params[k] >= (0 if k == "padding" else 1)
                                           for k in keys):
        check.fail(where, f"params must be positive integers {', '.join(keys)}")
    samples = check.field(d, "samples_ms", list, where, required=False) or []
    if not all(type(s) in (int, float) and _finite(s) and SAMPLE_RANGE[0] <= s <= SAMPLE_RANGE[1] for s in samples):
        check.fail(where, f"samples_ms must be finite positive numbers of milliseconds ({SAMPLE_RANGE[0]:g} to "
                          f"{SAMPLE_RANGE[1]:g})")
    rel_err = check.number(d, "rel_err", where, allow_inf=True, optional=True)
    tolerance = check.number(d, "tolerance", where, hi=1.0, optional=True)
    if status in ("ok", "fail"):
        if not samples or rel_err is None or tolerance is None:
            check.fail(where, f"status {status} needs samples_ms, rel_err and tolerance")
        if (status == "ok") != (rel_err <= tolerance):
            check.fail(where, f"status {status} disagrees with rel_err {rel_err:.2e} and tolerance {tolerance:.0e}")
    extra = check.field(d, "extra", dict, where, required=False) or {}
    for key, kind in EXTRA_TYPES.items():
        if kind is float:
            check.number(extra, key, f"{where}.extra", optional=True)
        else:
            check.field(extra, key, (kind, type(None)), f"{where}.extra", required=False)
    device = check.field(d, "device", (str, type(None)), where, required=False)
    telemetry = check.field(d, "telemetry", (dict, type(None)), where, required=False)
    if telemetry:
        for key in ("sm_mhz", "sm_mhz_min", "mem_mhz", "power_w", "throttled", "discarded", "joules_per_call",
                    "gflops_per_w", "window_power_w", "energy_window_calls"):
            check.number(telemetry, key, f"{where}.telemetry", optional=True)
        reasons = check.field(telemetry, "reasons", list, f"{where}.telemetry", required=False) or []
        if not all(isinstance(r, str) for r in reasons):
            check.fail(f"{where}.telemetry", "reasons must be a list of strings")
    return Point(op, variant, config, params, status, reason=str(d.get("reason", "")), rel_err=rel_err,
                 tolerance=tolerance, flops=check.number(d, "flops", where, optional=True) or 0.0,
                 min_bytes=check.number(d, "min_bytes", where, optional=True) or 0.0,
                 samples_ms=[float(s) for s in samples], extra=extra, device=device, telemetry=telemetry)


SAMPLE_RANGE = (1e-9, 1e12)  # milliseconds: a femtosecond to thirty years; anything else is corruption
EXTRA_TYPES = {"im2col_ms": float, "engine": str, "plans": int, "tf32": bool, "batch": int, "stop": str,
               "tuned": bool, "flushed": bool, "tensor_cores": bool, "workspace_bytes": int}  # what readers use
MAX_DEPTH = 64  # nesting in settings, environment or extra: deeper is not a file gpubench wrote


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _depth(value, limit: int = MAX_DEPTH) -> int:
    stack, deepest = [(value, 1)], 0
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if d > limit:
            return d
        if isinstance(v, dict):
            stack += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, d + 1) for x in v]
    return deepest


V1_BASELINES = {("cuda", "gemm"): "cublas", ("cuda", "conv"): "cudnn", ("cpu", "gemm"): "numpy",
                ("cpu", "conv"): "im2col"}


def _from_v1(data: dict) -> dict:
    """Version 1 (gpubench 0.1) kept no variant records; its baselines were fixed per backend and op."""
    backend = data.get("backend")
    data["variants"] = [{"op": op, "name": name, "baseline": True} for (b, op), name in V1_BASELINES.items()
                        if b == backend]
    data["incidents"] = []
    data["schema_version"] = 2
    return data


MIGRATIONS = {1: _from_v1}  # version -> the function that lifts it one version up


def load(path: str | Path) -> Run:
    """Read a saved run, turning every way a file can be wrong into one line that says which."""
    path = Path(path)
    if not path.is_file():
        raise GpubenchError(f"results file {path} does not exist" if not path.exists() else
                            f"results file {path} is not a file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise GpubenchError(f"results file {path} cannot be read ({e})") from None
    if not text.strip():
        raise GpubenchError(f"results file {path} is empty")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise GpubenchError(f"results file {path} is not valid JSON (truncated or corrupt?): {e}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise GpubenchError(f"{path} is not a gpubench results file (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if type(version) is not int or not (min(MIGRATIONS) <= version <= SCHEMA_VERSION):
        newer = type(version) is int and version > SCHEMA_VERSION
        raise GpubenchError(f"{path} has schema version {version!r}; this gpubench reads versions "
                            f"{min(MIGRATIONS)} to {SCHEMA_VERSION}"
                            + ("; upgrade gpubench to read it" if newer else ""))
    while data["schema_version"] < SCHEMA_VERSION:
        data = MIGRATIONS[data["schema_version"]](data)
    check = _Check(path)
    backend = check.field(data, "backend", str, "")
    environment = check.field(data, "environment", dict, "")
    settings = check.field(data, "settings", dict, "")
    points = check.field(data, "points", list, "")
    status = check.field(data, "status", str, "", required=False) or "complete"
    if status not in RUN_STATUSES:
        check.fail("", f"status {status!r}; allowed are {', '.join(RUN_STATUSES)}")
    if _depth(data) > MAX_DEPTH:
        check.fail("", f"nested more than {MAX_DEPTH} levels deep")
    device = check.field(environment, "device", dict, "environment", required=False) or {}
    check.field(environment, "software", dict, "environment", required=False)
    check.field(device, "name", str, "environment.device", required=False)
    check.number(device, "copy_gbps", "environment.device", optional=True)
    check.number(device, "floor_ms", "environment.device", lo=1e-9, optional=True)
    ceilings = check.field(device, "ceilings", dict, "environment.device", required=False) or {}
    for key in ceilings:
        check.number(ceilings, key, "environment.device.ceilings", lo=1e-9)
    check.field(device, "telemetry", dict, "environment.device", required=False)
    command = check.field(data, "command", list, "", required=False) or []
    if not all(isinstance(c, str) for c in command):
        check.fail("", "command must be a list of strings")
    variants = check.field(data, "variants", list, "", required=False) or []
    for i, v in enumerate(variants):
        where = f"variants[{i}]"
        if not isinstance(v, dict):
            check.fail(where, "is not an object")
        check.field(v, "op", str, where)
        check.field(v, "name", str, where)
        check.field(v, "baseline", bool, where, required=False)
        for key in ("sha256", "source"):
            check.field(v, key, (str, type(None)), where, required=False)
    incidents = check.field(data, "incidents", list, "", required=False) or []
    for i, incident in enumerate(incidents):
        if not isinstance(incident, dict) or not all(isinstance(incident.get(k), str) for k in ("kind", "where",
                                                                                                "detail")):
            check.fail(f"incidents[{i}]", "needs kind, where and detail as strings")
    return Run(backend=backend, environment=environment, settings=settings, command=command,
               points=[_point(p, i, check) for i, p in enumerate(points)], status=status,
               created=str(data.get("created", "")), gpubench_version=str(data.get("gpubench_version", "")),
               variants=variants, incidents=incidents)
