"""TMA descriptors (the driver's CUtensorMap) for kernels that copy tiles with Hopper's tensor memory accelerator.

A kernel spec's `tensor_maps` names an array and how it is tiled; the CUDA backend asks the driver to encode the
128-byte descriptor (cuTensorMapEncodeTiled; cuTensorMapEncodeIm2col for a convolution's input read in im2col
mode), copies it to device memory and passes its address. Neither PyCUDA
nor CuPy wraps that call, so it goes through ctypes to libcuda, which the process has loaded already.

Why not by value, as a __grid_constant__ parameter? Through a packed parameter buffer (PyCUDA's prepared calls)
the driver places a 64-byte-aligned parameter at an offset of its own choosing (48 on an H100: measured with
cuFuncGetParamInfo), not where C's layout puts it; in global memory the descriptor needs no such knowledge.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from gpubench.core.errors import Skip
from gpubench.specs.geometry import TENSOR_MAP_MAX_DIMS

# CUtensorMapDataType per host element type (gpubench/core/dtypes.py's storage and output types). The copy engine
# only moves bytes and zero-fills, so e4m3 and int8 travel as bytes (CUTLASS does the same).
DATA_TYPES = {np.dtype(np.uint8): 0, np.dtype(ml_dtypes.float8_e4m3fn): 0, np.dtype(np.int8): 0,
              np.dtype(np.int32): 3, np.dtype(np.float16): 6, np.dtype(np.float32): 7,
              np.dtype(ml_dtypes.bfloat16): 9}
INTERLEAVE_NONE = 0
# bytes → CUtensorMapSwizzle: none, or rows of 32, 64 or 128 bytes whose 16-byte chunks are XOR-ed with the row
# index (mod 2, 4, 8): the layouts wgmma's descriptors name by the same widths
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
L2_PROMOTION_256B = 3
OOB_FILL_ZERO = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: elements outside the array arrive as zeros
DESCRIPTOR_BYTES = 128
# The driver's answer when it refuses the geometry itself (CUDA_ERROR_INVALID_VALUE). Any other code means the
# context is no longer usable (715, an illegal instruction, after an earlier kernel's fault): that must fail loudly,
# not pass as a refusal, or every later test in the same process would skip.
REFUSED = 1

# im2col maps of a 4-D (NHWC) tensor: the bounding box's corners are signed 8-bit, the traversal stride 1 to 8
# (cuTensorMapEncodeIm2col's limits for rank 4)
CORNER_RANGE = (-128, 127)
MAX_TRAVERSAL_STRIDE = 8

_encoders = {}


def _driver_encode(im2col: bool = False):
    """The driver's cuTensorMapEncodeTiled, or cuTensorMapEncodeIm2col, typed for ctypes (looked up once)."""
    if im2col not in _encoders:
        u32p, u64p, ip = (ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64),
                          ctypes.POINTER(ctypes.c_int))
        if im2col:
            fn = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeIm2col
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, ip, ip,
                           ctypes.c_uint32, ctypes.c_uint32, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                           ctypes.c_int]
        else:
            fn = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                           ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        _encoders[im2col] = fn
    return _encoders[im2col]


def check_tiling(name: str, pointer: int, cols: int, size: int = 4) -> None:
    """TMA reads rows that start on 16-byte boundaries: the base address and the row pitch (cols elements of
    `size` bytes)."""
    if cols * size % 16:
        raise Skip(f"tensor map {name}: TMA needs 16-byte aligned rows, and rows of {cols} elements of {size} bytes "
                   f"are not (the row length must be a multiple of {16 // size})")
    if pointer % 16:
        raise Skip(f"tensor map {name}: TMA needs 16-byte aligned rows, and the array starts at {pointer:#x}")


