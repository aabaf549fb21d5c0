"""The use-case layer's checks before anything runs: what the device must allow, and the output's claim (two runs
never write one file)."""

import time
from contextlib import ExitStack

import pytest
from click.testing import CliRunner
from conftest import SIZES, saved_points, start_sweep

from gpubench import catalog, results, session
from gpubench.cli import cli
from gpubench.exit_codes import Exit
from gpubench.session import check_device, device_launches
from gpubench.errors import GpubenchError
from gpubench.problems import GemmShape
from gpubench.runner import PointTask, ShapeTask
from gpubench.timing import TimingPolicy

FAST = TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=0.0)
TMA = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "tf32-tma")  # a persistent grid: min(tiles, SMS)


def work(variant, shape=GemmShape(4096, 4096, 4096)):
    return [ShapeTask("t", shape, 0, tuple(PointTask(i, variant, c, FAST) for i, c in enumerate(variant.configs)))]


def test_a_persistent_grid_is_sized_by_the_devices_multiprocessors():
    """4096² in 256 × 128 tiles is 512 tiles, more than either GPU's SMs: the grid is the device's SM count, so a
    launch path that ignored it (or used a sample count) would give the same grid for both devices."""
    (task,) = work(TMA)
    for sms in (114, 132):
        check_device([task], {"max_threads": 1024, "sms": sms, "arch": "sm_90"}, [TMA])
        (main,) = device_launches(task, task.points[0], {"sms": sms})
        assert main.grid == (sms, 1, 1)


def test_a_block_larger_than_the_device_allows_is_one_line_naming_the_variant():
    with pytest.raises(GpubenchError, match=r"variant 'tf32-tma': configuration .* launches blocks of 384 threads; "
                                            r"this GPU allows at most 256"):
        check_device(work(TMA), {"max_threads": 256, "sms": 132, "arch": "sm_90"}, [TMA])


LT = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "cublaslt")


def test_fp8_on_a_gpu_without_fp8_tensor_cores_is_refused_before_anything_runs():
    from gpubench.dtypes import DType, GemmLayout

    fp8 = work(LT, GemmShape(4096, 4096, 4096, DType.FP8, GemmLayout.NT))
    ampere = {"max_threads": 1024, "sms": 108, "arch": "sm_80", "device": "NVIDIA A100",
              "dtypes": ["fp32", "tf32", "fp16", "bf16", "int8"], "libraries": {"cublaslt": "13.1.0"}}
    with pytest.raises(GpubenchError, match=r"fp8 needs tensor cores this GPU \(NVIDIA A100, sm_80\) does not have; "
                                            r"it computes in fp32, tf32, fp16, bf16, int8"):
        check_device(fp8, ampere, [LT])
    check_device(fp8, {**ampere, "arch": "sm_90", "dtypes": [*ampere["dtypes"], "fp8"]}, [LT])
    check_device(fp8, {"arch": None}, [LT])  # the CPU backend says nothing about tensor cores


# --- one run per output file ------------------------------------------------------------------------------------


def test_a_second_run_on_the_same_output_is_refused_naming_the_first(slow_project):
    """Two real gpubench processes given the same -o (--force too): the second is refused at once, in one line
    naming the first's process, and the first saves every one of its points."""
    first = start_sweep(slow_project, "--force")
    deadline = time.monotonic() + 60
    while saved_points(slow_project / "r.json") < 1:
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    for extra in (["--force"], []):
        second = start_sweep(slow_project, *extra)
        out, err = second.communicate(timeout=60)
        assert second.returncode == Exit.USAGE, err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"-o r.json is being written by another gpubench run (pid {first.pid} on" in err
    _, err = first.communicate(timeout=120)
    assert first.returncode == Exit.OK, err
    run = results.load(slow_project / "r.json")
    assert run.status == "complete" and [p.problem.m for p in run.points] == SIZES
    assert not (slow_project / ".r.json.lock").exists()  # released at the end
    third = start_sweep(slow_project, "--force", "--sizes", "16")  # and so a later run may take the path
    assert third.wait(timeout=60) == Exit.OK


def test_the_claim_is_released_when_a_run_stops_on_an_error(tmp_path, monkeypatch):
    def refuse(*args):
        raise GpubenchError("the device refused")

    monkeypatch.setattr(session, "check_device", refuse)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "16", "-o", str(tmp_path / "r.json")])
    assert r.exit_code == Exit.USAGE and "the device refused" in r.output
    assert not (tmp_path / ".r.json.lock").exists()
    with results.Claim(tmp_path / "r.json") as again:
        assert again.acquire()


def test_two_runs_without_an_output_in_the_same_second_get_names_of_their_own(tmp_path, monkeypatch):
    claims = ExitStack()
    with claims:
        first = session.default_output("CPU: x", "gemm", claims)
        second = session.default_output("CPU: x", "gemm", claims)  # the first is still being written (claimed)
        assert first != second and first.parent == second.parent
