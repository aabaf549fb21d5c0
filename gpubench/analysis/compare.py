"""Comparing two saved runs: a verdict per point that CI can trust, and exit codes to match.

For every point present and measured in both runs, the change is estimated as the ratio of new to base
time: the Hodges–Lehmann shift between the log-times of the two sets of raw samples, with a distribution-free
confidence interval from the Mann–Whitney rank test (Moses' method). The interval's level is corrected for
the number of points compared (Bonferroni): with the default alpha of 0.05, all the intervals of a run hold
together with 95% confidence, so a sweep of 300 points raises no more false alarms than one of 3.

Against a threshold t (default 5%):
  slower        the whole interval is above 1 + t: a regression beyond the threshold
  faster        the whole interval is below 1 / (1 + t)
  same          the whole interval lies within [1 / (1 + t), 1 + t]
  inconclusive  the interval straddles a threshold: too few or too noisy samples to tell

A point whose samples sit in two modes (gpubench/measure/modes.py) has a median that says which mode held more of them. A
slower or faster verdict on such a point is inconclusive instead where the two runs share a mode: some mode (or
the median, for a point with one) of the base and some of the new run lie within the threshold of each other.
Then the two runs' medians differ because the shares of the modes changed, which a rerun of the same code can do
(the H100's cuDNN 14x14 bf16 point: 44.5-50.1 us in every sample of five runs, 53.7 us in 62% of a sixth's), not
because either mode's time did: `Change.mode_flip` says so and the views say why. Where no mode is shared (both
modes moved), the verdict stands. So `compare`'s exit code fails CI on a mode flip only with
--fail-on-inconclusive (3), never as a regression (1).

A threshold per duration class (`by_duration`, from an A/A run of `gpubench stability`: its suggested thresholds,
never below the threshold given) replaces the one threshold for the points of those classes, by the base's median:
calls of a few microseconds then count a change only past what identical code showed between processes.

Where a point was measured in two or more worker processes in both runs (`--processes K`), its interval is instead
a hierarchical bootstrap over processes, then samples (gpubench/measure/hierarchical.py): it counts the spread
between processes, which the rank interval of one process's samples cannot see. `Change.between` says so; with one
process on either side, the rank interval as above.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from enum import StrEnum

from gpubench.core.errors import GpubenchError
from gpubench.core.exit_codes import Exit
from gpubench.results import Point, Run, RunStatus, Status, neighbours
from gpubench.results.neighbours import GpuNeighbours
from gpubench.analysis.roofline import floor_ms
from gpubench.measure.stability import Duration, duration
from gpubench.measure import hierarchical
from gpubench.measure.kernel_clock import CompareClock
from gpubench.measure.stats import fewest_samples, ratio_interval

ENV_FIELDS = {
    "GPU": ("device", "name"), "compute capability": ("device", "compute_capability"),
    "SM clock (max)": ("device", "sm_clock_max_mhz"), "memory clock (max)": ("device", "memory_clock_max_mhz"),
    "power limit": ("device", "power_limit_w"), "driver": ("device", "driver"),
    "CUDA driver API": ("software", "cuda_driver_api"), "CUDA runtime": ("software", "cuda_runtime"),
    "nvcc": ("software", "nvcc"), "PyCUDA": ("software", "pycuda"), "CuPy": ("software", "cupy"),
    "cuDNN": ("software", "cudnn"), "NumPy": ("software", "numpy"),
}


FLOOR_MOVED = 0.01  # the empty-kernel floor moving by this share is worth a note (Report.floor_moved)


class Verdict(StrEnum):
    """A point's change against a threshold t (the module's docstring says how each is decided)."""

    SLOWER = "slower"
    FASTER = "faster"
    SAME = "same"
    INCONCLUSIVE = "inconclusive"


ORDER = (Verdict.SLOWER, Verdict.INCONCLUSIVE, Verdict.FASTER, Verdict.SAME)  # how a report lists its changes


@dataclass(frozen=True)
class SourceChange:
    """A variant whose kernel source differs between the two runs (by its recorded sha256)."""

    op: str
    name: str
    base_source: str | None
    new_source: str | None
    base_sha: str | None
    new_sha: str | None


@dataclass
class Change:
    base: Point
    new: Point
    ratio: float  # new time / base time (> 1: slower)
    low: float
    high: float
    verdict: Verdict
    mode_flip: bool = False  # slower or faster by the interval, inconclusive as the modes' shares changing (above)
    between: bool = False  # the interval is the bootstrap's over processes (both runs measured it in K ≥ 2 of them)
    threshold: float = 0.05  # the threshold its verdict used: the report's, or its duration class's own

    @property
    def clock_change(self) -> tuple[float, float] | None:
        """(base, new) median SM clock where the two differ by more than 3%: a change that may be the GPU's."""
        a, b = (self.base.telemetry or {}).get("sm_mhz"), (self.new.telemetry or {}).get("sm_mhz")
        if a and b and abs(b / a - 1) > 0.03:
            return a, b
        return None

    @property
    def engine_change(self) -> tuple[str, str] | None:
        """(base, new) library engine where the library ran another one (cuDNN picks its fastest plan per run)."""
        a, b = self.base.details.engine, self.new.details.engine
        return (a, b) if a and b and a != b else None

    @property
    def label(self) -> str:
        return point_label(self.new)


