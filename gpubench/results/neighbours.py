"""The other processes that were computing on a run's GPU: what a run records of them, and the lines that warn of them.

A process of someone else's on the same GPU shares its SMs, its memory bandwidth and its power with the run: kernels
of a few microseconds come out slower, and a library's plan search (cuDNN's autotuning) can keep a plan that won
only because its rivals were timed while the other process ran. On an H200 a cuDNN search made seconds after a GPU
test run was stopped, whose workers may still have been running, kept its second-best plan (105 µs against the 84 µs
that fresh searches keep: docs/evidence/int8-attention-rounds.md, docs/evidence/plan-search-probe-h200.txt). So a run
asks NVML which processes hold a context on its GPU, at its start (before any plan search) and at its end, leaves out
its own (gpubench/execution/neighbours.py), and saves what it found in its settings under KEY:

    {"start": [{"pid": 4242, "name": "python -m pytest -n 8", "used_mib": 612}], "end": [], "checked": true}

A moment that could not be looked at (no NVML, a driver that does not list processes, a container whose process ids
are not this one's) is null, and `unchecked` says why; `checked` is true where both moments were looked at. A file
saved before the record existed has no such key: it reads as "not recorded" (None), never as "nobody was there".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

KEY = "gpu_neighbours"  # the run's settings key
NAME_CHARS = 60  # a process's name (its command line) is kept to this many characters
CONSEQUENCE = "times and cuDNN's plan choices may be off"


def _plural(n: int, word: str, words: str) -> str:
    return f"{n} {word if n == 1 else words}"


def short_name(text: str | None) -> str | None:
    """A process's name as a record keeps it: printable, one line, at most NAME_CHARS characters."""
    if text is None:
        return None
    shown = "".join(c if c.isprintable() else " " for c in text).strip()
    if not shown:
        return None
    return shown if len(shown) <= NAME_CHARS else shown[:NAME_CHARS - 1] + "…"


@dataclass(frozen=True)
class Neighbour:
    """A process other than the run's own that held a context on the run's GPU when NVML was asked."""

    pid: int
    name: str | None = None  # its command line (or NVML's name for it), where it could be read
    used_mib: int | None = None  # the GPU memory NVML counted for it, where NVML says

    def __post_init__(self):
        if type(self.pid) is not int or self.pid <= 0:
            raise ValueError(f"a process id is a positive whole number, got {self.pid!r:.40}")
        if self.name is not None and not isinstance(self.name, str):
            raise ValueError(f"a process's name is text, got {self.name!r:.40}")
        if self.used_mib is not None and (type(self.used_mib) is not int or self.used_mib < 0):
            raise ValueError(f"used_mib is a whole number of MiB, got {self.used_mib!r:.40}")

    @property
    def label(self) -> str:
        name = short_name(self.name)
        return f"{self.pid} ({name})" if name else str(self.pid)

    def as_dict(self) -> dict:
        return {"pid": self.pid, "name": self.name, "used_mib": self.used_mib}

    @classmethod
    def from_dict(cls, d) -> Neighbour:
        if not isinstance(d, dict) or "pid" not in d:
            raise ValueError(f"each process is an object with a pid, got {d!r:.40}")
        return cls(d["pid"], d.get("name"), d.get("used_mib"))


def _moment(value, where: str) -> tuple[Neighbour, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"{where} is a list of processes (or null: not checked), got {value!r:.40}")
    return tuple(Neighbour.from_dict(d) for d in value)


