"""`gpubench compare`: verdicts, exit codes and output, on synthetic runs with known changes."""

import json
import os
import random
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.analysis import compare
from gpubench.cli import cli
from gpubench.results import Point, Status

SNAPSHOT = Path(__file__).parent / "snapshots" / "compare.md"


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_a_file_compared_with_itself_is_all_same(make_run, run_file):
    path = run_file(make_run())
    r = invoke("compare", path, path)
    assert r.exit_code == 0, r.output
    report = compare.compare(results.load(path), results.load(path))
    assert {c.verdict for c in report.changes} == {"same"}
    assert all(c.ratio == pytest.approx(1.0) for c in report.changes)


def test_a_file_of_few_samples_a_point_compared_with_itself_is_all_same(make_run, run_file):
    """A CPU `quick` run keeps 5 samples a point (its budget is spent by then): against itself (11 points) it gave
    "0 same, 11 inconclusive: too few samples", though both sides are one measurement. Here 4 samples for 6 points."""
    path = run_file(make_run(samples=4))
    r = invoke("compare", path, path)
    assert r.exit_code == 0 and "0 inconclusive" in r.output and "too few samples" not in r.output, r.output
    report = compare.compare(results.load(path), results.load(path))
    assert {c.verdict for c in report.changes} == {"same"} and {(c.low, c.high) for c in report.changes} == {(1, 1)}


def test_too_few_samples_to_decide_says_how_many_are_needed_and_how_to_get_them(make_run, run_file):
    base, new = run_file(make_run(samples=4, seed=1), "base.json"), run_file(make_run(samples=4, seed=2), "new.json")
    report = compare.compare(results.load(base), results.load(new))
    n = len(report.changes)
    assert n == 6 and report.samples_needed == 5 and len(report.too_few) == n  # P(U=0): 1/C(8,4) > 0.05/6/2 > 1/C(10,5)
    r = invoke("compare", base, new)
    text = " ".join(r.output.split())
    assert r.exit_code == 0 and f"{n} points had too few samples to decide: among {n} points a verdict needs at " \
                                f"least 5 a side, these have as few as 4" in text, r.output
    assert "rerun both with --decide 0.05: each point then samples on until a verdict at 5% is in reach" in text
    enough = run_file(make_run(samples=40, seed=3), "enough.json")
    assert "too few samples" not in invoke("compare", enough,
                                           run_file(make_run(samples=40, seed=4), "e2.json")).output


def test_one_point_twice_as_slow_fails_and_is_named(make_run, run_file):
    base = run_file(make_run(seed=1), "base.json")
    new = run_file(make_run(seed=2, scale={("tiled", 2048): 2.0}), "new.json")
    r = invoke("compare", base, new)
    assert r.exit_code == 1, r.output
    report = compare.compare(results.load(base), results.load(new))
    slower = [c for c in report.changes if c.verdict == "slower"]
    assert [c.label for c in slower] == ["gemm tiled 128x128x8/8x8 2048"]
    assert slower[0].ratio == pytest.approx(2.0, rel=0.02)
    assert "gemm tiled 128x128x8/8x8 2048" in r.output


def test_every_point_twice_as_fast_passes(make_run, run_file):
    base = run_file(make_run(seed=1), "base.json")
    everything = {("tiled", 1024): 0.5, ("tiled", 2048): 0.5, ("cublas", 1024): 0.5, ("cublas", 2048): 0.5,
                  ("sliding", 4096): 0.5, ("cudnn", 4096): 0.5}
    new = run_file(make_run(seed=2, scale=everything), "new.json")
    r = invoke("compare", base, new, "--format", "json")
    assert r.exit_code == 0
    data = json.loads(r.output)
    assert data["counts"] == {"slower": 0, "faster": 6, "same": 0, "inconclusive": 0}


