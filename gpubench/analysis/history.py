"""The history of every point across saved runs, and the commits where its time stepped (`gpubench history`).

A series is one point (op, variant, configuration, problem, TF32 or not) on one GPU model and driver version:
runs on other GPUs or drivers are other series, never mixed into one. Its values are the point's median
time in each run, ordered by the time of the commit the run records (from git, where the runs' commits are
in the repository at hand; the run's own start time otherwise).

Where the time steps is found by change-point detection from `ruptures` (PELT on the log-times, with a
penalty scaled by the series' own noise, estimated robustly from its run-to-run differences). Each change
found is then tested: the runs before and after it (up to the neighbouring changes) are compared with the
Mann–Whitney test (scipy) and the shift estimated with the Hodges–Lehmann interval that `compare` uses
(stats.ratio_interval); a change whose p-value is not under alpha is dropped. A history gates CI: it fails
when the latest change of any series is a slowdown larger than the threshold.
"""

from __future__ import annotations

import math
import re
import statistics
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from gpubench.core.errors import GpubenchError
from gpubench.results import Run, Status
from gpubench.measure.stats import ratio_interval

PENALTY = 6.0  # × the noise variance × log(n): set so that unchanged noisy series show a change ≤ 5% of the time
MIN_SEGMENT = 2  # runs on each side of a change
MIN_RUNS = 4


@dataclass(frozen=True)
class Entry:
    run: str  # the run's file
    commit: str | None
    when: datetime  # the commit's time (or the run's, where git does not know the commit)
    median_ms: float


@dataclass(frozen=True)
class Change:
    at: int  # index of the first entry after the change
    ratio: float  # after / before, median time (> 1: slower)
    low: float
    high: float
    p_value: float
    before_commit: str | None  # the last run before the change ...
    after_commit: str | None  # ... and the first after it: the commit range that holds the cause

    @property
    def confidence(self) -> float:
        return 1 - self.p_value

    @property
    def slower(self) -> bool:
        return self.ratio > 1

    @property
    def commits(self) -> str:
        return f"{(self.before_commit or '?')[:9]}..{(self.after_commit or '?')[:9]}"


@dataclass
class Series:
    gpu: str
    driver: str
    label: str  # op, variant, configuration, problem
    entries: list[Entry] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def latest(self) -> Change | None:
        return self.changes[-1] if self.changes else None

    def regressed(self, threshold: float) -> bool:
        """Whether the latest change is a slowdown beyond the threshold: what fails a CI gate."""
        c = self.latest
        return bool(c and c.ratio > 1 + threshold)


COMMIT = re.compile(r"[0-9a-f]{4,64}\Z")  # a commit git can date (a +dirty checkout is not one)