def _moved(pair: tuple[float, float] | None) -> float | None:
    """new/base of a pair of floors (base's, new's) where it moved by FLOOR_MOVED or more; None where it did not,
    or where either run lacks it."""
    if not pair or not all(pair):
        return None
    ratio = pair[1] / pair[0]
    return ratio if abs(ratio - 1) >= FLOOR_MOVED else None


@dataclass
class Report:
    threshold: float
    alpha: float
    changes: list[Change]
    only_base: list[Point] = field(default_factory=list)
    only_new: list[Point] = field(default_factory=list)
    not_measured: list[tuple[Point, Point]] = field(default_factory=list)  # matched, but not ok in one run
    env_diffs: list[tuple[str, object, object]] = field(default_factory=list)
    source_changes: list[SourceChange] = field(default_factory=list)
    floors_ms: tuple[float, float] | None = None  # the empty kernel's median in each run, where both measured it
    launch_floors_us: tuple[float, float] | None = None  # each run's timing process's launch floor, where both chose
    # their process by it (settings.launch_floors_us, gpubench/execution/launch_floor.py)
    gpu_neighbours: tuple[GpuNeighbours | None, GpuNeighbours | None] = (None, None)  # each run's other processes
    # on its GPU, where it recorded them (gpubench/results/neighbours.py)
    clock: CompareClock = CompareClock.EVENTS  # the samples compared: the events', or CUPTI's kernel times
    by_duration: dict[Duration, float] = field(default_factory=dict)  # a duration class's own threshold

    def threshold_of(self, p: Point) -> float:
        """The threshold a point's verdict uses: its duration class's (by its median) where there is one."""
        return self.by_duration.get(duration(p.median_ms), self.threshold)

    @property
    def floor_moved(self) -> float | None:
        """new/base of the empty-kernel floor where it moved by FLOOR_MOVED or more: two processes on one GPU can
        sit 1-3% apart on every kernel of a few microseconds, and the floor moves the same way (the H100's lab
        pairs, docs/evidence/lab-speed-h100.md), so such points' verdicts say as much about the processes as about
        the code. None where it did not move (or a run did not measure it)."""
        return _moved(self.floors_ms)

    @property
    def launch_moved(self) -> float | None:
        """new/base of the timing processes' launch floors where they differ by FLOOR_MOVED or more: the two runs
        were timed in processes whose launches cost differently, and every short call carries the difference."""
        return _moved(self.launch_floors_us)

    def source_changed(self, p: Point) -> bool:
        return any(c.op == p.op and c.name == p.variant for c in self.source_changes)

    @property
    def pace_changes(self) -> list[tuple[Point, Point]]:
        """Points in both runs timed at different paces (one idle, one sustained): their times are of different
        things (a rested GPU's call, a hot one's), so no verdict between them means anything."""
        pairs = [(c.base, c.new) for c in self.changes] + self.not_measured
        return [(b, n) for b, n in pairs if b.pace != n.pace]

    @property
    def graph_changes(self) -> list[tuple[Point, Point]]:
        """Points in both runs timed one way in one and another in the other: a call on its own against a call in a
        captured CUDA graph (--graph), or graphs of different sizes. A graph's call runs without its launch,
        back to back with the others, so no verdict between the two means anything."""
        pairs = [(c.base, c.new) for c in self.changes] + self.not_measured
        return [(b, n) for b, n in pairs if b.details.graph != n.details.graph]

    def count(self, verdict: Verdict) -> int:
        return sum(c.verdict == verdict for c in self.changes)

    @property
    def too_few(self) -> list[Change]:
        """The points whose interval is unbounded: too few samples a side for any verdict at the family's level."""
        return [c for c in self.changes if math.isinf(c.high)]

    @property
    def samples_needed(self) -> int:
        """The fewest samples a side with which a point of this comparison can get a verdict other than
        inconclusive (Bonferroni over its points)."""
        return fewest_samples(self.alpha / max(1, len(self.changes)))

    def geomeans(self) -> dict[str, float]:
        """Geometric mean of the ratios per variant (op-qualified)."""
        groups: dict[str, list[float]] = {}
        for c in self.changes:
            groups.setdefault(f"{c.new.op} {c.new.variant}", []).append(c.ratio)
        return {k: math.exp(statistics.fmean(math.log(r) for r in v)) for k, v in groups.items()}

    @property
    def broken(self) -> list[tuple[Point, Point]]:
        """Points that passed in the base run and did not in the new one (failed, raised, crashed, timed out)."""
        return [(b, n) for b, n in self.not_measured if b.status == Status.OK and n.status.failed]

    def exit_code(self, fail_on_inconclusive: bool = False) -> int:
        if self.count(Verdict.SLOWER) or self.broken:
            return Exit.FAILED
        if fail_on_inconclusive and self.count(Verdict.INCONCLUSIVE):
            return Exit.INCONCLUSIVE
        return Exit.OK

    @property
    def mode_flips(self) -> list[Change]:
        return [c for c in self.changes if c.mode_flip]

    @property
    def outcome(self) -> str:
        slower, inconclusive = self.count(Verdict.SLOWER), self.count(Verdict.INCONCLUSIVE)
        flips = f" ({len(self.mode_flips)} of them with two modes)" if self.mode_flips else ""
        if self.broken:
            return (f"regression: {len(self.broken)} point(s) that passed now fail"
                    + (f", {slower} slower by more than {self.threshold:.0%}" if slower else ""))
        if slower:
            beyond = "their duration class's threshold" if self.by_duration else f"{self.threshold:.0%}"
            return f"regression: {slower} point(s) slower by more than {beyond}"
        if inconclusive:
            return f"no significant regression; {inconclusive} point(s) inconclusive{flips}"
        return "no significant regression"


