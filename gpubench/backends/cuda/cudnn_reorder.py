"""cuDNN's INT8x32 filter reorder: the one C call the frontend's Python lacks, through ctypes.

Every int8 plan cuDNN offered for NC/32HW32 (NCHW_VECT_C with 32-channel vectors) on an H200 carried the behaviour
note REQUIRES_FILTER_INT8x32_REORDER: it reads the filters in an order of cuDNN's own, which the legacy C API's
``cudnnReorderFilterAndBias`` makes from the filters as they lie. The frontend's own sample of such a convolution
(samples/legacy_samples/conv_sample.cpp, run_imma, in NVIDIA/cudnn-frontend) declares w with reordering INT8x32 and
binds a copy reordered by that call (include/cudnn_frontend_Reorder_Tensor.h: a filter descriptor of type INT8x32,
format NCHW_VECT_C, dims K, C, R, S with C the logical channel count, the vector count times 32; reorder type
CUDNN_DEFAULT_REORDER; the bias only where a bias pointer is given). gpubench does the same once per prepared point,
untimed, into a new device array (`reorder_filters`); the filters the reference checks against stay as they are.

The C signatures (cuDNN's cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h; as the frontend's include/cudnn_frontend_shim.h
calls them, and as generated bindings declare them: docs.rs rcudnn-sys 0.5.0 for cudnnReorderFilterAndBias and
cudnnSetFilter4dDescriptor, a Rust binding of cuDNN 9.22's headers in the code corpus for the handle's calls):

    cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
    cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
    cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc)
    cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                             cudnnTensorFormat_t format, int k, int c, int h, int w)
    cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
    cudnnStatus_t cudnnReorderFilterAndBias(cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
                                            cudnnReorderType_t reorderType, const void *filterData,
                                            void *reorderedFilterData, int reorderBias, const void *biasData,
                                            void *reorderedBiasData)
    const char *cudnnGetErrorString(cudnnStatus_t status)

The library is the one the frontend loaded: its Python package opens libcudnn.so.9 (the nvidia-cudnn wheel's, else
the system's; python/cudnn/__init__.py, _dlopen_cudnn) and its C++ resolves cudnnReorderFilterAndBias in that same
handle (cudnn_frontend_shim.h, reorder_filter_bias through get_symbol on cudnn_dlhandle): cuDNN 9's libcudnn.so is the
shim that forwards the legacy API to its sub-libraries (libcudnn_cnn.so holds the convolution's: cuDNN's "Backend
API Overview", https://docs.nvidia.com/deeplearning/cudnn/latest/api/overview.html). So the path already mapped into
this process comes first (/proc/self/maps), then the wheel's, then the loader's; a sub-library beside the shim is
asked only for a symbol the shim lacks. Where a symbol is found nowhere,
`load` refuses in one line (ReorderUnavailable, a CudnnNotSupported).

Nothing here loads a library or touches a GPU at import: the loader and the array module can be passed in, so the
descriptor's arguments, the enum values and the refusal are tested on the CPU (tests/test_cudnn_reorder.py).
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import sysconfig
from dataclasses import dataclass

from gpubench.backends.cuda.cudnn_conv import CudnnNotSupported

# Enum values (the Rust binding of cuDNN 9.22's headers: cudnnStatus_t SUCCESS 0, cudnnDataType_t, and
# cudnnReorderType_t, both marked deprecated since 9.0 but kept; cudnnTensorFormat_t from a Julia binding's @cenum and
# copies of cuDNN's cudnn_ops_infer.h in the code corpus: NCHW 0, NHWC 1, NCHW_VECT_C 2, reorder DEFAULT 0, NO 1).
CUDNN_STATUS_SUCCESS = 0
CUDNN_DATA_INT8x32 = 8  # FLOAT 0, DOUBLE 1, HALF 2, INT8 3, INT32 4, INT8x4 5, UINT8 6, UINT8x4 7, INT8x32 8
CUDNN_TENSOR_NCHW_VECT_C = 2  # NCHW 0, NHWC 1, NCHW_VECT_C 2
CUDNN_DEFAULT_REORDER = 0  # DEFAULT 0, NO_REORDER 1
VECTOR = 32

SHIM = re.compile(r"libcudnn\.so(\.\d+)*$")  # the shim itself, not libcudnn_cnn.so.9 and the other sub-libraries
SUBLIBRARIES = ("libcudnn_cnn.so", "libcudnn_ops.so", "libcudnn_graph.so")
FALLBACK_NAMES = ("libcudnn.so.9", "libcudnn.so")
REORDERED = "filters reordered by cudnnReorderFilterAndBias (INT8x32)"  # the point's details.engine says so



class ReorderUnavailable(CudnnNotSupported):
    """cuDNN's filter reorder cannot be called here (a symbol missing, no library) or refused the filters."""


_P, _I = ctypes.c_void_p, ctypes.c_int
SIGNATURES = {  # name: argument types (every one returns a cudnnStatus_t, an int, but the error string)
    "cudnnCreate": (ctypes.POINTER(_P),),
    "cudnnSetStream": (_P, _P),
    "cudnnCreateFilterDescriptor": (ctypes.POINTER(_P),),
    "cudnnSetFilter4dDescriptor": (_P, _I, _I, _I, _I, _I, _I),
    "cudnnDestroyFilterDescriptor": (_P,),
    "cudnnReorderFilterAndBias": (_P, _P, _I, _P, _P, _I, _P, _P),
    "cudnnGetErrorString": (_I,),
}


