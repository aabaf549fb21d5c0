"""The precisions: inputs drawn in the dtype, the error model's tolerances, and that the model catches a kernel that
cheats (accumulates in fp16 while claiming fp32, truncates instead of rounding, drops a k-slice) while passing an
honest one. The planted kernels run through the CPU backend exactly as a user's variant would."""

import math

import ml_dtypes
import numpy as np
import pytest

from gpubench.core import dtypes
from gpubench.specs import files
from gpubench.backends.cpu import CpuBackend
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout
from gpubench.core.errors import GpubenchError
from gpubench.ops.gemm import GemmShape
from gpubench.execution.tasks import verify
from gpubench.specs.variant import NO_CONFIG


def test_tolerance_grows_with_the_reduction_and_is_exact_for_integers():
    for d in (DType.FP16, DType.BF16, DType.FP8):
        assert dtypes.tolerance(d, 64, 10**6) < dtypes.tolerance(d, 65536, 10**6)
    assert dtypes.tolerance(DType.INT8, 4096, 10**6) == 0.0
    # fp32 and tf32 keep the bounds gpubench used before the model (floors)
    assert dtypes.tolerance(DType.FP32, 8192, 8192**2) == 1e-4
    assert dtypes.tolerance(DType.TF32, 8192, 8192**2) == 5e-3


def test_a_few_outputs_may_cost_a_whole_rounding():
    """One output element rounded to nearest may be off by up to u: a 5×5 result must not fail by chance."""
    u = PRECISIONS[DType.BF16].u_out
    assert dtypes.tolerance(DType.BF16, 5, 25) >= u
    assert dtypes.tolerance(DType.BF16, 5, 10**6) < 0.75 * u  # c_out = 0.7: cuBLAS double-rounds at 0.61·u, truncation is 0.85·u


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16, DType.FP8, DType.INT8])
def test_inputs_are_drawn_in_the_dtype_and_never_zero(dtype):
    values, scale = dtypes.draw(np.random.default_rng(1), (64, 48), dtype)
    assert values.dtype == np.dtype(PRECISIONS[dtype].storage)
    assert np.count_nonzero(values.astype(np.float64)) > 0.9 * values.size
    assert (scale is not None) == PRECISIONS[dtype].scaled
    if dtype == DType.FP8:  # the largest magnitude lands on e4m3's largest value
        assert float(np.abs(values.astype(np.float64)).max()) == dtypes.FP8_MAX
        assert dtypes.as_float64(values, scale).max() <= 1.0


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16, DType.FP8])
def test_inputs_are_symmetric_around_zero(dtype):
    """Uniform in [-1, 1): sums of products cancel as real data's do, which is what the error model's relative error
    is measured on (inputs of one sign never cancel and make any accumulator look accurate)."""
    values, scale = dtypes.draw(np.random.default_rng(2), (128, 128), dtype)
    x = dtypes.as_float64(values, scale)
    assert x.min() < -0.95 and x.max() > 0.95 and abs(x.mean()) < 0.02
    assert 0.45 < np.mean(x < 0) < 0.55


def test_parsing_names_what_is_allowed():
    assert dtypes.parse_dtypes("fp32, BF16,fp32") == (DType.FP32, DType.BF16)
    assert dtypes.parse_layouts("nt", GemmLayout) == (GemmLayout.NT,)
    for text in ("fp64", "", "fp32,,bf16"):
        with pytest.raises(GpubenchError, match="allowed: fp32, tf32, fp16, bf16, fp8, int8"):
            dtypes.parse_dtypes(text)
    with pytest.raises(GpubenchError, match="allowed: nchw, nhwc"):
        dtypes.parse_layouts("nn", ConvLayout)


# --- planted kernels -------------------------------------------------------------------------------------------

KERNELS = '''
import numpy as np
import ml_dtypes


def _operands(A, B):
    return A.astype(np.float32), B.astype(np.float32)


def honest(A, B, C, M, N, K):
    """fp32 accumulation, one rounding of the result to the output type: what a correct kernel does."""
    a, b = _operands(A, B)
    C[...] = (a @ b).astype(C.dtype)


def fp16_accumulator(A, B, C, M, N, K):
    """Claims fp32 accumulation, sums in fp16 (every partial sum rounded)."""
    a, b = _operands(A, B)
    acc = np.zeros((M, N), np.float16)
    for k in range(K):
        acc = (acc.astype(np.float32) + np.outer(a[:, k], b[k])).astype(np.float16)
    C[...] = acc.astype(C.dtype)


def truncates(A, B, C, M, N, K):
    """Rounds the result toward zero instead of to nearest."""
    a, b = _operands(A, B)
    y = a.astype(np.float64) @ b.astype(np.float64)
    t = y.astype(C.dtype)
    away = np.abs(t.astype(np.float64)) > np.abs(y)  # rounding went past the value: one step back towards zero
    t[away] = np.nextafter(t, np.zeros_like(t))[away]
    C[...] = t


def drops_a_k_slice(A, B, C, M, N, K):
    """Forgets the last 16 products of every sum (a tail loop that never runs)."""
    a, b = _operands(A, B)
    C[...] = (a[:, :K - 16] @ b[:K - 16]).astype(C.dtype)


def _rounded(x, bits):
    """x with `bits` significant bits kept (round to nearest): an accumulator of unit roundoff 2**-bits."""
    mantissa, exponent = np.frexp(x)
    return np.ldexp(np.round(mantissa * 2.0 ** bits) / 2.0 ** bits, exponent)


def fp8_honest(A, B, C, M, N, K, A_scale, B_scale):
    """fp8 with its per-tensor scales, fp32 accumulation, one rounding to the output: what a correct kernel does."""
    a, b = _operands(A, B)
    C[...] = ((a * A_scale[0]) @ (b * B_scale[0])).astype(C.dtype)


def fp8_ten_bit_accumulator(A, B, C, M, N, K, A_scale, B_scale):
    """Keeps 10 bits of every partial sum where the model allows for Hopper's ~14 (its FP8_MMA_U): the error of an
    accumulator 16 times coarser, e.g. one whose promotions to fp32 were forgotten."""
    a, b = _operands(A, B)
    a, b = (a * A_scale[0]).astype(np.float64), (b * B_scale[0]).astype(np.float64)
    acc = np.zeros((M, N))
    for k in range(K):
        acc = _rounded(acc + np.outer(a[:, k], b[k]), 10)
    C[...] = acc.astype(np.float32).astype(C.dtype)
'''


