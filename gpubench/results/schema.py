"""Reading a results file's data: lifting older versions to this one, then checking every field.

A file is checked when it is read (types, required fields, finite positive samples, statuses that agree with
the errors) so that nothing downstream computes a verdict from garbage. Each check that a record can make of
itself lives in its constructor (gpubench/results/model.py, gpubench/ops/); this module walks the file,
names the place in it, and turns every way it can be wrong into one line.

Versions: 1 (gpubench 0.1) kept no variant records; 2 kept a point's problem as `params` and its details as a
loose `extra` dict (sub-steps' times as `<name>_ms`), and `--gpus N` as "nN"; 3 keeps `problem`, a `details`
record with `parts_ms`, and the `--gpus` selection as it was written; 4 gives every problem a precision and a
layout (`dtype`, `layout`); 5 lets a point's details hold a `profile` (Nsight Compute's counters of one timed call,
gpubench/results/profile.py); 6 lets a convolution's problem hold a fused epilogue (its keys `epilogue`, `alpha`, `beta`,
`gamma`, `scaling`, only where they are not at their defaults) and a precision be int8-fp32 or int8-int8 (int8 in,
float32 or requantised int8 out: gpubench/core/dtypes.py). Each migration lifts a file one version. A point measured in several worker processes
(`--processes K`) also keeps `processes`, its samples' count per process: an optional key (a reader without it
pools the samples, as a one-process point's). A run's settings may keep `gpu_neighbours`, the other processes on its
GPU (gpubench/results/neighbours.py): optional too, a file without it read as one that did not record them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path

from gpubench.core.errors import GpubenchError, GpubenchWarning
from gpubench.core.dtypes import DType
from gpubench import ops
from gpubench.ops import shape_from
from gpubench.results import neighbours
from gpubench.results.model import FIELD_KINDS, SCHEMA_VERSION, Details, Point, Run, RunStatus, Status

MAX_DEPTH = 64  # nesting in settings, environment or details: deeper is not a file gpubench wrote

# --- migrations -------------------------------------------------------------------------------------------------

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


def _details_from_v2(extra: dict) -> dict:
    """A version-2 `extra` dict as a details record: known fields by name, `<step>_ms` into parts_ms, the rest
    into reported."""
    details: dict = {"parts_ms": {}, "reported": {}}
    for key, value in extra.items():
        if key in FIELD_KINDS:
            details[key] = value
        elif key.endswith("_ms"):
            details["parts_ms"][key[:-3]] = value
        else:
            details["reported"][key] = value
    return details


def _from_v2(data: dict) -> dict:
    """Version 2 called a point's problem `params` and its details `extra`, and saved `--gpus N` as "nN"."""
    for p in data.get("points") if isinstance(data.get("points"), list) else []:
        if isinstance(p, dict):
            if "params" in p:
                p["problem"] = p.pop("params")
            if "extra" in p:
                extra = p.pop("extra")
                p["details"] = _details_from_v2(extra) if isinstance(extra, dict) else extra
    settings = data.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("gpus"), str) and settings["gpus"].startswith("n"):
        settings["gpus"] = settings["gpus"][1:]
    data["schema_version"] = 3
    return data


def _from_v3(data: dict) -> dict:
    """Version 3 knew one precision, float32, and TF32 as a point's detail (`--tf32` for the libraries, or a TF32
    kernel): a problem now says its dtype (tf32 where the point ran TF32 math, else fp32) and its layout (the lab's:
    nn for GEMM, nchw for convolution)."""
    for p in data.get("points") if isinstance(data.get("points"), list) else []:
        if isinstance(p, dict) and isinstance(p.get("problem"), dict):
            details = p.get("details") if isinstance(p.get("details"), dict) else {}
            kind = ops.get(p["op"]).shape if p.get("op") in ops.names() else None
            p["problem"].setdefault("dtype", str(DType.TF32 if details.get("tf32") is True else DType.FP32))
            if kind is not None:
                p["problem"].setdefault("layout", str(kind.DEFAULT_LAYOUT))
    data["schema_version"] = 4
    return data


def _from_v4(data: dict) -> dict:
    """Version 4 had no profiles: its points' details are version 5's as they are (a profile is optional)."""
    data["schema_version"] = 5
    return data


def _from_v5(data: dict) -> dict:
    """Version 5 knew no fused epilogue and no int8 outputs but int32: its problems are version 6's as they are (a
    convolution without the epilogue's keys has none)."""
    data["schema_version"] = 6
    return data


MIGRATIONS = {1: _from_v1, 2: _from_v2, 3: _from_v3, 4: _from_v4, 5: _from_v5}  # version -> the function that lifts it one version up


def migrate(data: dict, path: Path) -> dict:
    version = data.get("schema_version")
    if type(version) is not int or not (min(MIGRATIONS) <= version <= SCHEMA_VERSION):
        newer = type(version) is int and version > SCHEMA_VERSION
        raise GpubenchError(f"{path} has schema version {version!r}; this gpubench reads versions "
                            f"{min(MIGRATIONS)} to {SCHEMA_VERSION}"
                            + ("; upgrade gpubench to read it" if newer else ""))
    while data["schema_version"] < SCHEMA_VERSION:
        data = MIGRATIONS[data["schema_version"]](data)
    return data


