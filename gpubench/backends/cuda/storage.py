"""How each precision lives on the GPU and what the CUDA libraries call it.

CuPy 14 has float16 but no bfloat16 or fp8: arrays of those types are kept as raw storage of the same width
(uint16, uint8), written and read through ml_dtypes on the host, and handed to kernels and libraries by address
alone. Everything that needs the CUDA name of a dtype (cuBLAS's and cuBLASLt's type codes, cuDNN's data type)
reads it here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from gpubench.backends.cuda import blas
from gpubench.core.dtypes import DType

# A host element type CuPy lacks -> the raw device type that holds its bits.
RAW = {np.dtype(ml_dtypes.bfloat16): np.dtype(np.uint16), np.dtype(ml_dtypes.float8_e4m3fn): np.dtype(np.uint8)}
HOST_OF_RAW = {raw: host for host, raw in RAW.items()}  # every output kept raw is bfloat16 (fp8's output too)

_F32 = blas.BlasTypes(blas.CUDA_R_32F, blas.CUDA_R_32F, blas.COMPUTE_32F, blas.CUDA_R_32F)
# cublasGemmEx's and cublasLtMatmul's types per dtype: inputs, output, compute, alpha/beta.
BLAS_TYPES = {
    DType.FP32: _F32,
    DType.TF32: blas.BlasTypes(blas.CUDA_R_32F, blas.CUDA_R_32F, blas.COMPUTE_32F_FAST_TF32, blas.CUDA_R_32F),
    DType.FP16: blas.BlasTypes(blas.CUDA_R_16F, blas.CUDA_R_16F, blas.COMPUTE_32F, blas.CUDA_R_32F),
    DType.BF16: blas.BlasTypes(blas.CUDA_R_16BF, blas.CUDA_R_16BF, blas.COMPUTE_32F, blas.CUDA_R_32F),
    DType.FP8: blas.BlasTypes(blas.CUDA_R_8F_E4M3, blas.CUDA_R_16BF, blas.COMPUTE_32F, blas.CUDA_R_32F),
    DType.INT8: blas.BlasTypes(blas.CUDA_R_8I, blas.CUDA_R_32I, blas.COMPUTE_32I, blas.CUDA_R_32I),
}
# cudnn.data_type's name for the inputs of a convolution in each dtype it runs (compute FLOAT, INT32 for int8) ...
CUDNN_IO = {DType.FP32: "FLOAT", DType.TF32: "FLOAT", DType.FP16: "HALF", DType.BF16: "BFLOAT16", DType.INT8: "INT8",
            DType.INT8_FP32: "INT8", DType.INT8_INT8: "INT8"}
# ... and for its output (and an epilogue's residual)
CUDNN_OUT = {**CUDNN_IO, DType.INT8: "INT32", DType.INT8_FP32: "FLOAT", DType.INT8_INT8: "INT8"}
# The first compute capability with tensor cores for each dtype that needs them to be worth measuring: FP8 MMA
# arrived with Ada (8.9) and Hopper (9.0); the rest with Volta/Turing/Ampere, below any GPU CUDA 13 supports
# except bf16 and tf32 (Ampere, 8.0).
MIN_CAPABILITY = {DType.TF32: (8, 0), DType.BF16: (8, 0), DType.FP8: (8, 9)}


def device_type(host_type) -> np.dtype:
    """The CuPy dtype that holds arrays of the host element type (raw storage where CuPy lacks it)."""
    host = np.dtype(host_type)
    return RAW.get(host, host)


def raw_view(host: np.ndarray) -> np.ndarray:
    """A host array as the bits its device copy holds (a view; no conversion)."""
    return host.view(device_type(host.dtype))


def as_host(stored: np.ndarray, host_type) -> np.ndarray:
    """A downloaded device array read as the host element type it stands for (a view of raw storage)."""
    return stored.view(np.dtype(host_type)) if stored.dtype != np.dtype(host_type) else stored


def nan_bits(device_dtype) -> np.ndarray:
    """NaN in a device array's element type, as a one-element array of it (ml_dtypes' NaN for raw storage)."""
    device_dtype = np.dtype(device_dtype)
    host = HOST_OF_RAW.get(device_dtype, device_dtype)
    return np.array([np.nan], dtype=host).view(device_dtype)


def dtypes_for(capability: tuple[int, int]) -> list[DType]:
    """The dtypes a GPU of this compute capability computes on tensor cores (or, for fp32, at all)."""
    return [d for d in DType if capability >= MIN_CAPABILITY.get(d, (0, 0))]
