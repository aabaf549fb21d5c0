"""What befalls a worker process, and the process-level helpers around it: the incidents a run records, ending a
worker's process group, and telling the OOM killer's SIGKILL from anyone else's (gpubench/execution/worker.py)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from enum import StrEnum


class IncidentKind(StrEnum):
    """What befell a worker process."""

    TIMEOUT = "timeout"  # it stayed silent past the watchdog, and was killed
    DIED = "died"  # it ended (a segfault, the OOM killer ...)
    BROKEN = "broken"  # its backend could not go on (a sticky CUDA error), and it left


@dataclass
class Incident:
    """Something the run should record: a worker that died, hung or was left unusable, and what became of it."""

    kind: IncidentKind
    where: str  # the point (or shape) that was running
    detail: str
    time: float = field(default_factory=time.time)

    def __post_init__(self):
        self.kind = IncidentKind(self.kind)  # also as a Dask worker's record sends it back: its text

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def end_group(leader: int) -> None:
    """SIGKILL the worker's process group (it leads a session of its own): the worker and whatever a user's kernel
    forked, which would otherwise outlive the run."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # all gone already
        pass


def oom_kills() -> int:
    """How many processes the kernel's OOM killer has ended since boot (/proc/vmstat; 0 where not told): a worker
    killed by SIGKILL while this rose ran out of host memory."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
