"""`gpubench stability SUITE`: the A/A test. The suite is run R times, each run a session of its own (fresh worker
processes, as `gpubench run` starts them: gpubench/usecases/session.py), one after another; the runs are kept as
one stability run (gpubench/analysis/stability.py says how, and what its pairwise comparisons say), saved after each
finished run so that an interruption keeps what ran.

Each run's own file goes to a temporary directory and is removed once the stability run holds its samples, unless
--keep-runs names a directory for them (each run's telemetry and environment stay there); a run cut short keeps
its file where it was, and the message says where.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from gpubench import results
from gpubench.analysis import stability
from gpubench.core.errors import GpubenchError
from gpubench.core.exit_codes import Exit
from gpubench.measure.kernel_clock import CompareClock
from gpubench.planning import plan
from gpubench.planning.plan import Spread
from gpubench.planning.settings import OutputSettings, RunSettings, Settings, TimingSettings
from gpubench.results import Run, RunStatus
from gpubench.usecases import commands
from gpubench.usecases.session import Display, claim_output, default_output

MIN_RUNS, MAX_RUNS = 2, 100


@dataclass
class StabilityRequest:
    suite: str
    runs: int = 5
    backend: str = "cuda"
    seed: int = 0
    tf32: bool = False
    timeout: float | None = None  # None: the suite's, else the default
    config: str | None = None
    output: str | None = None
    force: bool = False
    processes: int | None = None  # --processes for every run (None: the suite's)
    clock: str | None = None  # --clock for every run (None: the suite's); with both, the runs compare by each
    threshold: float = plan.DEFAULTS.threshold
    alpha: float = plan.DEFAULTS.alpha
    keep_runs: str | None = None  # a directory for each run's own file
    argv: list[str] = field(default_factory=lambda: ["gpubench", *sys.argv[1:]])


@dataclass
class StabilityOutcome:
    run: Run
    path: Path
    report: stability.StabilityReport | None  # None where fewer than two runs finished
    runs_dir: Path | None  # where the runs' own files are (kept, or left by a run cut short)
    stopped_by: int | None = None
    interrupted: bool = False
    failed: bool = False  # a point failed verification, erred or timed out in some run
    kernel_report: stability.StabilityReport | None = None  # by CUPTI's kernel times, where the runs kept them

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return Exit.stopped_by(self.stopped_by)
        return Exit.FAILED if self.failed else Exit.OK


class _RunOf:
    """What one of the R runs shows: its progress named "run r/R", and the notes every run would repeat (a shape
    left out, clocks not locked) once, with the first."""

    def __init__(self, display: Display, r: int, total: int):
        self.display, self.r, self.total = display, r, total

    def skipped(self, what: str, why: str) -> None:
        if self.r == 1:
            self.display.skipped(what, why)

    def unlocked_clocks(self, telemetry: dict) -> None:
        if self.r == 1:
            self.display.unlocked_clocks(telemetry)

    def progress(self, label: str, total: int):
        return self.display.progress(f"run {self.r}/{self.total}: {label}", total)


def run_stability(request: StabilityRequest, display: Display) -> StabilityOutcome:
    if type(request.runs) is not int or not MIN_RUNS <= request.runs <= MAX_RUNS:
        raise GpubenchError(f"--runs {request.runs}: an A/A test compares runs in pairs: {MIN_RUNS} to {MAX_RUNS}")
    threshold, alpha = plan.compare_settings(request.threshold, request.alpha)
    with ExitStack() as claims:
        path = claim_output(request.output, request.force, claims) if request.output is not None else None
        if request.keep_runs is not None:
            runs_dir, kept = Path(request.keep_runs), True
            if runs_dir.exists() and not runs_dir.is_dir():
                raise GpubenchError(f"--keep-runs {runs_dir} is a file: give a directory for the runs' files")
            runs_dir.mkdir(parents=True, exist_ok=True)
        else:
            runs_dir, kept = Path(tempfile.mkdtemp(prefix="gpubench-stability-")), False
        finished: list[Run] = []
        stopped_by, interrupted, failed, run = None, False, False, None
        try:
            for r in range(request.runs):
                settings = Settings(TimingSettings(processes=request.processes, clock=request.clock), Spread(),
                                    OutputSettings(str(runs_dir / f"run-{r + 1:02d}.json"), force=True),
                                    RunSettings(backend=request.backend, seed=request.seed, tf32=request.tf32,
                                                timeout=request.timeout, config=request.config))
                outcome = commands.run_suite(request.suite, settings, _RunOf(display, r + 1, request.runs))
                failed = failed or bool(outcome.run.failed())
                if outcome.status != RunStatus.COMPLETE:
                    stopped_by, interrupted = outcome.stopped_by, True
                    break
                finished.append(outcome.run)
                path = path or default_output(outcome.run.device, f"stability-{Path(request.suite).stem}", claims)
                last = r + 1 == request.runs
                run = stability.assemble(finished, suite=request.suite, asked=request.runs, threshold=threshold,
                                         alpha=alpha, command=request.argv,
                                         status=RunStatus.COMPLETE if last else RunStatus.RUNNING)
                results.save(run, path, interim=not last)
        except GpubenchError:  # a bad suite or option, said before any point ran: nothing to keep
            if not kept and not finished:
                shutil.rmtree(runs_dir, ignore_errors=True)
            raise
        if run is not None and interrupted:
            run.status = RunStatus.INTERRUPTED
            results.save(run, path)
        if not kept and not interrupted:
            shutil.rmtree(runs_dir, ignore_errors=True)
    if run is None:  # the first run was cut short: its own file is all there is
        return StabilityOutcome(Run(request.backend, {}, {}), runs_dir / "run-01.json", None, runs_dir, stopped_by,
                                interrupted, failed)
    report = stability.analyse(run, threshold, alpha) if len(finished) >= 2 else None
    by_kernels = (stability.analyse(run, threshold, alpha, CompareClock.KERNEL)
                  if report is not None and stability.has_kernel_times(run) else None)
    return StabilityOutcome(run, path, report, runs_dir if kept or interrupted else None, stopped_by, interrupted,
                            failed, by_kernels)
