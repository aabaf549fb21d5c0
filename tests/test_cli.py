"""The command line through click's CliRunner: the CPU backend end to end, your own kernels, and every bad input
in one line."""

import json
import time
from pathlib import Path

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
    for command in ("gemm", "conv", "show", "compare", "run", "plot", "env", "list", "check"):
        r = invoke(command, "--help")
        assert r.exit_code == 0 and "gpubench " in r.output.split("Options")[0], command
    assert invoke("tune", "gemm", "--help").exit_code == 0


def test_cpu_gemm_end_to_end(tmp_path):
    out = tmp_path / "g.json"
    r = invoke("gemm", "--backend", "cpu", "--sizes", "64,100", "--mnk", "33,17,9", "--reps", "5", "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert run.status == "complete" and run.backend == "cpu"
    assert [p.problem.label for p in run.points] == ["64", "100", "33x17x9"]
    assert all(p.status == "ok" and p.rel_err < 1e-5 and len(p.samples_ms) == 5 for p in run.points)
    assert "gemm · numpy" in r.output and "best configuration" in r.output
    assert run.environment["software"]["gpubench"] and run.environment["device"]["kind"] == "cpu"
    assert run.settings["sweeps"][0]["timing"]["reps"] == 5
    assert run.baseline("gemm") == "numpy"


def test_a_run_saved_compressed_is_shown_and_compared_like_a_plain_one(tmp_path):
    packed, plain = tmp_path / "g.json.gz", tmp_path / "g.json"
    for out in (packed, plain):
        r = invoke("gemm", "--backend", "cpu", "--sizes", "40", "--reps", "5", "-o", str(out))
        assert r.exit_code == 0, r.output
    assert packed.read_bytes()[:2] == b"\x1f\x8b" and results.load(packed).points[0].status == "ok"
    shown = invoke("show", str(packed))
    assert shown.exit_code == 0 and "gemm · numpy" in shown.output, shown.output
    compared = invoke("compare", str(plain), str(packed))
    assert compared.exit_code in (0, 1) and "Traceback" not in compared.output, compared.output


def test_cpu_conv_end_to_end(tmp_path):
    out = tmp_path / "c.json"
    r = invoke("conv", "--backend", "cpu", "--sizes", "64,100", "--stride", "1,2,3", "--reps", "5", "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert len(run.points) == 2 * 3 * 2
    assert {p.problem.stride for p in run.points} == {1, 2, 3}
    assert all(p.status == "ok" for p in run.points)
    assert "ms per variant" in r.output


def test_default_output_goes_under_results_device():
    r = invoke("gemm", "--backend", "cpu", "--sizes", "32", "--reps", "5")
    assert r.exit_code == 0
    saved = list(Path("results").glob("cpu-*/gemm-*.json"))
    assert len(saved) == 1 and str(saved[0]) in r.output.replace("\n", "")
    again = invoke("gemm", "--backend", "cpu", "--sizes", "32", "--reps", "5")  # within the same second: a new name
    assert again.exit_code == 0 and len(list(Path("results").glob("cpu-*/gemm-*.json"))) == 2


@pytest.mark.parametrize("args,words", [
    (["gemm", "--sizes", "abc"], ["--sizes", "'abc' is not an integer"]),
    (["gemm", "--sizes", "0"], ["--sizes", "out of range"]),
    (["gemm", "--sizes", "512,-5"], ["--sizes"]),
    (["gemm", "--sizes", ""], ["--sizes is empty"]),
    (["gemm", "--mnk", "1,2"], ["--mnk", "three"]),
    (["gemm", "--mnk", "1,2,x"], ["--mnk"]),
    (["gemm", "--block-sizes", "33"], ["--block-sizes", "1..32"]),
    (["gemm", "--block-sizes", "0"], ["--block-sizes"]),
    (["gemm", "--variants", "fast"], ["unknown gemm variant(s) fast", "allowed are numpy"]),
    (["gemm", "--reps", "0"], ["--reps must be at least 5"]),
    (["gemm", "--reps", "2"], ["--reps must be at least 5"]),
    (["gemm", "--warmup", "-1"], ["--warmup must be 0 or more"]),
    (["gemm", "--budget", "-1"], ["--budget must be 0 or more"]),
    (["gemm", "--budget", "nan"], ["--budget must be a finite number"]),
    (["gemm", "--max-noise", "0"], ["--max-noise must be more than 0"]),
    (["gemm", "--max-time", "inf"], ["--max-time must be a finite number"]),
    (["gemm", "--timeout", "0"], ["--timeout must be a number of seconds over 0 and at most 604800"]),
    (["gemm", "--timeout", "1e7"], ["--timeout must be a number of seconds"]),
    (["gemm", "--seed", "-1"], ["--seed must be from 0"]),
    (["gemm", "--tf32"], ["no chosen variant takes the precision tf32; they take"]),
    # a precision and a layout each taken, never together: the pair is what is wrong, on either axis
    (["grouped-gemm", "--backend", "cpu", "--dtype", "bf16", "--layout", "contiguous-block"],
     ["no chosen variant takes the precision bf16 with the layout(s) asked (contiguous-block): those that take bf16 "
      "take the layout(s) contiguous, masked"]),
    (["grouped-gemm", "--backend", "cpu", "--dtype", "bf16", "--layout", "contiguous,contiguous-block"],
     ["no chosen variant takes the layout contiguous-block with the precision(s) asked (bf16): those that take "
      "contiguous-block take the precision(s) fp8"]),
    (["gemm", "--dtype", "fp64"], ["--dtype: 'fp64' is not one; allowed: fp32, tf32, fp16, bf16, fp8, int8"]),
    (["gemm", "--dtype", ""], ["--dtype '' is empty"]),
    (["gemm", "--layout", "nchw"], ["--layout: 'nchw' is not one; allowed: nn, nt, tn"]),
    (["conv", "--layout", "nt"], ["--layout: 'nt' is not one; allowed: nchw, nhwc"]),
    (["gemm", "--tf32", "--dtype", "fp32"], ["--tf32 is the old name of --dtype tf32"]),
    (["gemm", "--variants", "numpy", "--dtype", "tf32"], ["variant numpy computes in fp32, fp16, bf16, fp8, int8"]),
    (["gemm", "--block-sizes", "16"], ["--block-sizes applies to the block-size variants"]),
    (["gemm", "--variants", ""], ["--variants is empty"]),
    (["gemm", "--kernel", "k.cu:k", "--kernel", "k.cu:k"], ["source k.cu does not exist"]),
    (["compare", "a.json", "b.json", "--alpha", "nan"], ["--alpha"]),
    (["gemm", "--args", "a,b,c,m,n,k"], ["--args gives the parameter order of a --kernel"]),
    (["gemm", "--kernel", "nope.cu"], ["--kernel 'nope.cu': give FILE:SYMBOL"]),
    (["gemm", "--kernel", "nope.cu:k"], ["source nope.cu does not exist"]),
    (["gemm", "-o", "out.txt"], ["-o out.txt: a results file ends in .json"]),
    (["gemm", "-o", "."], ["ends in .json"]),
    (["conv", "--stride", "0"], ["--stride"]),
    (["conv", "--kernel-size", "0"], ["kernel-size"]),
    (["conv", "--sizes", "4", "--kernel-size", "9", "--padding", "valid"], ["larger than the padded input"]),
    (["conv", "--padding", "full"], ["padding 'full'", "same, valid"]),
    (["conv", "--batch", "0"], ["batch"]),
    (["conv", "--in-channels", "-1"], ["in-channels"]),
    (["conv", "--out-channels", "0"], ["out-channels"]),
    (["show", "missing.json"], ["does not exist"]),
    (["run", "nosuch.toml"], ["does not exist", "shipped suites (attention, ci, fused-conv, grouped-gemm, int8-conv, lab, precision, quick, resnet, tensor-cores)"]),
    (["gemm", "--bogus"], ["No such option"]),
    (["gemm", "--config", "nowhere.toml"], ["--config: nowhere.toml is not a file"]),
    (["check", "--arch", "hopper"], ["--arch 'hopper'"]),
])
def test_bad_input_is_one_line_and_exit_2(args, words):
    one_line_error(invoke(*args, "--backend", "cpu") if args[0] in ("gemm", "conv") else invoke(*args), *words)


def test_block_sizes_where_no_variant_takes_them(tmp_path):
    one_line_error(invoke("gemm", "--backend", "cuda", "--variants", "tiled,cublas", "--block-sizes", "16"),
                   "--block-sizes applies to the block-size variants", "none of tiled, cublas takes it")


@pytest.mark.parametrize("args, words", [
    (["gemm", "--backend", "cpu", "--sizes", "16", "--slow-threshold", "0.1"], ["give --replicate too"]),
    (["run", "quick", "--backend", "cpu", "--slow-threshold", "0.1"], ["give --replicate too"]),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--settle", "2"], ["--settle", "give --pace sustained too"]),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--pace", "idle", "--settle", "0"], ["give --pace sustained"]),
    (["run", "quick", "--backend", "cpu", "--settle", "2"], ["no sweep here has it"]),
])
def test_an_option_that_would_change_nothing_is_refused_not_ignored(tmp_path, monkeypatch, args, words):
    """As --block-sizes where no variant takes it: --slow-threshold without --replicate and --settle where no sweep
    runs at pace sustained were taken and ignored (exit 0)."""
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke(*args), *words)
    assert not (tmp_path / "results").exists()
    r = invoke("gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "--pace", "sustained", "--settle", "0.01",
               "-o", str(tmp_path / "s.json"))
    assert r.exit_code == 0, r.output


