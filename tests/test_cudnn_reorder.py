"""cuDNN's INT8x32 filter reorder through ctypes (gpubench/backends/cuda/cudnn_reorder.py), against a stand-in of
libcudnn that records every call: the enum values and descriptor arguments it passes, where it looks for the library,
its one-line refusal where a symbol is missing, and the new array it returns. The reorder itself runs on a GPU in
tests/test_gpu_int8_conv.py (test_cudnn_int8_is_exact, NCHW_VECT_C)."""

import ctypes
import types

import pytest

from gpubench.backends.cuda import cudnn_conv, cudnn_reorder
from gpubench.backends.cuda.cudnn_reorder import FilterShape, ReorderUnavailable


class FakeFn:
    """One C function: records its arguments, returns `status`, and takes argtypes/restype as ctypes' do."""

    def __init__(self, log, name, status=0, effect=None):
        self.log, self.name, self.status, self.effect = log, name, status, effect

    def __call__(self, *args):
        self.log.append((self.name, args))
        if self.effect:
            return self.effect(*args)
        return self.status


class FakeLib:
    """A libcudnn exporting `names` (all SIGNATURES' by default); `failing` returns CUDNN_STATUS_BAD_PARAM."""

    def __init__(self, log, names=tuple(cudnn_reorder.SIGNATURES), failing=()):
        for name in names:
            status = 2000 if name in failing else 0
            effect = None
            if name in ("cudnnCreate", "cudnnCreateFilterDescriptor"):
                effect = self._made(4242 if name == "cudnnCreate" else 77)
            elif name == "cudnnGetErrorString":
                effect = lambda status: b"CUDNN_STATUS_BAD_PARAM"  # noqa: E731
            setattr(self, name, FakeFn(log, name, status, effect))

    @staticmethod
    def _made(value):
        def write(pointer):
            pointer._obj.value = value  # what cuDNN writes through the byref
            return 0
        return write


class FakeArray:
    def __init__(self, nbytes, ptr):
        self.nbytes, self.data = nbytes, types.SimpleNamespace(ptr=ptr)


class FakeCupy:
    def __init__(self):
        self.synced = 0
        stream = types.SimpleNamespace(ptr=555, synchronize=self._sync)
        self.cuda = types.SimpleNamespace(get_current_stream=lambda: stream)

    def _sync(self):
        self.synced += 1

    def empty_like(self, a):
        return FakeArray(a.nbytes, a.data.ptr + 1_000_000)


@pytest.fixture(autouse=True)
def fresh_handle(monkeypatch):
    monkeypatch.setattr(cudnn_reorder, "_HANDLE", None)


def test_the_enum_values_are_cudnns():
    # cudnnDataType_t, cudnnTensorFormat_t, cudnnReorderType_t as cuDNN's headers number them (module comments)
    assert (cudnn_reorder.CUDNN_DATA_INT8x32, cudnn_reorder.CUDNN_TENSOR_NCHW_VECT_C,
            cudnn_reorder.CUDNN_DEFAULT_REORDER, cudnn_reorder.CUDNN_STATUS_SUCCESS) == (8, 2, 0, 0)


def test_the_filter_descriptor_takes_the_logical_channel_count():
    # INT8x32 in NCHW_VECT_C, K, C (channels, not vectors: the frontend multiplies its C/32 dim by 32), R, S
    assert FilterShape(96, 64, 3, 3).descriptor() == (8, 2, 96, 64, 3, 3)
    assert FilterShape(96, 64, 3, 3).bytes == 96 * 64 * 9
    with pytest.raises(ValueError, match="multiple of 32"):
        FilterShape(96, 40, 3, 3)


def test_the_library_mapped_into_the_process_comes_first(tmp_path):
    maps = "\n".join([
        "7f00-7f01 r-xp 00000000 08:01 11 /opt/x/nvidia/cudnn/lib/libcudnn_cnn.so.9",  # a sub-library: not the shim
        "7f01-7f02 r-xp 00000000 08:01 12 /opt/x/nvidia/cudnn/lib/libcudnn.so.9",
        "7f02-7f03 r--p 00001000 08:01 12 /opt/x/nvidia/cudnn/lib/libcudnn.so.9",  # mapped twice: listed once
        "7f03-7f04 rw-p 00000000 00:00 0 ",
        "7f04-7f05 r-xp 00000000 08:01 13 /usr/lib/libcudnn_graph.so.9.1.0",
    ])
    wheel = tmp_path / "nvidia" / "cudnn" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcudnn.so.9").write_bytes(b"")
    (wheel / "libcudnn_ops.so.9").write_bytes(b"")
    assert cudnn_reorder.candidates(maps, str(tmp_path)) == [
        "/opt/x/nvidia/cudnn/lib/libcudnn.so.9", str(wheel / "libcudnn.so.9"), "libcudnn.so.9", "libcudnn.so"]


