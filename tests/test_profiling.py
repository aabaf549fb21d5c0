"""Profiling a run's points (gpubench/usecases/profiling.py, gpubench/execution/profiled.py): ncu faked on PATH by
a script that writes a recorded output (tests/fixtures/ncu/) to the log ncu is told to write, or prints a refusal;
the profile stored in the point's details (schema 5), its views, and every refusal, without a GPU."""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.cli import cli
from gpubench.execution import profiled
from gpubench.execution.tasks import PointTask, ShapeTask
from gpubench.measure import ncu, roofline
from gpubench.measure.timing import TimingPolicy
from gpubench.ops.problems import GemmShape
from gpubench.results import Details
from gpubench.results.profile import Gap, Profile
from gpubench.specs.catalog import Catalog, builtin
from gpubench.usecases import profiling
from gpubench.usecases.profiling import Profiling
from gpubench.views import profile as view
from gpubench.views.run import run_tables
from gpubench.views.tables import to_markdown

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
    return ShapeTask("gemm", GemmShape(64, 64, 64), 0, (PointTask(0, variant, variant.configs[0], TimingPolicy()),))


def options(ncu_path: str, **kw) -> profiled.ProfileOptions:
    return profiled.ProfileOptions(ncu_path, "sm_90", **kw)


# --- the coordinator's side of one point --------------------------------------------------------------------------


def test_a_point_profiled_through_ncu_reads_the_log_it_wrote(fake_ncu):
    profile = profiled.profile_point(task(), "cuda", options(fake_ncu("set-nvjet-bf16-h100.txt"), tool="ncu x"))
    assert profile.taken and profile.kernel == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert profile.metrics["sm_pct"] == 90.03 and profile.tool == "ncu x"


@pytest.mark.parametrize("name,gap", [("not-permitted.txt", Gap.NOT_PERMITTED),
                                      ("replay-failed-h100.txt", Gap.NO_REPLAY), ("unknown-error.txt", Gap.FAILED)])
def test_refusals_become_the_points_gap(fake_ncu, name, gap):
    profile = profiled.profile_point(task(), "cuda", options(fake_ncu(name, CODE="1")))
    assert profile.gap == gap and profile.reason


def test_a_call_that_cannot_run_says_why(fake_ncu):
    path = fake_ncu("unknown-error.txt", FIXTURE=os.devnull, CODE="3",
                    SAY=profiled.PREFIX + "the cpu backend has no GPU kernels to profile")
    profile = profiled.profile_point(task(), "cuda", options(path))
    assert profile.gap == Gap.FAILED and profile.reason == "the call could not run: the cpu backend has no GPU " \
                                                           "kernels to profile"


def test_ncu_that_does_not_finish_is_a_gap(fake_ncu):
    profile = profiled.profile_point(task(), "cuda", options(fake_ncu("not-permitted.txt", HANG="1"), timeout_s=1))
    assert profile.gap == Gap.FAILED and "did not finish within 1 s" in profile.reason


def test_the_profiled_process_refuses_the_cpu_backend_in_one_line(tmp_path):
    """The entry ncu starts, run for real on the CPU backend: exit 3 and one line, no traceback."""
    import pickle

    (tmp_path / "task.pickle").write_bytes(pickle.dumps(task()))
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-P", "-m", "gpubench.execution.profiled", str(tmp_path / "task.pickle"),
                           "cpu"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == profiled.CANNOT_RUN
    assert done.stderr.strip() == profiled.PREFIX + "the cpu backend has no GPU kernels to profile"


