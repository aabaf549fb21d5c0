"""gpubench: hand-written CUDA GEMM and convolution kernels, verified and timed against the vendor libraries."""

__version__ = "1.0.0"