def planted(tmp_path, name: str, dtype: DType):
    path = tmp_path / "planted.py"
    path.write_text(KERNELS)
    (variant,) = files.parse_specs({"variant": [{
        "name": name.replace("_", "-"), "op": "gemm", "source": "planted.py", "kernel": name,
        "args": ["A", "B", "C", "M", "N", "K"] + (["A_scale", "B_scale"] if PRECISIONS[dtype].scaled else []),
        "dtypes": [str(dtype)]}]}, "gpubench.toml", tmp_path)
    return variant


def rel_err_and_tolerance(tmp_path, name: str, dtype: DType, shape_dims=(96, 80, 1024)) -> tuple[float, float]:
    cpu = CpuBackend()
    shape = GemmShape(*shape_dims, dtype=dtype)
    variant = planted(tmp_path, name, dtype)
    inputs = cpu.inputs(shape, seed=3)
    ref = cpu.reference(shape, inputs)
    err = verify(cpu, cpu.prepare(variant, NO_CONFIG, shape, inputs), ref, shape)
    return err, cpu.tolerance(variant, shape)


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16])
def test_an_honest_kernel_passes(tmp_path, dtype):
    err, tol = rel_err_and_tolerance(tmp_path, "honest", dtype)
    assert 0 < err < tol
    assert err == pytest.approx(0.42 * PRECISIONS[dtype].u_out, rel=0.1)  # the model's rounding estimate


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16])
@pytest.mark.parametrize("cheat", ["fp16_accumulator", "truncates", "drops_a_k_slice"])
def test_a_kernel_that_cheats_is_caught(tmp_path, dtype, cheat):
    err, tol = rel_err_and_tolerance(tmp_path, cheat, dtype)
    assert err > tol, f"{cheat} in {dtype}: rel_err {err:.2e} within tolerance {tol:.2e}"


def test_an_honest_fp8_kernel_passes_with_room(tmp_path):
    err, tol = rel_err_and_tolerance(tmp_path, "fp8_honest", DType.FP8)
    assert 0 < err < tol / 2


def test_an_fp8_accumulator_too_coarse_is_caught(tmp_path):
    """fp8 is where the accumulator's term of the model (C_ACC · u_acc · √K) outweighs the output's rounding. A kernel
    that keeps 10 bits of its sums (16 times Hopper's accumulator) is caught at K = 1024, with room to spare, which a
    tolerance five times looser in that term would not do."""
    err, tol = rel_err_and_tolerance(tmp_path, "fp8_ten_bit_accumulator", DType.FP8)
    assert err > 1.2 * tol, f"rel_err {err:.2e} within tolerance {tol:.2e}"


def test_the_reference_is_computed_from_the_rounded_inputs():
    """rel_err of an exact product of the rounded inputs is zero: the input quantisation is not counted."""
    cpu = CpuBackend()
    shape = GemmShape(40, 30, 20, dtype=DType.BF16, layout=GemmLayout.TN)
    inputs = cpu.inputs(shape, seed=0)
    a, b = inputs["A"].astype(np.float64).T, inputs["B"].astype(np.float64)  # tn: A stored transposed
    assert np.array_equal(cpu.reference(shape, inputs), a @ b)
    assert inputs["A"].shape == (20, 40) and inputs["A"].dtype == ml_dtypes.bfloat16  # A stored transposed
    assert not math.isclose(float(np.abs(inputs["A"].astype(np.float64)).sum()), 0.0)


@pytest.mark.parametrize("text", ["fp32,", "fp32,,bf16", ",fp16"])
def test_a_list_with_a_gap_is_not_called_empty(text):
    """--dtype 'fp32,' was told "'fp32,' is empty", which it is not."""
    with pytest.raises(GpubenchError, match="has an empty item"):
        dtypes.parse_dtypes(text)
    with pytest.raises(GpubenchError, match="is empty"):
        dtypes.parse_dtypes(" , ")
