"""The command line through click's CliRunner: the CPU backend end to end, and every bad input in one line."""

import json

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def one_line_error(r, *words):
    assert r.exit_code == 2, r.output
    assert r.output.startswith("gpubench: error: ") and r.output.count("\n") == 1, r.output
    assert "Traceback" not in r.output
    for w in words:
        assert w in r.output, r.output


def test_version_and_help_with_examples():
    assert invoke("--version").output.startswith("gpubench, version ")
    for command in ("gemm", "conv", "show", "compare", "run", "plot", "env", "list"):
        r = invoke(command, "--help")
        assert r.exit_code == 0 and "gpubench " in r.output.split("Options")[0], command
    assert invoke("tune", "gemm", "--help").exit_code == 0


def test_cpu_gemm_end_to_end(tmp_path):
    out = tmp_path / "g.json"
    r = invoke("gemm", "--backend", "cpu", "--sizes", "64,100", "--mnk", "33,17,9", "--reps", "5", "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert run.status == "complete" and run.backend == "cpu"
    assert [p.shape_label() for p in run.points] == ["64", "100", "33x17x9"]
    assert all(p.status == "ok" and p.rel_err < 1e-5 and len(p.samples_ms) == 5 for p in run.points)
    assert "gemm · numpy" in r.output and "best configuration" in r.output
    assert run.environment["software"]["gpubench"] and run.environment["device"]["kind"] == "cpu"
    assert run.settings["sweeps"][0]["timing"]["reps"] == 5


def test_cpu_conv_end_to_end(tmp_path):
    out = tmp_path / "c.json"
    r = invoke("conv", "--backend", "cpu", "--sizes", "64,100", "--stride", "1,2,3", "--reps", "3", "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert len(run.points) == 2 * 3 * 2
    assert {p.params["stride"] for p in run.points} == {1, 2, 3}
    assert all(p.status == "ok" for p in run.points)
    assert "ms per variant" in r.output


def test_default_output_goes_under_results_device(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("gemm", "--backend", "cpu", "--sizes", "32", "--reps", "2")
    assert r.exit_code == 0
    saved = list((tmp_path / "results").glob("cpu-*/gemm-*.json"))
    assert len(saved) == 1 and str(saved[0].relative_to(tmp_path)) in r.output.replace("\n", "")


@pytest.mark.parametrize("args,words", [
    (["gemm", "--sizes", "abc"], ["--sizes", "'abc' is not an integer"]),
    (["gemm", "--sizes", "0"], ["--sizes", "out of range"]),
    (["gemm", "--sizes", "512,-5"], ["--sizes"]),
    (["gemm", "--sizes", ""], ["--sizes is empty"]),
    (["gemm", "--mnk", "1,2"], ["--mnk", "three"]),
    (["gemm", "--mnk", "1,2,x"], ["--mnk"]),
    (["gemm", "--block-sizes", "33"], ["--block-sizes", "1..32"]),
    (["gemm", "--block-sizes", "0"], ["--block-sizes"]),
    (["gemm", "--variants", "fast"], ["unknown gemm variant 'fast'", "allowed are numpy"]),
    (["gemm", "--reps", "0"], ["--reps"]),
    (["conv", "--stride", "0"], ["--stride"]),
    (["conv", "--kernel-size", "0"], ["kernel-size"]),
    (["conv", "--sizes", "4", "--kernel-size", "9", "--padding", "valid"], ["larger than the padded input"]),
    (["conv", "--padding", "full"], ["padding 'full'", "same, valid"]),
    (["conv", "--batch", "0"], ["batch"]),
    (["conv", "--in-channels", "-1"], ["in-channels"]),
    (["conv", "--out-channels", "0"], ["out-channels"]),
    (["show", "missing.json"], ["does not exist"]),
    (["run", "nosuch.toml"], ["does not exist"]),
    (["gemm", "--bogus"], ["No such option"]),
])
def test_bad_input_is_one_line_and_exit_2(args, words):
    one_line_error(invoke(*args, "--backend", "cpu") if args[0] in ("gemm", "conv") else invoke(*args), *words)


def test_cuda_backend_without_a_gpu_names_what_is_missing():
    pytest.importorskip("click")
    try:
        from gpubench.backends.cuda import import_gpu_stack

        import_gpu_stack()
        pytest.skip("this machine has a GPU stack")
    except Exception:
        pass
    r = invoke("gemm", "--sizes", "64")
    one_line_error(r)
    assert any(w in r.output for w in ("PyCUDA", "CuPy", "driver", "CUDA device")), r.output


def test_a_failing_variant_is_marked_and_exits_1(tmp_path, monkeypatch):
    from gpubench.backends.cpu import CpuBackend

    real = CpuBackend.prepare

    def wrong(self, variant, config, shape, inputs):  # a "kernel" that is 1% off
        prepared = real(self, variant, config, shape, inputs)
        run = prepared.run

        def off():
            run()
            prepared.output *= 1.01

        prepared.run = off
        return prepared

    monkeypatch.setattr(CpuBackend, "prepare", wrong)
    out = tmp_path / "f.json"
    r = invoke("gemm", "--backend", "cpu", "--sizes", "48", "--reps", "2", "-o", str(out))
    assert r.exit_code == 1
    assert "FAIL" in r.output
    p = results.load(out).points[0]
    assert p.status == "fail" and p.rel_err == pytest.approx(0.01, rel=1e-3) and p.samples_ms


def test_show_formats(tmp_path, make_run, run_file):
    path = run_file(make_run())
    r = invoke("show", path)
    assert r.exit_code == 0 and "gemm · tiled" in r.output and "conv · ms per variant" in r.output
    r = invoke("show", path, "--format", "csv")
    header = r.output.splitlines()[0].split(",")
    for col in ("op", "variant", "m", "n", "k", "block", "median_ms", "min_ms", "gflops", "rel_err", "status",
                "device", "batch", "in_channels", "out_channels", "height", "width", "kernel", "stride", "padding",
                "gbps"):
        assert col in header
    assert len(r.output.splitlines()) == 1 + len(make_run().points)
    assert json.loads(invoke("show", path, "--format", "json").output)["schema"] == "gpubench-run"
    assert "| size |" in invoke("show", path, "--format", "markdown").output


def test_show_corrupt_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "gpubench-run", "schema_version": 1, "points": [{')
    one_line_error(invoke("show", str(bad)), "not valid JSON")


def test_env_and_list():
    r = invoke("env", "--backend", "cpu")
    assert r.exit_code == 0 and json.loads(r.output)["device"]["kind"] == "cpu"
    r = invoke("list")
    assert r.exit_code == 0
    for word in ("global", "shared", "tiled", "cublas", "cudnn", "implicit", "lab", "ci", "quick", "resnet"):
        assert word in r.output


def test_run_a_suite_on_the_cpu(tmp_path):
    out = tmp_path / "q.json"
    r = invoke("run", "quick", "--backend", "cpu", "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert {p.op for p in run.points} == {"gemm", "conv"} and all(p.status == "ok" for p in run.points)
    assert [s["name"] for s in run.settings["sweeps"]] == ["gemm", "conv"]
