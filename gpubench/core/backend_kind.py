"""The backends gpubench runs on, as a type: what --backend, a spec's `backend`, a runner and a saved run name.

gpubench/backends/ holds the backends themselves; this is only their names, low enough in the house for the specs,
the plan and the use cases to branch on without importing a backend.
"""

from __future__ import annotations

from enum import StrEnum


class BackendKind(StrEnum):
    CUDA = "cuda"  # an NVIDIA GPU: PyCUDA kernels, cuBLAS/cuDNN, Python functions on CuPy or PyTorch arrays
    CPU = "cpu"  # NumPy (and a project's Python functions), no GPU needed
