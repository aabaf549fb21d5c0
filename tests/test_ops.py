import pytest

from gpubench.core.errors import GpubenchError
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape, resolve_padding, same_padding
from gpubench.ops.conv import ConvShape


def test_gemm_counts():
    s = GemmShape(1000, 1500, 777)
    assert s.flops == 2 * 1000 * 1500 * 777
    assert s.min_bytes == 4 * (1000 * 777 + 777 * 1500 + 1000 * 1500)
    assert s.label == "1000x1500x777" and GemmShape(512, 512, 512).label == "512"


@pytest.mark.parametrize("size,stride,pad,out", [
    (512, 1, 1, 512),
    (512, 2, 0, 255),  # the lab's floor division drops the half pixel: not ceil(512/2)
    (512, 3, 0, 170),
    (1000, 3, 1, 334),
    (777, 2, 1, 389),
    (32, 3, 0, 10),
])
def test_lab_same_padding(size, stride, pad, out):
    # out0 = ceil(in/stride); pad = ((out0-1)*stride + R - in) // 2; out = (in + 2*pad - R)//stride + 1
    s = conv_shape(size, stride)
    assert (s.pad, s.out_height, s.out_width) == (pad, out, out)
    assert same_padding(size, 3, stride) == pad


def test_same_padding_other_kernels():
    assert same_padding(8, 5, 1) == 2
    assert same_padding(8, 1, 1) == 0
    assert same_padding(9, 4, 2) == 1  # ((5-1)*2 + 4 - 9)//2 = 1


def test_padding_words_and_integers():
    assert resolve_padding("valid", 64, 3, 1) == 0
    assert resolve_padding("2", 64, 3, 1) == 2
    with pytest.raises(GpubenchError, match="same, valid or a non-negative integer"):
        resolve_padding("full", 64, 3, 1)
    with pytest.raises(GpubenchError, match="negative"):
        resolve_padding("-1", 64, 3, 1)


def test_conv_counts():
    s = conv_shape(56, 1, batch=32, in_channels=64, out_channels=64, kernel=3, padding=1)
    assert (s.out_height, s.out_width, s.gemm_k) == (56, 56, 576)
    assert s.flops == 2 * 32 * 64 * 56 * 56 * 576
    assert s.min_bytes == 4 * (32 * 64 * 56 * 56 * 2 + 64 * 576)


@pytest.mark.parametrize("stride,pad,out", [(2, 1, (28, 20)), (3, 0, (18, 13)), (4, 2, (15, 11))])
def test_strided_conv_counts_the_outputs_it_computes(stride, pad, out):
    """A strided convolution computes OH·OW = ((H + 2·pad − R) // stride + 1) · (same for W) outputs per image and
    filter, each of C·R·S products: its flops (and every GFLOP/s of a strided layer) count those, not the H·W input
    pixels, which is the same number only at stride 1 with SAME padding (the non-square input catches H for W)."""
    s = ConvShape(batch=8, in_channels=64, out_channels=128, height=56, width=40, kernel=3, stride=stride, pad=pad)
    assert (s.out_height, s.out_width) == out
    assert s.output_elems == 8 * 128 * out[0] * out[1]
    assert s.flops == 2 * 8 * 128 * out[0] * out[1] * 64 * 3 * 3
    assert s.min_bytes == 4 * (8 * 64 * 56 * 40 + 128 * 64 * 9 + 8 * 128 * out[0] * out[1])


@pytest.mark.parametrize("kw,match", [({"stride": 0}, "stride"), ({"kernel": 0}, "kernel-size"),
                                      ({"batch": 0}, "batch"), ({"in_channels": -1}, "in-channels"),
                                      ({"out_channels": 0}, "out-channels")])
def test_bad_conv_values(kw, match):
    args = {"size": 32, "stride": 1, **kw}
    size, stride = args.pop("size"), args.pop("stride")
    with pytest.raises(GpubenchError, match=match):
        conv_shape(size, stride, **args)


def test_kernel_larger_than_padded_input():
    with pytest.raises(GpubenchError, match="larger than the padded input"):
        conv_shape(4, 1, kernel=7, padding="valid")


