"""On a GPU: every library path in every precision and layout it declares, on ragged shapes, against the float64
product of the rounded inputs (the error model's tolerance for the shape's dtype and reduction). What a library
refuses is asserted too, so a change in what it takes shows here.

What the H100 and H200 libraries refused when these were written (cuBLAS 13.1, cuDNN 9.19):
- cuBLAS GemmEx takes every shape in fp32, tf32, fp16 and bf16, every layout;
- cuBLASLt fp8 takes only `nt` (both operands K-contiguous) and sizes that are multiples of 16;
- cuBLASLt int8 takes every layout, and refuses odd sizes;
- cuDNN takes fp16 and bf16 with channels that are not multiples of 8, in NCHW and NHWC.
"""

import math

import pytest

from gpubench.specs import catalog
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout
from gpubench.core.errors import Skip
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.execution.tasks import verify

pytestmark = pytest.mark.gpu

CATALOG = catalog.Catalog(catalog.builtin())
RAGGED = [(1000, 1001, 999), (127, 77, 33), (33, 1, 7)]  # no dimension a multiple of 8 or 16
SIXTEENS = (1040, 1008, 1056)  # multiples of 16, of no larger power of two: what cuBLASLt's fp8 needs
FOURS = (1004, 1012, 1020)  # multiples of 4, not of 8


def fp8_taken(layout, m, n, k) -> bool:
    return layout == GemmLayout.NT and m % 16 == 0 and n % 16 == 0 and k % 16 == 0


def int8_taken(layout, m, n, k) -> bool:
    return all(d % 2 == 0 for d in (m, n, k))


TAKEN = {"cublaslt": {DType.FP8: fp8_taken, DType.INT8: int8_taken}}


def gemm_cases():
    for v in CATALOG.variants("gemm", "cuda"):
        if not v.code.runner.library_math or v.code.runner.STEPS:
            continue
        for dtype in v.scope.dtypes:
            for layout in v.scope.layouts:
                for m, n, k in RAGGED + [SIXTEENS, FOURS]:
                    yield pytest.param(v, GemmShape(m, n, k, dtype, layout), id=f"{v.name}-{dtype}-{layout}-{m}x{n}x{k}")


def conv_cases():
    """The float precisions in NCHW and NHWC (int8 and 32-channel vectors: tests/test_gpu_int8_conv.py)."""
    for v in CATALOG.variants("conv", "cuda"):
        if not v.code.runner.library_math or v.code.runner.STEPS:
            continue
        for dtype in (d for d in v.scope.dtypes if not PRECISIONS[d].integer):
            for layout in (x for x in v.scope.layouts if x != ConvLayout.NCHW_VECT_C):
                for shape in (conv_shape(17, 1, batch=3, in_channels=13, out_channels=7, dtype=dtype, layout=layout),
                              conv_shape(19, 2, batch=2, in_channels=9, out_channels=33, padding="valid", dtype=dtype,
                                         layout=layout)):
                    yield pytest.param(v, shape, id=f"{v.name}-{dtype}-{layout}-{shape.label}-s{shape.stride}")


def check(cuda, data, variant, shape, taken=True):
    inputs, ref = data(shape)
    config = variant.space.configs[0]
    if not taken:
        with pytest.raises(Skip) as refused:
            cuda.prepare(variant, config, shape, inputs)
        assert str(refused.value), "a refusal says why"
        return
    prepared = cuda.prepare(variant, config, shape, inputs)
    err = verify(cuda, prepared, ref, shape)
    assert math.isfinite(err), f"{variant.name} {shape.full_label}: NaN/unwritten output"
    tol = cuda.tolerance(variant, shape)
    assert err <= tol, f"{variant.name} {shape.full_label}: rel_err {err:.2e} over {tol:.2e}"
    prepared.release()


@pytest.mark.parametrize("variant,shape", list(gemm_cases()))
def test_library_gemm(cuda, data, variant, shape):
    rule = TAKEN.get(variant.code.runner.NAME, {}).get(shape.dtype)
    check(cuda, data, variant, shape, rule(shape.layout, shape.m, shape.n, shape.k) if rule else True)


@pytest.mark.parametrize("variant,shape", list(conv_cases()))
def test_library_conv(cuda, data, variant, shape):
    check(cuda, data, variant, shape)


@pytest.mark.parametrize("dtype", [DType.BF16, DType.FP8])
def test_an_unwritten_raw_output_fails(cuda, data, dtype):
    """bfloat16 outputs live as raw uint16: their NaN poison must still read back as NaN."""
    v = CATALOG.get("gemm", "cuda", "cublaslt" if dtype == DType.FP8 else "cublas")
    shape = GemmShape(*SIXTEENS, dtype, GemmLayout.NT)
    inputs, ref = data(shape)
    prepared = cuda.prepare(v, v.space.configs[0], shape, inputs)
    prepared.run = lambda: None
    assert verify(cuda, prepared, ref, shape) == math.inf


def test_the_ceilings_have_every_precision(cuda):
    c = cuda.ceilings()
    for key in ("ffma_gflops", "tf32_gflops", "fp16_gflops", "bf16_gflops"):
        assert c[key] > 0, key
    assert c["bf16_gflops"] > 1.5 * c["tf32_gflops"] > 3 * c["ffma_gflops"]  # H100: 783, 394, 65 TFLOP/s
    if "fp8_gflops" in c:
        assert c["fp8_gflops"] > 1.3 * c["bf16_gflops"]