# --- checking ---------------------------------------------------------------------------------------------------


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

    def made(self, where: str, make):
        """make(), with the complaint of a record's constructor as this place's corruption."""
        try:
            return make()
        except (GpubenchError, ValueError, TypeError, OverflowError) as e:
            self.fail(where, str(e))


class UnknownKeys(GpubenchWarning):
    """A results file holds keys this gpubench does not read (another tool's, a hand edit, a newer gpubench's): it
    is read without them, and one line per file names them, since what they meant is not in what is shown."""


RUN_KEYS = frozenset(f.name for f in fields(Run))  # what Run.to_json writes
POINT_KEYS = frozenset(("op", "variant", "config", "problem", "status", "reason", "rel_err", "tolerance", "samples_ms",
                        "processes", "details", "device", "telemetry", "flops", "min_bytes", "stats", "gflops",
                        "gbps"))  # to_dict's (processes: only a point measured in several worker processes writes it)


def _key(name: str) -> str:
    return _shown(name) if name else "''"


def _warn_unknown(data: dict, path: Path) -> None:
    """One warning naming the keys of the (migrated) file that no field reads, at the top and in its points."""
    found = {f"{_key(k)} (top level)": 1 for k in sorted(set(data) - RUN_KEYS)}
    points = [p for p in data.get("points") or [] if isinstance(p, dict)]
    counts: dict[str, int] = {}
    for p in points:
        for k in set(p) - POINT_KEYS:
            counts[k] = counts.get(k, 0) + 1
    found.update({f"{_key(k)} (in {n} of {len(points)} points)": n for k, n in sorted(counts.items())})
    if found:
        warnings.warn(f"results file {path}: unknown key(s) ignored: {', '.join(found)}; a "
                      f"version-{SCHEMA_VERSION} file has no such field, so what they hold is not in what is shown",
                      UnknownKeys, stacklevel=3)


class PointsMerged(GpubenchWarning):
    """A results file holds a point more than once (a suite whose sweeps overlap, as the lab's conv and conv-small
    did before 1.0, or a file merged by hand): it is read as one point, and one line per file says so."""

    LABEL = "note"  # what a file gpubench saved may hold: nothing is wrong with it


def _once_each(points: list[Point]) -> tuple[list[Point], list[Point]]:
    """The points with each (point, GPU) held once, and the first of each that was held more than once. Two
    measurements of a point are one point with the samples of both (each was timed by the run's protocol, in its
    process); an exact copy adds nothing; where one failed, the failure stands, as it would in a run of it alone."""
    kept: dict[tuple, Point] = {}
    twice: list[Point] = []
    for p in points:
        key = (p.key(), p.device)
        first = kept.get(key)
        if first is None:
            kept[key] = p
            continue
        twice.append(first)
        if first.status != p.status or first.status != Status.OK:  # a failure first, then a measurement
            kept[key] = min((first, p), key=lambda q: (not q.status.failed, q.status != Status.OK))
        elif list(first.samples_ms) != list(p.samples_ms):
            kept[key] = replace(first, samples_ms=[*first.samples_ms, *p.samples_ms])
    return list(kept.values()), twice


UNBOUNDED_TELEMETRY = ("gflops_per_w",)
TELEMETRY_NUMBERS = ("sm_mhz", "sm_mhz_min", "mem_mhz", "power_w", "throttled", "discarded", "joules_per_call",
                     "gflops_per_w", "window_power_w", "energy_window_calls")


def _point(d, i: int, check: _Check) -> Point:
    where = f"point {i}"
    if not isinstance(d, dict):
        check.fail(where, "is not an object")
    op = check.field(d, "op", str, where)
    where = f"point {i} ({_shown(op)} {_shown(d.get('variant', '?'))})"
    missing = [k for k in ("variant", "config", "problem", "status") if k not in d]
    if missing:
        check.fail(where, f"lacks {', '.join(missing)}")
    variant, config = check.field(d, "variant", str, where), check.field(d, "config", str, where)
    status = check.made(where, lambda: _status(check.field(d, "status", str, where)))
    problem = check.field(d, "problem", dict, where)
    problem = check.made(where, lambda: shape_from(op, problem))  # the shape checks its own values
    samples = check.field(d, "samples_ms", list, where, required=False) or []
    if not all(type(s) in (int, float) for s in samples):
        check.fail(where, "samples_ms must be finite positive numbers of milliseconds")
    rel_err = check.number(d, "rel_err", where, hi=math.inf, allow_inf=True, optional=True)  # garbage can be 1e38×
    tolerance = check.number(d, "tolerance", where, hi=1.0, optional=True)
    for key in ("flops", "min_bytes"):  # derived from the problem (never read back), so as large as it is: a
        check.number(d, key, where, hi=math.inf, optional=True)  # 8e9-cubed GEMM's flops are past 1e30
    details = check.field(d, "details", dict, where, required=False) or {}
    details = check.made(f"{where}.details", lambda: Details(**details))
    device = check.field(d, "device", (str, type(None)), where, required=False)
    processes = check.field(d, "processes", list, where, required=False) or []  # --processes K: samples per process
    telemetry = check.field(d, "telemetry", (dict, type(None)), where, required=False)
    if telemetry:
        for key in TELEMETRY_NUMBERS:  # gflops_per_w grows with the problem's flops, as they do
            check.number(telemetry, key, f"{where}.telemetry", optional=True,
                         hi=math.inf if key in UNBOUNDED_TELEMETRY else 1e30)
        reasons = check.field(telemetry, "reasons", list, f"{where}.telemetry", required=False) or []
        if not all(isinstance(r, str) for r in reasons):
            check.fail(f"{where}.telemetry", "reasons must be a list of strings")
    return check.made(where, lambda: Point(problem, variant, config, status, reason=str(d.get("reason", "")),
                                           rel_err=rel_err, tolerance=tolerance, samples_ms=samples, details=details,
                                           device=device, telemetry=telemetry, processes=processes))


