"""Where gpubench's own time goes: nested wall-clock phase timers, for profiling the tool (not the kernels).

Off unless the environment variable GPUBENCH_PHASES names a directory. Then every process of a run (the
coordinator and each worker, which inherit the variable) adds the time spent in each named phase, keyed by the
path of phases it is nested in ("task>point>measure>sample"), and writes `phases-<role>-<pid>.json` into that
directory; `tools/phases.py` adds the files up into one tree with each phase's own (self) time. Switched off,
`phase()` hands back one shared do-nothing context, so the instrumented code costs a function call.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import nullcontext
from pathlib import Path

from gpubench.core import paths

ENV = "GPUBENCH_PHASES"
SEP = ">"
_OFF = nullcontext()


class Recorder:
    """Totals (seconds) and counts per phase path, and amounts (e.g. the GPU time inside the timed samples)."""

    def __init__(self):
        self.stack: list[str] = []
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.amounts: dict[str, float] = {}

    def span(self, name: str) -> _Span:
        return _Span(self, name)

    def add(self, name: str, amount: float) -> None:
        key = SEP.join([*self.stack, name])
        self.amounts[key] = self.amounts.get(key, 0.0) + amount

    def as_dict(self) -> dict:
        return {"seconds": self.seconds, "counts": self.counts, "amounts": self.amounts}


class _Span:
    __slots__ = ("recorder", "name", "started")

    def __init__(self, recorder: Recorder, name: str):
        self.recorder, self.name = recorder, name

    def __enter__(self) -> None:
        self.recorder.stack.append(self.name)
        self.started = time.perf_counter()

    def __exit__(self, *exc) -> None:
        spent = time.perf_counter() - self.started
        r = self.recorder
        key = SEP.join(r.stack)
        r.stack.pop()
        r.seconds[key] = r.seconds.get(key, 0.0) + spent
        r.counts[key] = r.counts.get(key, 0) + 1


_recorder: Recorder | None = Recorder() if os.environ.get(ENV) else None


def enabled() -> bool:
    return _recorder is not None


def enable(directory: str | Path | None) -> None:
    """Switch recording on (into `directory`, also for processes started from here) or off (None)."""
    global _recorder
    if directory is None:
        os.environ.pop(ENV, None)
        _recorder = None
    else:
        os.environ[ENV] = str(directory)
        _recorder = Recorder()


def phase(name: str):
    """`with phase("verify"): ...` adds the block's wall time to the phase, under the phases around it."""
    return _OFF if _recorder is None else _recorder.span(name)


def add(name: str, amount: float) -> None:
    """Add an amount (not a span of this process's time) under the current phase path, e.g. GPU seconds."""
    if _recorder is not None:
        _recorder.add(name, amount)


def directory() -> Path | None:
    """The directory GPUBENCH_PHASES names (made if missing), None where it is unset; one line naming the
    variable where it cannot be a directory (a run checks it before it starts, not when it saves its totals)."""
    return paths.env_dir(ENV)


def save(role: str) -> Path | None:
    """Write this process's totals so far to <GPUBENCH_PHASES>/phases-<role>-<pid>.json (replacing its last)."""
    where = directory() if _recorder is not None else None
    if where is None:
        return None
    path = where / f"phases-{role}-{os.getpid()}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"role": role, **_recorder.as_dict()}), encoding="utf-8")
    os.replace(tmp, path)
    return path


def merged(directory: str | Path) -> dict[str, dict]:
    """Every process's file in the directory added up, per role: {role: {"seconds", "counts", "amounts"}}."""
    out: dict[str, dict] = {}
    for path in sorted(Path(directory).glob("phases-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        total = out.setdefault(data["role"], {"seconds": {}, "counts": {}, "amounts": {}, "processes": 0})
        total["processes"] += 1
        for kind in ("seconds", "counts", "amounts"):
            for key, value in data[kind].items():
                total[kind][key] = total[kind].get(key, 0) + value
    return out


def tree(totals: dict) -> list[tuple[str, int, float, float, int]]:
    """(path, depth, inclusive s, self s, count) per phase, parents before children, in path order; a phase's self
    time is its inclusive time less its direct children's."""
    seconds, counts = totals["seconds"], totals["counts"]
    children: dict[str, float] = {}
    for key, value in seconds.items():
        if SEP in key:
            parent = key.rsplit(SEP, 1)[0]
            children[parent] = children.get(parent, 0.0) + value
    return [(key, key.count(SEP), value, value - children.get(key, 0.0), counts.get(key, 0))
            for key, value in sorted(seconds.items())]
