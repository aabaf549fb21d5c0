"""On a GPU with Nsight Compute: `gpubench profile` of every kind of variant (a CUDA kernel, cuBLAS, cuDNN, a CuPy
RawKernel, Triton and PyTorch where installed), each point's one timed call profiled and named (needs a GPU, ncu,
and counters this user may read: skipped where the driver refuses them)."""

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.analysis.limiter import Limit, verdict
from gpubench.cli import cli
from gpubench.execution import profiled
from gpubench.results.profile import Gap

pytestmark = pytest.mark.gpu
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def profile(tmp_path, *args):
    if profiled.find_ncu() is None:
        pytest.skip("ncu not found")
    out = tmp_path / "p.json"
    r = CliRunner().invoke(cli, ["profile", *args, "--reps", "5", "--budget", "0.2", "-o", str(out)])
    run = results.load(out)
    profiles = [p.details.profile for p in run.points]
    if any(pr is not None and pr.gap == Gap.NOT_PERMITTED for pr in profiles):
        pytest.skip("the driver keeps the performance counters to administrators here")
    assert r.exit_code == 0, r.output
    assert "what limits each point" in r.output
    return run


def test_a_kernel_and_cublas_are_profiled_and_named(tmp_path):
    run = profile(tmp_path, "gemm", "--sizes", "1024", "--variants", "tiled,cublas")
    for p in run.points:
        pr = p.details.profile
        assert pr.taken and pr.launches >= 1 and pr.metrics["duration_ns"] > 0, (p.variant, pr)
        assert 0 < pr.metrics["sm_pct"] <= 100
        # registers per thread where this ncu lists launch__registers_per_thread (2025.3.1 on an H200 did not)
        assert pr.metrics.get("registers", 1) > 0
        assert pr.totals["dram_read_bytes"] > 0 and pr.totals["instructions"] > 0
        assert verdict(pr).limit != Limit.UNPROFILED
    kernels = {p.variant: p.details.profile.kernel for p in run.points}
    assert kernels["tiled"] == "gemm_tiled" and kernels["cublas"] and kernels["cublas"] != "gemm_tiled"


def test_cudnn_is_profiled_and_its_kernel_named(tmp_path):
    run = profile(tmp_path, "conv", "--sizes", "56", "--stride", "1", "--batch", "8", "--in-channels", "64",
                  "--out-channels", "64", "--padding", "1", "--variants", "cudnn")
    pr = run.points[0].details.profile
    assert pr.taken and pr.kernel and pr.launches >= 1


def test_a_cupy_raw_kernel_of_a_project_is_profiled(tmp_path):
    run = profile(tmp_path, "gemm", "--sizes", "1024", "--variants", "cupy-tiled", "--config",
                  str(EXAMPLES / "cupy" / "gpubench.toml"))
    assert all(p.details.profile.kernel == "gemm_tiled" for p in run.points)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None,
                    reason="Triton and PyTorch are not installed")
def test_triton_and_torch_are_profiled(tmp_path):
    run = profile(tmp_path, "gemm", "--sizes", "1024", "--variants", "triton,torch-matmul", "--config",
                  str(EXAMPLES / "triton" / "gpubench.toml"))
    assert {p.variant for p in run.points} == {"triton", "torch-matmul"}
    assert all(p.details.profile.taken and p.details.profile.kernel for p in run.points)
