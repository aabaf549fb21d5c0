"""The roofline's bound uses the ceiling of the point's own precision."""


import pytest

from gpubench.analysis import roofline
from gpubench.core.dtypes import DType
from gpubench.ops.gemm import GemmLayout
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point

CEILINGS = {"ffma_gflops": 60_000, "tf32_gflops": 400_000, "fp16_gflops": 700_000, "bf16_gflops": 780_000,
            "fp8_gflops": 1_300_000, "copy_gbps": 3000, "l2_read_gbps": 9000}


def point(dtype, size=8192, ms=2.0):
    shape = GemmShape(size, size, size, dtype, GemmLayout.NT)
    return Point.measured(shape, "cublas", "-", samples_ms=[ms] * 5, rel_err=1e-3, tolerance=1e-2)


@pytest.fixture
def run(make_run):
    r = make_run(clocks=1980)
    r.environment["device"]["ceilings"] = dict(CEILINGS)
    return r


@pytest.mark.parametrize("dtype,key", [(DType.FP32, "ffma_gflops"), (DType.TF32, "tf32_gflops"),
                                       (DType.FP16, "fp16_gflops"), (DType.BF16, "bf16_gflops"),
                                       (DType.FP8, "fp8_gflops")])
def test_a_compute_bound_point_is_bounded_by_its_precisions_peak(run, dtype, key):
    p = point(dtype)
    assert roofline.bound(p, run) == (CEILINGS[key], "compute")
    assert roofline.share(p, run) == pytest.approx(p.gflops / CEILINGS[key])


def test_a_precision_the_run_did_not_measure_has_no_bound(run):
    assert roofline.bound(point(DType.INT8), run) is None


def test_the_memory_roof_counts_the_precisions_bytes(run):
    """A small bf16 GEMM moves half the bytes of fp32: its memory roof is twice as high."""
    fp32, bf16 = point(DType.FP32, size=16), point(DType.BF16, size=16)
    (m32, kind32), (m16, kind16) = roofline.bound(fp32, run), roofline.bound(bf16, run)
    assert kind32 == kind16 == "memory" and m16 == pytest.approx(2 * m32)


def test_peaks_are_every_measured_precision_fp32_first(run):
    assert [name for name, _ in roofline.peaks(run)] == ["FP32", "TF32", "FP16", "BF16", "FP8"]
    del run.environment["device"]["ceilings"]["fp8_gflops"]
    assert "FP8" not in [name for name, _ in roofline.peaks(run)]


def test_an_old_run_without_precision_peaks_still_bounds_fp32(run):
    run.environment["device"]["ceilings"] = {k: CEILINGS[k] for k in ("ffma_gflops", "tf32_gflops", "copy_gbps")}
    assert roofline.bound(point(DType.FP32), run)[0] == CEILINGS["ffma_gflops"]
    assert roofline.bound(point(DType.BF16), run) is None
