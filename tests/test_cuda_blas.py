"""The CUDA backend's BLAS plumbing that needs no GPU: the row-major → column-major mapping of every layout
(checked by doing the column-major call in NumPy on the very buffers the library would get), and how raw
storage stands for bfloat16 and fp8."""

import ml_dtypes
import numpy as np
import pytest

from gpubench.backends.cuda import blas, storage
from gpubench.core.dtypes import DType
from gpubench.ops.gemm import GemmLayout


def column_major(buffer, rows, cols, ld):
    """The rows×cols column-major matrix with leading dimension ld that a BLAS reads from a flat buffer."""
    idx = np.arange(rows)[:, None] + np.arange(cols)[None, :] * ld
    return buffer[idx]


def blas_call(g: blas.ColumnMajor, first, second):
    """What cuBLAS computes for the call: op(first) · op(second), column-major, as an n×m matrix."""
    def operand(buf, op, ld, rows, cols):  # op(X) is rows×cols
        return column_major(buf, cols, rows, ld).T if op == blas.OP_T else column_major(buf, rows, cols, ld)

    return operand(first, g.op_first, g.ld_first, g.rows, g.inner) @ operand(second, g.op_second, g.ld_second,
                                                                              g.inner, g.cols)


@pytest.mark.parametrize("layout", list(GemmLayout))
@pytest.mark.parametrize("m,n,k", [(5, 3, 7), (1, 4, 2), (6, 6, 1)])
def test_the_column_major_call_computes_the_row_major_product(layout, m, n, k):
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    a_stored = a.T.copy() if layout.a_transposed else a  # what lies in memory, row-major
    b_stored = b.T.copy() if layout.b_transposed else b
    g = blas.column_major(m, n, k, layout.a_transposed, layout.b_transposed)
    c_t = blas_call(g, b_stored.ravel(), a_stored.ravel())  # Cᵀ, column-major n×m with ld n
    c_row_major = np.empty(m * n)
    c_row_major[(np.arange(n)[:, None] + np.arange(m)[None, :] * n).ravel()] = c_t.ravel()
    np.testing.assert_allclose(c_row_major.reshape(m, n), a @ b, rtol=1e-12)


def test_a_wrong_leading_dimension_is_caught():
    """The check above can fail: swap the transposition of one operand and the product is wrong."""
    rng = np.random.default_rng(0)
    m, n, k = 4, 3, 5
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    g = blas.column_major(m, n, k, False, True)  # claims B is stored n×k; it is k×n
    with pytest.raises((AssertionError, IndexError, ValueError)):
        c_t = blas_call(g, b.ravel(), a.ravel())
        np.testing.assert_allclose(c_t.T, a @ b, rtol=1e-12)


def test_raw_storage_round_trips_bfloat16_and_fp8():
    x = np.array([1.5, -2.25, 0.0078125], dtype=ml_dtypes.bfloat16)
    raw = storage.raw_view(x)
    assert raw.dtype == np.uint16 and storage.device_type(ml_dtypes.bfloat16) == np.uint16
    assert (storage.as_host(raw, ml_dtypes.bfloat16) == x).all()
    f8 = np.array([448, -0.5], dtype=ml_dtypes.float8_e4m3fn)
    assert storage.raw_view(f8).dtype == np.uint8
    assert storage.device_type(np.float16) == np.float16  # CuPy has it: no raw storage
    assert storage.raw_view(np.ones(2, np.float32)).dtype == np.float32


@pytest.mark.parametrize("kind", [np.uint16, np.uint8, np.float16, np.float32])
def test_nan_bits_read_back_as_nan(kind):
    bits = storage.nan_bits(kind)
    host = storage.HOST_OF_RAW.get(np.dtype(kind), np.dtype(kind))
    assert bits.dtype == np.dtype(kind) and np.isnan(bits.view(host).astype(np.float32)).all()


def test_fp8_needs_ada_or_hopper():
    assert DType.FP8 not in storage.dtypes_for((8, 0))
    assert DType.FP8 in storage.dtypes_for((8, 9)) and DType.FP8 in storage.dtypes_for((9, 0))
    assert DType.BF16 in storage.dtypes_for((8, 0)) and DType.BF16 not in storage.dtypes_for((7, 5))


def test_every_dtype_a_gemm_computes_in_has_its_blas_types():
    from gpubench.specs import catalog

    gemms = {d for v in catalog.Catalog(catalog.builtin()).variants("gemm", "cuda") for d in v.scope.dtypes}
    assert set(storage.BLAS_TYPES) == gemms  # int8-fp32 and int8-int8 are convolutions' only (cuDNN's)
    assert storage.BLAS_TYPES[DType.FP8].out == blas.CUDA_R_16BF  # fp8 in, bf16 out
