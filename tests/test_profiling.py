"""gpubench/usecases/profiling.py: a run's timed points profiled after the sweep (the session's step), refusals met
once for all, the checks before anything runs, and the command line (`gpubench profile`, `--profile`)."""

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.cli import cli
from gpubench.execution import profiled
from gpubench.measure import ncu
from gpubench.results.profile import Gap, Profile
from gpubench.usecases import profiling
from gpubench.usecases.profiling import Profiling
from ncu_fakes import FIXTURES, cpu_run, fake_ncu, options  # noqa: F401 (fake_ncu: a fixture)

# --- a run's points -------------------------------------------------------------------------------------------




def test_known_metrics_keeps_the_names_this_gpu_lists():
    listing = "Device NVIDIA H200 (GH100)\nsm__throughput   Throughput  %  SM throughput\ndram__bytes_read  Counter\n"
    assert profiling.known_metrics(listing, "sm_90") == ("sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                                          "launch__registers_per_thread", "launch__block_size",
                                                          "dram__bytes_read.sum")
    assert profiling.known_metrics("", "sm_90") is None


def test_options_find_ncu_its_version_and_metrics(fake_ncu, tmp_path, monkeypatch):
    query = tmp_path / "query.txt"
    query.write_text("gpu__time_duration  Counter  ns\nlts__t_bytes  Counter  byte\n")
    fake_ncu("not-permitted.txt", QUERY=str(query))
    how = profiling.options("sm_90", 10)
    assert how.tool == "ncu 2025.1.1.0" and how.timeout_s == 120
    assert how.metrics == ("gpu__time_duration.sum", "launch__registers_per_thread", "launch__block_size",
                           "lts__t_bytes.sum")  # the launch's attributes too, which the listing never names


def test_without_ncu_every_point_gets_the_same_gap(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(profiled, "find_ncu", lambda: None)
    how = profiling.options("sm_90", 60)
    assert how.gap == Gap.NO_NCU and "ncu" in how.reason


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


def test_metrics_this_ncu_does_not_list_are_named():
    known = tuple(m.ncu for m in ncu.metrics_for("sm_90") if "gmma" not in m.ncu)
    line = profiling.left_out(options("ncu", metrics=known))
    assert line == "ncu does not list 1 metric(s) of gpubench's set for this GPU, left out: " \
                   "sm__inst_executed_pipe_tensor_op_gmma.sum"
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
    one_line(CliRunner().invoke(cli, ["profile", "gemm", "--backend", "cuda", "--sizes", "64"]), "ncu) not found on PATH")


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