def test_noise_level_jitter_passes(make_run, run_file):
    base_run = make_run(seed=1, noise=0.01)
    jittered = make_run(seed=1, noise=0.01)
    rng = random.Random(7)
    # every sample moved by up to ±1%, medians by well under the 5% threshold
    jittered.points = [replace(p, samples_ms=[x * (1 + rng.uniform(-0.01, 0.01)) for x in p.samples_ms])
                       for p in jittered.points]
    r = invoke("compare", run_file(base_run, "a.json"), run_file(jittered, "b.json"), "--format", "json")
    assert r.exit_code == 0
    assert json.loads(r.output)["counts"]["slower"] == 0


def test_a_small_real_slowdown_below_threshold_is_not_a_regression(make_run, run_file):
    base = run_file(make_run(seed=1), "base.json")
    new = run_file(make_run(seed=2, scale={("tiled", 2048): 1.02}), "new.json")
    assert invoke("compare", base, new).exit_code == 0


def test_too_few_samples_are_inconclusive_and_fail_only_on_request(make_run, run_file):
    base = run_file(make_run(seed=1, samples=4, noise=0.05), "base.json")
    new = run_file(make_run(seed=2, samples=4, noise=0.05, scale={("tiled", 2048): 1.3}), "new.json")
    assert invoke("compare", base, new).exit_code == 0
    r = invoke("compare", base, new, "--fail-on-inconclusive")
    assert r.exit_code == 3
    assert "inconclusive" in r.output


def test_different_gpus_warn_and_strict_env_refuses(make_run, run_file):
    base = run_file(make_run(device="NVIDIA H100 80GB HBM3"), "base.json")
    new = run_file(make_run(device="NVIDIA H200"), "new.json")
    r = invoke("compare", base, new)
    assert r.exit_code == 0
    assert "environment differs: GPU: NVIDIA H100 80GB HBM3 → NVIDIA H200" in r.output
    r = invoke("compare", base, new, "--strict-env")
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "--strict-env" in r.output


@pytest.mark.parametrize("content", ["", "{", '{"schema": "gpubench-run", "schema_version": 7}', '{"a": 1}',
                                     "not json at all"])
def test_unreadable_files_exit_2_in_one_line(make_run, run_file, tmp_path, content):
    good = run_file(make_run())
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    for args in ((good, str(bad)), (str(bad), good)):
        r = invoke("compare", *args)
        assert r.exit_code == 2
        assert r.output.startswith("gpubench: error: ") and r.output.count("\n") == 1


def test_runs_with_nothing_in_common_exit_2(make_run, run_file):
    a = make_run()
    b = make_run()
    b.points = [replace(p, variant=p.variant + "-other") for p in b.points]
    r = invoke("compare", run_file(a, "a.json"), run_file(b, "b.json"))
    assert r.exit_code == 2 and "no points in common" in r.output


def test_unmatched_and_unmeasured_points_are_listed(make_run, run_file):
    a, b = make_run(seed=1), make_run(seed=2)
    b.points.pop()  # cudnn only in base
    b.points[0] = Point(b.points[0].problem, b.points[0].variant, b.points[0].config, Status.SKIPPED)
    r = invoke("compare", run_file(a, "a.json"), run_file(b, "b.json"))
    assert r.exit_code == 0
    assert "only in base: conv cudnn 4096 s1" in r.output  # the whole problem, stride included
    assert "not compared (ok → skipped): gemm tiled" in r.output


def test_bonferroni_widens_intervals_with_more_points():
    rng = random.Random(3)
    base = [1 + rng.gauss(0, 0.02) for _ in range(30)]
    new = [1.03 + rng.gauss(0, 0.02) for _ in range(30)]
    _, lo1, hi1 = compare.ratio_interval(base, new, 0.05)
    _, lo2, hi2 = compare.ratio_interval(base, new, 0.05 / 300)
    assert lo2 < lo1 < 1.03 < hi1 < hi2


def test_verdict_boundaries():
    assert compare.verdict(1.06, 1.2, 0.05) == "slower"
    assert compare.verdict(0.5, 0.9, 0.05) == "faster"
    assert compare.verdict(0.97, 1.04, 0.05) == "same"
    assert compare.verdict(1.01, 1.09, 0.05) == "inconclusive"