def verdict(low: float, high: float, threshold: float) -> Verdict:
    up, down = 1 + threshold, 1 / (1 + threshold)
    if low > up:
        return Verdict.SLOWER
    if high < down:
        return Verdict.FASTER
    if low >= down and high <= up:
        return Verdict.SAME
    return Verdict.INCONCLUSIVE


def _centres(p: Point) -> tuple[float, ...]:
    m = p.modes
    return (m.fast_ms, m.slow_ms) if m is not None else (p.median_ms,)


def shares_a_mode(base: Point, new: Point, threshold: float) -> bool:
    """Whether a point with two modes in either run shares one with the other run: a centre of each (a mode's median,
    or the point's median where it has one mode) within the threshold of each other. False where neither has two."""
    if base.modes is None and new.modes is None:
        return False
    bound = math.log(1 + threshold)
    return any(abs(math.log(b / n)) <= bound for b in _centres(base) for n in _centres(new))


def env_differences(base: Run, new: Run) -> list[tuple[str, object, object]]:
    diffs = []
    if base.backend != new.backend:
        diffs.append(("backend", base.backend, new.backend))
    for name, (section, key) in ENV_FIELDS.items():
        a = base.environment.get(section, {}).get(key)
        b = new.environment.get(section, {}).get(key)
        if a != b:
            diffs.append((name, a, b))
    return diffs


def source_changes(base: Run, new: Run) -> list[SourceChange]:
    """Variants in both runs whose recorded source hash differs (runs without records compare as unchanged)."""
    before = {(v.get("op"), v.get("name")): v for v in base.variants}
    out = []
    for v in new.variants:
        old = before.get((v.get("op"), v.get("name")))
        if old and old.get("sha256") and v.get("sha256") and old["sha256"] != v["sha256"]:
            out.append(SourceChange(v["op"], v["name"], old.get("source"), v.get("source"), old["sha256"],
                                    v["sha256"]))
    return out


