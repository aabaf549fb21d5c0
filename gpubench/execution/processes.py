"""The process as a source of variation: every point measured in K worker processes on one device, interleaved.

Two processes on one GPU can time every kernel of a few microseconds 1-5% apart, all together (the whole-run
shift, docs/evidence/whole-run-shift-h100.md), so a run measured in one process carries one draw of that shift and
says nothing of its size. With `--processes K` (a suite's `processes` key, the API's `processes=`) a sweep's points
are measured in K :class:`~gpubench.execution.worker.Worker` processes, each with its own CUDA context, its own
inputs placed where its own probe found them, its own library plans; the point keeps every process's samples
(`Point.processes` counts them), its summary is over all of them, and `compare` takes its interval from the spread
between the processes (gpubench/measure/hierarchical.py).

The schedule is **lockstep by task**: a shape's task (its inputs, reference and points, gpubench/execution/tasks.py)
runs in process 1, then in process 2, ..., then in process K, and only then does the next shape's task start, with
the first process rotated by one per task. So

* the processes are interleaved in time: one process's measurement of a point and another's lie one task apart (a
  few seconds for the lab's shapes), never a whole sweep apart, so a card state that drifts over a run (its
  temperature, its power history) reaches every process alike instead of being read as a process effect;
* each process runs the same points in the same order within a task, so each point follows the same kernels in
  every process, and the rotation gives every process its turn at following another shape;
* the task, not the point, is the unit, because a process makes a shape's inputs, its float64 reference and the
  placement of its small buffers once per task: interleaving point by point would remake them for every point
  (placement alone probes each buffer's places), and each process would no longer see its points back to back.

Every process samples a point under the sweep's whole policy (a point's samples per process are a measurement on
their own, and a run of K processes compares with a run of one), so the sweep takes about K times as long. A task
whose sweep asks for fewer processes than the executor has runs in the first of them only.

A point must pass in every process: one that fails, errs, times out or is skipped in any process is recorded as that
process's outcome, saying which process. A fault is handled by each process's own Worker (a fresh process in its
place), as in a run of one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Callable

from gpubench.core.errors import GpubenchError
from gpubench.execution.tasks import ShapeTask
from gpubench.execution.worker import Incident, Worker, WorkerOptions
from gpubench.results import Point
from gpubench.results.pooled import pooled

MAX_PROCESSES = 16  # more is not a run anyone waits for: each process samples every point in full


def task_processes(task: ShapeTask) -> int:
    """How many processes the task's sweep asks for (its timing policy's `processes`)."""
    return max(1, getattr(task.points[0].policy, "processes", 1)) if task.points else 1


def order(task_index: int, k: int) -> list[int]:
    """The processes a task runs in, in turn: 0 … k−1, started one further along for each task."""
    return [(task_index + j) % k for j in range(k)]


class Processes:
    """K Workers on one device, run in lockstep by task (the module's docstring says why): the executor
    gpubench/execution/executors.py gives a sweep that asks for more than one process."""

    def __init__(self, options: WorkerOptions, k: int):
        if not 2 <= k <= MAX_PROCESSES:
            raise GpubenchError(f"--processes {k}: allowed 1..{MAX_PROCESSES}")
        self.options = options
        self.slots = [Worker(options) for _ in range(k)]
        self.info: dict | None = None

    @property
    def incidents(self) -> list[Incident]:
        return [replace(i, where=f"process {n + 1}: {i.where}") for n, w in enumerate(self.slots) for i in w.incidents]

    def pids(self) -> set[int]:
        """Every process any of the K Workers has started."""
        return set().union(*(w.pids() for w in self.slots))

    def start(self) -> dict:
        """Every process started at once (each opens its own context); the first's description of the device."""
        with ThreadPoolExecutor(len(self.slots)) as pool:
            self.info = list(pool.map(lambda w: w.start(), self.slots))[0]
        return self.info

    def environment(self, precisions=None) -> dict:
        return self.slots[0].environment(precisions)

    def check(self, variants: list) -> None:
        for w in self.slots:
            w.check(variants)

    def first_calls(self, tasks: list[ShapeTask], on_point: Callable[[Point], None]) -> tuple[dict, set]:
        """A Python variant's first call (where it compiles) made in the first process, as a run of one makes it;
        the other processes make theirs when the point is checked, before it is timed."""
        return self.slots[0].first_calls(tasks, on_point)

    def run_all(self, work: list[ShapeTask], on_point: Callable[[Point], None]) -> None:
        for i, task in enumerate(work):
            k = min(task_processes(task), len(self.slots))
            if k == 1:
                self.slots[0].run(task, on_point)
                continue
            got: dict[tuple, dict[int, Point]] = {}

            def keep(point: Point, slot: int) -> None:
                got.setdefault((point.variant, point.config), {})[slot] = point

            try:
                for slot in order(i, k):
                    self.slots[slot].run(task, lambda p, s=slot: keep(p, s))
            finally:  # an interruption keeps every point some process finished
                for p in task.points:
                    done = got.get((p.variant.name, p.config.label))
                    if done:
                        on_point(pooled([done[s] for s in sorted(done)]))

    def close(self) -> None:
        for w in self.slots:
            w.close()

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
