"""A run session: the use case under `gemm`, `conv` and `run`. An executor is started (gpubench/execution/executors.py),
the device is checked against every launch and library asked for, every kernel is compiled before any point
runs, each finished point is saved at once (RunWriter), and the outcome is shown and turned into an exit code. The
other processes computing on the GPU are listed before the first call and after the last point, and saved with the
run (gpubench/execution/neighbours.py).

Data flows one way: plan → executor (the device) → points → results file → tables.
"""

from __future__ import annotations

import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Callable, ContextManager, Protocol
from datetime import datetime
from pathlib import Path

from gpubench.core.backend_kind import BackendKind
from gpubench import results
from gpubench.execution import nvcc
from gpubench.core import paths
from gpubench.core import phases
from gpubench.execution import neighbours, sweep
from gpubench.measure import telemetry
from gpubench.core.errors import GpubenchError
from gpubench.execution.executors import open_executor
from gpubench.core.exit_codes import Exit
from gpubench.planning.plan import Spread
from gpubench.specs.project import Project
from gpubench.results import Point, Run, RunStatus, RunWriter
from gpubench.results.neighbours import KEY
from gpubench.execution.tasks import ShapeTask, first_calls, with_first_calls
from gpubench.specs.tuned import Tuned, slug
from gpubench.specs.geometry import SMS
from gpubench.specs.variant import Variant
from gpubench.execution.worker import DEFAULT_TIMEOUT_S
from gpubench.usecases.profiling import Profiling


# --- output files ---------------------------------------------------------------------------------------------


