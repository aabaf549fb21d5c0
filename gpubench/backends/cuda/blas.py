"""cuBLAS and cuBLASLt matrix products on raw device pointers, in every precision the libraries take.

gpubench's GEMM is row-major: C[m,n] = A[m,k]·B[k,n], where a layout stores A as its transpose (k×m) or B as its
transpose (n×k). The BLAS libraries are column-major, and a row-major matrix is its transpose in column-major
terms, so the product is computed as Cᵀ[n,m] = op(B)·op(A): B comes first, and an operand stored transposed is
the one the library must transpose back (op = T), with the leading dimension of its storage.

cuBLAS (cublasGemmStridedBatchedEx, through CuPy's bindings) takes fp32, TF32, fp16 and bf16 in any layout and
any shape. FP8 and int8 go through cuBLASLt (nvmath-python's raw bindings): on Hopper both want the "TN" form
in column-major terms, A and B both K-contiguous, which is the row-major `nt` layout, and cuBLASLt refuses the
others (:class:`LtRefused`, with its words). The numeric codes are CUDA's (library_types.h, cublas_api.h).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# cudaDataType_t (library_types.h)
CUDA_R_32F, CUDA_R_16F, CUDA_R_8I, CUDA_R_32I, CUDA_R_16BF, CUDA_R_8F_E4M3 = 0, 2, 3, 10, 14, 28
# cublasComputeType_t (cublas_api.h)
COMPUTE_32F, COMPUTE_32I, COMPUTE_32F_FAST_TF32 = 68, 72, 77
OP_N, OP_T = 0, 1
LT_WORKSPACE_BYTES = 32 << 20  # what cuBLASLt may use; its fastest Hopper kernels ask for a few MiB


@dataclass(frozen=True)
class BlasTypes:
    """What a product's operands and output are, in CUDA's codes."""

    a: int  # A's and B's element type
    out: int  # C's
    compute: int  # cublasComputeType_t
    scale: int  # alpha's and beta's type


@dataclass(frozen=True)
class ColumnMajor:
    """The row-major problem as the column-major call Cᵀ = op(B)·op(A): sizes, ops and leading dimensions."""

    rows: int  # of Cᵀ: n
    cols: int  # of Cᵀ: m
    inner: int  # k
    op_first: int  # op of B
    ld_first: int
    op_second: int  # op of A
    ld_second: int


def column_major(m: int, n: int, k: int, a_transposed: bool, b_transposed: bool) -> ColumnMajor:
    """B stored k×n (row-major) is column-major n×k with ld n, already Bᵀ: op N. B stored n×k is column-major
    k×n with ld k: op T. Likewise A: stored m×k → op N, ld k; stored k×m → op T, ld m."""
    return ColumnMajor(n, m, k, OP_T if b_transposed else OP_N, k if b_transposed else n,
                       OP_T if a_transposed else OP_N, m if a_transposed else k)


def _scalars(types: BlasTypes):
    kind = np.int32 if types.scale == CUDA_R_32I else np.float32
    return np.ones(1, kind), np.zeros(1, kind)


def cublas_gemm(cp, m, n, k, a_ptr, a_transposed, b_ptr, b_transposed, c_ptr, types: BlasTypes,
                stride_a=0, stride_b=0, stride_c=0, batch=1):
    """A callable running C = A·B once (batched by element strides) through cublasGemmStridedBatchedEx."""
    from cupy_backends.cuda.libs import cublas

    handle = cp.cuda.device.get_cublas_handle()
    one, zero = _scalars(types)
    g = column_major(m, n, k, a_transposed, b_transposed)

    def run():
        cublas.setStream(handle, cp.cuda.get_current_stream().ptr)  # the null stream, or a graph's capturing one
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmStridedBatchedEx(
            handle, g.op_first, g.op_second, g.rows, g.cols, g.inner, one.ctypes.data, b_ptr, types.a, g.ld_first,
            stride_b, a_ptr, types.a, g.ld_second, stride_a, zero.ctypes.data, c_ptr, types.out, g.rows, stride_c,
            batch, types.compute, cublas.CUBLAS_GEMM_DEFAULT)

    return run


class LtRefused(RuntimeError):
    """cuBLASLt has no algorithm for this product, or declined to run it (its words, one line)."""


def _words(e: BaseException) -> str:
    """nvmath's message for a cuBLASLt status, without its advice on logging."""
    text = " ".join(str(e).split())
    return text.split(" You can set")[0].rstrip(". ") or type(e).__name__


