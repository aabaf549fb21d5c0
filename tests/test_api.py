"""The Python API: a callable measured under gpubench's protocol (verified, then timed) with a typed result, and
sweeps, suites and comparisons through the command line's own use cases (CPU backend)."""

import numpy as np
import pytest

from gpubench import api, results
from gpubench.core.errors import GpubenchError
from gpubench.core.exit_codes import Exit
from gpubench.results import Status
from gpubench.measure.timing import Stop


def matmul(A, B, C, M, N, K, T=1):
    np.matmul(A, B, out=C)
    return {"tile": T}


def test_a_callable_is_verified_then_timed():
    m = api.measure(matmul, api.gemm(64, 48, 40), backend="cpu", reps=12, budget=5, params={"T": 4})
    assert m.ok and m.status == Status.OK and m.rel_err < 1e-6 and len(m.samples_ms) == 12
    assert m.median_ms == m.stats.median > 0 and m.spread == m.stats.rel_iqr and m.gflops > 0
    assert m.reported == {"tile": 4} and m.first_call_ms > 0 and m.point.details.stop == Stop.REPS
    assert (m.point.variant, m.point.config, m.point.problem) == ("matmul", "T=4", api.gemm(64, 48, 40))
    assert m.telemetry is None and m.joules_per_call is None  # the CPU reports neither
    assert m.variant["runner"] == "python" and m.variant["origin"] == "measure"


def test_a_wrong_result_is_a_failed_point_not_a_time():
    m = api.measure(lambda A, B, C, M, N, K: np.matmul(A, B * 1.001, out=C), api.gemm(32), backend="cpu", reps=5)
    assert not m.ok and m.status == Status.FAIL and m.rel_err == pytest.approx(1e-3, rel=1e-2)
    unwritten = api.measure(lambda x, w, y, *dims: None, api.conv(20), backend="cpu", reps=5)
    assert unwritten.status == Status.FAIL and unwritten.rel_err == float("inf")  # the NaN poison stayed


def test_a_reference_of_your_own_replaces_gpubench_s():
    m = api.measure(matmul, api.gemm(32), backend="cpu", reps=5, reference=lambda inputs: inputs["A"] @ inputs["B"] * 2)
    assert m.rel_err == pytest.approx(0.5, rel=1e-6) and not m.ok
    exact = np.ones((16, 16)) * 16
    ones = api.measure(lambda A, B, C, M, N, K: C.fill(16), api.gemm(16), backend="cpu", reps=5, reference=exact)
    assert ones.ok and ones.rel_err == 0


def test_args_order_what_the_callable_receives():
    seen = []

    def conv(y, x, w, stride):
        seen.append((y.shape, x.shape, stride))
        y.fill(0)

    layer = api.conv(12, 2, batch=2)
    api.measure(conv, layer, backend="cpu", reps=5, args=["y", "x", "w", "stride"])
    assert seen[0] == ((2, 1, layer.out_height, layer.out_width), (2, 3, 12, 12), 2)


@pytest.mark.parametrize("call,match", [
    (lambda: api.measure(matmul, api.gemm(8), backend="tpu"), "measure: backend 'tpu'; allowed: cuda, cpu"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", arrays="torch"), "arrays='torch' is for the cuda"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", reps=2), "measure: reps must be at least 5"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", args=["A", "B", "M"]), "give each of A, B, C once"),
    (lambda: api.measure(42, api.gemm(8), backend="cpu"), "measure: 42 is not callable"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", params={"Q": 1}), "unexpected keyword argument 'Q'"),
    (lambda: api.gemm(0), "a GEMM: m must be a positive integer"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", name="mine\x1b[2J"), "must be printable text"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", pace="hot"), "measure: pace must be one of idle, "),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", pace="sustained", settle=float("nan")),
     "measure: settle must be a finite number"),
    (lambda: api.measure(matmul, api.gemm(8), backend="cpu", cooldown=float("inf")),
     "measure: cooldown must be a finite number"),
])
def test_bad_input_is_one_line(call, match):
    with pytest.raises(GpubenchError, match=match) as e:
        call()
    assert "\n" not in str(e.value)


