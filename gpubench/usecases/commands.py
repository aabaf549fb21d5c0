"""The use cases behind the commands: each parses nothing and prints nothing; it returns what a view shows (a
run, a comparison, a listing, kernel checks) or, for the commands that run sweeps, the exit code of the run
session (gpubench/usecases/session.py). gpubench/cli.py calls one function here per command; each raises GpubenchError
(one line, exit 2) for bad input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpubench.execution import nvcc
from gpubench.planning import plan
from gpubench.core import user_code
from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError, NoDevice
from gpubench.core.paths import shown_path, temporary
from gpubench.core.exit_codes import Exit
from gpubench.measure.kernel_clock import CompareClock
from gpubench.execution.executors import open_executor
from gpubench import ops
from gpubench.ops import params as op_params
from gpubench.specs.project import Project
from gpubench.results import Run
from gpubench.specs.parse import ARCH
from gpubench.usecases import profiling
from gpubench.usecases.profiling import Profiling
from gpubench.usecases.session import Display, RunOutcome, RunRequest, check_output, run_sweeps
from gpubench.specs.variant import Variant
from gpubench.planning.settings import Selection, Settings
from gpubench.usecases import autotune


def environment(backend: str) -> dict:
    """The environment a run on `backend` records (the device, its clocks and memory, the software)."""
    with open_executor(backend) as worker:
        worker.start()
        return worker.environment()


# --- kernels without a GPU ------------------------------------------------------------------------------------


def check_kernels(variants: list[Variant], archs: list[str], block_sizes: tuple[int, ...]) -> list[tuple]:
    """Compile every configuration of the given CUDA variants for each architecture: (variant, config, arch,
    error or None) per build. Needs nvcc, not a GPU: what a project's CI runs."""
    rows = []
    for v in variants:
        for c in v.space.configs_for(block_sizes):
            for arch in ([v.code.program.arch] if v.code.program and v.code.program.arch else archs):
                failures = nvcc.compile_all(v.builds(c, arch))
                rows.append((v, c, arch, failures[0][1] if failures else None))
    return rows


def arch_list(text: str) -> list[str]:
    archs = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in archs if not ARCH.match(a)]
    if not archs or bad:
        raise GpubenchError(f"--arch {text!r}: give architectures such as sm_80,sm_90 (sm_XY, optionally with a "
                            "or f)")
    return archs


# --- the commands' use cases: each returns what a view shows, or an exit code -----------------------------------


def _catalog(project: Project):
    from gpubench.specs.catalog import Catalog

    return Catalog.with_user(project.variants)


def _request(sweeps: list, label: str, settings: Settings, proj: Project,
             profile: Profiling = Profiling.OFF, timeout_s: float | None = None) -> RunRequest:
    """The run of these sweeps; `timeout_s`: a suite's own watchdog, where the command line gives none."""
    run, out = settings.run, settings.output
    return RunRequest(sweeps, label, run.backend, plan.check_seed(run.seed), out.output, out.force,
                      plan.check_timeout(run.timeout, timeout_s), proj, spread=settings.spread, profile=profile)


