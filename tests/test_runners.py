"""Runner types: made from a spec's name and options by one table, each checking its own options, and saying what
it needs (a source, launches, a library) so that nothing else branches on its name."""

import pytest

from gpubench.specs import catalog
from gpubench.specs import runners
from gpubench.usecases import session
from gpubench.core.errors import GpubenchError
from gpubench.specs.runners import (Arrays, CudnnRunner, Im2colRunner, KernelRunner, PlanPolicy, PythonGpuRunner,
                              PythonRunner, runner_from)


def test_each_name_makes_its_type_with_its_options():
    assert runner_from("cudnn", {"plans": "heuristic"}) == CudnnRunner(PlanPolicy.HEURISTIC)
    assert runner_from("im2col", {}).columns == "cols" and runner_from("im2col", {"columns": "m"}).columns == "m"
    assert runner_from("kernel", {"tf32": True}).tf32 and not runner_from("kernel", {}).tf32
    assert {r.NAME for r in runners.RUNNERS.values()} == set(runners.RUNNERS)


@pytest.mark.parametrize("name,options,match", [
    ("cudnn", {"plans": "fastest"}, "plans 'fastest'; allowed: heuristic, best"),
    ("numpy", {"plans": "best"}, "not for the numpy runner"),
    ("kernel", {"tf32": 1}, "tf32 is true or false"),
    ("fft", {}, "runner 'fft' is unknown"),
    ("python-cuda", {"arrays": "jax"}, "arrays 'jax'; allowed: cupy, torch"),
    ("python-cuda", {"tf32": "yes"}, "tf32 is true or false"),
    ("python-cuda", {"block": 128}, "options block are not for the python-cuda runner; allowed: arrays, tf32"),
])
def test_bad_options_say_what_is_allowed(name, options, match):
    with pytest.raises(ValueError, match=match):
        runner_from(name, options)


def test_library_math_is_what_tf32_relaxes():
    assert runner_from("cublas", {}).library_math and runner_from("cudnn", {}).library_math
    assert runner_from("im2col", {}).library_math
    assert not KernelRunner(tf32_kernel=True).library_math


def test_users_get_kernels_and_functions_only():
    assert runners.allowed("cuda", builtin=False) == ["kernel", "python-cuda"]
    assert runners.allowed("cpu", builtin=False) == ["python"]
    assert "cudnn" in runners.allowed("cuda", builtin=True)


def test_builtin_variants_carry_their_runners():
    known = catalog.Catalog.with_user([])
    assert known.get("conv", "cuda", "cudnn").code.runner == CudnnRunner(PlanPolicy.BEST)
    assert isinstance(known.get("conv", "cuda", "im2col-cublas").code.runner, Im2colRunner)


def test_a_missing_library_stops_the_run_before_it_starts():
    cudnn = catalog.Catalog.with_user([]).get("conv", "cuda", "cudnn")
    with pytest.raises(GpubenchError, match="cuDNN is not available .*leave out the cudnn variants"):
        session.check_device([], {"arch": "sm_90", "libraries": {"cudnn": None}}, [cudnn])
    session.check_device([], {"arch": "sm_90", "libraries": {"cudnn": "9.19"}}, [cudnn])


def test_a_python_gpu_function_gets_cupy_arrays_unless_it_asks_for_torch():
    assert runner_from("python-cuda", {}) == PythonGpuRunner(Arrays.CUPY)
    triton = runner_from("python-cuda", {"arrays": "torch", "tf32": True})
    assert triton.arrays == Arrays.TORCH and triton.tf32 and triton.options() == {"arrays": "torch", "tf32": True}


def test_a_python_source_defaults_to_the_python_runner_of_its_backend():
    assert runners.default("cuda", ".py") is PythonGpuRunner and runners.default("cpu", ".py") is PythonRunner
    assert runners.default("cuda", ".cu") is KernelRunner and runners.default("cuda", "") is KernelRunner


def test_only_cuda_sources_go_to_nvcc():
    assert KernelRunner.NVCC and Im2colRunner.NVCC and not PythonGpuRunner.NVCC and not PythonRunner.NVCC
    assert PythonGpuRunner.FUNCTION and PythonRunner.FUNCTION and not KernelRunner.FUNCTION


def test_only_cudnns_searched_and_kept_plans_are_prepared_before_a_sweep():
    from gpubench.specs.runners import CudnnRunner, CudnnSdpaRunner, PlanPolicy, searches_kept_plans

    assert searches_kept_plans(CudnnRunner())
    assert not searches_kept_plans(CudnnRunner(plans=PlanPolicy.HEURISTIC))  # cuDNN's first choice: no search
    assert not searches_kept_plans(CudnnSdpaRunner())  # searches in each process, keeps nothing
