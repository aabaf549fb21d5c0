"""The results model: a run is a list of points plus the environment they were measured in.

Pure, typed records, nothing about files or rendering. A :class:`Point` is immutable and checks itself when it
is made (pyperf's way): its problem is a shape object (an op's, gpubench/ops/), its status a :class:`Status`,
what it recorded besides its time a :class:`Details`. It keeps its raw samples; its statistics, GFLOPS and
GB/s are derived from them on demand. A :class:`Run` is the one record that grows while a sweep writes it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from enum import StrEnum
from functools import cached_property
from typing import Mapping

from gpubench import __version__
from gpubench.core.errors import one_line
from gpubench.measure.modes import Modes, two_modes
from gpubench.core.dtypes import DType
from gpubench import ops
from gpubench.ops.base import Shape
from gpubench.measure.timing import Pace, Stats, Stop, summarize
from gpubench.results.profile import Profile

SCHEMA = "gpubench-run"
SCHEMA_VERSION = 6
MAX_REASON = 2000  # characters of why a point did not measure: a user's exception may carry megabytes
SAMPLE_RANGE = (1e-9, 1e12)  # milliseconds: a femtosecond to thirty years; anything else is corruption


class Status(StrEnum):
    """How a point ended."""

    OK = "ok"  # verified and timed
    FAIL = "fail"  # timed, but over tolerance
    ERROR = "error"  # raised or crashed
    TIMEOUT = "timeout"  # the watchdog ended it
    SKIPPED = "skipped"  # could not run here (does not fit, cannot launch, not this architecture)

    @property
    def failed(self) -> bool:
        """Ran and did not pass: the command exits 1."""
        return self in (Status.FAIL, Status.ERROR, Status.TIMEOUT)

    @property
    def timed(self) -> bool:
        """Has samples, a rel_err and a tolerance."""
        return self in (Status.OK, Status.FAIL)


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"


def _kind_ok(value, kind) -> bool:
    if kind is float:
        return type(value) in (int, float) and math.isfinite(value) and value >= 0
    return isinstance(value, kind) if kind in (Stop, Pace) else type(value) is kind


@dataclass(frozen=True)
class Details:
    """What a point recorded besides its samples: how the library ran it, how it was timed, where its
    configuration came from, its sub-steps' own times, and whatever a user's variant reports. Every field is
    optional (None: not recorded)."""

    tf32: bool | None = None  # TF32 tensor cores were allowed (libraries) or used (a TF32 kernel); before schema 4
    accumulator: str | None = None  # what the products were summed in ("fp32", "int32"), where not the dtype's own
    scales: Mapping[str, float] = field(default_factory=dict)  # fp8: each input's dequantisation scale
    engine: str | None = None  # the library's plan (cuDNN's engine name) ...
    plans: int | None = None  # ... among how many it could run
    engine_kept: str | None = None  # the plan an earlier run's search chose, kept in this file (plan_cache.py)
    tensor_cores: bool | None = None  # the plan's numerical notes say it uses tensor cores
    workspace_bytes: int | None = None
    stop: Stop | None = None  # why sampling ended
    batch: int | None = None  # calls per queued batch, where short calls were timed in batches
    flushed: bool | None = None  # L2 was flushed before each timed call
    pace: Pace | None = None  # how the timed calls followed each other (None: a run from before paces, idle)
    settled_s: float | None = None  # sustained: seconds the calls ran back to back before the first sample
    tuned: bool | None = None  # the configuration came from `gpubench tune` ...
    tuned_from: str | None = None  # ... in this file ...
    tuned_exact: bool | None = None  # ... tuned for exactly this shape (else the nearest size)
    first_call_ms: float | None = None  # a Python variant's first call, on the host: Triton's JIT and autotuning,
    # a RawKernel's compile happen there, before verification and timing
    parts_ms: Mapping[str, float] = field(default_factory=dict)  # sub-steps timed alone (im2col's unfold, ...)
    reported: Mapping[str, object] = field(default_factory=dict)  # what a user's variant reports about itself
    profile: Profile | None = None  # Nsight Compute's counters of one timed call, or why there are none (schema 5)
    kernel_ms: tuple[float, ...] = ()  # the second clock: each timed call's kernels on the GPU (CUPTI), in ms
    kernels: tuple[str, ...] = ()  # ... and the kernels the calls ran, by name (what a library chose)
    graph: int | None = None  # each timed call was one launch of a CUDA graph of this many calls (samples per call)
    places: int | None = None  # the timed calls ran in turn on this many copies of their buffers, each at another
    # place (the CUDA backend's small calls: backends/cuda/placement.py)
    unfused: str | None = None  # the library refused the problem's fused graph (its words): the call timed is its
    # unfused sequence, the bare convolution and then the epilogue as a pass of its own (schema 6)

    def __post_init__(self):
        if self.profile is not None and not isinstance(self.profile, Profile):
            object.__setattr__(self, "profile", Profile.from_record(self.profile))
        for name, kind in (("stop", Stop), ("pace", Pace)):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                try:
                    object.__setattr__(self, name, kind(value))
                except (ValueError, TypeError):
                    raise ValueError(f"{name} {value!r:.40}; allowed are {', '.join(kind)}") from None
        for name, kind in FIELD_KINDS.items():
            value = getattr(self, name)
            if value is not None and not _kind_ok(value, kind):
                raise ValueError(f"{name} has the wrong type ({value!r:.40})")
        if not isinstance(self.parts_ms, Mapping) or not all(isinstance(k, str) and _kind_ok(v, float)
                                                             for k, v in self.parts_ms.items()):
            raise ValueError("parts_ms must map step names to milliseconds")
        if not isinstance(self.scales, Mapping) or not all(isinstance(k, str) and _kind_ok(v, float)
                                                           for k, v in self.scales.items()):
            raise ValueError("scales must map input names to numbers")
        if not isinstance(self.reported, Mapping) or not all(isinstance(k, str) for k in self.reported):
            raise ValueError("reported must be an object")
        if not isinstance(self.kernel_ms, (list, tuple)) or not all(_kind_ok(v, float) and v > 0
                                                                     for v in self.kernel_ms):
            raise ValueError("kernel_ms must be a list of positive milliseconds")
        if not isinstance(self.kernels, (list, tuple)) or not all(isinstance(k, str) and k.isprintable()
                                                                   for k in self.kernels):
            raise ValueError("kernels must be a list of printable names")
        if self.graph is not None and self.graph < 1:
            raise ValueError(f"graph must be a positive number of calls, got {self.graph}")
        object.__setattr__(self, "kernel_ms", tuple(float(v) for v in self.kernel_ms))
        object.__setattr__(self, "kernels", tuple(self.kernels))

    def record(self) -> dict:
        """The fields recorded (None and empty left out), as a results file keeps them."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["profile"] = self.profile.record() if self.profile is not None else None
        return {k: (dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, tuple) else v)
                for k, v in out.items() if v not in (None, {}, ())}

    def merged(self, other: Details) -> Details:
        """These details with what `other` recorded on top (its None fields leave ours as they are)."""
        mine = {f.name: getattr(self, f.name) for f in fields(self)}
        theirs = {f.name: getattr(other, f.name) for f in fields(other)}
        return Details(**{**mine, **{k: v for k, v in theirs.items() if v not in (None, {}, ())}})


