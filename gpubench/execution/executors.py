"""Where a sweep's tasks run: one factory for every executor.

  one worker process     the default: gpubench/execution/worker.py's Worker owns the device (or the one GPU `--gpus id:N`
                         names), with its watchdog; on a GPU, chosen at each start from launch_floor.CANDIDATES
                         processes by their launch floor (gpubench/execution/launch_floor.py)
  K worker processes     `--processes K`: every point measured in K processes on the one device, in lockstep
                         (gpubench/execution/processes.py)
  a Dask cluster         several GPUs (`--gpus all|N|0,2`) or an existing cluster (`--scheduler`), a Worker
                         inside each Dask worker (gpubench/execution/cluster.py)

Every executor has the same life cycle (a context manager; start() describes the device) and runs tasks with
run_all(work, on_point): what gpubench/execution/sweep.py drives and gpubench/usecases/autotune.py searches with.
"""

from __future__ import annotations

from dataclasses import replace

from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError
from gpubench.core.gpus import GpuSelection
from gpubench.execution import launch_floor
from gpubench.execution.worker import DEFAULT_TIMEOUT_S, Worker, WorkerOptions


def open_executor(backend: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                  gpus: GpuSelection | None = None, scheduler: str | None = None, replicate: bool = False,
                  processes: int = 1):
    """A Worker on one device, K of them (`processes`), or a Dask cluster of them (not yet started)."""
    options = WorkerOptions(backend, timeout_s=timeout_s)
    one_device = scheduler is None and (gpus is None or gpus.single is not None)
    if processes > 1:
        if not one_device or replicate:
            raise GpubenchError(f"--processes {processes} measures every point in {processes} processes on one "
                                "device: leave out --gpus (or give one, id:N), --scheduler and --replicate")
        from gpubench.execution.processes import Processes

        return Processes(replace(options, device=gpus.single) if gpus else options, processes)
    if one_device:
        if replicate:
            raise GpubenchError("--replicate runs the suite on every GPU: give --gpus (or --scheduler) too")
        chosen = launch_floor.CANDIDATES if backend == BackendKind.CUDA else 1
        return Worker(replace(options, device=gpus.single if gpus else None, candidates=chosen))
    from gpubench.execution.cluster import Cluster

    return Cluster(options, gpus=gpus, scheduler=scheduler, replicate=replicate)
