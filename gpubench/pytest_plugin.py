"""gpubench's pytest plugin (registered as `gpubench` through the pytest11 entry point): a `gpubench` fixture that
measures a callable with verification inside your own tests, the session's points saved as a gpubench run, and the
session failed on a significant regression against a baseline run.

    def test_my_matmul(gpubench):
        m = gpubench(my_matmul, gpubench.gemm(2048), arrays="torch")   # gpubench.api.measure's arguments
        assert m.gflops > 1000

    pytest --gpubench-save base.json                   # keep the session's points as a run
    pytest --gpubench-compare base.json                # exit 1 on a significant slowdown, as `gpubench compare`

The backend is --gpubench-backend's, else GPUBENCH_BACKEND's, else the project's (gpubench.toml: backend = "cpu"),
else cuda where PyCUDA and CuPy are installed and a GPU answers, else the CPU: a machine without a GPU still
measures and verifies every test that can run on NumPy arrays, and the session's header (or summary, where the GPU
stack is installed but no GPU answers) says so once. A test that can run only on the GPU (arrays="torch") is then
skipped, and the summary lists it; a backend named outright that cannot open fails the test that needs it.

A point that fails verification fails its test; a point that cannot run here is skipped with the reason. The
comparison is `gpubench compare`'s (Hodges–Lehmann ratio, Mann–Whitney interval, Bonferroni over the points,
--gpubench-threshold and --gpubench-alpha), and so is its exit code: 1 when a point is significantly slower (or
passed in the baseline and fails now), 3 with --gpubench-fail-on-inconclusive when some point cannot be decided,
2 when the two runs cannot be compared (the line says why). A baseline that cannot be read stops pytest before any
test runs. Nothing heavy is imported until a test asks for the fixture.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

STATE = pytest.StashKey["Session"]()


@dataclass
class Session:
    """What the plugin keeps for one pytest session: the points measured, and the verdict at the end."""

    backend: str
    source: str  # backend_choice.Source: where the backend came from (GUESSED: the session may fall back to cpu)
    save: Path | None
    baseline: Path | None
    threshold: float
    alpha: float
    fail_on_inconclusive: bool
    points: list = field(default_factory=list)
    where: dict = field(default_factory=dict)  # a point's key -> the test that measured it
    variants: dict = field(default_factory=dict)  # (op, name) -> the record of what was measured
    outcome: list[str] = field(default_factory=list)  # lines for the terminal summary
    exit_code: int | None = None
    gpu_only: list[str] = field(default_factory=list)  # the tests skipped for needing the GPU backend
    header: str | None = None  # the session header's line: a guessed CPU backend
    broken: str | None = None  # why no backend could be chosen (a bad GPUBENCH_BACKEND): each measuring test fails
    header_shown: bool = False  # pytest -q shows no header: the summary says it then, where a test measured

    def open_backend(self):
        """The session's backend opened (api.backend_for), falling back to the CPU where cuda was only guessed and
        no GPU answers (said once in the summary); a backend named outright that cannot open fails the test."""
        from gpubench import api
        from gpubench.core.errors import GpubenchError, NoDevice
        from gpubench.core.backend_kind import BackendKind
        from gpubench.specs.backend_choice import Source

        if self.broken:
            pytest.fail(self.broken, pytrace=False)
        try:
            api.backend_for(self.backend)
            return
        except NoDevice as e:
            missing = e.args[0]
        except GpubenchError as e:
            missing = str(e)
        if self.source != Source.GUESSED or self.backend == BackendKind.CPU:
            pytest.fail(f"gpubench: {missing} (the {self.backend} backend was asked for); measure on the CPU with "
                        "--gpubench-backend cpu", pytrace=False)
        self.outcome.append(f"gpubench: {missing}: measured on the CPU backend instead (NumPy); "
                            "--gpubench-backend cuda insists on the GPU")
        self.backend = "cpu"

    def run(self, interrupted: bool):
        from gpubench import api
        from gpubench.results import Run, RunStatus

        environment = api.backend_for(self.backend).environment() if self.points else {}
        return Run(backend=self.backend, environment=environment, command=["pytest", *sys.argv[1:]],
                   settings={"pytest": True, "threshold": self.threshold, "alpha": self.alpha},
                   points=list(self.points), status=RunStatus.INTERRUPTED if interrupted else RunStatus.COMPLETE,
                   variants=list(self.variants.values()))


def pytest_addoption(parser):
    group = parser.getgroup("gpubench", "gpubench: measure callables in tests, save and compare runs")
    group.addoption("--gpubench-backend", default=None, choices=("cuda", "cpu"),
                    help="where the gpubench fixture measures (default: $GPUBENCH_BACKEND, else the project's "
                         "backend, else cuda where PyCUDA and CuPy are installed and a GPU answers, else cpu)")
    group.addoption("--gpubench-save", metavar="PATH",
                    help="save the session's points as a gpubench run (.json or .json.gz)")
    group.addoption("--gpubench-compare", metavar="PATH",
                    help="compare the session's points with this saved run; a significant slowdown fails the session")
    group.addoption("--gpubench-threshold", type=float, default=0.05,
                    help="the smallest change that counts, as in gpubench compare --threshold (default 0.05)")
    group.addoption("--gpubench-alpha", type=float, default=0.05,
                    help="the family-wise error rate of the comparison (default 0.05)")
    group.addoption("--gpubench-fail-on-inconclusive", action="store_true",
                    help="exit 3 when nothing regressed but some point could not be decided")


def pytest_configure(config):
    from gpubench.core.errors import GpubenchError
    from gpubench.specs import backend_choice

    save, baseline = config.getoption("--gpubench-save"), config.getoption("--gpubench-compare")
    try:
        choice, broken = backend_choice.choose(config.getoption("--gpubench-backend")), None
    except GpubenchError as e:  # a bad GPUBENCH_BACKEND or project file: the tests that measure fail with it
        choice, broken = backend_choice.Choice("cpu", backend_choice.Source.ASKED), f"gpubench: {e}"
    if baseline is not None or save is not None:
        from gpubench import results
        from gpubench.planning import plan
        from gpubench.usecases.session import check_output

        try:
            plan.compare_settings(config.getoption("--gpubench-threshold"), config.getoption("--gpubench-alpha"))
            if save is not None:
                check_output(save, force=True, flag="--gpubench-save")
            if baseline is not None:
                results.load(baseline)
        except GpubenchError as e:
            raise pytest.UsageError(f"gpubench: {e}") from None
    config.stash[STATE] = Session(choice.name, choice.source, Path(save) if save else None,
                                  Path(baseline) if baseline else None, config.getoption("--gpubench-threshold"),
                                  config.getoption("--gpubench-alpha"),
                                  config.getoption("--gpubench-fail-on-inconclusive"),
                                  header=choice.note("--gpubench-backend"), broken=broken)


def pytest_report_header(config):
    state = config.stash.get(STATE, None)
    if state is not None and state.header:
        state.header_shown = True
        return f"gpubench: {state.header}"
    return None


class Bench:
    """The fixture: call it as gpubench.api.measure (without `backend`, which the session sets); gemm and conv make
    problems."""

    def __init__(self, state: Session, node):
        from gpubench import api

        self.api, self.state, self.node = api, state, node
        self.gemm, self.conv, self.problem = api.gemm, api.conv, api.problem

    def __call__(self, fn, problem, **options):
        from gpubench.analysis.compare import point_label
        from gpubench.core.errors import GpubenchError, OtherBackendOnly
        from gpubench.results import Status

        if "backend" in options:
            raise pytest.UsageError("gpubench fixture: the backend is the session's (--gpubench-backend)")
        self.state.open_backend()
        try:
            m = self.api.measure(fn, problem, backend=self.state.backend, **options)
        except OtherBackendOnly as e:  # a GPU-only call (arrays="torch") in a session on the CPU: cannot run here
            self.state.gpu_only.append(self.node.nodeid)
            pytest.skip(f"gpubench: {e} (this test needs --gpubench-backend cuda and a GPU)")
        except GpubenchError as e:
            pytest.fail(f"gpubench: {e}", pytrace=False)
        key = m.point.key()
        if key in self.state.where:
            pytest.fail(f"gpubench: {point_label(m.point)} was measured already, in {self.state.where[key]}; give "
                        "this measurement a name= of its own", pytrace=False)
        self.state.where[key] = self.node.nodeid
        self.state.variants.setdefault((m.point.op, m.point.variant), {**m.variant, "origin": self.node.nodeid})
        self.state.points.append(m.point)
        if m.status == Status.SKIPPED:
            pytest.skip(f"gpubench: {point_label(m.point)}: {m.point.reason}")
        if not m.ok:
            pytest.fail(f"gpubench: {point_label(m.point)}: {m.point.reason}", pytrace=False)
        return m


@pytest.fixture
def gpubench(request) -> Bench:
    """Measure a callable on a problem with gpubench's verification and timing; the point joins the session's run."""
    return Bench(request.config.stash[STATE], request.node)


def pytest_sessionfinish(session, exitstatus):
    state = session.config.stash.get(STATE, None)
    if state is not None and state.header and not state.header_shown and (state.points or state.gpu_only):
        state.outcome.insert(0, f"gpubench: {state.header}")
    if state is not None and state.gpu_only:
        state.outcome.append(f"gpubench: {len(state.gpu_only)} test(s) skipped, needing the GPU backend (not "
                             f"{state.backend}): {', '.join(state.gpu_only)}")
    if state is None or not state.points or (state.save is None and state.baseline is None):
        return
    from gpubench import api, results
    from gpubench.analysis.compare import Verdict
    from gpubench.core.errors import GpubenchError
    from gpubench.core.exit_codes import Exit

    run = state.run(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    if state.save is not None:
        results.save(run, state.save)
        state.outcome.append(f"gpubench: {len(run.points)} point(s) saved to {state.save}")
    if state.baseline is None:
        return
    try:
        report = api.compare(state.baseline, run, threshold=state.threshold, alpha=state.alpha)
    except GpubenchError as e:
        state.outcome.append(f"gpubench: error: {e}")
        state.exit_code = session.exitstatus = Exit.USAGE
        return
    for change in report.changes:
        if change.verdict != Verdict.SAME:
            state.outcome.append(f"gpubench: {change.verdict.value:>12} {change.label}: ×{change.ratio:.3f} "
                                 f"[{change.low:.3f}, {change.high:.3f}]")
    for base, new in report.broken:
        state.outcome.append(f"gpubench:       broken {new.variant} {new.problem.full_label}: {new.reason}")
    if report.too_few:
        state.outcome.append(f"gpubench: {len(report.too_few)} point(s) had too few samples to decide: a verdict needs "
                             f"at least {report.samples_needed} a side; measure both sessions with "
                             f"gpubench(..., decide={state.threshold:g}), which samples on until one is in reach")
    state.outcome.append(f"gpubench: compared with {state.baseline}: {report.outcome}")
    code = report.exit_code(state.fail_on_inconclusive)
    if code != Exit.OK:
        state.exit_code = session.exitstatus = code


def pytest_terminal_summary(terminalreporter):
    state = terminalreporter.config.stash.get(STATE, None)
    if state is not None and state.outcome:
        terminalreporter.section("gpubench")
        for line in state.outcome:
            terminalreporter.write_line(line)