def check_output(output: str | Path, force: bool, what: str = "results file", suffixes=results.SUFFIXES,
                 flag: str = "-o") -> Path:
    """Refuse an output path before any work starts: empty, wrong suffix, a directory, an existing file without
    --force, a parent that is a file, a name too long for the temporary file it is written through, or a place
    that cannot be written. Messages name the option that gave the path (`flag`)."""
    text = str(output)
    allowed = " or ".join(suffixes)
    if not text.strip():
        raise GpubenchError(f"{flag} is empty (an unset variable?): give a file path ending in {allowed}, e.g. "
                            f"run{suffixes[0]}")
    if not text.isprintable():
        raise GpubenchError(f"{flag} {text!r}: a file path of printable characters, ending in {allowed}")
    path = Path(output)
    if text.rstrip().endswith(("/", "/.", os.sep)):  # Path() drops the slash that makes it a directory's name
        raise GpubenchError(f"{flag} {output}: ends in a slash, as a directory does: give a file path ending in "
                            f"{allowed}")
    if path.name.lower() in suffixes:
        raise GpubenchError(f"{flag} {output}: give a name before {path.name}, e.g. run{path.name}")
    if not path.name.lower().endswith(tuple(suffixes)):
        raise GpubenchError(f"{flag} {output}: a {what} ends in {allowed}")
    try:
        longest = len(os.fsencode(paths.temporary(path).name))
        limit = paths.name_max(path.parent)
        if longest > limit:
            raise GpubenchError(f"{flag} {output}: the file name is too long ({len(os.fsencode(path.name))} bytes; "
                                f"at most {limit - longest + len(os.fsencode(path.name))} here, as it is written "
                                "through a temporary file beside it)")
        if path.is_dir():
            raise GpubenchError(f"{flag} {output} is a directory: give a file path")
        if (path.exists() or path.is_symlink()) and not force:  # a link to nowhere (or to itself) is replaced too
            raise GpubenchError(f"{flag} {output} exists: pass --force to replace it, or choose another path")
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            raise GpubenchError(f"{flag} {output}: {blocking} is a file, not a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = paths.temporary(path)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise GpubenchError(f"{flag} {output} cannot be written ({e.strerror or e})") from None
    return path


def claim_output(output: str | Path, force: bool, claims: ExitStack) -> Path:
    """-o checked, then claimed for the run's length (results.claim: a run writing it already is named, --force
    or not), and only then is an existing file refused without --force (under the claim, so that a run that has
    just ended there cannot be overwritten)."""
    path = check_output(output, force=True)
    claims.enter_context(results.claim(path))
    return check_output(path, force)


def default_output(device: str, label: str, claims: ExitStack) -> Path:
    """results/<device>/<label>-<time>.json, with -2, -3, ... where a run of the same second exists (or is being
    written: the name is claimed for the run's length)."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "-", label).strip(".-") or "run"  # a suite's name may hold / or spaces
    stem = Path("results") / slug(device) / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    path, n = stem.with_suffix(".json"), 1
    while True:
        if not path.exists():
            claim = results.Claim(check_output(path, force=False))
            if claim.acquire():
                if not path.exists():
                    claims.enter_context(claim)
                    return path
                claim.release()
        n += 1
        path = stem.with_name(f"{stem.name}-{n}.json")


# --- running sweeps -------------------------------------------------------------------------------------------


@dataclass
class RunRequest:
    sweeps: list[sweep.Sweep]
    label: str
    backend: BackendKind = BackendKind.CUDA
    seed: int = 0
    output: str | None = None
    force: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    project: Project = field(default_factory=Project)
    argv: list[str] = field(default_factory=lambda: ["gpubench", *sys.argv[1:]])
    spread: Spread = Spread()  # one device, or several GPUs / a Dask cluster, shared out or replicated
    profile: Profiling = Profiling.OFF  # each timed point's one call under Nsight Compute afterwards (profiling.py)

    @property
    def replicate(self) -> bool:
        return self.spread.replicate

    @property
    def slow_threshold(self) -> float:
        return self.spread.slow_threshold

    def executor(self):
        """One Worker on one device, or a Dask cluster of them."""
        s = self.spread
        return open_executor(self.backend, timeout_s=self.timeout_s, gpus=s.gpus,
                             scheduler=s.scheduler, replicate=s.replicate, processes=self.processes)

    @property
    def processes(self) -> int:
        """The most worker processes any sweep asks to measure its points in (--processes, a suite's key)."""
        return max((s.policy.processes for s in self.sweeps), default=1)


def device_launches(task: ShapeTask, point, info: dict):
    """Each launch one point's call makes on this device: its steps' grids and blocks for the task's problem, a
    persistent grid sized by the device's multiprocessor count (`sms`)."""
    dims = {**task.shape.dims(), SMS: info.get("sms", 1)}
    return [s.launch_for(dims, point.config) for s in point.variant.code.steps()]


def check_device(work: list[ShapeTask], info: dict, variants: list[Variant]) -> None:
    """What the device must allow before anything runs: every launch's block, and the libraries asked for."""
    limit = info.get("max_threads")
    for task in work:
        for p in task.points:
            if limit is None or p.variant.code.kernels is None:
                continue
            launch = max(device_launches(task, p, info), key=lambda la: la.threads)
            if launch.threads > limit:
                where = "--block-sizes" if p.variant.space.axis == "block" else \
                    f"{p.variant.entry.origin}: variant {p.variant.name!r}"
                raise GpubenchError(f"{where}: configuration {p.config.label} launches blocks of {launch.threads} "
                                    f"threads; this GPU allows at most {limit}")
    computes = info.get("dtypes")  # a GPU says which precisions it has tensor cores for (fp8: Ada, Hopper and later)
    if computes is not None:
        for task in work:
            if task.points and str(task.shape.dtype) not in computes:
                raise GpubenchError(f"{task.shape.dtype} needs tensor cores this GPU ({info.get('device')}, "
                                    f"{info.get('arch')}) does not have; it computes in {', '.join(computes)}")
    libraries = info.get("libraries", {})
    for v in variants:
        runner = v.code.runner
        if runner.LIBRARY is not None and libraries.get(runner.LIBRARY) is None and info.get("arch"):
            raise GpubenchError(f"{runner.MISSING}: install it, or leave out the {runner.NAME} variants with "
                                "--variants")


def precompile(work: list[ShapeTask], arch: str | None) -> int:
    """Compile every kernel the tasks need, in parallel, before any point runs. A kernel nvcc rejects stops
    the command here (exit 2, nvcc's first error in one line), not at its hundredth point."""
    if not arch:
        return 0
    jobs = [job for task in work for p in task.points for job in p.variant.builds(p.config, arch, task.shape)]
    if not jobs:
        return 0
    failures = nvcc.compile_all(jobs)
    if failures:
        raise failures[0][1]
    return len(set(jobs))


def start_while_compiling(worker, request: RunRequest) -> dict:
    """worker.start(), with the sweeps' kernels compiled meanwhile for the architecture NVML reports here (what
    the worker will report, where the machine has one GPU model): nvcc and the worker's own start (a Python
    process, a CUDA context) overlap, and precompile() afterwards finds every kernel in the cache. A kernel nvcc
    rejects is left for precompile() to report, for the architecture the worker gives. (Tuned configurations are
    resolved once the worker has named its device: those alone are compiled after it starts.)"""
    arch = telemetry.one_arch() if request.backend == BackendKind.CUDA else None
    if arch is None:
        return worker.start()
    with ThreadPoolExecutor(1) as pool:
        early = pool.submit(precompile, sweep.tasks(request.sweeps, request.seed), arch)
        info = worker.start()
        try:
            early.result()
        except GpubenchError:  # nvcc's error, or no nvcc: precompile() says it below
            pass
    return info


class Display(Protocol):
    """What a session shows while it runs (gpubench/views/terminal.py's LiveDisplay on a terminal)."""

    def skipped(self, what: str, why: str) -> None:
        """A shape a sweep left out before running (a filter larger than its padded input, ...)."""

    def unlocked_clocks(self, telemetry: dict) -> None:
        """The GPU's clocks are not locked: each point records its own, and a rerun can differ for that alone."""

    def progress(self, label: str, total: int) -> ContextManager[Callable[[Point], None]]:
        """A context whose value is called with each finished point."""


@dataclass
class RunOutcome:
    """What a session ends with: the saved run, where it is, how it ended; what a view shows and the exit code."""

    run: Run
    path: Path
    status: RunStatus
    total: int  # the points asked for (on every GPU, for a replicate run)
    slow: list = field(default_factory=list)  # fleet.Health of each GPU slower than the node's median (replicate)
    stopped_by: int | None = None  # the signal that interrupted the run: SIGTERM or SIGHUP (None: Ctrl-C)
    notes: list[str] = field(default_factory=list)  # one line each, after the tables (profiles missing, ...)
    refused: bool = False  # `gpubench profile`, and this machine refused every profile: exit 2 (the points saved)

    @property
    def exit_code(self) -> int:
        if self.status == RunStatus.INTERRUPTED:
            return Exit.stopped_by(self.stopped_by)
        if self.refused:
            return Exit.USAGE
        if self.run.failed():
            return Exit.FAILED
        return Exit.SLOW_GPU if self.slow else Exit.OK


def run_sweeps(request: RunRequest, display: Display) -> RunOutcome:
    with ExitStack() as claims:  # the output's claim, held until the run's file is final
        return _run_sweeps(request, display, claims)


def _run_sweeps(request: RunRequest, display: Display, claims: ExitStack) -> RunOutcome:
    path = claim_output(request.output, request.force, claims) if request.output is not None else None
    phases.directory()  # GPUBENCH_PHASES, where set, is a directory: checked before any point runs
    variants = list(dict.fromkeys(v for s in request.sweeps for v in s.variants))
    family = sum(len(s) for s in request.sweeps)  # what a later comparison of this run corrects for
    for s in request.sweeps:
        s.policy = replace(s.policy, family=family)
    with request.executor() as worker:
        with phases.phase("start worker"):
            info = start_while_compiling(worker, request)
        tuned = Tuned(info["device"], request.project.tuned_dir) if request.backend == BackendKind.CUDA else None
        work = sweep.tasks(request.sweeps, request.seed, tuned.resolve if tuned else sweep.as_is)
        check_device(work, info, variants)
        with phases.phase("precompile"):
            precompile(work, info.get("arch"))
        worker.check(variants)  # a project's Python functions imported and their signatures checked: exit 2 before
        # any point (gpubench/core/user_code.py)
        watch = neighbours.watch_for(request.backend, info)
        company = watch.start(worker) if watch else None  # other processes on the GPU, before any plan search
        early: list[Point] = []  # points whose first call faulted, hung or killed the worker: recorded already
        # ... and each one's first call made (Triton's JIT: exit 2 if it does not compile), and cuDNN's plan searches
        # run, in a process that times nothing after them (tasks.first_calls)
        first_started = time.perf_counter()
        with phases.phase("first calls"):
            work = with_first_calls(work, *worker.first_calls(first_calls(work), early.append))
        first_s = time.perf_counter() - first_started
        path = path or default_output(info["device"], request.label, claims)
        settings = {"seed": request.seed, "timeout_s": request.timeout_s,
                    "project": str(request.project.path) if request.project.path else None,
                    "gpus": str(request.spread.gpus) if request.spread.gpus else None,
                    "scheduler": request.spread.scheduler, "replicate": request.replicate,
                    "slow_threshold": request.slow_threshold, "sweeps": [s.settings() for s in request.sweeps]}
        with phases.phase("environment"):
            environment = worker.environment(sorted({t.shape.dtype for t in work}))
        if company is not None:
            settings[KEY] = company.as_dict()
        if getattr(worker, "floors_us", None):  # the timing process was chosen by its launch floor, among these
            settings["launch_floors_us"] = worker.floors_us  # (gpubench/execution/launch_floor.py), its own first
        run = Run(backend=request.backend, environment=environment, settings=settings, command=request.argv,
                  variants=[v.record() for v in variants])
        telemetry = run.environment.get("device", {}).get("telemetry") or {}
        if telemetry and telemetry.get("clocks_locked") is False:
            display.unlocked_clocks(telemetry)
        writer = RunWriter(run, path)
        for s in request.sweeps:
            for what, why in s.skipped:
                display.skipped(what, why)
        copies = len(getattr(worker, "workers", {}) or {}) if request.replicate else 1
        total = sum(len(t.points) for t in work) * copies + len(early)
        started, stopped_by = time.perf_counter(), None
        with display.progress(f"{request.label} on {run.device}", total) as advance:
            def finished(point: Point) -> None:
                run.incidents = [i.as_dict() for i in worker.incidents]  # saved with the next point
                advance(point)

            for point in early:
                writer.add(point)
                finished(point)
            try:
                with phases.phase("sweep"):
                    status = sweep.run(worker, work, writer, on_point=finished)
            except KeyboardInterrupt as stop:  # saved as interrupted; leaving `with` below ends the workers
                status, stopped_by = RunStatus.INTERRUPTED, getattr(stop, "signum", None)
        run.incidents = [i.as_dict() for i in worker.incidents]
        if company is not None:
            run.settings[KEY] = watch.end(worker, company).as_dict()
        run.settings["wall_s"] = round(time.perf_counter() - started, 1)  # the sweep itself, for scaling claims
        run.settings["first_calls_s"] = round(first_s, 1)  # before it: compiles, plan searches, a process renewed
        writer.finish(status)
    notes = _profiled(request, run, work, info, writer, display) if status == RunStatus.COMPLETE else []
    phases.save("coordinator")
    slow = []
    if request.replicate and status == RunStatus.COMPLETE and not run.failed():
        from gpubench.analysis import fleet

        slow = [h for h in fleet.health(run, request.slow_threshold) if h.slow]
    return RunOutcome(run, path, status, total, slow, stopped_by, notes)


def _profiled(request: RunRequest, run: Run, work: list[ShapeTask], info: dict, writer: RunWriter,
              display: Display) -> list[str]:
    """The run's timed points profiled, once the workers have ended (gpubench/usecases/profiling.py); the notes
    to show. Ctrl-C here keeps the profiles taken so far: the file stays complete."""
    from gpubench.usecases import profiling

    if request.profile == Profiling.OFF or request.backend == BackendKind.CPU:
        return []
    how = profiling.options(info.get("arch"), request.timeout_s)
    save = lambda: results.save(run, writer.path)  # noqa: E731
    timed = sum(1 for p in run.points if p.status.timed)
    with display.progress(f"profiling on {run.device}", timed) as advance:
        try:
            done = profiling.profile_run(run, work, request.backend, how, save, advance)
        except KeyboardInterrupt:
            save()
            raise
    return [line for line in (profiling.left_out(how), profiling.summary(done)) if line]