def test_a_suite_and_a_sweep_return_the_run_show_and_compare_read(tmp_path):
    outcome = api.run_suite("quick", backend="cpu", output=tmp_path / "q.json")
    assert outcome.exit_code == Exit.OK and outcome.path == tmp_path / "q.json"
    assert results.load(outcome.path).points == outcome.run.points and outcome.run.status == "complete"
    sweep = api.run_sweep("gemm", sizes=[24], mnk=[(10, 20, 30)], backend="cpu", reps=5, output=tmp_path / "g.json")
    assert [p.problem for p in sweep.run.points] == [api.gemm(24), api.gemm(10, 20, 30)]
    conv = api.run_sweep("conv", sizes=[16], strides=[1, 2], conv_layer={"out_channels": 2}, backend="cpu", reps=5,
                         output=tmp_path / "c.json")
    assert {(p.problem.stride, p.problem.out_channels) for p in conv.run.points} == {(1, 2), (2, 2)}
    report = api.compare(tmp_path / "g.json", sweep.run, threshold=0.5)
    assert report.exit_code() == Exit.OK and len(report.changes) == len(sweep.run.points)
    with pytest.raises(GpubenchError, match="no points in common"):
        api.compare(outcome.run, conv.run)


def test_the_sustained_pace_is_measured_saved_shown_and_never_compared_with_the_idle_one(tmp_path):
    from gpubench.measure.timing import Pace
    from gpubench.views import run as run_view

    m = api.measure(matmul, api.gemm(32), backend="cpu", reps=5, pace="sustained", settle=0.05)
    assert m.ok and m.point.pace == Pace.SUSTAINED and m.point.details.settled_s >= 0.05
    assert api.measure(matmul, api.gemm(32), backend="cpu", reps=5).point.details.pace == Pace.IDLE
    hot = api.run_sweep("gemm", sizes=[24], backend="cpu", reps=5, pace="sustained", settle=0.05,
                        output=tmp_path / "hot.json")
    cold = api.run_sweep("gemm", sizes=[24], backend="cpu", reps=5, output=tmp_path / "cold.json")
    saved = results.load(hot.path)
    assert {p.pace for p in saved.points} == {Pace.SUSTAINED} and all(p.details.settled_s for p in saved.points)
    assert saved.settings["sweeps"][0]["timing"]["pace"] == "sustained"
    assert "timed sustained after" in run_view.details(saved.points[0])
    assert {p.pace for p in results.load(cold.path).points} == {Pace.IDLE}
    with pytest.raises(GpubenchError, match="timed 1 point\\(s\\) at another pace .* \\(idle against sustained\\)"):
        api.compare(cold.path, hot.path)
    assert api.compare(hot.path, hot.path).exit_code() == Exit.OK


def test_a_cooldown_is_part_of_the_saved_timing(tmp_path):
    rested = api.run_sweep("gemm", sizes=[24], backend="cpu", reps=5, cooldown=0.01, output=tmp_path / "r.json")
    assert results.load(rested.path).settings["sweeps"][0]["timing"]["cooldown_s"] == 0.01
    assert api.measure(matmul, api.gemm(16), backend="cpu", reps=5, cooldown=0.01).ok


def test_without_a_gpu_measure_s_hint_names_its_own_keyword(monkeypatch):
    """The hint named the command line's --backend cpu, which a caller of measure cannot give."""
    import gpubench.backends
    from gpubench.core.errors import NoDevice

    def refusing(name):
        raise NoDevice("no CUDA device found")

    monkeypatch.setattr(gpubench.backends, "open_backend", refusing)
    monkeypatch.setattr(api, "_backends", {})
    with pytest.raises(GpubenchError) as e:
        api.measure(lambda A, B, C, M, N, K: None, api.gemm(8), backend="cuda")
    assert str(e.value) == 'no CUDA device found, or pass backend="cpu"'


