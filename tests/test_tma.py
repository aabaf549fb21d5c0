"""TMA descriptors: the checks made before the driver is asked to encode one (the encoding itself, and the kernels
that use it, run on a GPU: tests/test_gpu.py)."""

import numpy as np
import pytest

from gpubench.backends.cuda import tma
from gpubench.core.dtypes import PRECISIONS
from gpubench.core.errors import Skip


@pytest.mark.parametrize("pointer,cols", [(256, 777), (8, 776)])
def test_rows_that_do_not_start_on_16_bytes_are_a_skip_saying_why(pointer, cols):
    with pytest.raises(Skip, match="TMA needs 16-byte aligned rows"):
        tma.check_tiling("map_a", pointer, cols)


def test_aligned_rows_pass():
    tma.check_tiling("map_a", 256, 776)


@pytest.mark.parametrize("size,cols,ok", [(2, 1000, True), (2, 1001, False), (2, 1004, False), (1, 1008, True),
                                          (1, 1000, False)])
def test_row_alignment_counts_bytes_of_the_element(size, cols, ok):
    if ok:
        tma.check_tiling("map_b", 256, cols, size)
    else:
        with pytest.raises(Skip, match=f"rows of {cols} elements of {size} bytes .* a multiple of {16 // size}"):
            tma.check_tiling("map_b", 256, cols, size)


def test_every_precision_s_arrays_have_a_tensor_map_element_type():
    """A map's element type follows its array (inputs in the storage type, the output in the output type): each
    one the precisions store must have a CUtensorMapDataType of its own size."""
    sizes = {0: 1, 3: 4, 6: 2, 7: 4, 9: 2}  # UINT8, INT32, FLOAT16, FLOAT32, BFLOAT16
    for p in PRECISIONS.values():
        for host in (p.storage, p.output):
            assert sizes[tma.DATA_TYPES[np.dtype(host)]] == np.dtype(host).itemsize, host


# --- im2col maps (a convolution's NHWC input, one filter tap at a time) ----------------------------------------

def _conv_dims(size=28, kernel=3, stride=1, pad=1, channels=128):
    return {"N": 4, "C": channels, "H": size, "W": size, "R": kernel, "S": kernel, "stride": stride, "pad": pad}


@pytest.mark.parametrize("kernel,stride,pad,lower,upper", [
    (3, 1, 1, (-1, -1), (-1, -1)),   # 3×3 SAME: the first tap stands at -1 .. W - 2
    (3, 2, 1, (-1, -1), (-1, -1)),   # stride 2 walks the same box two pixels at a time
    (1, 1, 0, (0, 0), (0, 0)),       # 1×1: every pixel, no padding
    (5, 2, 2, (-2, -2), (-2, -2)),
    (3, 1, 0, (0, 0), (-2, -2)),     # VALID: the box stops two pixels short of the far edge
])
def test_im2col_box_corners_are_where_the_first_tap_stands(kernel, stride, pad, lower, upper):
    """Output pixel (oh, ow) reads input pixel (oh·stride - pad + r, ow·stride - pad + s) at tap (r, s): the box
    the copy engine walks is that of the first tap, from -pad to W - 1 + pad - (S - 1), stride pixels a step."""
    got_lower, got_upper, steps = tma.im2col_geometry("map_x", _conv_dims(kernel=kernel, stride=stride, pad=pad))
    assert (got_lower, got_upper, steps) == (lower, upper, (1, stride, stride, 1))
    size = 28
    for corner_lo, corner_hi in zip(got_lower, got_upper):  # its positions, one a step: one per output pixel
        positions = range(corner_lo, size - 1 + corner_hi + 1, stride)
        assert len(positions) == (size + 2 * pad - kernel) // stride + 1


@pytest.mark.parametrize("changes,message", [
    ({"pad": 129}, "box corners .* lie in -128..127; pad 129 with a 3×3 filter"),
    ({"pad": 0, "kernel": 131}, "pad 0 with a 131×131 filter"),
    ({"stride": 9}, "steps at most 8 pixels, and the stride is 9"),
])
def test_im2col_limits_of_the_copy_engine_are_a_skip_saying_why(changes, message):
    with pytest.raises(Skip, match=message):
        tma.im2col_geometry("map_x", _conv_dims(**changes))