@dataclass(frozen=True)
class FilterShape:
    """The filters' logical dims: K filters of C channels (a multiple of 32), R×S taps."""

    k: int
    c: int
    r: int
    s: int

    def __post_init__(self):
        if self.c % VECTOR or min(self.k, self.c, self.r, self.s) < 1:
            raise ValueError(f"INT8x32 filters need C a positive multiple of {VECTOR}, got K={self.k} C={self.c} "
                             f"{self.r}x{self.s}")

    @property
    def bytes(self) -> int:
        return self.k * self.c * self.r * self.s

    def descriptor(self) -> tuple[int, ...]:
        """cudnnSetFilter4dDescriptor's arguments after the descriptor: type, format, then K, C (logical), R, S."""
        return (CUDNN_DATA_INT8x32, CUDNN_TENSOR_NCHW_VECT_C, self.k, self.c, self.r, self.s)


def candidates(maps: str, purelib: str) -> list[str]:
    """Where libcudnn may be, in order: every shim path mapped into the process (maps: /proc/self/maps' text), the
    nvidia-cudnn wheel's, then the names the frontend falls back to."""
    mapped = []
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)  # address, perms, offset, device, inode, path
        path = fields[5].strip() if len(fields) == 6 else ""
        if path.startswith("/") and SHIM.search(os.path.basename(path)) and path not in mapped:
            mapped.append(path)
    wheel = sorted(glob.glob(os.path.join(purelib, "nvidia", "cudnn*", "lib", "libcudnn.so.*[0-9]")))
    return mapped + [p for p in wheel if p not in mapped] + list(FALLBACK_NAMES)


class Library:
    """The C functions this module calls, each from the first library that exports it (the shim, then the
    sub-libraries beside it), typed from SIGNATURES."""

    def __init__(self, libraries: list, where: str):
        self.where = where
        missing = []
        for name, argtypes in SIGNATURES.items():
            fn = next((getattr(lib, name) for lib in libraries if _has(lib, name)), None)
            if fn is None:
                missing.append(name)
                continue
            fn.argtypes = list(argtypes)
            fn.restype = ctypes.c_char_p if name == "cudnnGetErrorString" else ctypes.c_int
            setattr(self, name, fn)
        if missing:
            raise ReorderUnavailable(f"cuDNN's INT8x32 filter reorder is unavailable: {where} does not export "
                                    f"{', '.join(missing)} (NC/32HW32 int8 plans all need it)")

    def check(self, status: int, call: str) -> None:
        if status != CUDNN_STATUS_SUCCESS:
            text = self.cudnnGetErrorString(status)
            words = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
            raise ReorderUnavailable(f"cuDNN's {call} failed: {words} ({status})")


def _has(lib, name: str) -> bool:
    try:
        getattr(lib, name)
    except AttributeError:
        return False
    return True


def load(opener=ctypes.CDLL, maps: str | None = None, purelib: str | None = None) -> Library:
    """The process's libcudnn with every function this module calls, else ReorderUnavailable in one line."""
    if maps is None:
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                maps = f.read()
        except OSError:
            maps = ""
    tried = []
    for path in candidates(maps, purelib if purelib is not None else sysconfig.get_path("purelib")):
        try:
            shim = opener(path)
        except OSError:
            tried.append(path)
            continue
        libraries = [shim]
        folder = os.path.dirname(path)
        if folder:  # the sub-libraries beside the shim, where it lacks a symbol (cuDNN 9's split)
            for stem in SUBLIBRARIES:
                for sub in sorted(glob.glob(os.path.join(folder, stem + "*"))):
                    try:
                        libraries.append(opener(sub))
                    except OSError:
                        pass
        return Library(libraries, path)
    raise ReorderUnavailable(f"cuDNN's INT8x32 filter reorder is unavailable: no libcudnn could be loaded "
                            f"(tried {', '.join(tried)})")


_LIBRARY: Library | None = None
_HANDLE: ctypes.c_void_p | None = None


def library() -> Library:
    """The library, loaded once per process."""
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = load()
    return _LIBRARY


def _handle(lib: Library) -> ctypes.c_void_p:
    """A cuDNN handle of this module's own, made once (cudnnCreate) and kept for the process, as cudnn_conv's."""
    global _HANDLE
    if _HANDLE is None:
        handle = ctypes.c_void_p()
        lib.check(lib.cudnnCreate(ctypes.byref(handle)), "cudnnCreate")
        _HANDLE = handle
    return _HANDLE


def reorder_filters(cupy, w, shape: FilterShape, lib: Library | None = None):
    """A new device array holding w's filters (int8, NCHW_VECT_C, C-contiguous) in the order INT8x32 plans read,
    made by cudnnReorderFilterAndBias on CuPy's current stream and waited for (untimed; the bias left alone)."""
    lib = library() if lib is None else lib
    if w.nbytes != shape.bytes:
        raise ValueError(f"the filters are {w.nbytes} bytes, K·C·R·S of {shape} is {shape.bytes}")
    out = cupy.empty_like(w)
    stream = cupy.cuda.get_current_stream()
    handle = _handle(lib)
    lib.check(lib.cudnnSetStream(handle, ctypes.c_void_p(stream.ptr)), "cudnnSetStream")
    desc = ctypes.c_void_p()
    lib.check(lib.cudnnCreateFilterDescriptor(ctypes.byref(desc)), "cudnnCreateFilterDescriptor")
    try:
        lib.check(lib.cudnnSetFilter4dDescriptor(desc, *shape.descriptor()), "cudnnSetFilter4dDescriptor")
        lib.check(lib.cudnnReorderFilterAndBias(handle, desc, CUDNN_DEFAULT_REORDER, ctypes.c_void_p(w.data.ptr),
                                                ctypes.c_void_p(out.data.ptr), 0, None, None),
                  "cudnnReorderFilterAndBias")
    finally:
        lib.cudnnDestroyFilterDescriptor(desc)
    stream.synchronize()
    return out