def compare(base: Run, new: Run, threshold: float = 0.05, alpha: float = 0.05,
            by_duration: dict[Duration, float] | None = None) -> Report:
    """Every point of both runs judged (module docstring); `by_duration`: a threshold per duration class, each at
    least `threshold`."""
    base_points = {p.key(): p for p in base.points}
    new_points = {p.key(): p for p in new.points}
    floors = (floor_ms(base), floor_ms(new))
    launches = tuple((run.settings.get("launch_floors_us") or [None])[0] for run in (base, new))
    report = Report(threshold, alpha, [], env_diffs=env_differences(base, new),
                    source_changes=source_changes(base, new), floors_ms=floors if all(floors) else None,
                    launch_floors_us=launches if all(launches) else None,
                    gpu_neighbours=(neighbours.of(base.settings), neighbours.of(new.settings)),
                    by_duration={d: max(t, threshold) for d, t in (by_duration or {}).items()})
    report.only_base = [p for k, p in base_points.items() if k not in new_points]
    report.only_new = [p for k, p in new_points.items() if k not in base_points]
    pairs = []
    for k, b in base_points.items():
        n = new_points.get(k)
        if n is None:
            continue
        if b.status == n.status == Status.OK and b.samples_ms and n.samples_ms:
            pairs.append((b, n))
        else:
            report.not_measured.append((b, n))
    family_alpha = alpha / max(1, len(pairs))  # Bonferroni: every interval at 1 − alpha/m
    for b, n in pairs:
        between = len(b.processes) >= 2 and len(n.processes) >= 2
        t = report.threshold_of(b)
        if list(b.samples_ms) == list(n.samples_ms):  # one measurement on both sides (a run against itself): no
            report.changes.append(Change(b, n, 1.0, 1.0, 1.0, Verdict.SAME, between=between, threshold=t))
            continue
        est, low, high = (hierarchical.ratio_interval(b.process_samples, n.process_samples, family_alpha) if between
                          else ratio_interval(b.samples_ms, n.samples_ms, family_alpha))
        v = verdict(low, high, t)
        flip = v in (Verdict.SLOWER, Verdict.FASTER) and shares_a_mode(b, n, t)
        report.changes.append(Change(b, n, est, low, high, Verdict.INCONCLUSIVE if flip else v, mode_flip=flip,
                                     between=between, threshold=t))
    report.changes.sort(key=lambda c: (ORDER.index(c.verdict), -abs(math.log(c.ratio))))
    return report


def point_label(p: Point) -> str:
    """A point named whole: op, variant, configuration, the problem with everything that tells it apart (its
    stride, precision and layout too)."""
    config = "" if p.config == "-" else f" {p.config}"
    return f"{p.op} {p.variant}{config} {p.problem.full_label}"


def duplicates(run: Run) -> list[Point]:
    """Points a run holds more than once (the same point on the same GPU): a file edited or merged by hand."""
    seen, twice = set(), []
    for p in run.points:
        key = (p.key(), p.device)
        if key in seen:
            twice.append(p)
        seen.add(key)
    return twice


def check_once(run: Run, name: str) -> None:
    """One line naming the first point a run holds twice: a series or a comparison would count it twice."""
    twice = duplicates(run)
    if twice:
        raise GpubenchError(f"{name} holds {len(twice)} point(s) twice, the first {point_label(twice[0])}: a "
                            "results file has each point once")


def check(report: Report, strict_env: bool, base_name: str, new_name: str, runs: tuple[Run, Run] | None = None,
          allow_partial: bool = False, across: bool = False) -> None:
    """The rules a comparison must pass before any verdict is shown: each run holds every point once and is
    complete (or --allow-partial compares the points two partial runs have in common); with --strict-env, the
    same environment; some point in common; and each point timed at one pace, and with the same --graph, in both
    runs (or --across, which shows them side by side without a verdict)."""
    for name, run in zip((base_name, new_name), runs or ()):
        check_once(run, name)
        if run.status != RunStatus.COMPLETE and not allow_partial:
            raise GpubenchError(f"{name} is {run.status} with {len(run.points)} point(s) saved, so points may be "
                                "missing: finish it, or pass --allow-partial to compare the points both runs have")
    if strict_env and report.env_diffs:
        name, a, b = report.env_diffs[0]
        more = f" and {len(report.env_diffs) - 1} more" if len(report.env_diffs) > 1 else ""
        raise GpubenchError(f"--strict-env: the runs' environments differ ({name}: {a} vs {b}{more})")
    if not report.changes and not report.not_measured:
        raise GpubenchError(f"{base_name} and {new_name} have no points in common: nothing to compare")
    mixed = report.pace_changes
    if mixed and not across:
        b, n = mixed[0]
        raise GpubenchError(f"{base_name} timed {len(mixed)} point(s) at another pace than {new_name}, the first "
                            f"{point_label(n)} ({b.pace} against {n.pace}): a sustained time is a hot GPU's and an "
                            "idle one a rested GPU's, so a verdict would call the power limit a change; compare "
                            "runs of one pace (--pace), or pass --across to see them side by side")
    graphs = report.graph_changes
    if graphs and not across:
        b, n = graphs[0]
        shown = lambda p: f"a graph of {p.details.graph}" if p.details.graph else "no graph"  # noqa: E731
        raise GpubenchError(f"{base_name} timed {len(graphs)} point(s) otherwise than {new_name} (--graph), the first "
                            f"{point_label(n)} ({shown(b)} against {shown(n)}): a call in a captured graph runs "
                            "without its launch, so a verdict would call the launch a change; compare runs timed the "
                            "same way, or pass --across to see them side by side")
