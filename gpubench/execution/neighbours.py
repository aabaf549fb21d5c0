"""Who else is computing on the run's GPU: NVML's list of the processes holding a context on it, less the run's own,
looked at when the run starts (before any plan search) and when it ends. The record and its warning:
gpubench/results/neighbours.py.

The run's own processes are the coordinator (this process), every worker process its executor spawned (`pids()`:
the kept worker, the launch-floor candidates it ended, a fresh process after a fault or a plan search, each of
`--processes K`), and whatever those started: a worker opens a session of its own, so its children carry its pid as
their session id.

NVML gives process ids as the driver sees them. In a container with a pid namespace of its own they need not be
this machine's ids, and the run could not tell its own worker from a stranger's process. So the start's look must
find one of the run's workers in the list (each holds a context by then): where none is there, the ids are not
comparable, and the run records that it could not check rather than naming its own worker as a neighbour. NVML
shows only what it can see from here: a process in another container may be missing from its list.

Where NVML is missing, does not list processes (NotSupported) or the executor does not know its workers' ids (a
Dask cluster), the record says it could not check and why. Nothing here ever fails a run.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpubench.core.backend_kind import BackendKind
from gpubench.results.neighbours import GpuNeighbours, Neighbour, short_name

UNSET = 2**63  # NVML's "not available" memory value (all ones), as older nvidia-ml-py passes it on


class Unchecked(Exception):
    """Why the processes on the GPU could not be listed, or told from the run's own."""


def command_line(pid: int) -> str | None:
    """A process's command line, where this machine shows it (/proc)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return short_name(raw.replace(b"\0", b" ").decode(errors="replace"))


def session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class Watch:
    """NVML's view of one GPU (by PCI bus id), for listing the processes on it. `nvml` (the pynvml module),
    `name_of` and `session` are the seams tests fake."""

    def __init__(self, pci_bus_id: str | None, nvml=None, *, me: int | None = None, name_of=command_line,
                 session=session_of):
        self.me = os.getpid() if me is None else me
        self.name_of, self.session = name_of, session
        self.nvml = self.handle = None
        self.why: str | None = None  # why no look can be made at all
        if not pci_bus_id:
            self.why = "the worker did not say which GPU it runs on"
            return
        try:
            if nvml is None:
                import pynvml as nvml
            nvml.nvmlInit()
            self.handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
            self.nvml = nvml
        except ImportError:
            self.why = "NVML's Python package (nvidia-ml-py) is not installed"
        except Exception as e:  # noqa: BLE001 - NVMLError and kin: recorded, never fatal
            self.why = f"NVML could not open the GPU ({_text(e) or type(e).__name__})"

    # -- the two moments --

    def start(self, executor) -> GpuNeighbours:
        """The look before the run's first call: its workers must be in NVML's list (the module says why)."""
        try:
            return GpuNeighbours(start=self.look(executor, expect_ours=True))
        except Unchecked as why:
            return GpuNeighbours(unchecked=str(why))

    def end(self, executor, record: GpuNeighbours) -> GpuNeighbours:
        """The record with the look after the run's last point added; none where the start could not look."""
        if record.start is None:
            return record
        try:
            return record.ended(self.look(executor))
        except Unchecked as why:
            return record.ended(None, f"at the end: {why}")

    # -- one look --

    def look(self, executor, expect_ours: bool = False) -> tuple[Neighbour, ...]:
        """The processes on the GPU that are not the run's own; Unchecked where that cannot be told."""
        if self.why:
            raise Unchecked(self.why)
        workers = self._workers(executor)
        listed = self._listed()
        if expect_ours and not workers & set(listed):
            raise Unchecked("NVML lists no process on this GPU, not even the run's own worker: it does not show "
                            "processes here (a container?)" if not listed else
                            "NVML does not list the run's own worker among the processes on this GPU: its process ids "
                            "are not this machine's (a container?), so the run's own cannot be told from others")
        return tuple(Neighbour(pid, short_name(self.name_of(pid)) or self._nvml_name(pid), used)
                     for pid, used in sorted(listed.items()) if not self._ours(pid, workers))

    @staticmethod
    def _workers(executor) -> set[int]:
        pids = getattr(executor, "pids", None)
        if pids is None:
            raise Unchecked("the run's worker processes are not known here (a run over several GPUs or a Dask "
                            "cluster)")
        return set(pids())

    def _ours(self, pid: int, workers: set[int]) -> bool:
        return pid == self.me or pid in workers or self.session(pid) in workers

    def _listed(self) -> dict[int, int | None]:
        """Every process NVML lists on the GPU, computing or drawing, and the GPU memory (MiB) it counts for it."""
        nv = self.nvml
        try:
            found = list(nv.nvmlDeviceGetComputeRunningProcesses(self.handle))
        except Exception as e:  # noqa: BLE001 - NVMLError_NotSupported and kin
            raise Unchecked(f"NVML could not list the processes on this GPU ({_text(e) or type(e).__name__})") \
                from None
        try:
            found += list(nv.nvmlDeviceGetGraphicsRunningProcesses(self.handle))
        except Exception:  # noqa: BLE001 - a compute GPU may not list graphics contexts: the compute list stands
            pass
        listed: dict[int, int | None] = {}
        for p in found:
            used = getattr(p, "usedGpuMemory", None)
            mib = round(used / 2**20) if isinstance(used, int) and 0 <= used < UNSET else None
            pid = int(p.pid)
            if pid <= 0:
                continue
            if mib is None:
                listed.setdefault(pid, None)
            else:  # listed twice (a compute and a graphics context): the larger count
                listed[pid] = max(listed.get(pid) or 0, mib)
        return listed

    def _nvml_name(self, pid: int) -> str | None:
        try:
            return short_name(_text(self.nvml.nvmlSystemGetProcessName(pid)))
        except Exception:  # noqa: BLE001 - a name is a courtesy
            return None


def watch_for(backend, info: dict) -> Watch | None:
    """The watch on the GPU a started executor reports (`info`, its first worker's), or None off the CUDA backend:
    what `run`, `ab` and `tune` look through."""
    return Watch(info.get("pci_bus_id")) if backend == BackendKind.CUDA else None
