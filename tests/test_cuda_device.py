"""Which tensor-core ceilings a run measures (each one an 8192² draw on the host and seconds of products): only
those of the precisions its plan holds, and how that choice reaches the worker. No GPU needed."""

import pytest
from click.testing import CliRunner

from gpubench.execution import executors
from gpubench.backends.cuda import device
from gpubench.backends.cuda.storage import dtypes_for
from gpubench.cli import cli
from gpubench.core.dtypes import DType
from hostile import StandInWorker

HOPPER = dtypes_for((9, 0))
AMPERE = dtypes_for((8, 0))


def test_an_fp32_run_such_as_the_lab_measures_no_tensor_core_peak():
    assert device.peak_precisions(HOPPER, [DType.FP32]) == []


def test_a_run_measures_the_peaks_of_its_own_precisions_only():
    assert device.peak_precisions(HOPPER, [DType.FP32, DType.TF32]) == [DType.TF32]
    assert device.peak_precisions(HOPPER, {DType.BF16, DType.FP8}) == [DType.BF16, DType.FP8]


def test_a_precision_the_gpu_lacks_is_not_measured():
    assert DType.FP8 not in AMPERE
    assert device.peak_precisions(AMPERE, [DType.FP8, DType.FP16]) == [DType.FP16]


def test_without_a_plan_every_tensor_core_precision_is_measured():
    once = [DType.TF32, DType.FP16, DType.BF16, DType.FP8, DType.INT8]  # int8-fp32 and int8-int8 are int8's peak
    assert device.peak_precisions(HOPPER, None) == once


def test_an_int8_output_of_another_type_measures_int8s_peak_once():
    assert device.peak_precisions(HOPPER, [DType.INT8_INT8, DType.INT8_FP32]) == [DType.INT8]


class Facts(device.DeviceFacts):
    """DeviceFacts.tensor_core_peaks over a stand-in device: records what it drew and multiplied."""

    def __init__(self):
        self.drawn = []
        self.clock = None

    def upload(self, host):
        self.drawn.append(host.dtype)
        return host

    def output(self, shape):
        return None

    def _prepared(self, variant, config, shape, inputs, c):
        self.multiplied = getattr(self, "multiplied", []) + [shape.dtype]
        raise device.Skip("stand-in")  # a refusal leaves the ceiling out, as the library's would

    prepare_cublas = prepare_cublaslt = _prepared


def test_the_peaks_draw_and_multiply_only_the_precisions_given():
    facts = Facts()
    assert facts.tensor_core_peaks(None, [DType.TF32], n=64) == {}
    assert facts.multiplied == [DType.TF32] and len(facts.drawn) == 1
    facts = Facts()
    assert facts.tensor_core_peaks(None, [], n=64) == {} and facts.drawn == []


class Recording(StandInWorker):
    """The executor's stand-in: records the precisions the session asks the environment's ceilings for."""

    asked = []

    def environment(self, precisions=None):
        Recording.asked.append(precisions)
        return super().environment(precisions)


@pytest.mark.parametrize("dtypes, asked", [("fp32", [DType.FP32]), ("bf16,fp32", [DType.BF16, DType.FP32])])
def test_the_session_asks_for_the_ceilings_of_the_plans_precisions(tmp_path, monkeypatch, dtypes, asked):
    monkeypatch.setattr(executors, "Worker", Recording)
    Recording.asked = []
    result = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--sizes", "64", "--dtype", dtypes,
                                      "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert [sorted(a) for a in Recording.asked] == [sorted(asked)]