def test_markdown_matches_snapshot(make_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results.save(make_run(seed=1), "base.json")
    results.save(make_run(seed=2, scale={("tiled", 2048): 1.25, ("cudnn", 4096): 0.8}), "new.json")
    r = invoke("compare", "base.json", "new.json", "--format", "markdown")
    assert r.exit_code == 1
    if os.environ.get("GPUBENCH_UPDATE_SNAPSHOTS"):  # after an intended change: regenerate, review, commit
        SNAPSHOT.write_text(r.output)
    assert r.output == SNAPSHOT.read_text()


def test_a_kernel_whose_source_changed_is_named(make_run, run_file):
    base, new = make_run(), make_run(seed=1)
    new.variants = [v | {"sha256": "cd" * 32} if v["name"] == "tiled" else v for v in new.variants]
    report = compare.compare(base, new)
    assert [(c.op, c.name) for c in report.source_changes] == [("gemm", "tiled")]
    r = invoke("compare", run_file(base, "a.json"), run_file(new, "b.json"))
    assert r.exit_code == 0
    assert "source changed: gemm tiled (/src/tiled.cu): sha256 abababababab → cdcdcdcdcdcd" in r.output
    assert "(source changed)" in r.output
    md = invoke("compare", run_file(base, "a.json"), run_file(new, "b.json"), "--format", "json")
    assert json.loads(md.output)["source_changes"][0]["name"] == "tiled"


def test_a_slowdown_with_a_clock_drop_says_so(make_run, run_file):
    base = make_run(clocks=1980)
    new = make_run(seed=1, scale={("tiled", 2048): 1.2}, clocks=1980)
    new.points = [replace(p, telemetry={**p.telemetry, "sm_mhz": 1650})
                  if p.variant == "tiled" and p.problem.m == 2048 else p for p in new.points]
    r = invoke("compare", run_file(base, "a.json"), run_file(new, "b.json"))
    assert r.exit_code == 1
    assert "(SM clock 1,980 → 1,650 MHz)" in r.output and "the GPU's clock may explain it" in r.output


def test_across_two_models_gives_ratios_not_verdicts(make_run, run_file):
    a = make_run(device="NVIDIA H100 80GB HBM3")
    b = make_run(device="NVIDIA H200", seed=2, scale={("tiled", 1024): 0.5, ("tiled", 2048): 0.5})
    r = invoke("compare", run_file(a, "a.json"), run_file(b, "b.json"), "--across")
    assert r.exit_code == 0, r.output
    assert "NVIDIA H200 against NVIDIA H100 80GB HBM3" in r.output and "2.00×" in r.output
    assert "environment differs" not in r.output and "regression" not in r.output


def test_a_point_that_passed_and_now_fails_is_a_regression(make_run, run_file):
    base, new = make_run(), make_run(seed=1)
    p = new.points[0]
    new.points[0] = Point(p.problem, p.variant, p.config, Status.ERROR, reason="CUDA error: illegal address")
    r = invoke("compare", run_file(base, "a.json"), run_file(new, "b.json"))
    assert r.exit_code == 1 and "1 point(s) that passed now fail" in r.output and "BROKEN" in r.output


def test_an_incomplete_run_is_refused_unless_partial_comparison_is_asked_for(make_run, run_file, tmp_path):
    from gpubench.usecases import commands
    from gpubench.core.errors import GpubenchError
    from gpubench.results import RunStatus

    base = run_file(make_run(), "base.json")
    cut = make_run(seed=1)
    cut.points, cut.status = cut.points[:3], RunStatus.INTERRUPTED
    new = run_file(cut, "new.json")
    with pytest.raises(GpubenchError, match=r"new.json is interrupted with 3 point\(s\) saved.*--allow-partial"):
        commands.compare_runs(base, new, 0.05, 0.05, False)
    c = commands.compare_runs(base, new, 0.05, 0.05, False, allow_partial=True)
    assert len(c.report.changes) == 3 and len(c.report.only_base) == 3
    from gpubench.views.compare import notes

    lines = notes(c.report)
    assert "3 point(s) of the base are missing from the new run" in lines
    assert any(line.startswith("only in base: conv") and line.endswith(" s1") for line in lines)  # the stride too


def test_a_run_marked_running_that_no_run_writes_is_called_ended_not_to_be_finished(make_run, run_file):
    """A run ended outright (SIGKILL, SIGQUIT, the OOM killer) leaves its file marked running, with no claim held
    on it: "finish it" is no advice for it. One still being written (its claim held) keeps that advice."""
    from gpubench.usecases import commands
    from gpubench.core.errors import GpubenchError
    from gpubench.results import Claim, RunStatus

    base = run_file(make_run(), "base.json")
    cut = make_run(seed=1)
    cut.points, cut.status = cut.points[:3], RunStatus.RUNNING
    new = run_file(cut, "new.json")
    with pytest.raises(GpubenchError, match=r"new.json is marked running, but no gpubench run is writing it .*its 3 "
                                            r"point\(s\) are all it will have: run it again, or pass --allow-partial"):
        commands.compare_runs(base, new, 0.05, 0.05, False)
    with Claim(new) as held:
        assert held.acquire()
        with pytest.raises(GpubenchError, match=r"new.json is running with 3 point\(s\) saved.*finish it"):
            commands.compare_runs(base, new, 0.05, 0.05, False)
    assert len(commands.compare_runs(base, new, 0.05, 0.05, False, allow_partial=True).report.changes) == 3


def test_a_point_held_twice_is_read_once_and_said_so(make_run, run_file):
    """A copy of a point (a file merged by hand) is read as the point, not counted twice, and one note names it."""
    from gpubench.usecases import commands

    run = make_run()
    run.points.append(run.points[0])
    twice = run_file(run, "twice.json")
    with pytest.warns(results.schema.PointsMerged, match=r"twice.json: 1 point\(s\) measured more than once .* the "
                                                         r"first, gemm tiled 128x128x8/8x8 1024$"):
        c = commands.compare_runs(run_file(make_run(), "base.json"), twice, 0.05, 0.05, False)
    assert len(c.report.changes) == len(make_run().points)


def test_a_lab_run_whose_sweeps_overlapped_is_compared_and_reported(tmp_path):
    """results/nvidia-h200/lab-a.json (the lab suite before its conv and conv-small sweeps stopped overlapping: 33
    points measured twice) was shown by `show` but refused by `report` and `compare`."""
    lab = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "lab-a.json"
    lab = lab if lab.exists() else lab.with_name("lab-a.json.gz")
    for args in (["compare", str(lab), str(lab)], ["report", str(lab), "-o", str(tmp_path / "lab.html")],
                 ["show", str(lab)]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0, r.output
        note = [line for line in r.stderr.splitlines() if "gpubench: note:" in line]
        assert len(note) == 1 and "33 point(s) measured more than once" in note[0], r.stderr
    run = results.load(lab)
    assert len(run.points) == 352 and not compare.duplicates(run)
    pooled = next(p for p in run.points if compare.point_label(p) == "conv sliding 8 512 s1")
    assert len(pooled.samples_ms) == 64 + 128  # both sweeps' samples


def sustained(run, variants=("tiled", "cublas", "sliding", "cudnn")):
    """The run with those variants' points marked as timed at the sustained pace."""
    from gpubench.results import Details
    from gpubench.measure.timing import Pace

    run.points = [replace(p, details=p.details.merged(Details(pace=Pace.SUSTAINED, settled_s=1.2)))
                  if p.variant in variants else p for p in run.points]
    return run


def test_points_timed_at_different_paces_are_refused_and_shown_side_by_side_on_request(make_run, run_file):
    idle = run_file(make_run(), "idle.json")
    hot = run_file(sustained(make_run(seed=1, scale={("tiled", 2048): 1.2}), ["tiled"]), "hot.json")
    r = invoke("compare", idle, hot)
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"{idle} timed 2 point(s) at another pace than {hot}, the first gemm tiled" in r.output
    assert "(idle against sustained)" in r.output and "--across" in r.output
    side = invoke("compare", idle, hot, "--across")
    assert side.exit_code == 0 and "gemm tiled 128x128x8/8x8 2048 (idle → sustained)" in side.output
    both = run_file(sustained(make_run(seed=2)), "both.json")
    assert invoke("compare", both, run_file(sustained(make_run(seed=3)), "both2.json")).exit_code == 0
    assert invoke("compare", both, hot).exit_code == 2  # the cublas and conv points: sustained against idle


def test_a_saved_pace_reads_back_and_a_file_from_before_paces_is_idle(make_run, run_file, tmp_path):
    from gpubench.measure.timing import Pace

    path = run_file(sustained(make_run(), ["cublas"]), "hot.json")
    run = results.load(path)
    assert {p.variant: p.pace for p in run.points if p.op == "gemm"} == {"tiled": Pace.IDLE, "cublas": Pace.SUSTAINED}
    assert all(p.details.pace is None for p in run.points if p.variant != "cublas")  # as a file from before paces
    data = json.loads(Path(path).read_text())
    data["points"][2]["details"]["pace"] = "warm"
    Path(path).write_text(json.dumps(data))
    r = invoke("show", path)
    assert r.exit_code == 2 and "pace 'warm'; allowed are idle, sustained" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("base_us,new_us,noted", [(3.81, 3.71, True), (3.648, 3.776, True), (3.80, 3.79, False)])
def test_a_moved_empty_kernel_floor_is_noted(make_run, base_us, new_us, noted):
    """The lab pairs on the H100 moved 1.6-3% on every short kernel with the floor (3.81 → 3.71 µs, 3.648 → 3.776):
    the note says so; a floor within 1% says nothing."""
    from gpubench.views.compare import notes

    base, new = make_run(seed=1), make_run(seed=1)
    base.environment.setdefault("device", {})["floor_ms"] = base_us / 1000
    new.environment.setdefault("device", {})["floor_ms"] = new_us / 1000
    report = compare.compare(base, new)
    lines = [line for line in notes(report) if "floor" in line]
    assert bool(lines) == noted
    if noted:
        assert f"{base_us:.3f} → {new_us:.3f} µs" in lines[0]
    without = make_run(seed=1)
    without.environment.get("device", {}).pop("floor_ms", None)
    assert compare.compare(base, without).floor_moved is None  # a run that did not measure it: no note


@pytest.mark.parametrize("base_us,new_us,noted", [(3.247, 3.350, True), (3.276, 3.247, False)])
def test_timing_processes_that_launch_differently_are_noted(make_run, base_us, new_us, noted):
    """Runs timed in processes of the two launch groups (3.247 and 3.350 µs on the H200) get a note; two of one
    group (within 1%) do not, nor does a run that did not choose its process."""
    from gpubench.views.compare import notes

    base, new = make_run(seed=1), make_run(seed=1)
    base.settings["launch_floors_us"] = [base_us, 3.41, 3.40]
    new.settings["launch_floors_us"] = [new_us, 3.36]
    lines = [line for line in notes(compare.compare(base, new)) if "launch" in line]
    assert bool(lines) == noted
    if noted:
        assert f"{base_us:.3f} → {new_us:.3f} µs" in lines[0]
    assert compare.compare(base, make_run(seed=1)).launch_moved is None


def with_cudnn_samples(run, samples):
    """The run with its cuDNN conv point's samples replaced."""
    run.points = [replace(p, samples_ms=samples) if p.variant == "cudnn" else p for p in run.points]
    return run


def two_clusters(fast, slow, n_fast=10, n_slow=30):
    return [fast * (1 + 0.002 * (j % 5 - 2)) for j in range(n_fast)] + [slow * (1 + 0.002 * (j % 7 - 3))
                                                                         for j in range(n_slow)]


def test_a_median_moved_by_a_mode_flip_is_inconclusive_not_slower(make_run, run_file):
    """The H100's cuDNN 14x14 case in small: one mode (3.0 ms) in the base, the same mode in 25% of the new run's
    samples and a second 18% slower in the rest. The interval alone says slower; the modes' shares say why."""
    base = make_run(seed=1)
    new = with_cudnn_samples(make_run(seed=2), two_clusters(3.0, 3.54))
    report = compare.compare(base, new)
    (c,) = [c for c in report.changes if c.new.variant == "cudnn"]
    assert compare.verdict(c.low, c.high, report.threshold) == compare.Verdict.SLOWER  # what the interval says
    assert c.verdict == compare.Verdict.INCONCLUSIVE and c.mode_flip and c.new.modes.fast_share == 0.25
    assert [c.verdict for c in report.changes].count(compare.Verdict.SLOWER) == 0
    paths = run_file(base, "base.json"), run_file(new, "new.json")
    r = invoke("compare", *paths)
    assert r.exit_code == 0, r.output
    assert "(two modes: a mode flip)" in r.output and "inconclusive, not slower: conv cudnn" in r.output
    assert "1 point(s) inconclusive (1 of them with two modes)" in r.output
    assert invoke("compare", *paths, "--fail-on-inconclusive").exit_code == 3
    data = json.loads(invoke("compare", *paths, "--format", "json").output)
    point = next(p for p in data["changes"] if p["variant"] == "cudnn")
    assert point["mode_flip"] and point["modes"]["base"] is None and point["modes"]["new"]["fast_share"] == 0.25


def test_a_flip_back_to_the_fast_mode_is_inconclusive_not_faster(make_run):
    base = with_cudnn_samples(make_run(seed=1), two_clusters(3.0, 3.54))
    new = make_run(seed=2)
    (c,) = [c for c in compare.compare(base, new).changes if c.new.variant == "cudnn"]
    assert compare.verdict(c.low, c.high, 0.05) == compare.Verdict.FASTER
    assert c.verdict == compare.Verdict.INCONCLUSIVE and c.mode_flip


def test_both_modes_slower_is_still_a_regression(make_run, run_file):
    """Where the runs share no mode (both moved by 30%), the shares cannot explain the change: slower stands."""
    base = with_cudnn_samples(make_run(seed=1), two_clusters(3.0, 3.54))
    new = with_cudnn_samples(make_run(seed=2), two_clusters(3.9, 4.6))
    (c,) = [c for c in compare.compare(base, new).changes if c.new.variant == "cudnn"]
    assert c.verdict == compare.Verdict.SLOWER and not c.mode_flip
    r = invoke("compare", run_file(base, "base.json"), run_file(new, "new.json"))
    assert r.exit_code == 1 and "slower with two modes: conv cudnn" in r.output and "share no mode" in r.output


def test_shares_a_mode_needs_two_modes_on_one_side(make_run):
    run = make_run()
    p = next(p for p in run.points if p.variant == "cudnn")
    slower = replace(p, samples_ms=[x * 1.2 for x in p.samples_ms])
    assert not compare.shares_a_mode(p, slower, 0.05)  # one mode each: the interval decides alone
    flipped = replace(p, samples_ms=two_clusters(p.median_ms, 1.2 * p.median_ms))
    assert compare.shares_a_mode(p, flipped, 0.05) and compare.shares_a_mode(flipped, slower, 0.05)
    assert not compare.shares_a_mode(flipped, replace(p, samples_ms=[x * 1.5 for x in p.samples_ms]), 0.05)


def test_the_saved_h100_pair_turns_a_flip_into_inconclusive():
    """tc-conv-tma.json.gz → tc-conv-tma-s32.json.gz (H100; docs/evidence/two-modes.md): the base's 128x128x56 s2
    fp16 point took 84.5 µs in 73% of its samples and 90.3 µs in the rest; the new run's 91.5 µs is that slower
    mode, which the interval alone calls +7.7% slower."""
    root = Path(__file__).resolve().parent.parent / "results" / "nvidia-h100-80gb-hbm3"
    report = compare.compare(results.load(root / "tc-conv-tma.json.gz"), results.load(root / "tc-conv-tma-s32.json.gz"))
    flips = {c.label: c for c in report.mode_flips}
    c = flips["conv tc-wgmma-tma 128x64x64 s8 c1 128x128x56 k128 3x3 s2 FP16 NHWC"]
    assert c.verdict == compare.Verdict.INCONCLUSIVE and compare.verdict(c.low, c.high, 0.05) == compare.Verdict.SLOWER
    assert len(flips) == 2 and report.count(compare.Verdict.SLOWER) == 14


def _graphed(run, n):
    run.points = [replace(p, details=replace(p.details, graph=n)) if p.variant == "tiled" else p for p in run.points]
    return run


def test_points_timed_in_a_graph_are_never_paired_with_points_timed_alone(make_run, run_file):
    alone = run_file(make_run(), "alone.json")
    graphed = run_file(_graphed(make_run(seed=1), 20), "graph.json")
    r = invoke("compare", alone, graphed)
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"{alone} timed 2 point(s) otherwise than {graphed} (--graph), the first gemm tiled" in r.output
    assert "(no graph against a graph of 20)" in r.output
    assert invoke("compare", alone, graphed, "--across").exit_code == 0
    other = run_file(_graphed(make_run(seed=2), 10), "graph10.json")
    assert "(a graph of 20 against a graph of 10)" in invoke("compare", graphed, other).output
    same = run_file(_graphed(make_run(seed=3), 20), "graph20.json")
    assert invoke("compare", graphed, same).exit_code == 0


def test_each_interval_is_at_the_family_level_bonferroni(make_run):
    """With m points compared, each interval is at level 1 − alpha/m (Bonferroni), so that all of them hold together
    at 1 − alpha: a point's interval among six is exactly ratio_interval at alpha/6, and wider than the same point's
    compared alone (at alpha), where a run of 300 points would otherwise raise 300 times the false alarms of one."""
    from gpubench.measure.stats import ratio_interval

    base, new = make_run(seed=1), make_run(seed=2, scale={("tiled", 2048): 1.04})
    report = compare.compare(base, new, alpha=0.05)
    m = len(report.changes)
    assert m == 6
    for c in report.changes:
        assert (c.ratio, c.low, c.high) == ratio_interval(c.base.samples_ms, c.new.samples_ms, 0.05 / m), c.label
    chosen = next(c for c in report.changes if c.label == "gemm tiled 128x128x8/8x8 2048")
    base.points, new.points = [chosen.base], [chosen.new]
    (alone,) = compare.compare(base, new, alpha=0.05).changes
    assert alone.low > chosen.low and alone.high < chosen.high


def test_a_point_timed_but_over_tolerance_gets_no_verdict_and_fails_the_comparison(make_run, run_file):
    """A point that passed in the base run and is over tolerance in the new one still has samples (it was timed):
    its time is no verdict's business, since the kernel is wrong. It is listed as broken and compare exits 1, even
    where it got no slower."""
    base, new = make_run(seed=1), make_run(seed=1)
    wrong = new.points[0]
    new.points[0] = replace(wrong, status=Status.FAIL, rel_err=0.5, reason="rel_err 5.0e-01 over tolerance")
    report = compare.compare(base, new)
    assert wrong.samples_ms and [b.status for b, n in report.broken] == [Status.OK]
    assert all(c.new.status == Status.OK for c in report.changes) and len(report.changes) == len(new.points) - 1
    assert report.exit_code() == 1
    r = invoke("compare", run_file(base, "base.json"), run_file(new, "new.json"))
    assert r.exit_code == 1 and "passed now fail" in r.output, r.output


def test_a_point_that_failed_in_both_runs_is_no_regression(make_run):
    """Broken means passed in the base run and not in the new: a point that was already failing (an error in both,
    a timeout then an error) fails no comparison."""
    base, new = make_run(seed=1), make_run(seed=2)
    first, second = base.points[0], base.points[1]
    base.points[0] = replace(first, status=Status.ERROR, samples_ms=(), reason="RuntimeError: boom")
    new.points[0] = replace(new.points[0], status=Status.ERROR, samples_ms=(), reason="RuntimeError: boom")
    base.points[1] = replace(second, status=Status.TIMEOUT, samples_ms=(), reason="timed out")
    new.points[1] = replace(new.points[1], status=Status.ERROR, samples_ms=(), reason="RuntimeError: boom")
    report = compare.compare(base, new)
    assert len(report.not_measured) == 2 and report.broken == []
    assert report.exit_code() == 0 and "passed now fail" not in report.outcome


# --- a threshold per duration class (compare --thresholds, from an A/A run) -------------------------------------

def by_label(report):
    return {c.label: c for c in report.changes}


def test_a_duration_class_of_its_own_judges_its_points_by_its_threshold(make_run):
    from gpubench.measure.stability import Duration

    base, new = make_run(seed=1), make_run(seed=2, scale={("tiled", 1024): 1.07})
    assert by_label(compare.compare(base, new))["gemm tiled 128x128x8/8x8 1024"].verdict == compare.Verdict.SLOWER
    report = compare.compare(base, new, by_duration={Duration.OVER_1_MS: 0.10, Duration.UNDER_10_US: 0.20})
    change = by_label(report)["gemm tiled 128x128x8/8x8 1024"]
    assert change.verdict == compare.Verdict.SAME and change.threshold == 0.10  # every point here takes over 1 ms
    assert report.exit_code() == 0 and report.threshold == 0.05


def test_a_class_threshold_never_falls_below_the_threshold_given(make_run):
    from gpubench.measure.stability import Duration

    base, new = make_run(seed=1), make_run(seed=2, scale={("tiled", 1024): 1.07})
    report = compare.compare(base, new, 0.05, by_duration={Duration.OVER_1_MS: 0.01})
    assert report.by_duration == {Duration.OVER_1_MS: 0.05}
    assert by_label(report)["gemm tiled 128x128x8/8x8 1024"].verdict == compare.Verdict.SLOWER


def test_compare_takes_its_class_thresholds_from_a_saved_stability_run(make_run, run_file):
    from gpubench.analysis import stability

    runs = []
    for seed, shift in ((1, 1.0), (2, 1.0), (3, 1.09)):  # identical code, one process 9% slower on every point
        run = make_run(seed=seed)
        run.points = [replace(p, samples_ms=tuple(s * shift for s in p.samples_ms)) for p in run.points]
        runs.append(run)
    aa = run_file(stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=[],
                                     status=results.RunStatus.COMPLETE), "aa.json")
    base, new = run_file(make_run(seed=4), "base.json"), run_file(make_run(seed=5, scale={("tiled", 1024): 1.07}),
                                                                    "new.json")
    assert invoke("compare", base, new).exit_code == 1
    r = invoke("compare", base, new, "--thresholds", aa, "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["thresholds_by_duration"]["> 1 ms"] >= 0.09 and out["counts"]["slower"] == 0
    assert "thresholds > 1 ms" in invoke("compare", base, new, "--thresholds", aa, "--format", "markdown").output


def test_thresholds_from_a_run_that_is_not_a_stability_run_are_refused_in_one_line(make_run, run_file):
    path = run_file(make_run())
    r = invoke("compare", path, path, "--thresholds", path)
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "not a stability run" in r.output, r.output


def test_the_h200_lab_cold_then_warm_agrees_as_its_evidence_page_says():
    """docs/evidence/launch-floor-h200.md: the lab cold then warm, each timed in the worker of three whose launch
    floor was lowest: none slower or faster, one point inconclusive, no shared shift of the short calls."""
    from gpubench.analysis.shift import shared_shift

    saved = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200"
    cold, warm = (results.load(saved / f"lab-chosen-{kind}.json.gz") for kind in ("cold", "warm"))
    report = compare.compare(cold, warm)
    counts = {v: report.count(v) for v in compare.Verdict}
    assert counts == {compare.Verdict.SLOWER: 0, compare.Verdict.FASTER: 0, compare.Verdict.SAME: 351,
                      compare.Verdict.INCONCLUSIVE: 1}
    assert shared_shift(report.changes) is None
    assert (cold.settings["wall_s"], warm.settings["wall_s"]) == (66.2, 65.8)
    assert cold.settings["launch_floors_us"] == [3.247, 3.264, 3.342]  # the kept floor first