@dataclass(frozen=True)
class GpuNeighbours:
    """The other processes computing on the run's GPU at its start and at its end (None: that moment was not
    looked at, `unchecked` says why)."""

    start: tuple[Neighbour, ...] | None = None
    end: tuple[Neighbour, ...] | None = None
    unchecked: str | None = None  # why a moment could not be looked at

    @property
    def checked(self) -> bool:
        return self.start is not None and self.end is not None and self.unchecked is None

    @property
    def others(self) -> tuple[Neighbour, ...]:
        """Every other process seen, once each (by pid), those at the start first."""
        return _union([self.start, self.end]) or ()

    @property
    def when(self) -> str:
        """When the others were seen: "start", "end" or "start and end"."""
        at = [name for name, moment in (("start", self.start), ("end", self.end)) if moment]
        return " and ".join(at)

    def ended(self, end: tuple[Neighbour, ...] | None, unchecked: str | None = None) -> GpuNeighbours:
        """This record with the end's look added (None and why, where it could not be made)."""
        return replace(self, end=end, unchecked=self.unchecked or unchecked)

    def as_dict(self) -> dict:
        moments = {name: None if m is None else [n.as_dict() for n in m]
                   for name, m in (("start", self.start), ("end", self.end))}
        return {**moments, "checked": self.checked, **({"unchecked": self.unchecked} if self.unchecked else {})}

    @classmethod
    def from_dict(cls, d) -> GpuNeighbours:
        """The record a run saved; ValueError, in one line, for one gpubench did not write."""
        if not isinstance(d, dict):
            raise ValueError(f"is an object with start and end, got {d!r:.40}")
        unchecked = d.get("unchecked")
        if unchecked is not None and not isinstance(unchecked, str):
            raise ValueError(f"unchecked is text (why the processes could not be listed), got {unchecked!r:.40}")
        return cls(_moment(d.get("start"), "start"), _moment(d.get("end"), "end"), unchecked)


def _union(moments: list[tuple[Neighbour, ...] | None]) -> tuple[Neighbour, ...] | None:
    """The processes of every moment looked at, once each (by pid, the first seen kept); None where none was."""
    looked = [m for m in moments if m is not None]
    if not looked:
        return None
    seen: dict[int, Neighbour] = {}
    for n in (n for m in looked for n in m):
        seen.setdefault(n.pid, n)
    return tuple(seen.values())


def merged(records: list[GpuNeighbours | None]) -> GpuNeighbours | None:
    """One record for several runs of one suite (a stability run's): every run's others at its start, and at its
    end; why the first run that could not look could not (it is then not checked, whatever the others saw)."""
    if all(r is None for r in records):
        return None
    kept = [r or GpuNeighbours(unchecked="not recorded") for r in records]
    why = next((f"run {i + 1}: {r.unchecked}" for i, r in enumerate(kept) if r.unchecked), None)
    return GpuNeighbours(_union([r.start for r in kept]), _union([r.end for r in kept]), why)


def of(settings: dict) -> GpuNeighbours | None:
    """The run's record, or None where it has none (a file saved before runs kept one, a CPU run)."""
    record = settings.get(KEY)
    return None if record is None else GpuNeighbours.from_dict(record)


def _pids(others: tuple[Neighbour, ...]) -> str:
    word = "pid" if len(others) == 1 else "pids"
    return f"{word} {', '.join(n.label for n in others)}"


def warning(record: GpuNeighbours | None) -> str | None:
    """The one line that says a run had company on its GPU; None where it had none (or nothing was recorded)."""
    others = record.others if record else ()
    if not others:
        return None
    were = "was" if len(others) == 1 else "were"
    return (f"{_plural(len(others), 'other process', 'other processes')} {were} computing on this GPU during the run "
            f"({_pids(others)}; seen at its {record.when}): {CONSEQUENCE}")


def compared(base: GpuNeighbours | None, new: GpuNeighbours | None) -> str | None:
    """The one line `compare` adds where either run had company on its GPU; None where neither had."""
    sides = [(side, r.others) for side, r in (("base", base), ("new", new)) if r and r.others]
    if not sides:
        return None
    which = " and ".join(f"the {side} run ({_pids(others)})" for side, others in sides)
    return f"other processes were computing on the GPU during {which}: {CONSEQUENCE}, and so may the verdicts"