def test_im2col_encoding_hands_the_driver_the_nhwc_geometry(monkeypatch):
    """What cuTensorMapEncodeIm2col receives (the call itself needs a GPU): dims innermost first (C, W, H, N),
    byte pitches of a pixel, a row and an image, the corners W first, channels and pixels per box, the strides."""
    seen = {}

    def fake(desc, dtype, rank, pointer, dims, pitches, lower, upper, channels, pixels, steps, interleave, swizzle,
             promotion, fill):
        seen.update(dtype=dtype, rank=rank, dims=list(dims[:4]), pitches=list(pitches[:3]), lower=list(lower[:2]),
                    upper=list(upper[:2]), box=(pixels, channels), steps=list(steps[:4]), swizzle=swizzle)
        return 0

    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: fake)
    dims = {"N": 3, "C": 40, "H": 25, "W": 27, "R": 3, "S": 3, "stride": 2, "pad": 1}
    assert len(tma.encode_im2col("map_x", 1 << 20, dims, (256, 64), np.float16)) == tma.DESCRIPTOR_BYTES
    assert seen == {"dtype": 6, "rank": 4, "dims": [40, 27, 25, 3], "pitches": [80, 80 * 27, 80 * 27 * 25],
                    "lower": [-1, -1], "upper": [-1, -1], "box": (256, 64), "steps": [1, 2, 2, 1], "swizzle": 3}


def test_im2col_refusal_by_the_driver_is_a_skip_naming_the_map(monkeypatch):
    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: lambda *args: 1)
    with pytest.raises(Skip, match="tensor map map_x: the driver refused an im2col map of a 4×28×28×128 NHWC"):
        tma.encode_im2col("map_x", 1 << 20, _conv_dims(), (256, 64), np.float16)


@pytest.mark.parametrize("im2col", [False, True])
def test_a_broken_context_is_an_error_not_a_refusal(monkeypatch, im2col):
    """After a kernel's fault the driver answers every call with the sticky error (715, an illegal instruction).
    Taken for a refusal, it would turn every later GPU test of the process into a skip."""
    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: lambda *args: 715)
    with pytest.raises(RuntimeError, match="CUDA error 715, not a refusal of the map: the context is broken"):
        if im2col:
            tma.encode_im2col("map_x", 1 << 20, _conv_dims(), (256, 64), np.float16)
        else:
            tma.encode("map_a", 1 << 20, (512, 384), (64, 128), np.uint8)


def test_a_tiled_map_refused_by_the_driver_is_a_skip_naming_the_map(monkeypatch):
    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: lambda *args: tma.REFUSED)
    with pytest.raises(Skip, match="tensor map map_a: the driver refused a 512 × 384 array of uint8 in 64 × 128"):
        tma.encode("map_a", 1 << 20, (512, 384), (64, 128), np.uint8)


def test_im2col_channels_must_make_16_byte_pixels():
    with pytest.raises(Skip, match="rows of 12 elements of 2 bytes"):
        tma.encode_im2col("map_x", 1 << 20, _conv_dims(channels=12), (256, 64), np.float16)


# --- tiled maps of more than two dimensions (conv/16_tc_wgmma_halo.cu's halo tiles of an NHWC input) ----------

def test_a_4d_tiled_map_hands_the_driver_dims_pitches_and_box_innermost_first(monkeypatch):
    """An NHWC tensor N × H × W × C in boxes of 1 image × HR rows × Wp columns × 64 channels: the driver takes the
    dimensions and the box innermost first (C, W, H, N) and the byte pitches of a pixel, a row and an image."""
    seen = {}

    def fake(desc, dtype, rank, pointer, dims, pitches, box, steps, interleave, swizzle, promotion, fill):
        seen.update(dtype=dtype, rank=rank, dims=list(dims[:rank]), pitches=list(pitches[:rank - 1]),
                    box=list(box[:rank]), steps=list(steps[:rank]), swizzle=swizzle)
        return 0

    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: fake)
    encoded = tma.encode("map_x", 1 << 20, (3, 25, 27, 40), (1, 8, 29, 64), np.float16)
    assert len(encoded) == tma.DESCRIPTOR_BYTES
    assert seen == {"dtype": 6, "rank": 4, "dims": [40, 27, 25, 3], "pitches": [80, 80 * 27, 80 * 27 * 25],
                    "box": [64, 29, 8, 1], "steps": [1, 1, 1, 1], "swizzle": 3}


def test_a_2d_tiled_map_is_rows_by_cols_as_before(monkeypatch):
    seen = {}

    def fake(desc, dtype, rank, pointer, dims, pitches, box, *rest):
        seen.update(rank=rank, dims=list(dims[:2]), pitches=list(pitches[:1]), box=list(box[:2]))
        return 0

    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: fake)
    tma.encode("map_a", 1 << 20, (1000, 776), (128, 32))
    assert seen == {"rank": 2, "dims": [776, 1000], "pitches": [776 * 4], "box": [32, 128]}


def test_a_tiled_map_refused_by_the_driver_is_a_skip_naming_its_dimensions(monkeypatch):
    monkeypatch.setattr(tma, "_driver_encode", lambda im2col=False: lambda *args: 1)
    with pytest.raises(Skip, match=r"map_x: the driver refused a 3 × 25 × 27 × 40 array .* in 1 × 8 × 29 × 64 boxes"):
        tma.encode("map_x", 1 << 20, (3, 25, 27, 40), (1, 8, 29, 64), np.float16)