def run_op(op: str, shapes: list, selection: Selection, settings: Settings, display: Display,
           profile: Profiling = Profiling.OFF) -> RunOutcome:
    """`gpubench gemm|conv|sweep OP`: one sweep of the op over the shapes in each asked precision and layout, checked
    by the plan, run, saved and shown (and, with `profile`, each point's timed call profiled)."""
    from gpubench.specs import project as projects

    asked_names, backend = selection.variants, settings.run.backend
    note = profiling.check(profile, backend)
    dtypes, layouts = plan.dtypes_asked(selection.dtype, settings.run.tf32), plan.layouts_asked(selection.layout, op)
    proj = projects.load(settings.run.config)
    catalog = _catalog(proj)
    mine = plan.lab_kernels(catalog, op, backend, selection.kernels, selection.kernel_args, dtypes)
    chosen = plan.variants(catalog, op, backend, asked_names, "--variants", mine)
    asked = plan.precisions(chosen, dtypes, layouts, named=set(asked_names or []) | {v.name for v in mine},
                            where="--dtype/--layout")
    if selection.block_sizes_given:
        plan.check_block_option(chosen, "--block-sizes")
    timing = settings.timing.policy(backend)
    settings.timing.check_settle([timing])
    plan.check_graph(backend, [timing])
    sweep = plan.sweep(op, op, asked.variants, plan.in_precisions(shapes, asked.dtypes, asked.layouts),
                       selection.block_sizes, timing,
                       [*asked.skipped, *plan.left_out(catalog, op, backend, asked_names)])
    return _noted(run_sweeps(_request([sweep], op, settings, proj, profile), display), note, profile)


def _noted(outcome: RunOutcome, note: str | None, profile: Profiling) -> RunOutcome:
    """The outcome with the profiling's note first; `gpubench profile` ends with exit 2 where this machine refused
    every profile (its note says why)."""
    if note:
        outcome.notes.insert(0, note)
    outcome.refused = profile == Profiling.ASKED and profiling.refused(outcome.run)
    return outcome


def op_problems(name: str, args: list[str], config: str | None) -> tuple[str, list]:
    """`gpubench sweep OP --DIM values ...`: the op (a built-in one, or your project's [[op]]) and its problems
    from its own options, given as --name value pairs after the op's name."""
    from gpubench.specs import project as projects

    projects.load(config)  # a project's [[op]] tables are ops from here on
    op = ops.get(name)
    flags = {p.flag: p for p in op.params}
    values: dict[str, object] = {}
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        flag, eq, value = flag.partition("=")
        p = flags.get(flag)
        if p is None:
            raise GpubenchError(f"{flag}: no such option for {name}; its problem options are "
                                f"{', '.join(flags) or 'none'} (and every sweep's: see --help)")
        if not eq:
            if not rest:
                raise GpubenchError(f"{flag} needs a value")
            value = rest.pop(0)
        if p.kind == ops.base.ParamKind.TRIPLES:
            values.setdefault(p.name, []).append(value)
        elif p.kind == ops.base.ParamKind.INT:  # one integer, as click would have read it
            values[p.name] = op_params.int_list(value, flag, lo=-2**63)[0]
        else:
            values[p.name] = value
    shapes, _ = op.problems(values, name, strict=True)
    return op.name, shapes


def run_suite(suite: str, settings: Settings, display: Display, profile: Profiling = Profiling.OFF) -> RunOutcome:
    """`gpubench run SUITE`: a suite's sweeps (with the command line's sampling and pace for each) into one file."""
    from gpubench.specs import project as projects
    from gpubench.planning import suites

    note = profiling.check(profile, settings.run.backend)
    proj = projects.load(settings.run.config)
    s = suites.load(suite, settings.run.backend, _catalog(proj), tf32=settings.run.tf32)
    for sw in s.sweeps:
        sw.policy = settings.timing.over(sw.policy)
    settings.timing.check_settle([sw.policy for sw in s.sweeps])
    plan.check_graph(settings.run.backend, [sw.policy for sw in s.sweeps])
    return _noted(run_sweeps(_request(s.sweeps, s.name, settings, proj, profile, s.timeout_s), display), note,
                  profile)


@dataclass(frozen=True)
class SavedRun:
    """A saved run as `gpubench show` presents it: the run, and whether it was left marked running by a run that
    ended outright (no live gpubench holds its claim), which the view says beside its status."""
    run: Run
    abandoned: bool


def load_run(file: str, threshold: float = plan.DEFAULTS.threshold) -> SavedRun:
    """`gpubench show`: the saved run (any schema version), for a view to show."""
    from gpubench import results

    plan.compare_settings(threshold)
    run = results.load(file)
    return SavedRun(run, run.status == results.RunStatus.RUNNING and not results.being_written(file))


