"""Profiling a run's points: `gpubench profile gemm|conv|run` and `--profile` on gemm, conv and run.

The points are timed as always; then each timed point (ok, or over its tolerance) is run once more in a process of
its own under Nsight Compute (gpubench/execution/profiled.py), and its profile (gpubench/results/profile.py) goes
into its details, the file saved after each. Where ncu cannot run, the two ways differ:

* `gpubench profile ...` is asked for the profiles: on the CPU backend, or without ncu, it refuses in one line
  (exit 2) before anything is timed;
* `--profile` asks for them besides the timing: the timing runs and is saved whatever happens, each point's
  profile records why it is missing (ncu missing, counters not permitted, a kernel ncu cannot replay), and on the
  CPU backend a note says there is nothing to profile.

Once ncu is missing or the counters are refused, the remaining points get the same reason without another try.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from enum import StrEnum
from typing import Callable

from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError
from gpubench.execution import profiled
from gpubench.execution.profiled import ProfileOptions
from gpubench.execution.tasks import ShapeTask
from gpubench.measure import ncu
from gpubench.results import Point, Run
from gpubench.results.profile import Gap, Profile

CPU_NOTE = "--profile: the CPU backend has no GPU kernels to profile; the points are timed without profiles"
NO_NCU = ("Nsight Compute (ncu) not found on PATH (nor in CUDA_HOME/bin): install it with the CUDA toolkit, or put "
          "ncu on PATH")
MIN_TIMEOUT_S = 120.0  # ncu replays each kernel of a call over many passes: a point takes longer than its timing
FOR_ALL = (Gap.NO_NCU, Gap.NOT_PERMITTED)  # a gap that every later point would meet too


class Profiling(StrEnum):
    OFF = "off"
    ALONG = "along"  # --profile: besides the timing, never at its cost
    ASKED = "asked"  # gpubench profile: the profiles are the point of the command


def check(mode: Profiling, backend: str) -> str | None:
    """Before anything runs: GpubenchError (exit 2) where `gpubench profile` cannot profile here; a note where
    `--profile` will not (None: go ahead)."""
    if mode == Profiling.OFF:
        return None
    if backend == BackendKind.CPU:
        if mode == Profiling.ASKED:
            raise GpubenchError("gpubench profile needs the cuda backend: the CPU backend has no GPU kernels for "
                                "Nsight Compute to profile")
        return CPU_NOTE
    if mode == Profiling.ASKED and profiled.find_ncu() is None:
        raise GpubenchError(f"gpubench profile: {NO_NCU}")
    return None


def _ask(line: list[str]) -> str:
    try:
        done = subprocess.run(line, capture_output=True, text=True, errors="replace", timeout=60,
                              stdin=subprocess.DEVNULL)
        return done.stdout + done.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


def known_metrics(query: str, arch: str | None) -> tuple[str, ...] | None:
    """The table's ncu metrics that `ncu --query-metrics` lists for this GPU (by their base name, the part before
    the first dot), with the launch's attributes (registers, block size), which it never lists but always gives; or
    None where the listing says nothing (then every metric is asked for as it is)."""
    names = {line.split()[0] for line in query.splitlines() if line.strip() and "__" in line.split()[0]}
    if not names:
        return None
    return tuple(m.ncu for m in ncu.metrics_for(arch) if m.ncu.split(".")[0] in names or ncu.is_launch_attribute(m.ncu))


def options(arch: str | None, timeout_s: float) -> ProfileOptions | Profile:
    """How to run ncu on this machine, or the gap every point will have (ncu missing)."""
    found = profiled.find_ncu()
    if found is None:
        return Profile.missing(Gap.NO_NCU, NO_NCU)
    tool = ncu.version(_ask([found, "--version"]))
    known = known_metrics(_ask([found, "--query-metrics"]), arch)
    return ProfileOptions(found, arch, max(timeout_s, MIN_TIMEOUT_S), tool, known)


def profile_run(run: Run, work: list[ShapeTask], backend: str, how: ProfileOptions | Profile,
                save: Callable[[], None], advance: Callable[[Point], None] = lambda p: None,
                profile_point: Callable | None = None) -> list[Point]:
    """Each timed point of the run profiled (its details' profile set, the run saved after each); returns the
    points profiled, as they now are in the run. `profile_point`: profiled.profile_point unless given."""
    profile_point = profile_point or profiled.profile_point
    tasks = {(t.shape, p.variant.name, p.config.label): replace(t, points=(p,)) for t in work for p in t.points}
    shared = how if isinstance(how, Profile) else None
    done = []
    for i, point in enumerate(run.points):
        task = tasks.get((point.problem, point.variant, point.config))
        if not point.status.timed or task is None:
            continue
        profile = shared or profile_point(task, backend, how)
        if not profile.taken and profile.gap in FOR_ALL:
            shared = profile
        run.points[i] = replace(point, details=replace(point.details, profile=profile))
        save()
        done.append(run.points[i])
        advance(run.points[i])
    return done


def left_out(how: ProfileOptions | Profile) -> str | None:
    """One line naming the set's metrics this ncu does not list for the GPU (left out of every profile), or None."""
    if isinstance(how, Profile) or how.metrics is None:
        return None
    missing = [m.ncu for m in ncu.metrics_for(how.arch) if m.ncu not in how.metrics]
    return f"ncu does not list {len(missing)} metric(s) of gpubench's set for this GPU, left out: " \
           f"{', '.join(missing)}" if missing else None


def refused(run: Run) -> bool:
    """Whether this machine refused every profile (ncu missing, counters not permitted): `gpubench profile`, asked
    for nothing else, then exits 2 (its points timed and saved all the same)."""
    profiles = [p.details.profile for p in run.points if p.status.timed and p.details.profile is not None]
    return bool(profiles) and all(not pr.taken and pr.gap in FOR_ALL for pr in profiles)


def summary(points: list[Point]) -> str | None:
    """One line where profiles are missing: how many and the first reason (None where every point has one)."""
    missing = [p.details.profile for p in points if p.details.profile is not None and not p.details.profile.taken]
    if not missing:
        return None
    return f"{len(missing)} of {len(points)} point(s) not profiled: {missing[0].reason}"