def test_without_a_gpu_a_sweep_s_hint_names_its_keyword_too(monkeypatch, tmp_path):
    from gpubench.core.errors import NoDevice
    from gpubench.usecases import commands

    def refusing(*args, **kwargs):
        raise NoDevice("no CUDA device found")

    monkeypatch.setattr(commands, "run_sweeps", refusing)
    for call in (lambda: api.run_sweep("gemm", sizes=[16], output=tmp_path / "g.json"),
                 lambda: api.run_suite("quick", output=tmp_path / "q.json")):
        with pytest.raises(GpubenchError) as e:
            call()
        assert str(e.value) == 'no CUDA device found, or pass backend="cpu"'


@pytest.mark.parametrize("threshold", [0, 0.0, -0.05, float("nan")])
def test_compare_refuses_a_threshold_the_command_line_would(make_run, threshold):
    """The API takes its threshold as a keyword, past click's range check: 0 (or less) is refused here as well, not
    a comparison in which no point can ever be the same."""
    run = make_run()
    assert api.compare(run, run, threshold=0.05).exit_code() in (Exit.OK, Exit.INCONCLUSIVE)
    with pytest.raises(GpubenchError, match="--threshold must be a finite fraction"):
        api.compare(run, run, threshold=threshold)


SOFTMAX_OP = """[[op]]
name = "softmax"
dims = ["rows", "cols"]
arrays = [{ name = "x", shape = ["rows", "cols"] }, { name = "y", shape = ["rows", "cols"], output = true }]
flops = "5 * rows * cols"
reduction = "cols"
reference = "ref.py:softmax"
"""


def test_a_project_s_own_op_is_measured_through_the_api(tmp_path):
    """api.problem builds a problem of a project's own op; measure verifies a function against its reference, and
    a wrong one (no normalisation) fails."""
    (tmp_path / "gpubench.toml").write_text(SOFTMAX_OP)
    (tmp_path / "ref.py").write_text("def softmax(xp, x, rows, cols):\n"
                                     "    e = xp.exp(x - x.max(axis=1, keepdims=True))\n"
                                     "    return e / e.sum(axis=1, keepdims=True)\n")
    problem = api.problem("softmax", rows=8, cols=33, config=str(tmp_path / "gpubench.toml"))
    assert problem.op == "softmax" and problem.dims() == {"rows": 8, "cols": 33}

    def right(x, y, rows, cols):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        y[...] = e / e.sum(axis=1, keepdims=True)

    def unnormalised(x, y, rows, cols):
        y[...] = np.exp(x - x.max(axis=1, keepdims=True))

    assert api.measure(right, problem, backend="cpu", reps=5).status == "ok"
    assert api.measure(unnormalised, problem, backend="cpu", reps=5).status == "fail"
    with pytest.raises(GpubenchError, match="unknown size"):
        api.problem("softmax", rows=8, depth=3, config=str(tmp_path / "gpubench.toml"))


def test_api_compare_takes_class_thresholds_from_a_stability_run(make_run):
    from dataclasses import replace

    from gpubench.analysis import stability
    from gpubench.results import RunStatus

    runs = []
    for seed, shift in ((1, 1.0), (2, 1.0), (3, 1.09)):
        run = make_run(seed=seed)
        run.points = [replace(p, samples_ms=tuple(s * shift for s in p.samples_ms)) for p in run.points]
        runs.append(run)
    aa = stability.assemble(runs, suite="s", asked=3, threshold=0.05, alpha=0.05, command=[],
                            status=RunStatus.COMPLETE)
    base, new = make_run(seed=4), make_run(seed=5, scale={("tiled", 1024): 1.07})
    assert api.compare(base, new).exit_code() == 1
    report = api.compare(base, new, thresholds=aa)
    assert report.exit_code() == 0 and report.by_duration
