"""Energy windows that wait for their moment while the next points run.

A short point's energy comes from a window of its calls run back to back that must end on a refresh of the
instant power, and cover the SETTLE_S before it (gpubench/measure/telemetry.py). Started at a random moment it costs
about a refresh period (an H100's is 100 ms); started when the next refresh is just LEAD_S ahead it costs little
more than LEAD_S. A point's own timing loop seldom meets such a moment, so a point that ends without its window
is sent to the coordinator at once as *provisional* (finished but for its energy), keeps its buffers, and waits
here; the next points' timing loops and the gaps between their steps take the oldest waiting window whenever a
refresh is due (`moment`). What is finished is sent in the task's order: a point that ends while an earlier one
waits is held behind it (and sent as provisional too). At the end of the task (`drain`) the windows still waiting
are taken, each at its own moment.

A point never depends on a later one for anything but its energy: if a later point faults, hangs or kills the
process, the coordinator records the provisional points it holds as they are, without energy
(gpubench/execution/worker.py), and an interruption saves them the same way.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from gpubench.core.phases import phase
from gpubench.execution.messages import Event, Finished, Provisional
from gpubench.results import Point

MAX_WAITING = 3  # a point's buffers are kept while it waits: at most this many points wait (memory stays bounded)


@dataclass
class Held:
    """A finished point in the task's order; `window` is what it still needs to take (None: nothing)."""

    index: int
    point: Point
    window: Callable[[], dict | None] | None = None  # takes the point's energy window now: its readings
    release: Callable[[], None] = lambda: None  # gives back its buffers once its window is taken

    @property
    def ready(self) -> bool:
        return self.window is None


class EnergyQueue:
    """The task's finished points not yet sent, oldest first, and the windows they wait for."""

    def __init__(self, backend):
        self.backend = backend
        self.held: deque[Held] = deque()

    def moment(self) -> bool:
        """Take the oldest waiting window if a refresh is due now; True if one was taken (the moment is used)."""
        waiting = next((h for h in self.held if not h.ready), None)
        if waiting is None or not self.backend.window_due():
            return False
        self._take(waiting)
        return True

    def add(self, held: Held) -> Iterator[Event]:
        """A point finished (its `window` still to take, or none). Yields the worker's events: the points now
        ready in order (Finished), and Provisional for one held back."""
        if not held.ready and sum(not h.ready for h in self.held) >= MAX_WAITING:
            self._take_next()
        self.held.append(held)
        yield from self._ready()
        if self.held and self.held[-1] is held:
            yield Provisional(held.index, held.point)

    def drain(self) -> Iterator[Event]:
        """Every window still waiting taken at its moment, and every point sent."""
        while any(not h.ready for h in self.held):
            self._take_next()
            yield from self._ready()
        yield from self._ready()

    def give_up(self) -> Iterator[Event]:
        """The backend cannot go on: the waiting windows are never taken, and every held point is sent as it is."""
        self.give_back()
        while self.held:
            h = self.held.popleft()
            yield Finished(h.index, h.point)

    def give_back(self) -> None:
        """The held points' buffers given back (where that still works): the task is over, or cannot go on."""
        for h in self.held:
            if not h.ready:
                h.window = None
                try:
                    h.release()
                except Exception:  # noqa: BLE001 - a faulted context refuses even this; the process is replaced
                    pass

    def _take_next(self) -> None:
        self.backend.wait_for_window()
        self._take(next(h for h in self.held if not h.ready))

    def _take(self, held: Held) -> None:
        try:
            with phase("energy, waited"):
                readings = held.window()
        except Exception:  # noqa: BLE001 - the point was measured: it keeps that, without energy; a fault that
            readings = None  # broke the backend stops the next point, which records it
        finally:
            held.release()
        if readings and held.point.telemetry is not None:
            held.point = replace(held.point, telemetry={**held.point.telemetry, **readings})
        held.window = None

    def _ready(self) -> Iterator[Event]:
        while self.held and self.held[0].ready:
            h = self.held.popleft()
            yield Finished(h.index, h.point)