def test_a_missing_symbol_is_refused_in_one_line():
    log = []
    names = [n for n in cudnn_reorder.SIGNATURES if n != "cudnnReorderFilterAndBias"]
    with pytest.raises(ReorderUnavailable) as refused:
        cudnn_reorder.load(opener=lambda path: FakeLib(log, names), maps="", purelib="/nowhere")
    text = str(refused.value)
    assert "\n" not in text and "libcudnn.so.9 does not export cudnnReorderFilterAndBias" in text
    assert isinstance(refused.value, cudnn_conv.CudnnNotSupported)  # the backend's refusal kind: a skip, not a crash


def test_no_loadable_library_is_refused_naming_what_was_tried():
    def opener(path):
        raise OSError(f"{path}: cannot open shared object file")

    with pytest.raises(ReorderUnavailable, match=r"no libcudnn could be loaded \(tried libcudnn.so.9, libcudnn.so\)"):
        cudnn_reorder.load(opener=opener, maps="", purelib="/nowhere")


def test_a_symbol_the_shim_lacks_is_taken_from_the_sub_library_beside_it(tmp_path):
    for name in ("libcudnn.so.9", "libcudnn_cnn.so.9"):
        (tmp_path / name).write_bytes(b"")
    log = []
    shim = FakeLib(log, [n for n in cudnn_reorder.SIGNATURES if n != "cudnnReorderFilterAndBias"])
    cnn = FakeLib(log, ["cudnnReorderFilterAndBias"])
    opened = {str(tmp_path / "libcudnn.so.9"): shim, str(tmp_path / "libcudnn_cnn.so.9"): cnn}
    maps = f"7f00-7f01 r-xp 00000000 08:01 12 {tmp_path / 'libcudnn.so.9'}"
    lib = cudnn_reorder.load(opener=opened.__getitem__, maps=maps, purelib="/nowhere")
    assert lib.cudnnReorderFilterAndBias is cnn.cudnnReorderFilterAndBias and lib.cudnnCreate is shim.cudnnCreate
    assert len(lib.cudnnReorderFilterAndBias.argtypes) == 8 and lib.cudnnReorderFilterAndBias.restype is ctypes.c_int


def loaded(log, **kw):
    return cudnn_reorder.load(opener=lambda path: FakeLib(log, **kw), maps="", purelib="/nowhere")


def test_the_filters_are_reordered_into_a_new_array_on_the_current_stream():
    log, cupy = [], FakeCupy()
    w = FakeArray(96 * 64 * 9, 1000)
    out = cudnn_reorder.reorder_filters(cupy, w, FilterShape(96, 64, 3, 3), loaded(log))
    assert out is not w and out.data.ptr != w.data.ptr and out.nbytes == w.nbytes
    calls = dict(log)
    assert [name for name, _ in log] == ["cudnnCreate", "cudnnSetStream", "cudnnCreateFilterDescriptor",
                                         "cudnnSetFilter4dDescriptor", "cudnnReorderFilterAndBias",
                                         "cudnnDestroyFilterDescriptor"]
    handle, stream = calls["cudnnSetStream"]
    assert handle.value == 4242 and stream.value == 555  # cuDNN's handle, CuPy's current stream
    desc, *rest = calls["cudnnSetFilter4dDescriptor"]
    assert desc.value == 77 and tuple(rest) == (8, 2, 96, 64, 3, 3)
    h, d, kind, src, dst, bias, bias_src, bias_dst = calls["cudnnReorderFilterAndBias"]
    assert (h.value, d.value, kind) == (4242, 77, 0)  # CUDNN_DEFAULT_REORDER
    assert (src.value, dst.value) == (w.data.ptr, out.data.ptr)
    assert (bias, bias_src, bias_dst) == (0, None, None)  # the bias is not reordered
    assert calls["cudnnDestroyFilterDescriptor"][0].value == 77 and cupy.synced == 1


def test_a_refused_reorder_says_so_and_frees_its_descriptor():
    log = []
    with pytest.raises(ReorderUnavailable, match=r"cudnnReorderFilterAndBias failed: CUDNN_STATUS_BAD_PARAM \(2000\)"):
        cudnn_reorder.reorder_filters(FakeCupy(), FakeArray(32 * 32, 8), FilterShape(32, 32, 1, 1),
                                      loaded(log, failing=("cudnnReorderFilterAndBias",)))
    assert log[-1][0] == "cudnnDestroyFilterDescriptor"


def test_filters_of_the_wrong_size_are_not_handed_to_cudnn():
    log = []
    with pytest.raises(ValueError, match="K·C·R·S"):
        cudnn_reorder.reorder_filters(FakeCupy(), FakeArray(100, 8), FilterShape(32, 32, 1, 1), loaded(log))
    assert log == []


def test_the_handle_is_made_once():
    log, cupy = [], FakeCupy()
    lib = loaded(log)
    for _ in range(2):
        cudnn_reorder.reorder_filters(cupy, FakeArray(32 * 32, 8), FilterShape(32, 32, 1, 1), lib)
    assert [name for name, _ in log].count("cudnnCreate") == 1
