"""What the profiling tests share: ncu faked on PATH by a script that writes a recorded output (tests/fixtures/ncu/)
to the log ncu is told to write, or prints a refusal; a task of one point; runs whose points carry profiles."""

import os
from dataclasses import replace
from pathlib import Path

import pytest

from gpubench.execution import profiled
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.measure import ncu
from gpubench.measure.timing import TimingPolicy
from gpubench.ops.gemm import GemmShape
from gpubench.results.profile import Gap, Profile
from gpubench.specs.catalog import Catalog, builtin

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
FAKE_NCU = """#!/bin/sh
# a stand-in for ncu: --version and --query-metrics answer; a profile writes $FIXTURE to the --log-file
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.1.1.0 (build 1)"; exit 0;;
  --query-metrics) cat "${QUERY:-/dev/null}"; exit 0;;
esac
log=""
while [ $# -gt 0 ]; do [ "$1" = "--log-file" ] && log="$2"; shift; done
cat "$FIXTURE" > "$log"
[ -n "$SAY" ] && echo "$SAY" >&2
[ -n "$HANG" ] && sleep 30
exit ${CODE:-0}
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """ncu on PATH, printing the fixture named by the test (monkeypatch FIXTURE and the rest)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "ncu"
    script.write_text(FAKE_NCU)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def use(name: str, **env):
        monkeypatch.setenv("FIXTURE", str(FIXTURES / name))
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        return str(script)

    return use


def task() -> ShapeTask:
    variant = Catalog(builtin()).get("gemm", "cpu", "numpy")
    return ShapeTask("gemm", GemmShape(64, 64, 64), 0, (PointTask(0, variant, variant.space.configs[0], TimingPolicy()),))


def options(ncu_path: str, **kw) -> profiled.ProfileOptions:
    return profiled.ProfileOptions(ncu_path, "sm_90", **kw)

def cpu_run(make_run):
    run = make_run()
    work = [ShapeTask("gemm", p.problem, 0, (PointTask(0, replace(task().points[0].variant, name=p.variant),
                                                       replace(task().points[0].config, label=p.config),
                                                       TimingPolicy()),))
            for p in run.points if p.op == "gemm"]
    return run, work


def profiled_run(make_run, fixture="set-nvjet-bf16-h100.txt", **kw):
    run = make_run(**kw)
    made = ncu.profile_from(ncu.parse((FIXTURES / fixture).read_text()), "sm_90", "ncu 2025.1.1.0")
    run.points = [replace(p, details=replace(p.details, profile=made if p.variant == "cublas" else
                                             Profile.missing(Gap.NO_REPLAY, "ncu could not profile it")))
                  if p.op == "gemm" else p for p in run.points]
    return run