@dataclass(frozen=True)
class Comparison:
    base: Run
    new: Run
    report: object  # gpubench.analysis.compare.Report


def compare_runs(base: str, new: str, threshold: float, alpha: float, strict_env: bool,
                 allow_partial: bool = False, across: bool = False,
                 clock: CompareClock | str = CompareClock.EVENTS, thresholds: str | None = None) -> Comparison:
    """`gpubench compare`: two saved runs, point by point (the rules: gpubench/analysis/compare.py's), by the events'
    samples or (clock "kernel") by CUPTI's kernel times (gpubench/analysis/kernel_times.py); `thresholds`: a saved
    stability run whose suggested threshold per duration class judges that class's points."""
    from gpubench import results
    from gpubench.analysis import compare, kernel_times, stability

    threshold, alpha = plan.compare_settings(threshold, alpha)
    by_duration = stability.suggested_thresholds(thresholds) if thresholds else None
    base_run, new_run = results.load(base), results.load(new)
    clock = CompareClock(clock)
    if clock == CompareClock.KERNEL:
        base_run, new_run = kernel_times.by_kernel_clock(base_run, base), kernel_times.by_kernel_clock(new_run, new)
    for name, run in ((base, base_run), (new, new_run)):
        if run.status == results.RunStatus.RUNNING and not allow_partial and not results.being_written(name):
            raise GpubenchError(f"{name} is marked running, but no gpubench run is writing it (ended outright: "
                                f"SIGKILL, SIGQUIT, out of memory?), so its {len(run.points)} point(s) are all it will "
                                "have: run it again, or pass --allow-partial to compare the points both runs have")
    report = compare.compare(base_run, new_run, threshold, alpha, by_duration)
    report.clock = clock
    compare.check(report, strict_env, base, new, (base_run, new_run), allow_partial, across)
    return Comparison(base_run, new_run, report)


def plot_run(file: str, output: str, force: bool, roofline: bool) -> Path:
    """`gpubench plot`: a saved run as an image; returns its path."""
    from gpubench import results
    from gpubench.views import plot

    path = check_output(output, force, "plot", plot.FORMATS)
    run = results.load(file)
    return (plot.roofline_plot if roofline else plot.plot)(run, path)


@dataclass(frozen=True)
class Listing:
    variants: list[Variant]
    suites: list[tuple[str, str]]  # (name, what it runs)
    project: Project


def listing(config: str | None) -> Listing:
    """`gpubench list`: every variant (built-in and the project's) and the shipped suites."""
    from gpubench.specs import project as projects
    from gpubench.planning import suites

    proj = projects.load(config)
    return Listing(list(_catalog(proj).all), list(suites.shipped()), proj)


def check_project(config: str | None, arch: str, builtin: bool, block_sizes: tuple[int, ...]):
    """`gpubench check`: the project's specs (checked as they load), its Python functions (imported, signatures
    checked) and every build of its kernels; (project, rows of check_kernels)."""
    from gpubench.specs import project as projects

    proj = projects.load(config)
    archs = arch_list(arch)
    for v in proj.variants:  # the project's Python functions: imported, their signatures checked (no GPU needed)
        if v.code.runner.FUNCTION:
            user_code.check(v, v.space.configs_for(block_sizes))
    variants = [v for v in _catalog(proj).all if v.backend == BackendKind.CUDA and v.code.program
                and v.code.program.source and (builtin or not v.entry.builtin)]
    if variants and nvcc.find_nvcc() is None:
        raise GpubenchError("nvcc not found: install the CUDA toolkit or put nvcc on PATH (or set CUDA_HOME)")
    return proj, check_kernels(variants, archs, block_sizes) if variants else []


