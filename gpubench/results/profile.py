"""A point's profile: what Nsight Compute counted during one of its timed calls, or why nothing was counted.

A record, as a results file keeps it (Details.profile). The metrics are those of one fixed set
(gpubench/measure/ncu.py's METRICS, by their short names): `metrics` are the dominant launch's (the longest kernel
of the call: for a library, the kernel it chose), `totals` the additive ones (bytes, instructions, time) summed over
every launch of the call. `stalls` are the dominant launch's three largest stall reasons, in warp cycles per issued
instruction. A profile that could not be taken keeps only its `gap` and `reason`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Mapping

MAX_KERNELS = 8  # distinct kernel names a profile keeps (a library's call launches a few)
MAX_TEXT = 500  # characters of a kernel name or a reason


class Gap(StrEnum):
    """Why a point has no profile."""

    NO_NCU = "no ncu"  # Nsight Compute is not installed, or not on PATH
    NOT_PERMITTED = "not permitted"  # the driver keeps the performance counters to administrators (ERR_NVGPUCTRPERM)
    NO_REPLAY = "no replay"  # ncu could not replay (profile) the call's kernel
    NO_KERNEL = "no kernel"  # the bracketed call launched no kernel ncu saw
    NO_GPU = "no gpu"  # the CPU backend: nothing to profile
    FAILED = "failed"  # the profiled process failed, or ncu did not finish in time


def _number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


@dataclass(frozen=True)
class Profile:
    kernel: str | None = None  # ncu's Kernel Name of the dominant launch
    launches: int = 0  # kernels the profiled call launched
    kernels: tuple[str, ...] = ()  # their distinct names, in launch order
    metrics: Mapping[str, float] = field(default_factory=dict)  # the dominant launch's, by short name
    totals: Mapping[str, float] = field(default_factory=dict)  # additive metrics summed over the call's launches
    stalls: tuple[tuple[str, float], ...] = ()  # (reason, warp cycles per issued instruction), largest first
    tool: str | None = None  # ncu's version line
    gap: Gap | None = None  # why there is no profile ...
    reason: str = ""  # ... in words, one line

    def __post_init__(self):
        if self.gap is not None:
            try:
                object.__setattr__(self, "gap", Gap(self.gap))
            except ValueError:
                raise ValueError(f"profile gap {self.gap!r:.40}; allowed are {', '.join(Gap)}") from None
        object.__setattr__(self, "kernels", tuple(self.kernels))
        object.__setattr__(self, "stalls", tuple((str(r), v) for r, v in self.stalls))
        for name in ("metrics", "totals"):
            values = getattr(self, name)
            if not isinstance(values, Mapping) or not all(isinstance(k, str) and _number(v) for k, v in values.items()):
                raise ValueError(f"profile {name} must map metric names to finite numbers")
        if not all(_number(v) for _, v in self.stalls):
            raise ValueError("profile stalls must be (reason, number) pairs")
        texts = [self.kernel or "", self.reason, self.tool or "", *self.kernels, *(r for r, _ in self.stalls)]
        if not all(isinstance(t, str) and t.isprintable() and len(t) <= MAX_TEXT for t in texts):
            raise ValueError(f"profile names and reasons must be printable text of at most {MAX_TEXT} characters")
        if type(self.launches) is not int or self.launches < 0:
            raise ValueError("profile launches must be a count")
        if (self.gap is None) == bool(self.reason):
            raise ValueError("a profile has either metrics or a gap with its reason")

    @classmethod
    def missing(cls, gap: Gap, reason: str, tool: str | None = None) -> Profile:
        text = " ".join(reason.split())
        return cls(gap=gap, reason=text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…", tool=tool)

    @property
    def taken(self) -> bool:
        return self.gap is None

    def metric(self, key: str) -> float | None:
        return self.metrics.get(key)

    @property
    def dram_bytes(self) -> float | None:
        """Bytes the call moved to and from DRAM, every launch's (None where not counted)."""
        parts = [self.totals.get(k) for k in ("dram_read_bytes", "dram_write_bytes")]
        return sum(parts) if all(p is not None for p in parts) else None

    def record(self) -> dict:
        out = {"kernel": self.kernel, "launches": self.launches, "kernels": list(self.kernels),
               "metrics": dict(self.metrics), "totals": dict(self.totals), "stalls": [list(s) for s in self.stalls],
               "tool": self.tool, "gap": str(self.gap) if self.gap else None, "reason": self.reason}
        if not self.taken:
            del out["launches"]
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}

    @classmethod
    def from_record(cls, data) -> Profile:
        if isinstance(data, Profile):
            return data
        if not isinstance(data, Mapping):
            raise ValueError("profile must be an object")
        known = {"kernel", "launches", "kernels", "metrics", "totals", "stalls", "tool", "gap", "reason"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"profile has unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        stalls = data.get("stalls", [])
        if not isinstance(stalls, list) or not all(isinstance(s, list) and len(s) == 2 for s in stalls):
            raise ValueError("profile stalls must be (reason, number) pairs")
        kernels = data.get("kernels", [])
        if not isinstance(kernels, list):
            raise ValueError("profile kernels must be a list of names")
        return cls(kernel=data.get("kernel"), launches=data.get("launches", 0), kernels=tuple(kernels),
                   metrics=data.get("metrics", {}), totals=data.get("totals", {}),
                   stalls=tuple((r, v) for r, v in stalls), tool=data.get("tool"), gap=data.get("gap"),
                   reason=data.get("reason", ""))