def encode(name: str, pointer: int, shape: tuple[int, ...], box: tuple[int, ...], element=np.float32,
           swizzle: int = 128) -> bytes:
    """The descriptor of a row-major array of `shape` (outermost first, the last dimension contiguous: (rows, cols)
    for a matrix, (N, H, W, C) for an NHWC tensor; 2 to 5 dimensions) of the host element type `element` at device
    address `pointer`, copied in boxes of `box` (the same order) into shared memory, swizzled in rows of
    `swizzle` bytes (128, 64, 32) or as they are (0)."""
    if len(shape) != len(box) or not 2 <= len(shape) <= TENSOR_MAP_MAX_DIMS:
        raise ValueError(f"tensor map {name}: shape {shape} and box {box} must have the same 2 to "
                         f"{TENSOR_MAP_MAX_DIMS} dimensions")
    element = np.dtype(element)
    check_tiling(name, pointer, shape[-1], element.itemsize)
    rank = len(shape)
    descriptor = (ctypes.c_uint64 * (DESCRIPTOR_BYTES // 8))()
    dims = (ctypes.c_uint64 * rank)(*reversed(shape))  # innermost first
    # bytes from one index of each outer dimension to the next (the innermost stride is the element's own)
    pitches = [element.itemsize * int(np.prod(shape[i:], dtype=np.int64)) for i in range(rank - 1, 0, -1)]
    pitch = (ctypes.c_uint64 * (rank - 1))(*pitches)
    box_dims = (ctypes.c_uint32 * rank)(*reversed(box))
    steps = (ctypes.c_uint32 * rank)(*([1] * rank))
    rc = _driver_encode()(ctypes.byref(descriptor), DATA_TYPES[element], rank, ctypes.c_void_p(pointer), dims, pitch,
                          box_dims, steps, INTERLEAVE_NONE, SWIZZLE[swizzle], L2_PROMOTION_256B, OOB_FILL_ZERO)
    _answer(rc, name, f"tensor map {name}: the driver refused a {' × '.join(map(str, shape))} array of {element} in "
                f"{' × '.join(map(str, box))} boxes (cuTensorMapEncodeTiled error {rc})")
    return bytes(descriptor)


def _answer(rc: int, name: str, refusal: str) -> None:
    """Nothing where the driver encoded map `name`; a Skip saying why (`refusal`) where it refused the geometry; a
    RuntimeError where the context itself is broken."""
    if rc == REFUSED:
        raise Skip(refusal)
    if rc != 0:
        raise RuntimeError(f"tensor map {name}: the driver answered CUDA error {rc}, not a refusal of the map: the "
                           "context is broken (an earlier kernel's fault?)")


def im2col_geometry(name: str, dims) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    """The bounding box and traversal strides of an im2col map of a convolution's NHWC input (dims: the problem's
    N, C, H, W, R, S, stride, pad): the corners (W first, then H) are where the filter's first tap stands for the
    first and the last output pixel of a row or column, -pad and pad - (R - 1); the copy engine steps from one
    output pixel to the next by the stride. Skip, saying why, where the copy engine's limits do not reach."""
    lower = (-dims["pad"], -dims["pad"])
    upper = (dims["pad"] - (dims["S"] - 1), dims["pad"] - (dims["R"] - 1))
    low, high = CORNER_RANGE
    if not all(low <= c <= high for c in lower + upper):
        raise Skip(f"tensor map {name}: TMA's im2col mode takes padding and filter sizes whose box corners (-pad and "
                   f"pad - (R - 1)) lie in {low}..{high}; pad {dims['pad']} with a {dims['R']}×{dims['S']} filter "
                   "does not")
    if not 1 <= dims["stride"] <= MAX_TRAVERSAL_STRIDE:
        raise Skip(f"tensor map {name}: TMA's im2col mode steps at most {MAX_TRAVERSAL_STRIDE} pixels, and the stride "
                   f"is {dims['stride']}")
    return lower, upper, (1, dims["stride"], dims["stride"], 1)


def encode_im2col(name: str, pointer: int, dims, box: tuple[int, int], element=np.float16,
                  swizzle: int = 128) -> bytes:
    """The im2col descriptor of a convolution's NHWC input at device address `pointer` (dims: the problem's N, C,
    H, W, R, S, stride, pad), copied in boxes of box = (output pixels, channels) of one filter tap, swizzled in
    rows of `swizzle` bytes or as they are (0). Padding, channels past C and pixels past the last image arrive as zeros."""
    element = np.dtype(element)
    n, c, h, w = dims["N"], dims["C"], dims["H"], dims["W"]
    check_tiling(name, pointer, c, element.itemsize)
    lower, upper, steps = im2col_geometry(name, dims)
    pixels, channels = box
    descriptor = (ctypes.c_uint64 * (DESCRIPTOR_BYTES // 8))()
    sizes = (ctypes.c_uint64 * 4)(c, w, h, n)  # innermost first
    row = c * element.itemsize
    pitches = (ctypes.c_uint64 * 3)(row, row * w, row * w * h)  # bytes from one pixel, row, image to the next
    rc = _driver_encode(im2col=True)(
        ctypes.byref(descriptor), DATA_TYPES[element], 4, ctypes.c_void_p(pointer), sizes, pitches,
        (ctypes.c_int * 2)(*lower), (ctypes.c_int * 2)(*upper), channels, pixels, (ctypes.c_uint32 * 4)(*steps),
        INTERLEAVE_NONE, SWIZZLE[swizzle], L2_PROMOTION_256B, OOB_FILL_ZERO)
    _answer(rc, name, f"tensor map {name}: the driver refused an im2col map of a {n}×{h}×{w}×{c} NHWC {element} input in "
                f"boxes of {pixels} pixels × {channels} channels (cuTensorMapEncodeIm2col error {rc})")
    return bytes(descriptor)
