"""The CUDA backend, one idea a module: backend.py (the backend and its dispatch by runner), clock.py (events,
flushes, queued batches), device.py (what the device is and its measured ceilings), kernels.py (compiling and
launching our kernels), libraries.py (cuBLAS, cuDNN), cudnn_conv.py (the cuDNN frontend graph), tma.py (TMA
descriptors through the driver). Nothing here is imported until a run asks for the CUDA backend."""

from gpubench.backends.cuda.backend import CudaBackend, import_gpu_stack

__all__ = ["CudaBackend", "import_gpu_stack"]