def commit_times(commits: set[str], repo: Path | None = None) -> dict[str, datetime]:
    """The committer time of each commit git knows here (none where git or the commit is missing)."""
    times = {}
    for commit in commits:
        if not COMMIT.match(commit):  # a file's text, never handed to git as an option
            continue
        try:
            out = subprocess.run(["git", "show", "-s", "--format=%cI", commit], capture_output=True, text=True,
                                 cwd=repo, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return times
        if out.returncode == 0 and out.stdout.strip():
            times[commit] = datetime.fromisoformat(out.stdout.strip())
    return times


def _commit(run: Run) -> str | None:
    commit = run.environment.get("software", {}).get("git_commit")
    return commit if isinstance(commit, str) else None


def _when(run: Run, times: dict[str, datetime]) -> datetime:
    """When the run's code was committed, else when the run was made (UTC where the file gave no zone)."""
    when = times.get(_commit(run) or "")
    if when is None:
        if not run.created:
            raise GpubenchError(f"a run on {run.device} records neither a commit git knows nor when it was made: "
                                "history cannot place it")
        when = datetime.fromisoformat(run.created)  # results/schema.py checked that it parses
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def series_of(runs: list[tuple[str, Run]], times: dict[str, datetime] | None = None) -> list[Series]:
    """Every point's series across the runs, ordered by commit time, one per GPU model and driver."""
    times = times if times is not None else commit_times({c for _, r in runs if (c := _commit(r))})
    ordered = sorted(runs, key=lambda nr: _when(nr[1], times))
    found: dict[tuple, Series] = {}
    for name, run in ordered:
        gpu, driver = run.device, str(run.environment.get("device", {}).get("driver", "unknown driver"))
        for p in run.points:
            if p.status != Status.OK:
                continue
            key = (gpu, driver, *p.key())
            label = f"{p.op} {p.variant} {p.config} {p.problem.full_label}"
            s = found.setdefault(key, Series(gpu, driver, label))
            s.entries.append(Entry(name, _commit(run), _when(run, times), p.median_ms))
    return list(found.values())


def _noise(y: np.ndarray) -> float:
    """The run-to-run spread of log-times, from successive differences (a step moves only one of them)."""
    d = np.abs(np.diff(y))
    return max(1.4826 * float(np.median(d)) / math.sqrt(2), 1e-4) if len(d) else 1e-4


SCREEN_Z = 3.0  # best single split, in standard errors, under which a series is not searched (see _may_change)


def _may_change(y: np.ndarray, noise: float) -> bool:
    """Whether any split of the series moves its mean by SCREEN_Z standard errors or more. PELT's penalty asks
    about 4.5 of one change (PENALTY · log 30 ≈ 20 noise variances of cost), so a series under 3 gives it nothing
    to find: screening it out keeps a history of tens of thousands of points fast (one split scan each, not a
    search)."""
    n = len(y)
    k = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    if not len(k):
        return False
    c = np.cumsum(y)
    left, right = c[k - 1] / k, (c[-1] - c[k - 1]) / (n - k)
    z = np.abs(left - right) / (noise * np.sqrt(1 / k + 1 / (n - k)))
    return bool(z.max() >= SCREEN_Z)


def detect(series: Series, alpha: float = 0.05) -> list[Change]:
    """The changes of one series: ruptures' change points, each kept where the runs on either side differ."""
    try:
        import ruptures
        from scipy.stats import mannwhitneyu
    except ImportError:
        raise GpubenchError("history needs ruptures: pip install 'gpubench[history]'") from None
    if len(series.entries) < MIN_RUNS:
        return []
    y = np.log([e.median_ms for e in series.entries])
    noise = _noise(y)
    if not _may_change(y, noise):
        return []
    penalty = PENALTY * noise ** 2 * math.log(len(y))
    cuts = ruptures.Pelt(model="l2", min_size=MIN_SEGMENT, jump=1).fit(y.reshape(-1, 1)).predict(pen=penalty)
    bounds = [0, *cuts]  # cuts ends with len(y)
    changes = []
    for i in range(1, len(bounds) - 1):
        before = [e.median_ms for e in series.entries[bounds[i - 1]:bounds[i]]]
        after = [e.median_ms for e in series.entries[bounds[i]:bounds[i + 1]]]
        p = float(mannwhitneyu(before, after, alternative="two-sided").pvalue)
        if p >= alpha:
            continue
        ratio, low, high = ratio_interval(before, after, alpha)
        at = bounds[i]
        changes.append(Change(at, ratio, low, high, p, series.entries[at - 1].commit, series.entries[at].commit))
    return changes


def history(runs: list[tuple[str, Run]], alpha: float = 0.05,
            times: dict[str, datetime] | None = None) -> list[Series]:
    """Every series of these runs with its changes found."""
    if not runs:
        raise GpubenchError("history needs saved runs: give results files or a directory that holds them")
    out = series_of(runs, times)
    for s in out:
        s.changes = detect(s, alpha)
    return out


def typical_noise(series: list[Series]) -> float | None:
    """The median run-to-run spread of the series' log-times (for the report's caption)."""
    noise = [_noise(np.log([e.median_ms for e in s.entries])) for s in series if len(s.entries) >= MIN_RUNS]
    return statistics.median(noise) if noise else None
