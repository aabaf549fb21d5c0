import pytest

from gpubench.errors import GpubenchError
from gpubench.problems import GemmShape, conv_shape, resolve_padding, same_padding


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
