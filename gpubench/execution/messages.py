"""The worker protocol: every message between the coordinator (gpubench/execution/worker.py) and a worker process
(gpubench/execution/child.py) as a type, so that each side dispatches on the message's type (`match`), never on a
string tag.

The coordinator sends requests (Start first, then Floor where it chooses among candidates, Environment, Check,
RunTask or FirstCall, Stop); the worker answers Hello or Refused once it has opened its backend, FloorTimed,
EnvironmentRecord and Checked to the requests of those names, and a task's Events as they happen, ending with End. Messages are frozen and pickle: they cross a socket.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpubench.results import Point

# --- coordinator to worker ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """The worker's options (worker.WorkerOptions), the first message a fresh process reads."""

    options: Any


@dataclass(frozen=True)
class Environment:
    """Read the environment a run records, its ceilings measured for these precisions (None: every one)."""

    precisions: list | None


@dataclass(frozen=True)
class Check:
    """Load what the variants need (backends.Backend.check)."""

    variants: list


@dataclass(frozen=True)
class RunTask:
    """Run a ShapeTask's points (tasks.run_task)."""

    task: Any


@dataclass(frozen=True)
class FirstCall:
    """Make a ShapeTask's one point's first call (tasks.first_call)."""

    task: Any


@dataclass(frozen=True)
class Floor:
    """Time the launch path's floor (backends.Backend.launch_floor_us), to choose among candidates."""


@dataclass(frozen=True)
class Stop:
    """Leave."""


Request = Start | Environment | Check | RunTask | FirstCall | Floor | Stop

# --- worker to coordinator: answers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FloorTimed:
    """The floor in µs, or None where the backend has no launches to time (the CPU)."""

    us: float | None


@dataclass(frozen=True)
class Hello:
    """The backend opened: its describe() (device, arch, limits, libraries)."""

    info: dict


@dataclass(frozen=True)
class Refused:
    """The backend did not open: its own error (its type too: NoDevice is worded by the command)."""

    error: Exception


@dataclass(frozen=True)
class EnvironmentRecord:
    """The environment a run records (environment.collect)."""

    record: dict


@dataclass(frozen=True)
class Checked:
    """What Check found: None, or why a variant cannot be loaded."""

    error: str | None


# --- worker to coordinator: a task's events ---------------------------------------------------------------------


@dataclass(frozen=True)
class Begin:
    """The step at this index starts (tasks.SETUP: the shape's inputs and reference)."""

    index: int


@dataclass(frozen=True)
class Provisional:
    """A point finished but for its energy, which a later refresh brings (gpubench/execution/energy_queue.py)."""

    index: int
    point: Point


@dataclass(frozen=True)
class Finished:
    """A point recorded, for good."""

    index: int
    point: Point


@dataclass(frozen=True)
class Broken:
    """The backend cannot go on (a sticky CUDA error): the process leaves after this."""

    reason: str


@dataclass(frozen=True)
class Made:
    """A first call made, in this many milliseconds (None: not a Python variant's), and whether it searched a
    library's plans (the process is then not timed in: Worker.first_calls)."""

    index: int
    ms: float | None
    searched: bool = False


@dataclass(frozen=True)
class Rejected:
    """A first call's code does not compile (CompileError's one line)."""

    message: str


@dataclass(frozen=True)
class End:
    """The task is over: every point was sent."""


Event = Begin | Provisional | Finished | Broken | Made | Rejected | End