class LtMatmul:
    """One cuBLASLt product, planned once: descriptors, per-tensor scale pointers (fp8) and the heuristic's first
    algorithm. ``run(a_ptr, b_ptr, c_ptr)`` launches it on CuPy's current stream (the legacy default stream, or a
    graph's capturing stream)."""

    def __init__(self, cp, m, n, k, a_transposed, b_transposed, types: BlasTypes, scale_ptrs=None):
        from nvmath.bindings import cublasLt as lt

        self._lt, self._cp = lt, cp
        self._handle = _lt_handle(lt)
        g = column_major(m, n, k, a_transposed, b_transposed)
        self._made: list[tuple] = []  # (destroy, descriptor), undone by close()
        try:
            self._desc = self._make(lt.matmul_desc_create(types.compute, types.scale), lt.matmul_desc_destroy)
            attr = lt.MatmulDescAttribute
            self._set(attr.TRANSA, g.op_first)
            self._set(attr.TRANSB, g.op_second)
            if scale_ptrs is not None:  # the library's A is our B: its scale is B's
                a_scale, b_scale = scale_ptrs
                self._set(attr.A_SCALE_POINTER, b_scale)
                self._set(attr.B_SCALE_POINTER, a_scale)
            first = (g.inner, g.rows) if g.op_first == OP_T else (g.rows, g.inner)
            second = (g.cols, g.inner) if g.op_second == OP_T else (g.inner, g.cols)
            self._a = self._layout(types.a, *first, g.ld_first)
            self._b = self._layout(types.a, *second, g.ld_second)
            self._c = self._layout(types.out, g.rows, g.cols, g.rows)
            pref = self._make(lt.matmul_preference_create(), lt.matmul_preference_destroy)
            limit = np.array([LT_WORKSPACE_BYTES], dtype=np.uint64)
            lt.matmul_preference_set_attribute(pref, lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES,
                                               limit.ctypes.data, limit.nbytes)
            self._results = lt.MatmulHeuristicResult(1)
            found = np.zeros(1, np.int32)
            try:
                lt.matmul_algo_get_heuristic(self._handle, self._desc, self._a, self._b, self._c, self._c, pref, 1,
                                             self._results.ptr, found.ctypes.data)
            except lt.cuBLASLtError as e:
                raise LtRefused(f"cuBLASLt has no algorithm for it: {_words(e)}") from None
            if found[0] < 1:
                raise LtRefused("cuBLASLt has no algorithm for it")
        except BaseException:
            self.close()
            raise
        self.workspace_bytes = int(self._results.workspace_size)
        self._workspace = cp.empty(max(self.workspace_bytes, 1), dtype=cp.uint8)
        self._one, self._zero = _scalars(types)

    def _make(self, handle, destroy):
        self._made.append((destroy, handle))
        return handle

    def _set(self, attr, value):
        buf = np.array([value], dtype=self._lt.get_matmul_desc_attribute_dtype(attr))
        self._lt.matmul_desc_set_attribute(self._desc, attr, buf.ctypes.data, buf.nbytes)

    def _layout(self, kind, rows, cols, ld):
        return self._make(self._lt.matrix_layout_create(kind, rows, cols, ld), self._lt.matrix_layout_destroy)

    def run(self, a_ptr: int, b_ptr: int, c_ptr: int) -> None:
        try:
            self._lt.matmul(self._handle, self._desc, self._one.ctypes.data, b_ptr, self._a, a_ptr, self._b,
                            self._zero.ctypes.data, c_ptr, self._c, c_ptr, self._c, self._results.ptr,
                            self._workspace.data.ptr, self.workspace_bytes, self._cp.cuda.get_current_stream().ptr)
        except self._lt.cuBLASLtError as e:
            raise LtRefused(f"cuBLASLt declined to run it: {_words(e)}") from None

    def close(self) -> None:
        while self._made:
            destroy, handle = self._made.pop()
            destroy(handle)


_LT_HANDLE = None  # one cuBLASLt handle per process


def _lt_handle(lt) -> int:
    global _LT_HANDLE
    if _LT_HANDLE is None:
        _LT_HANDLE = lt.create()
    return _LT_HANDLE


def lt_version() -> str | None:
    """cuBLASLt's version ('13.1.0'), or None where nvmath-python or the library is missing. Never raises."""
    try:
        from nvmath.bindings import cublasLt as lt

        v = int(lt.get_version())
    except Exception:
        return None
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