def tune(op: str, variant: str, shapes: list, search: autotune.Search, settings: Settings, out: Console) -> Path:
    """`gpubench tune OP`: search the variant's space per shape; returns the file the winners went to."""
    from gpubench.specs import project as projects

    proj = projects.load(settings.run.config)
    target = _catalog(proj).get(op, BackendKind.CUDA, variant)
    run = settings.run
    try:
        return autotune.run(target, shapes, search, plan.check_seed(run.seed), plan.check_timeout(run.timeout),
                            proj.tuned_dir, out, settings.spread)
    except NoDevice as e:  # tune has no CPU backend to suggest
        raise GpubenchError(f"{e.args[0]} (`gpubench tune` searches on an NVIDIA GPU; it has no CPU "
                            "backend)") from None


# --- reports and histories ------------------------------------------------------------------------------------


def load_runs(paths: list[str]) -> tuple[list[tuple[str, Run]], list[str]]:
    """Saved runs named by files or directories (every *.json and *.json.gz below a directory, in name order),
    each loaded and checked. A file named on its own that is not a gpubench run is one line naming it; one met
    inside a directory (a package.json, a half-written file) is passed over, and returned second as "path: why", so
    that one stray file does not hide a directory's history."""
    from gpubench.analysis import compare
    from gpubench.results import load, results_path, saved_under

    named: list[Path] = []
    inside: list[Path] = []
    for given in paths:
        path = results_path(given)
        if path.is_dir():
            found = saved_under(path, "**/*")
            if not found:
                raise GpubenchError(f"{given} is a directory with no results files (*.json, *.json.gz) in it")
            inside += found
        else:
            named.append(path)
    runs, passed_over = [], []
    for f in dict.fromkeys(named + inside):
        try:
            run = load(f)
            compare.check_once(run, shown_path(f))  # a point twice would be two runs of it in a history
            runs.append((shown_path(f), run))
        except GpubenchError as e:
            if f in named:
                raise
            passed_over.append(f"{shown_path(f)}: {e.args[0]}")
    if not runs:
        raise GpubenchError(f"no gpubench results among {', '.join(paths)} ({len(passed_over)} other *.json "
                            "or *.json.gz passed over)")
    return runs, passed_over


def write_report(paths: list[str], output: str, force: bool, threshold: float, across: bool) -> Path:
    """The HTML report of these runs (the first is the base of the comparisons), written atomically."""
    from gpubench.views import report

    threshold, _ = plan.compare_settings(threshold)
    path = check_output(output, force, "report", (".html", ".htm"))
    runs, _ = load_runs(paths)
    return _write_page(path, report.render(runs, threshold=threshold, across=across), "the report")


def _write_page(path: Path, html: str, what: str) -> Path:
    """An HTML page written atomically: a reader, or a run stopped midway, never finds half a page."""
    tmp = temporary(path)
    try:
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise GpubenchError(f"cannot write {what} to {path} ({e.strerror or e})") from None
    return path


@dataclass
class History:
    series: list
    threshold: float
    passed_over: list[str]  # *.json(.gz) files met in a directory that are not gpubench runs, "path: why"

    @property
    def regressed(self) -> list:
        return [s for s in self.series if s.regressed(self.threshold)]

    @property
    def exit_code(self) -> int:
        return Exit.FAILED if self.regressed else Exit.OK


def run_history(paths: list[str], threshold: float, alpha: float, html: str | None, force: bool) -> History:
    """Every point's series across the runs with its changes; the HTML page too where asked for."""
    from gpubench.analysis import history as hist

    threshold, alpha = plan.compare_settings(threshold, alpha)
    target = check_output(html, force, "history page", (".html", ".htm"), flag="--html") if html is not None else None
    runs, passed_over = load_runs(paths)
    outcome = History(hist.history(runs, alpha), threshold, passed_over)
    if target:
        from gpubench.views.history import history_html

        _write_page(target, history_html(outcome.series, threshold), "the history page")
    return outcome