FIELD_KINDS = {"tf32": bool, "accumulator": str, "engine": str, "plans": int, "engine_kept": str, "tensor_cores": bool, "workspace_bytes": int, "stop": Stop,
               "batch": int, "flushed": bool, "pace": Pace, "settled_s": float, "tuned": bool, "tuned_from": str,
               "tuned_exact": bool, "first_call_ms": float, "graph": int, "places": int, "unfused": str}


@dataclass(frozen=True)
class Point:
    """One measured (or failed, timed-out, skipped) combination of variant, configuration and problem."""

    problem: Shape
    variant: str
    config: str  # the variant's axis value: block size ("16"), tile configuration, or "-"
    status: Status
    reason: str = ""
    rel_err: float | None = None
    tolerance: float | None = None
    samples_ms: tuple[float, ...] = ()
    details: Details = field(default_factory=Details)
    device: str | None = None  # which GPU ran it, where a run used several
    telemetry: dict | None = None  # SM/memory clocks, power, throttled samples, joules per call (NVML)
    processes: tuple[int, ...] = ()  # how many of samples_ms each worker process took, in order (--processes K;
    # empty: one process). samples_ms is their samples one process after another (gpubench/execution/processes.py)

    def __post_init__(self):
        object.__setattr__(self, "status", Status(self.status))
        names = {"variant": self.variant, "config": self.config, **({} if self.device is None else
                                                                    {"device": self.device})}
        for name, text in names.items():  # names go into tables on a terminal: no escapes, no newlines
            if not text or not text.isprintable():
                raise ValueError(f"{name} must be non-empty printable text, got {text!r:.40}")
        if not self.reason.isprintable() or len(self.reason) > MAX_REASON:  # it is printed after the point's name
            text = one_line(self.reason)
            object.__setattr__(self, "reason", text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + "…")
        object.__setattr__(self, "samples_ms", tuple(float(s) for s in self.samples_ms))
        if not all(SAMPLE_RANGE[0] <= s <= SAMPLE_RANGE[1] for s in self.samples_ms):  # NaN fails both
            raise ValueError(f"samples_ms must be finite positive numbers of milliseconds ({SAMPLE_RANGE[0]:g} to "
                             f"{SAMPLE_RANGE[1]:g})")
        object.__setattr__(self, "processes", tuple(self.processes))
        if self.processes and (not all(type(n) is int and n > 0 for n in self.processes)
                               or sum(self.processes) != len(self.samples_ms)):
            raise ValueError(f"processes must count each process's samples (positive integers summing to the "
                             f"{len(self.samples_ms)} samples), got {list(self.processes)[:8]}")
        if self.status.timed:
            if not self.samples_ms or self.rel_err is None or self.tolerance is None:
                raise ValueError(f"status {self.status} needs samples_ms, rel_err and tolerance")
            if (self.status == Status.OK) != (self.rel_err <= self.tolerance):
                raise ValueError(f"status {self.status} disagrees with rel_err {self.rel_err:.2e} and tolerance "
                                 f"{self.tolerance:.0e}")

    @classmethod
    def measured(cls, problem: Shape, variant: str, config: str, *, samples_ms, rel_err: float, tolerance: float,
                 details: Details = Details(), telemetry=None) -> Point:
        """A timed point: ok, or fail when its error is over the tolerance (NaN and inf are over any)."""
        ok = rel_err is not None and rel_err <= tolerance
        return cls(problem, variant, config, Status.OK if ok else Status.FAIL,
                   reason="" if ok else f"rel_err {rel_err:.2e} over tolerance {tolerance:.0e}",
                   rel_err=rel_err, tolerance=tolerance, samples_ms=tuple(samples_ms), details=details,
                   telemetry=telemetry)

    @property
    def op(self) -> str:
        """The name of the op its problem belongs to."""
        return self.problem.op

    @property
    def process_samples(self) -> tuple[tuple[float, ...], ...]:
        """Its samples per worker process (one group where a single process measured it)."""
        if not self.processes:
            return (self.samples_ms,) if self.samples_ms else ()
        out, start = [], 0
        for n in self.processes:
            out.append(self.samples_ms[start:start + n])
            start += n
        return tuple(out)

    @property
    def pace(self) -> Pace:
        """How its calls were timed: a point saved before paces existed was timed idle."""
        return self.details.pace or Pace.IDLE

    @property
    def flops(self) -> float:
        return self.problem.flops

    @property
    def min_bytes(self) -> float:
        return self.problem.min_bytes

    @cached_property
    def timing(self) -> Stats | None:
        return summarize(list(self.samples_ms)) if self.samples_ms else None

    @cached_property
    def modes(self) -> Modes | None:
        """Its samples' two modes where they have two (gpubench/measure/modes.py), else None."""
        return two_modes(self.samples_ms) if self.samples_ms else None

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
    def kernel_power_w(self) -> float | None:
        """The board's power while this point's calls ran: the energy window's (its calls back to back, or its own
        long timed calls), else the telemetry's reading. That reading (NVML's power usage) is a one-second average
        on Hopper, which takes in the idle gaps between batches and the points before, so it is shown only where
        nothing better was measured."""
        t = self.telemetry or {}
        return t.get("window_power_w") or t.get("power_w")

    @property
    def dtype(self) -> DType:
        return self.problem.dtype

    @property
    def tf32(self) -> bool:
        """It ran TF32 math (its problem's dtype is tf32; files before schema 4 said so in details, migrated)."""
        return self.problem.dtype == DType.TF32

    @property
    def tag(self) -> str:
        """Its precision and layout where they are not the lab's ("BF16", "FP16 NT"), for tables and labels."""
        return self.problem.tag

    def key(self) -> tuple:
        """What identifies a point across runs (compare matches on this): the problem includes dtype and layout,
        so points of different precisions or layouts are never paired."""
        return (self.op, self.variant, self.config, self.problem)

    def shape_label(self) -> str:
        return self.problem.label

    def to_dict(self) -> dict:
        t = self.timing
        by_process = {"processes": list(self.processes)} if self.processes else {}  # a one-process point as before
        return {"op": str(self.op), "variant": self.variant, "config": self.config, "problem": self.problem.record(),
                "status": str(self.status), "reason": self.reason, "rel_err": self.rel_err,
                "tolerance": self.tolerance, "samples_ms": list(self.samples_ms), **by_process,
                "details": self.details.record(), "device": self.device, "telemetry": self.telemetry,
                # derived, for readers such as jq; never read back
                "flops": self.flops, "min_bytes": self.min_bytes, "stats": t.as_dict() if t else None,
                "gflops": self.gflops, "gbps": self.gbps}

    @cached_property
    def json_text(self) -> str:
        """This point as it stands in a results file, indented as an item of the run's points (a point never
        changes, so a file rewritten after every point serialises and indents each one once)."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=True).replace("\n", "\n  ")


_POINTS_HERE = "\u0000points\u0000"  # where to_json puts the points' texts (no real field holds a NUL)


@dataclass
class Run:
    backend: str
    environment: dict
    settings: dict
    command: list[str] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    status: RunStatus = RunStatus.RUNNING
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    gpubench_version: str = __version__
    variants: list[dict] = field(default_factory=list)  # Variant.record() of every variant in the run
    incidents: list[dict] = field(default_factory=list)  # workers that died, hung or were left unusable
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self):
        self.status = RunStatus(self.status)

    @property
    def device(self) -> str:
        return self.environment.get("device", {}).get("name", "unknown device")

    def ops(self) -> list[str]:
        return sorted({p.op for p in self.points}, key=ops.order)

    def baseline(self, op: str) -> str | None:
        """The (first) variant this run measured `op` against, as recorded when it ran."""
        return next(iter(self.baselines(op)), None)

    def baselines(self, op: str) -> list[str]:
        """Every library this run measured `op` against (cuBLAS, and cuBLASLt for fp8 and int8): each point is
        compared with the one that computed its own precision and layout."""
        return [v["name"] for v in self.variants if v.get("op") == op and v.get("baseline")]

    def failed(self) -> list[Point]:
        return [p for p in self.points if p.status.failed]

    def to_json(self, compact_header: bool = False) -> str:
        """The file's text: json.dumps(..., indent=1) of the whole run, with each point's text made once.
        `compact_header`: the run's own fields on one line, by json's C encoder (indenting takes its pure-Python
        one, a millisecond for a lab run's header, which an interim save after every point pays again)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(status=str(self.status), points=_POINTS_HERE)
        text = json.dumps(data, allow_nan=True) if compact_header else json.dumps(data, indent=1, allow_nan=True)
        points = "[\n  " + ",\n  ".join(p.json_text for p in self.points) + "\n ]" \
            if self.points else "[]"
        return text.replace(json.dumps(_POINTS_HERE), points, 1)