def test_known_metrics_keeps_the_names_this_gpu_lists():
    listing = "Device NVIDIA H200 (GH100)\nsm__throughput   Throughput  %  SM throughput\ndram__bytes_read  Counter\n"
    assert profiling.known_metrics(listing, "sm_90") == ("sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                                          "dram__bytes_read.sum")
    assert profiling.known_metrics("", "sm_90") is None


def test_options_find_ncu_its_version_and_metrics(fake_ncu, tmp_path, monkeypatch):
    query = tmp_path / "query.txt"
    query.write_text("gpu__time_duration  Counter  ns\nlts__t_bytes  Counter  byte\n")
    fake_ncu("not-permitted.txt", QUERY=str(query))
    how = profiling.options("sm_90", 10)
    assert how.tool == "ncu 2025.1.1.0" and how.timeout_s == 120
    assert how.metrics == ("gpu__time_duration.sum", "lts__t_bytes.sum")


def test_without_ncu_every_point_gets_the_same_gap(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(profiled, "find_ncu", lambda: None)
    how = profiling.options("sm_90", 60)
    assert how.gap == Gap.NO_NCU and "ncu" in how.reason


# --- a run's points -------------------------------------------------------------------------------------------


def cpu_run(make_run):
    run = make_run()
    work = [ShapeTask("gemm", p.problem, 0, (PointTask(0, replace(task().points[0].variant, name=p.variant),
                                                       replace(task().points[0].config, label=p.config),
                                                       TimingPolicy()),))
            for p in run.points if p.op == "gemm"]
    return run, work


def test_profile_run_stores_each_profile_and_saves_after_each(make_run):
    run, work = cpu_run(make_run)
    made = ncu.profile_from(ncu.parse((FIXTURES / "set-nvjet-bf16-h100.txt").read_text()), "sm_90")
    saves, calls = [], []
    done = profiling.profile_run(run, work, "cuda", options("ncu"), lambda: saves.append(1),
                                 profile_point=lambda t, b, o: calls.append(t) or made)
    assert len(done) == len(work) == len(saves) == len(calls) == 4
    assert all(p.details.profile == made for p in run.points if p.op == "gemm")
    assert all(p.details.profile is None for p in run.points if p.op == "conv")  # no task: not profiled
    assert profiling.summary(done) is None


def test_a_refusal_for_all_is_met_once(make_run):
    run, work = cpu_run(make_run)
    refused = Profile.missing(Gap.NOT_PERMITTED, "counters refused")
    calls = []
    done = profiling.profile_run(run, work, "cuda", options("ncu"), lambda: None,
                                 profile_point=lambda t, b, o: calls.append(t) or refused)
    assert len(calls) == 1 and all(p.details.profile == refused for p in done)
    assert profiling.summary(done) == "4 of 4 point(s) not profiled: counters refused"


def test_check_refuses_gpubench_profile_and_notes_profile():
    with pytest.raises(Exception, match="needs the cuda backend"):
        profiling.check(Profiling.ASKED, "cpu")
    assert profiling.check(Profiling.ALONG, "cpu") == profiling.CPU_NOTE
    assert profiling.check(Profiling.OFF, "cpu") is None


# --- the results file -----------------------------------------------------------------------------------------


def profiled_run(make_run, fixture="set-nvjet-bf16-h100.txt", **kw):
    run = make_run(**kw)
    made = ncu.profile_from(ncu.parse((FIXTURES / fixture).read_text()), "sm_90", "ncu 2025.1.1.0")
    run.points = [replace(p, details=replace(p.details, profile=made if p.variant == "cublas" else
                                             Profile.missing(Gap.NO_REPLAY, "ncu could not profile it")))
                  if p.op == "gemm" else p for p in run.points]
    return run


def test_a_profile_survives_a_save_and_load(make_run, tmp_path):
    run = profiled_run(make_run)
    again = results.load(results.save(run, tmp_path / "p.json"))
    assert again == run and again.schema_version == 5
    assert again.points[2].details.profile.stalls == (("barrier", 6.0),)


def test_a_corrupt_profile_is_one_line(make_run, tmp_path):
    import json

    path = results.save(profiled_run(make_run), tmp_path / "p.json")
    data = json.loads(path.read_text())
    data["points"][2]["details"]["profile"]["metrics"]["sm_pct"] = "high"
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match=r"corrupt: point 2 .*profile metrics must map metric names to finite numbers"):
        results.load(path)


def test_a_version_4_file_loads_without_profiles(make_run, tmp_path):
    import json

    path = results.save(make_run(), tmp_path / "old.json")
    data = json.loads(path.read_text())
    data["schema_version"] = 4
    path.write_text(json.dumps(data))
    run = results.load(path)
    assert run.schema_version == 5 and all(p.details.profile is None for p in run.points)


# --- the views ------------------------------------------------------------------------------------------------


def test_the_limits_table_is_shown_only_for_profiled_runs(make_run):
    assert view.limits_table(make_run()) is None
    tables = run_tables(profiled_run(make_run))
    text = to_markdown(tables[-1])
    assert tables[-1].title.startswith("what limits each point")
    assert "compute-bound: SM at 90% of peak, stalled on barrier" in text
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in text
    assert "not profiled: ncu could not profile it" in text and "ncu 2025.1.1.0" in text


def test_show_prints_what_limits_each_point(make_run, run_file):
    r = CliRunner().invoke(cli, ["show", run_file(profiled_run(make_run)), "--format", "markdown"])
    assert r.exit_code == 0 and "compute-bound: SM at 90% of peak" in r.output


def test_the_report_shows_the_limits(make_run, tmp_path, run_file):
    out = tmp_path / "r.html"
    r = CliRunner().invoke(cli, ["report", run_file(profiled_run(make_run)), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "what limits each point" in out.read_text()


def test_compare_shows_the_counters_of_the_slower_points(make_run, run_file):
    base = profiled_run(make_run, fixture="set-nvjet-bf16-h100.txt")
    new = profiled_run(make_run, fixture="set-sliding-stream-h200.txt", scale={("cublas", 1024): 1.5})
    r = CliRunner().invoke(cli, ["compare", run_file(base, "b.json"), run_file(new, "n.json"), "--format", "markdown"])
    assert r.exit_code == 1, r.output
    assert "counters of the slower points" in r.output
    assert "compute-bound: SM at 90% of peak, stalled on barrier" in r.output
    assert "L2-bound: L2 at 75% of peak" in r.output
    assert "| SM % | 90 | 52 | -42.7% |" in r.output and "|  | occ % |  | 24 |  |" in r.output


def test_the_roofline_uses_measured_bytes_where_profiled(make_run):
    run = profiled_run(make_run, fixture="set-tc-wgmma-14-h100.txt", clocks=1980)
    p = next(p for p in run.points if p.variant == "cublas")
    moved = p.details.profile.dram_bytes
    assert roofline.measured_bytes(p) == moved and roofline.intensity(p) == p.flops / moved
    assert roofline.bound(p, run)[0] == min(p.flops / moved * 3000, 60000)  # fp32: the FFMA peak
    plain = next(p for p in run.points if p.op == "conv")
    assert roofline.intensity(plain) == plain.flops / plain.min_bytes
    assert "measured by Nsight Compute" in roofline.intensity_label(run.points)


# --- the command line -----------------------------------------------------------------------------------------


def one_line(r, *words):
    assert r.exit_code == 2, r.output
    assert r.output.startswith("gpubench: error: ") and r.output.count("\n") == 1, r.output
    assert all(w in r.output for w in words), r.output


def test_gpubench_profile_refuses_the_cpu_backend():
    for command in (["gemm"], ["conv"], ["run", "ci"]):
        one_line(CliRunner().invoke(cli, ["profile", *command, "--backend", "cpu"]), "needs the cuda backend")


def test_gpubench_profile_refuses_without_ncu(monkeypatch, tmp_path):
    monkeypatch.setattr(profiled, "find_ncu", lambda: None)
    one_line(CliRunner().invoke(cli, ["profile", "gemm", "--sizes", "64"]), "ncu) not found on PATH")


def test_profile_on_the_cpu_backend_times_and_notes(tmp_path):
    out = tmp_path / "g.json"
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "32", "--reps", "5", "--profile",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert profiling.CPU_NOTE in r.output
    assert all(p.details.profile is None for p in results.load(out).points)


def test_profile_has_the_commands_of_the_sweeps():
    r = CliRunner().invoke(cli, ["profile", "--help"])
    assert r.exit_code == 0 and all(c in r.output for c in ("gemm", "conv", "run"))
    r = CliRunner().invoke(cli, ["profile", "gemm", "--help"])
    assert "--sizes" in r.output and "--variants" in r.output and "--profile" not in r.output


def test_ncu_pages_are_kept_where_asked(fake_ncu, tmp_path, monkeypatch):
    monkeypatch.setenv(profiled.KEEP_LOGS, str(tmp_path / "logs"))
    profiled.profile_point(task(), "cuda", options(fake_ncu("set-nvjet-bf16-h100.txt")))
    kept = list((tmp_path / "logs").iterdir())
    assert len(kept) == 1 and kept[0].read_text() == (FIXTURES / "set-nvjet-bf16-h100.txt").read_text()
    assert "/" not in kept[0].name.replace(str(tmp_path), "")


def test_metrics_this_ncu_does_not_list_are_named():
    known = tuple(m.ncu for m in ncu.metrics_for("sm_90") if "gmma" not in m.ncu)
    line = profiling.left_out(options("ncu", metrics=known))
    assert line == "ncu does not list 1 metric(s) of gpubench's set for this GPU, left out: " \
                   "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
    assert profiling.left_out(options("ncu")) is None


def test_a_session_profiles_its_timed_points_after_the_sweep(make_run, fake_ncu, tmp_path, monkeypatch):
    """The session's step after the sweep (session._profiled): options found (the fake ncu), each timed point
    profiled through it, the file saved with the profiles, and the notes for the view."""
    from contextlib import contextmanager

    from gpubench.usecases import session

    fake_ncu("not-permitted.txt")
    run, work = cpu_run(make_run)
    path = results.save(run, tmp_path / "s.json")
    seen = []

    class Display:
        @contextmanager
        def progress(self, label, total):
            seen.append((label, total))
            yield lambda p: None

    request = session.RunRequest([], "t", backend="cuda", profile=Profiling.ALONG)
    notes = session._profiled(request, run, work, {"arch": "sm_90"}, results.RunWriter(run, path), Display())
    assert seen == [("profiling on NVIDIA H200", 6)]
    assert notes == ["4 of 4 point(s) not profiled: ncu may not read this GPU's performance counters "
                     "(ERR_NVGPUCTRPERM): run as an administrator, or load the driver with "
                     "NVreg_RestrictProfilingToAdminUsers=0"]
    saved = results.load(path)
    assert [p.details.profile.gap for p in saved.points if p.op == "gemm"] == [Gap.NOT_PERMITTED] * 4
    assert session._profiled(replace(request, profile=Profiling.OFF), run, work, {}, None, Display()) == []


def test_gpubench_profile_exits_2_where_every_profile_was_refused(make_run):
    from gpubench.usecases import commands, session

    run, work = cpu_run(make_run)
    refused = Profile.missing(Gap.NOT_PERMITTED, "counters refused")
    profiling.profile_run(run, work, "cuda", options("ncu"), lambda: None, profile_point=lambda t, b, o: refused)
    outcome = session.RunOutcome(run, Path("x.json"), results.RunStatus.COMPLETE, len(run.points))
    assert commands._noted(outcome, None, Profiling.ASKED).exit_code == 2
    assert commands._noted(outcome, None, Profiling.ALONG).exit_code == 0  # --profile: the timing is what counts
    run.points[0] = replace(run.points[0], details=replace(run.points[0].details, profile=Profile(
        kernel="k", launches=1, kernels=("k",), metrics={"sm_pct": 1.0})))
    assert commands._noted(outcome, None, Profiling.ASKED).exit_code == 0  # one profile taken: not refused