def test_an_existing_output_needs_force(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("keep me")
    one_line_error(invoke("gemm", "--backend", "cpu", "--sizes", "16", "-o", str(out)), "exists: pass --force")
    assert out.read_text() == "keep me"
    r = invoke("gemm", "--backend", "cpu", "--sizes", "16", "-o", str(out), "--force")
    assert r.exit_code == 0 and results.load(out).points


def test_cuda_backend_without_a_gpu_names_what_is_missing():
    try:
        from gpubench.backends.cuda import import_gpu_stack

        import_gpu_stack()
        pytest.skip("this machine has a GPU stack")
    except Exception:
        pass
    r = invoke("gemm", "--backend", "cuda", "--sizes", "64", "--variants", "cublas")  # insisting on the GPU
    one_line_error(r)
    assert any(w in r.output for w in ("PyCUDA", "CuPy", "driver", "CUDA device")), r.output


KERNELS = """
import os, signal, time
import numpy as np

def lab_matmul(a, b, c, m, n, k):  # the lab's naming: a is m×n, b is n×k
    assert a.shape == (m, n) and b.shape == (n, k)
    np.matmul(a, b, out=c)

def off_by_one_percent(A, B, C, M, N, K):
    np.matmul(A, B, out=C)
    C *= 1.01

def crash(A, B, C, M, N, K):
    os.kill(os.getpid(), signal.SIGSEGV)

def hang(A, B, C, M, N, K):
    while True:
        time.sleep(0.05)
"""


def spec(name, fn, args="A,B,C,M,N,K"):
    return (f'[[variant]]\nname = "{name}"\nop = "gemm"\nsource = "src/k.py"\nkernel = "{fn}"\n'
            f'args = {json.dumps(args.split(","))}\n')


@pytest.fixture
def my_project(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.py").write_text(KERNELS)
    (tmp_path / "gpubench.toml").write_text(spec("lab", "lab_matmul", "a,b,c,m,n,k") + spec("off", "off_by_one_percent")
                                            + spec("crash", "crash") + spec("hang", "hang"))
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from below, the way pytest finds its configuration
    return tmp_path


def test_your_variants_are_listed_and_run_like_built_ins(my_project):
    r = invoke("list")
    assert r.exit_code == 0 and "lab" in r.output and str(my_project / "gpubench.toml") in r.output.replace("\n", "")
    r = invoke("gemm", "--backend", "cpu", "--variants", "numpy,lab,off", "--mnk", "30,40,50", "-o", "r.json")
    assert r.exit_code == 1, r.output  # a point failed verification
    run = results.load("r.json")
    assert [(p.variant, p.status) for p in run.points] == [("numpy", "ok"), ("lab", "ok"), ("off", "fail")]
    lab = next(v for v in run.variants if v["name"] == "lab")
    assert lab["source"] == str(my_project / "src" / "k.py") and len(lab["sha256"]) == 64
    assert invoke("show", "r.json").exit_code == 0


def test_a_crash_and_a_hang_are_recorded_and_every_other_point_completes(my_project):
    r = invoke("gemm", "--backend", "cpu", "--variants", "numpy,crash,lab,hang", "--sizes", "24,32",
               "--timeout", "2", "-o", "r.json")
    assert r.exit_code == 1
    run = results.load("r.json")
    # The Python variants' first calls are made before the sweep: at 24 they crash and hang there, which is those
    # points' outcome (recorded first); the sweep then runs the rest, in catalog order.
    assert [(p.variant, p.status) for p in run.points] == [("crash", "error"), ("hang", "timeout"), ("numpy", "ok"),
                                                           ("lab", "ok"), ("numpy", "ok"), ("lab", "ok"),
                                                           ("crash", "error"), ("hang", "timeout")]
    assert [p.problem.m for p in run.points] == [24] * 4 + [32] * 4
    assert run.status == "complete" and [i["kind"] for i in run.incidents] == ["died", "timeout"] * 2
    assert "worker died" in r.output and "TIMEOUT gemm hang" in r.output


def test_a_suites_timeout_ends_a_hung_point_and_the_command_lines_wins(my_project):
    (my_project / "hangs.toml").write_text('timeout = 1\n[[sweep]]\nop = "gemm"\nvariants = ["hang"]\n'
                                           'sizes = [24]\n')
    started = time.monotonic()
    r = invoke("run", str(my_project / "hangs.toml"), "--backend", "cpu", "-o", "r.json")
    assert r.exit_code == 1 and time.monotonic() - started < 60, r.output
    run = results.load("r.json")
    assert [p.status for p in run.points] == ["timeout"] and run.settings["timeout_s"] == 1
    r = invoke("run", str(my_project / "hangs.toml"), "--backend", "cpu", "--timeout", "2", "-o", "r2.json")
    assert results.load("r2.json").settings["timeout_s"] == 2


def test_the_lab_kernel_flag_needs_no_file(tmp_path):
    (tmp_path / "mine.py").write_text("import numpy as np\ndef mm(a, b, c, m, n, k):\n    np.matmul(a, b, out=c)\n")
    from gpubench.specs import files

    v = files.lab_kernel("gemm", str(tmp_path / "mine.py") + ":mm", None)
    assert v.backend == "cpu" and v.code.program.args == ("A", "B", "C", "M", "K", "N")


def test_a_python_kernel_flag_runs_one_point_per_shape_on_the_cpu(tmp_path):
    """A function is called, not launched: no block sizes to sweep, no BLOCK_SIZE passed to it."""
    (tmp_path / "mine.py").write_text("import numpy as np\ndef mm(a, b, c, m, n, k):\n    np.matmul(a, b, out=c)\n")
    r = invoke("gemm", "--backend", "cpu", "--sizes", "32,40", "--reps", "5", "--kernel", f"{tmp_path}/mine.py:mm",
               "-o", str(tmp_path / "r.json"))
    assert r.exit_code == 0, r.output
    run = results.load(tmp_path / "r.json")
    assert [(p.variant, p.config, p.status) for p in run.points] == [("numpy", "-", "ok"), ("mm", "-", "ok")] * 2
    one_line_error(invoke("gemm", "--backend", "cpu", "--kernel", f"{tmp_path}/mine.py:mm", "--block-sizes", "8"),
                   "--block-sizes")


@pytest.mark.parametrize("source,error", [
    ("def mm(a, b, c, m, n, k)\n    pass\n", "SyntaxError: expected ':' (bad.py, line 1)"),
    ("import no_such_module_here\ndef mm(a, b, c, m, n, k):\n    pass\n",
     "ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("def mm(a, b, c, m, n, k):\n    pass\nraise RuntimeError('not today')\n", "RuntimeError: not today"),
])
@pytest.mark.parametrize("spread", [[], ["--gpus", "2"]], ids=["one worker", "dask"])
def test_a_python_source_that_cannot_load_stops_before_any_point(tmp_path, source, error, spread):
    """As a kernel nvcc rejects does: exit 2, one line naming the file and its first error, no results file."""
    if spread:
        pytest.importorskip("distributed")
    (tmp_path / "bad.py").write_text(source)
    r = invoke("gemm", "--backend", "cpu", "--sizes", "32", "--kernel", f"{tmp_path}/bad.py:mm",
               "-o", str(tmp_path / "r.json"), *spread)
    one_line_error(r, f"importing {tmp_path}/bad.py failed: {error}")
    assert not (tmp_path / "r.json").exists()


def test_a_failing_variant_is_marked_and_exits_1(tmp_path, my_project):
    r = invoke("gemm", "--backend", "cpu", "--variants", "off", "--sizes", "48", "-o", str(tmp_path / "f.json"))
    assert r.exit_code == 1 and "FAIL" in r.output
    p = results.load(tmp_path / "f.json").points[0]
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
    bad.write_text('{"schema": "gpubench-run", "schema_version": 2, "points": [{')
    one_line_error(invoke("show", str(bad)), "not valid JSON")


def test_plot_checks_its_output_before_drawing(tmp_path, make_run, run_file):
    path = run_file(make_run())
    one_line_error(invoke("plot", path, "-o", str(tmp_path / "out.txt")), "a plot ends in .png or .svg or .pdf")
    (tmp_path / "a-file").write_text("")
    one_line_error(invoke("plot", path, "-o", str(tmp_path / "a-file" / "x.png")), "a-file is a file, not a directory")
    (tmp_path / "p.png").write_text("old")
    one_line_error(invoke("plot", path, "-o", str(tmp_path / "p.png")), "exists: pass --force")


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
    assert [s["name"] for s in run.settings["sweeps"]] == ["gemm", "conv", "gemm-bf16"]
    assert {str(p.dtype) for p in run.points} == {"fp32", "bf16"}  # quick's one bf16 point, emulated


def test_names_with_markup_are_shown_as_written(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text("import numpy as np\ndef k(A, B, C, M, N, K, T):\n    np.matmul(A, B, out=C)\n")
    (tmp_path / "gpubench.toml").write_text('[[variant]]\nname = "mine"\nop = "gemm"\nsource = "k.py"\nkernel = "k"\n'
                                            'args = ["A", "B", "C", "M", "N", "K"]\nsummary = "[/] oops [bold]x"\n'
                                            'configs = [{ T = 1, label = "[/bad]" }]\n')
    monkeypatch.chdir(tmp_path)
    r = invoke("list")
    assert r.exit_code == 0 and "[/] oops [bold]x" in r.output
    r = invoke("gemm", "--backend", "cpu", "--variants", "mine", "--sizes", "8", "-o", "m.json")
    assert r.exit_code == 0 and "[/bad]" in r.output
    assert invoke("show", "m.json").exit_code == 0


def test_a_path_the_os_refuses_is_one_line(tmp_path):
    one_line_error(invoke("show", str(tmp_path / ("a" * 300 + ".json"))), "File name too long")


def test_a_cuda_kernel_on_the_cpu_backend_is_refused(tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* a, float* b, float* c, int m, int n, int k) {}\n')
    one_line_error(invoke("gemm", "--backend", "cpu", "--kernel", f"{tmp_path / 'k.cu'}:k"),
                   "runs on the cuda backend", "not on --backend cpu")


def test_kernel_names_must_differ_from_each_other_and_from_known_variants(tmp_path):
    (tmp_path / "k.py").write_text("def k(A, B, C, M, N, K):\n    C[:] = A @ B\n")
    for twice in ([f"{tmp_path / 'k.py'}:k", f"{tmp_path / 'k.py'}:k"], [f"numpy={tmp_path / 'k.py'}:k"]):
        args = [a for k in twice for a in ("--kernel", k)]
        one_line_error(invoke("gemm", "--backend", "cpu", "--args", "A,B,C,M,N,K", *args, "--sizes", "8"),
                       "must differ from each other and from the variants already known")


def test_report_writes_one_page_and_refuses_a_wrong_suffix(make_run, run_file, tmp_path):
    run = run_file(make_run(clocks=1980))
    r = invoke("report", run, "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 0 and (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    one_line_error(invoke("report", run, "-o", str(tmp_path / "r.txt")), "a report ends in .html")
    one_line_error(invoke("report", run, "-o", str(tmp_path / "r.html")), "exists: pass --force")
    one_line_error(invoke("report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "m.html")), "does not exist")


def test_history_exits_1_on_a_latest_slowdown(make_run, run_file, tmp_path):
    for i in range(10):
        run = make_run(seed=i, scale={("tiled", 2048): 1.2} if i >= 6 else None)
        run.environment["software"] = {"git_commit": f"c{i}"}
        run.created = f"2026-11-22T00:{i:02d}:00+00:00"
        run_file(run, f"r{i}.json")
    r = invoke("history", str(tmp_path))
    assert r.exit_code == 1 and "gemm tiled 128x128x8/8x8 2048" in r.output and "c5..c6" in r.output
    assert invoke("history", str(tmp_path), "--threshold", "0.5").exit_code == 0


@pytest.mark.parametrize("value", ["0", "-0", "0.0", "-0.05", "1e-400"])
@pytest.mark.parametrize("command", ["compare", "show", "report", "history"])
def test_a_threshold_of_zero_or_less_is_refused(make_run, run_file, tmp_path, command, value):
    """A change of 0 can never be "same" and every interval straddles it: compare, show, report and history refuse
    --threshold 0 (or less, or what rounds to 0) in one line, exit 2, where the same command at 0.05 runs."""
    run = run_file(make_run())
    args = {"compare": [run, run], "show": [run], "report": [run, "-o", str(tmp_path / "r.html"), "--force"],
            "history": [run, run_file(make_run(seed=1), "r1.json")]}[command]
    assert invoke(command, *args, "--threshold", "0.05").exit_code in (0, 3), command  # the line itself is fine
    one_line_error(invoke(command, *args, "--threshold", value), "--threshold")


def test_history_names_the_html_option_in_its_errors(make_run, run_file, tmp_path):
    run_file(make_run())
    (tmp_path / "page.html").mkdir()
    one_line_error(invoke("history", str(tmp_path / "run.json"), "--html", str(tmp_path / "page.html")),
                   "--html", "is a directory")


# --- what a careless or hostile user met ----------------------------------------------------------------------


def test_an_empty_output_is_refused_not_replaced_by_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke("gemm", "--backend", "cpu", "--sizes", "16", "-o", ""), "-o is empty")
    one_line_error(invoke("history", str(tmp_path), "--html", ""), "--html is empty")
    assert not (tmp_path / "results").exists()


def test_one_point_is_one_point(tmp_path):
    r = invoke("gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "-o", str(tmp_path / "one.json"))
    assert r.exit_code == 0 and "saved 1 point to " in r.output, r.output
    assert "first calls" not in r.output  # none took a tenth of a second: nothing to say


def test_the_time_before_the_sweep_is_saved_and_said_beside_the_sweeps(tmp_path, monkeypatch):
    from gpubench.execution.worker import Worker

    made = Worker.first_calls

    def slow_first_calls(self, tasks, on_point):  # a plan search's worth of seconds before the sweep
        time.sleep(0.3)
        return made(self, tasks, on_point)

    monkeypatch.setattr(Worker, "first_calls", slow_first_calls)
    r = invoke("gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "-o", str(tmp_path / "one.json"))
    run = results.load(tmp_path / "one.json")
    assert r.exit_code == 0 and 0.3 <= run.settings["first_calls_s"] < 5, r.output
    assert f"after {run.settings['first_calls_s']:.1f} s of first calls and plan searches" in r.output, r.output


def test_a_labs_cuda_variants_left_out_on_the_cpu_are_named(tmp_path, monkeypatch):
    import shutil

    lab = tmp_path / "lab"
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "lab", lab)
    monkeypatch.chdir(lab)
    r = invoke("gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "-o", str(tmp_path / "g.json"))
    assert r.exit_code == 0, r.output
    (note,) = [line for line in r.output.splitlines() if "lab-global" in line]
    assert "lab-shared" in note and "--backend cuda runs them" in note
    r = invoke("gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "--variants", "numpy", "-o",
               str(tmp_path / "h.json"))
    assert r.exit_code == 0 and "lab-global" not in r.output  # asked for by name: nothing left out unasked


def test_helps_say_each_commands_own_defaults_and_examples():
    conv = invoke("conv", "--help").output
    assert "a,b,c,m,n,k" not in conv and "x,w,y,N,C,H,W,K,R,S,stride,pad,OH,OW" in " ".join(conv.split())
    assert "a,b,c,m,n,k" in invoke("gemm", "--help").output
    for args in (["tune"], ["tune", "gemm"]):
        head = invoke(*args, "--help").output.split("Options")[0]
        assert "Examples:" in head and head.count("gpubench tune gemm") >= 2, head


def test_tune_without_a_gpu_does_not_suggest_the_cpu_backend(monkeypatch):
    from gpubench.usecases import autotune
    from gpubench.core.errors import NoDevice

    def no_gpu(*args, **kw):
        raise NoDevice("no CUDA device found")

    monkeypatch.setattr(autotune, "run", no_gpu)
    r = invoke("tune", "gemm", "--sizes", "256")
    one_line_error(r, "no CUDA device found", "searches on an NVIDIA GPU")
    assert "--backend" not in r.output
    assert str(NoDevice("no CUDA device found")) == "no CUDA device found, or use --backend cpu"  # elsewhere


def test_the_conv_rates_table_names_the_runs_own_baseline(tmp_path):
    out = tmp_path / "c.json"
    r = invoke("conv", "--backend", "cpu", "--sizes", "16", "--stride", "1", "--reps", "5", "-o", str(out))
    assert r.exit_code == 0, r.output
    titles = [line for line in r.output.splitlines() if "GFLOPS / GB/s" in line]
    assert titles == ["conv · GFLOPS / GB/s / speed vs im2col"], titles
    assert "cuDNN" not in invoke("show", str(out), "--format", "markdown").output.split("library =")[0]


def test_titles_do_not_wrap_at_a_narrow_tables_width(tmp_path):
    out = tmp_path / "g.json"
    assert invoke("gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "-o", str(out)).exit_code == 0
    shown = invoke("show", str(out)).output.splitlines()
    assert "gemm · numpy — ms / GFLOPS" in shown
    assert any(line.startswith("library = the baseline row (cuBLAS on a GPU, NumPy on the CPU), same precision") for
               line in shown)


def test_huge_shapes_and_odd_settings_in_a_file_are_one_line(tmp_path, make_run, run_file):
    data = json.loads(Path(run_file(make_run(samples=6))).read_text())
    for p in data["points"]:
        if p["op"] == "gemm":
            p["problem"] = {"m": 10**30, "n": 10**30, "k": 10**30}
    (tmp_path / "huge.json").write_text(json.dumps(data))
    for command in (["plot", str(tmp_path / "huge.json"), "-o", str(tmp_path / "h.png")], ["show", str(tmp_path /
                                                                                              "huge.json")]):
        one_line_error(invoke(*command), "at most 2**63 - 1")
    data = json.loads(Path(run_file(make_run(samples=6))).read_text())
    data["settings"] = {"replicate": True, "slow_threshold": "fast"}
    (tmp_path / "rep.json").write_text(json.dumps(data))
    one_line_error(invoke("show", str(tmp_path / "rep.json")), "settings: slow_threshold has the wrong type")


def test_a_suite_nested_too_deeply_is_one_line(tmp_path):
    suite = tmp_path / "deep.toml"
    suite.write_text("[[sweep]]\nop = 'gemm'\nsizes = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line_error(invoke("run", str(suite), "--backend", "cpu"), "nested too deeply")


def test_every_precision_and_layout_end_to_end_on_the_cpu(tmp_path):
    """The whole axis without a GPU: generation, references, tolerances, the schema, the tables and CSV."""
    out = tmp_path / "p.json"
    r = invoke("gemm", "--backend", "cpu", "--sizes", "48", "--mnk", "33,17,70", "--dtype", "fp32,fp16,bf16,fp8,int8",
               "--layout", "nn,nt,tn", "--reps", "5", "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert len(run.points) == 2 * 5 * 3 and all(p.status == "ok" for p in run.points)
    assert {(str(p.dtype), str(p.problem.layout)) for p in run.points} == {
        (d, x) for d in ("fp32", "fp16", "bf16", "fp8", "int8") for x in ("nn", "nt", "tn")}
    by_dtype = {str(p.dtype): p for p in run.points if p.problem.layout == "nn" and p.problem.m == 48}
    assert by_dtype["int8"].rel_err == 0 and by_dtype["fp32"].rel_err < 1e-6
    assert 1e-4 < by_dtype["fp16"].rel_err < by_dtype["fp16"].tolerance < 1e-3  # rounding to half, not input error
    assert 1e-3 < by_dtype["bf16"].rel_err < by_dtype["bf16"].tolerance
    assert "numpy [BF16 NT]" in r.output and "numpy [FP8 TN]" in r.output
    assert by_dtype["int8"].details.accumulator == "int32" and by_dtype["bf16"].details.accumulator == "fp32"
    assert set(by_dtype["fp8"].details.scales) == {"A_scale", "B_scale"} and not by_dtype["fp16"].details.scales
    shown = invoke("show", str(out), "--format", "csv")
    header = shown.output.splitlines()[0].split(",")
    assert "dtype" in header and "layout" in header and header.count("dtype") == 1
    assert len(shown.output.splitlines()) == 1 + len(run.points)


def test_conv_in_nhwc_half_precision_on_the_cpu(tmp_path):
    out = tmp_path / "c.json"
    r = invoke("conv", "--backend", "cpu", "--sizes", "13", "--batch", "2", "--in-channels", "5", "--out-channels",
               "3", "--stride", "1,2", "--padding", "1", "--dtype", "bf16,fp16", "--layout", "nhwc", "--reps", "5",
               "-o", str(out))
    assert r.exit_code == 0, r.output
    run = results.load(out)
    assert len(run.points) == 2 * 2 * 2 and all(p.status == "ok" for p in run.points)
    assert "sliding [BF16 NHWC]" in r.output


def test_compare_never_pairs_points_of_other_precisions(tmp_path):
    fp32, bf16 = tmp_path / "a.json", tmp_path / "b.json"
    assert invoke("gemm", "--backend", "cpu", "--sizes", "32", "--reps", "5", "-o", str(fp32)).exit_code == 0
    assert invoke("gemm", "--backend", "cpu", "--sizes", "32", "--reps", "5", "--dtype", "bf16",
                  "-o", str(bf16)).exit_code == 0
    one_line_error(invoke("compare", str(fp32), str(bf16)), "have no points in common")


def test_a_default_variant_that_takes_none_of_the_precisions_is_left_out(tmp_path):
    """--tf32 (the old name of --dtype tf32) on the CPU: NumPy computes no TF32, so nothing is left to run."""
    one_line_error(invoke("gemm", "--backend", "cpu", "--sizes", "16", "--tf32"),
                   "no chosen variant takes the precision tf32")


def test_compare_into_a_pipe_closed_early_still_exits_with_its_verdict(tmp_path):
    """`gpubench compare a b | head -1` in a CI script: the verdict's exit code (0 here), not a failure because the
    reader left. A real process, since the pipe is the point."""
    import subprocess
    import sys

    run = tmp_path / "a.json"
    assert invoke("gemm", "--backend", "cpu", "--sizes", "16,24,32,40", "--reps", "5", "-o", str(run)).exit_code == 0
    script = (f"set -o pipefail; {sys.executable} -m gpubench compare {run} {run} --threshold 0.5 | head -c 1 "
              ">/dev/null; echo exit=$?")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "exit=0", r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "error" not in r.stderr


def test_a_legacy_locale_reads_and_writes_gpubenchs_files_as_utf8(tmp_path):
    """With a locale whose encoding is not UTF-8 (LC_ALL=C without Python's UTF-8 mode, ISO-8859-1, a Windows code
    page) every text file was read in that encoding: each sweep failed on the built-in specs ("'ascii' codec can't
    decode") and report ended in a traceback on its own stylesheet."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "utf-8",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    (tmp_path / "s.toml").write_text('name = "ßüñ"\n[[sweep]]\nname = "ñ"\nop = "gemm"\nsizes = [16]\n'
                                     'variants = ["numpy"]\nreps = 5\n', encoding="utf-8")
    for args in (["run", "s.toml", "--backend", "cpu", "-o", "r.json"], ["show", "r.json"],
                 ["report", "r.json", "-o", "r.html"], ["history", "r.json", "--html", "h.html"], ["list"]):
        p = subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=tmp_path, env=env, capture_output=True,
                           text=True, encoding="utf-8", timeout=120)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)


def test_a_kernel_source_that_exists_but_is_no_file_says_so():
    one_line_error(invoke("gemm", "--backend", "cpu", "--sizes", "16", "--kernel", "/dev/null:f"),
                   "source /dev/null is not a file")


def test_show_tells_a_run_still_written_from_one_that_was_ended(make_run, tmp_path):
    """A file marked running that no run holds (its run killed outright) is not a run in progress."""
    from gpubench.results import Claim, RunStatus

    run = make_run()
    run.status = RunStatus.RUNNING
    path = results.save(run, tmp_path / "r.json")
    shown = " ".join(invoke("show", str(path)).output.split())  # a long path may wrap the line
    assert "running (but no gpubench run is writing it: ended outright?)" in shown
    with Claim(path) as held:
        assert held.acquire()
        first = invoke("show", str(path)).output.splitlines()[0]
        assert ", running, " in first and "no gpubench run" not in first


@pytest.mark.parametrize("args", [["show", "missing.json"], ["show", "run.json"], ["list"]])
def test_a_closed_stdout_or_stderr_is_one_line_and_exit_2(tmp_path, make_run, args):
    """Started with stdout closed (>&-) every command exited 0 having shown nothing, and an error ended in a
    traceback (exit 1: None has no flush); with stderr closed too (2>&-) the exit code was 1."""
    import os
    import subprocess
    import sys

    results.save(make_run(), tmp_path / "run.json")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    for closing in (">&-", ">&- 2>&-", "2>&- >/dev/full"):
        r = subprocess.run(["bash", "-c", f'"$0" -m gpubench "$@" {closing}', sys.executable, *args], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (closing, r.stderr)
        if closing == ">&-":
            assert r.stderr == "gpubench: error: the standard output is closed (>&-): give it somewhere to write, " \
                               "e.g. >/dev/null\n"


def test_show_example_needs_no_file_and_takes_no_file():
    r = invoke("show", "--example")
    assert r.exit_code == 0 and "NVIDIA H200, 352 points, complete" in r.stdout.splitlines()[0], r.output
    one_line_error(invoke("show"), "give a results FILE, or --example")
    one_line_error(invoke("show", "x.json", "--example"), "not both")