def test_a_shape_comes_back_from_its_record_with_its_label_row_and_axis():
    from gpubench.ops.conv import ConvShape
    from gpubench.ops import shape_from

    gemm, conv = GemmShape(1000, 1500, 777), conv_shape(96, 2, batch=4, in_channels=8, out_channels=16, padding=1)
    for s in (gemm, conv, conv_shape(512, 3)):
        back = shape_from(s.op, s.record())
        assert back == s and back.label == s.label and back.row_key() == s.row_key()
    assert conv.label == "4x8x96 k16 3x3" and conv.row_key() == ("4x8x96 k16 3x3", "2") and conv.plot_x == 96
    assert conv_shape(512, 3).label == "512" and gemm.plot_x is None and GemmShape(64, 64, 64).plot_x == 64
    assert ConvShape.DEFAULTS["padding"] == "same" and gemm.op == "gemm"


def test_shapes_check_themselves():
    with pytest.raises(GpubenchError, match="n must be a positive integer"):
        GemmShape(4, 0, 4)
    with pytest.raises(GpubenchError, match="op 'fft'"):
        from gpubench.ops import shape_from

        shape_from("fft", {})


def test_a_problem_has_a_precision_and_a_layout():
    from gpubench.core.dtypes import DType
    from gpubench.ops.conv import ConvLayout
    from gpubench.ops.gemm import GemmLayout
    from gpubench.ops import shape_from

    fp32, bf16 = GemmShape(64, 32, 16), GemmShape(64, 32, 16, DType.BF16, GemmLayout.NT)
    assert fp32 != bf16 and (fp32.tag, bf16.tag) == ("", "BF16 NT")
    assert bf16.full_label == "64x32x16 BF16 NT" and bf16.min_bytes == 2 * (64 * 16 + 16 * 32 + 64 * 32)
    assert GemmShape(4, 4, 4, DType.FP8).min_bytes == 1 * 32 + 2 * 16  # e4m3 in, bf16 out
    assert shape_from("gemm", bf16.record()) == bf16
    assert shape_from("gemm", {"m": 1, "n": 2, "k": 3}).dtype == DType.FP32  # older records
    assert bf16.array_dims() == {"A": (64, 16), "B": (32, 16), "C": (64, 32)}  # B stored N×K
    assert GemmShape(64, 32, 16, layout="tn").array_dims() == {"A": (16, 64), "B": (16, 32), "C": (64, 32)}
    nhwc = conv_shape(10, 2, batch=2, in_channels=3, out_channels=5, dtype=DType.FP16, layout=ConvLayout.NHWC)
    assert nhwc.array_dims() == {"x": (2, 10, 10, 3), "w": (5, 3, 3, 3), "y": (2, 4, 4, 5)}
    assert nhwc.full_label.endswith("s2 FP16 NHWC") and shape_from("conv", nhwc.record()) == nhwc
    with pytest.raises(GpubenchError, match="allowed: fp32, tf32, fp16, bf16, fp8, int8"):
        GemmShape(1, 1, 1, dtype="fp64")
    with pytest.raises(GpubenchError, match="allowed: nchw, nhwc"):
        conv_shape(8, 1, layout="nn")


def test_the_conv_reference_reads_and_writes_each_layout_as_stored():
    """NHWC in, NHWC out: the same numbers as the NCHW problem, transposed."""
    import numpy as np

    from gpubench.ops import conv
    from gpubench.ops.conv import ConvLayout

    nchw = conv_shape(6, 1, batch=2, in_channels=3, out_channels=4)
    nhwc = conv_shape(6, 1, batch=2, in_channels=3, out_channels=4, layout=ConvLayout.NHWC)
    rng = np.random.default_rng(0)
    x, w = rng.random((2, 3, 6, 6)), rng.random((4, 3, 3, 3))
    want = conv.reference(np, nchw, {"x": x, "w": w})["y"]
    got = conv.reference(np, nhwc, {"x": x.transpose(0, 2, 3, 1), "w": w.transpose(0, 2, 3, 1)})["y"]
    assert got.shape == nhwc.array_dims()["y"]
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1))


def test_the_registry_finds_every_op_module_and_refuses_an_unknown_one():
    from gpubench import ops

    assert ops.names()[:2] == ("gemm", "conv")  # the lab's order, then any other module with an OP
    assert ops.get("conv").shape.__name__ == "ConvShape" and ops.of(GemmShape(2, 3, 4)).name == "gemm"
    with pytest.raises(GpubenchError, match="op 'fft'; allowed are gemm, conv"):
        ops.get("fft")


def test_each_op_declares_its_arrays_dims_and_sample():
    from gpubench import ops

    for op in ops.builtin():
        dims = op.sample.array_dims()
        assert set(dims) == set(op.required) and op.outputs and op.inputs  # the optional arrays: an epilogue's
        assert set(op.sample.dims()) >= set(op.dims)
        assert op.sample.reduction > 0 and op.sample.flops > 0 and op.sample.min_bytes > 0
