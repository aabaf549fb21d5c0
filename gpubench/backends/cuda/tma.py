"""TMA descriptors (the driver's CUtensorMap) for kernels that copy tiles with Hopper's tensor memory accelerator.

A kernel spec's `tensor_maps` names an array and how it is tiled; the CUDA backend asks the driver to encode the
128-byte descriptor (cuTensorMapEncodeTiled), copies it to device memory and passes its address. Neither PyCUDA
nor CuPy wraps that call, so it goes through ctypes to libcuda, which the process has loaded already.

Why not by value, as a __grid_constant__ parameter? Through a packed parameter buffer (PyCUDA's prepared calls)
the driver places a 64-byte-aligned parameter at an offset of its own choosing (48 on an H100: measured with
cuFuncGetParamInfo), not where C's layout puts it; in global memory the descriptor needs no such knowledge.
"""

from __future__ import annotations

import ctypes

from gpubench.errors import Skip

FLOAT32 = 7  # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
INTERLEAVE_NONE = 0
SWIZZLE = {0: 0, 128: 3}  # bytes → CUtensorMapSwizzle: none, or 128-byte rows whose 16-byte chunks are
                          # XOR-ed with the row index (mod 8)
L2_PROMOTION_256B = 3
OOB_FILL_ZERO = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: elements outside the array arrive as zeros
DESCRIPTOR_BYTES = 128

_encode = None


def _driver_encode():
    global _encode
    if _encode is None:
        fn = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
        u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                       ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        _encode = fn
    return _encode


def check_tiling(name: str, pointer: int, cols: int) -> None:
    """TMA reads rows that start on 16-byte boundaries: the base address and the row pitch (cols floats)."""
    if cols * 4 % 16:
        raise Skip(f"tensor map {name}: TMA needs 16-byte aligned rows, and rows of {cols} floats are not "
                   "(the row length must be a multiple of 4)")
    if pointer % 16:
        raise Skip(f"tensor map {name}: TMA needs 16-byte aligned rows, and the array starts at {pointer:#x}")


def encode(name: str, pointer: int, shape: tuple[int, int], box: tuple[int, int], swizzle: int = 128) -> bytes:
    """The descriptor of a row-major float32 array of shape (rows, cols) at device address `pointer`, copied in
    boxes of box = (rows, cols) into shared memory, 128-byte-swizzled (swizzle = 128) or as they are (0)."""
    (rows, cols), (box_rows, box_cols) = shape, box
    check_tiling(name, pointer, cols)
    descriptor = (ctypes.c_uint64 * (DESCRIPTOR_BYTES // 8))()
    dims = (ctypes.c_uint64 * 2)(cols, rows)  # innermost first
    pitch = (ctypes.c_uint64 * 1)(cols * 4)  # bytes between rows (the innermost stride is the element)
    box_dims = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    rc = _driver_encode()(ctypes.byref(descriptor), FLOAT32, 2, ctypes.c_void_p(pointer), dims, pitch, box_dims,
                          steps, INTERLEAVE_NONE, SWIZZLE[swizzle], L2_PROMOTION_256B, OOB_FILL_ZERO)
    if rc != 0:
        raise Skip(f"tensor map {name}: the driver refused a {rows} × {cols} array in {box_rows} × {box_cols} "
                   f"boxes (cuTensorMapEncodeTiled error {rc})")
    return bytes(descriptor)