def _shown(name) -> str:
    """A name from the file as a message may quote it: as it is where it is printable text, else as Python writes
    it (an escape sequence in a corrupt file never reaches the terminal), at most 40 characters."""
    text = name if isinstance(name, str) and name.isprintable() else repr(name)
    return text if len(text) <= 40 else text[:39] + "…"


def _status(text: str) -> Status:
    try:
        return Status(text)
    except ValueError:
        raise ValueError(f"status {text!r}; allowed are {', '.join(Status)}") from None


def _depth(value, limit: int = MAX_DEPTH) -> int:
    """How deep the data nests (a scalar is 1 deep; counting stops past `limit`), a level at a time: only the
    containers go on to the next level, so a run's samples cost one look each."""
    level, depth = [value], 1
    while depth <= limit:
        if not any(v for v in level if isinstance(v, (dict, list))):
            return depth  # no container here holds anything: the values below are the last level
        level = [x for v in level if isinstance(v, (dict, list)) for x in (v.values() if isinstance(v, dict) else v)
                 if isinstance(x, (dict, list))]
        depth += 1
    return depth


def run_from(data: dict, path: Path, *, each_once: bool = True) -> Run:
    """The run a file's (migrated) data describes, every field checked; each point once (_once_each), unless
    `each_once` is False."""
    check = _Check(path)
    backend = check.field(data, "backend", str, "")
    environment = check.field(data, "environment", dict, "")
    settings = check.field(data, "settings", dict, "")
    check.field(settings, "replicate", bool, "settings", required=False)  # what the views read of the settings
    check.number(settings, "slow_threshold", "settings", optional=True)
    check.made(f"settings.{neighbours.KEY}", lambda: neighbours.of(settings))  # absent in files saved before it
    points = check.field(data, "points", list, "")
    status = check.field(data, "status", str, "", required=False) or RunStatus.COMPLETE
    if status not in list(RunStatus):
        check.fail("", f"status {status!r}; allowed are {', '.join(RunStatus)}")
    if _depth(data) > MAX_DEPTH:
        check.fail("", f"nested more than {MAX_DEPTH} levels deep")
    device = check.field(environment, "device", dict, "environment", required=False) or {}
    check.field(environment, "software", dict, "environment", required=False)
    name = check.field(device, "name", str, "environment.device", required=False)
    if name is not None and not (name and name.isprintable()):
        check.fail("environment.device", f"name must be non-empty printable text, got {name!r:.40}")
    check.number(device, "copy_gbps", "environment.device", optional=True)
    check.number(device, "floor_ms", "environment.device", lo=1e-9, optional=True)
    ceilings = check.field(device, "ceilings", dict, "environment.device", required=False) or {}
    for key in ceilings:
        check.number(ceilings, key, "environment.device.ceilings", lo=1e-9)
    check.field(device, "telemetry", dict, "environment.device", required=False)
    check.field(environment.get("software") or {}, "git_commit", str, "environment.software", required=False)
    created = check.field(data, "created", str, "", required=False)
    if created:  # "" where it was never known
        try:
            datetime.fromisoformat(created)  # history orders runs by it
        except ValueError:
            check.fail("", f"created must be a time such as 2026-11-22T00:00:00+00:00, got {created!r:.40}")
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
    run = Run(backend=backend, environment=environment, settings=settings, command=command,
              points=[_point(p, i, check) for i, p in enumerate(points)], status=RunStatus(status),
              created=str(data.get("created", "")), gpubench_version=str(data.get("gpubench_version", "")),
              variants=variants, incidents=incidents)
    _warn_unknown(data, path)  # once the file is known to be readable: a corrupt one is one line, the error
    run.points, twice = _once_each(run.points) if each_once else (run.points, [])
    if twice:
        first = twice[0]
        config = "" if first.config == "-" else f" {first.config}"
        warnings.warn(f"results file {path}: {len(twice)} point(s) measured more than once (by sweeps that overlap, "
                      f"or merged by hand) are read as one each, with the samples of every measurement: the first, "
                      f"{first.op} {first.variant}{config} {first.problem.full_label}", PointsMerged, stacklevel=3)
    return run
