"""The use-case layer's checks before anything runs: what the device must allow."""

import pytest

from gpubench import catalog
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
