"""One point's one timed call under Nsight Compute: the process ncu starts, and the coordinator's side that starts it.

The coordinator writes the point's task (its shape, seed, variant, configuration and timing policy, as the worker
receives them) to a file and runs `ncu ... python -P -m gpubench.execution.profiled TASK` (one process a point, so
that every launch ncu reports belongs to that point). The process opens the backend, makes the shape's inputs,
prepares the call, runs it once as the point's check does and then its warm-up calls as the timing does, flushes
L2, and brackets exactly one more call with cudaProfilerStart/Stop and an NVTX range named after the point
(backend.profiled_call). ncu, started with --profile-from-start off, profiles the launches inside that bracket and
nothing else: neither the warm-up, nor the flushes, nor a library's plan search. Its details page goes to a log file,
which gpubench/measure/ncu.py reads.

Exit codes of the process: 0 the call was profiled; 3 it could not run (its reason on stderr, one line).
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpubench.execution.tasks import ShapeTask, describe_error
from gpubench.measure import ncu
from gpubench.results.profile import Gap, Profile

CANNOT_RUN = 3
KEEP_LOGS = "GPUBENCH_NCU_LOGS"  # a folder to keep each point's ncu page in (otherwise read and deleted)
PREFIX = "gpubench profile: "  # the line the process writes on stderr when its call cannot run


@dataclass(frozen=True)
class ProfileOptions:
    ncu: str  # the ncu executable's path
    arch: str | None  # the device's architecture ("sm_90"): which of the metric table's rows apply
    timeout_s: float = 300.0
    tool: str | None = None  # ncu's version
    metrics: tuple[str, ...] | None = None  # the ncu metrics this ncu and GPU know (None: the table's, unchecked)


def find_ncu() -> str | None:
    """ncu on PATH, or in CUDA_HOME's or the usual toolkit's bin."""
    found = shutil.which("ncu")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(Path(home) / "bin" / "ncu", os.X_OK):
            return str(Path(home) / "bin" / "ncu")
    return None


def label(task: ShapeTask) -> str:
    p = task.points[0]
    return f"{p.variant.name} {p.config.label} {task.shape.op} {task.shape.full_label}"


# --- the profiled process -----------------------------------------------------------------------------------------


class CannotProfile(Exception):
    """The point's call cannot be profiled here (its message is the reason, as it stands)."""


def profile_once(backend, task: ShapeTask) -> None:
    """The task's one point: the check's call, the warm-up, then one bracketed call (what ncu profiles)."""
    point = task.points[0]
    unfit = point.variant.scope.unfit(task.shape.dims())
    if unfit:
        raise CannotProfile(f"{point.variant.name} {unfit}")
    bracket = getattr(backend, "profiled_call", None)
    if bracket is None:
        raise CannotProfile(f"the {backend.name} backend has no GPU kernels to profile")
    backend.check([point.variant])  # a project's Python function imported here, as the worker does
    inputs = backend.inputs(task.shape, task.seed)
    prepared = backend.prepare(point.variant, point.config, task.shape, inputs)
    try:
        prepared.run()  # the call the point's check makes
        backend.clock.sync()
        for _ in range(max(1, point.policy.warmup)):  # the timing's warm-up
            prepared.run()
            backend.clock.sync()
        if point.policy.flush:
            backend.clock.flush()
        bracket(prepared.run, label(task))
    finally:
        prepared.release()


def main(argv: list[str]) -> int:
    task = pickle.loads(Path(argv[1]).read_bytes())
    backend_name = argv[2]
    from gpubench.backends import open_backend

    try:
        profile_once(open_backend(backend_name), task)
    except Exception as e:  # noqa: BLE001 - whatever stops the call is its profile's reason, one line
        print(PREFIX + (str(e) if isinstance(e, CannotProfile) else describe_error(e)), file=sys.stderr, flush=True)
        return CANNOT_RUN
    return 0


# --- the coordinator's side -----------------------------------------------------------------------------------------


def profile_point(task: ShapeTask, backend: str, options: ProfileOptions) -> Profile:
    """ncu over one point's process: the point's profile, or why it has none (a Profile with a gap)."""
    with tempfile.TemporaryDirectory(prefix="gpubench-profile-") as tmp:
        task_file, log = Path(tmp) / "task.pickle", Path(tmp) / "ncu.log"
        task_file.write_bytes(pickle.dumps(task))
        program = [sys.executable, "-P", "-m", "gpubench.execution.profiled", str(task_file), backend]
        line = ncu.command(options.ncu, options.arch, str(log), program)
        if options.metrics is not None:
            at = line.index("--metrics") + 1
            line[at] = ",".join(options.metrics)
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            done = subprocess.run(line, capture_output=True, text=True, errors="replace", env=env,
                                  timeout=options.timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Profile.missing(Gap.FAILED, f"ncu did not finish within {options.timeout_s:g} s", options.tool)
        except OSError as e:
            return Profile.missing(Gap.NO_NCU, f"ncu could not be started ({e.strerror or e})", options.tool)
        text = log.read_text(errors="replace") if log.exists() else ""
        keep = os.environ.get(KEEP_LOGS)
        if keep:  # ncu's own page of each point, kept (tools/gpu/profile.sh records them as fixtures)
            Path(keep).mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9._+-]+", "-", label(task)).strip("-")[:150]
            (Path(keep) / f"{name}.txt").write_text(text)
        return read_outcome(text, done.stdout + done.stderr, done.returncode, options)


def read_outcome(log: str, output: str, code: int, options: ProfileOptions) -> Profile:
    """The profile from ncu's log, its process's output and exit code."""
    refused = ncu.refusal(log + "\n" + output)
    if refused is not None:
        return Profile.missing(refused.gap, refused.reason, options.tool)
    mine = [line.removeprefix(PREFIX) for line in output.splitlines() if line.startswith(PREFIX)]
    if mine:
        return Profile.missing(Gap.FAILED, f"the call could not run: {mine[-1]}", options.tool)
    launches = ncu.parse(log)
    if code != 0 and not launches:
        last = next((x for x in reversed(output.strip().splitlines()) if x.strip()), "")
        return Profile.missing(Gap.FAILED, f"the profiled process ended with exit code {code}: {last}", options.tool)
    return ncu.profile_from(launches, options.arch, options.tool)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
