"""The fused epilogue (gpubench/ops/epilogue.py): its order of terms, its factors and what each precision allows,
the rounding rule of a requantised output, and how a problem records and labels it."""

import math

import numpy as np
import pytest

from gpubench.core.dtypes import DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import epilogue
from gpubench.ops.conv import conv_shape
from gpubench.ops.epilogue import NO_EPILOGUE, Epilogue, Fused, Scaling


def test_each_epilogue_adds_its_term_to_the_one_before():
    assert [e.index for e in Epilogue] == [0, 1, 2, 3]
    assert [(e.bias, e.relu, e.add) for e in Epilogue] == [(False, False, False), (True, False, False),
                                                           (True, True, False), (True, True, True)]
    assert Fused(Epilogue.BIAS_RELU_ADD, scaling=Scaling.CHANNEL).arrays() == ("bias", "z", "channel_scale")
    assert Fused(Epilogue.BIAS_RELU).arrays() == ("bias",) and NO_EPILOGUE.arrays() == ()


def test_the_residual_is_added_before_the_relu():
    """The document's BiasAddLinearCombinationRelu: ReLU(α·acc + β·bias + γ·z), not ReLU(α·acc + β·bias) + γ·z."""
    acc = np.array([[[[-10.0]], [[4.0]]]])  # N=1, K=2, 1×1
    values = {"bias": np.array([1.0, -1.0]), "z": np.array([[[[3.0]], [[-5.0]]]])}
    e = epilogue.apply(np, acc, Fused(Epilogue.BIAS_RELU_ADD), (2.0, 1.0, 1.0), values, channel_axis=1)
    assert e.ravel().tolist() == [0.0, 2.0]  # max(-20 + 1 + 3, 0), max(8 - 1 - 5, 0)
    wrong = np.maximum(2.0 * acc + values["bias"].reshape(1, 2, 1, 1), 0) + values["z"]
    assert wrong.ravel().tolist() == [3.0, 2.0]  # what a kernel adding z after its ReLU gives: another result


def test_alpha_scales_per_channel_with_the_channel_scales():
    acc = np.ones((1, 4, 1, 1))
    e = epilogue.apply(np, acc, Fused(scaling=Scaling.CHANNEL), (4.0, 1.0, 1.0),
                       {"channel_scale": epilogue.channel_scales(4)}, channel_axis=1)
    assert e.ravel().tolist() == [2.0, 4.0, 8.0, 2.0]


def test_requantising_rounds_half_to_even_then_saturates():
    e = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 127.5, 300.0, -128.5, -1000.0, 3.49999])
    out = epilogue.finish(np, e, DType.INT8_INT8)
    assert out.tolist() == [0, 2, 2, 0, -2, 126, 127, 127, -128, -128, 3]
    assert epilogue.finish(np, e, DType.FP16) is e  # any other output: the value itself, rounded when stored


@pytest.mark.parametrize("kw,match", [
    ({"beta": 2.0}, "beta scales the bias"),
    ({"epilogue": Epilogue.BIAS, "gamma": 0.5}, "gamma scales the residual"),
    ({"alpha": 0.0}, "finite non-zero"),
    ({"alpha": math.inf}, "finite non-zero"),
    ({"epilogue": "relu"}, "allowed: none, bias, bias-relu, bias-relu-add"),
    ({"scaling": "row"}, "allowed: tensor, channel"),
])
def test_a_bad_epilogue_is_one_line_naming_what_is_allowed(kw, match):
    with pytest.raises(GpubenchError, match=match):
        Fused(**kw)


def test_exact_precisions_take_only_factors_a_float32_epilogue_keeps_exact():
    fused = Fused(Epilogue.BIAS_RELU_ADD, 0.3)
    fused.check(DType.FP16)
    fused.check(DType.INT8_FP32)  # within its tolerance
    with pytest.raises(GpubenchError, match="int8-int8 is checked exactly: alpha 0.3 must be a power of two"):
        fused.check(DType.INT8_INT8)
    Fused(Epilogue.BIAS_RELU_ADD, 0.25, -2.0, 0.5, Scaling.CHANNEL).check(DType.INT8_INT8)
    with pytest.raises(GpubenchError, match="int8's int32 outputs hold whole numbers: alpha 0.5 is not a whole number"):
        Fused(alpha=0.5).check(DType.INT8)
    with pytest.raises(GpubenchError, match="per-channel scales are fractions"):
        Fused(scaling=Scaling.CHANNEL).check(DType.INT8)
    Fused(Epilogue.BIAS_RELU_ADD, 3.0, 2.0, -1.0).check(DType.INT8)
    with pytest.raises(GpubenchError, match="power of two"):  # the problem checks it in its precision
        conv_shape(9, 1, dtype=DType.INT8_INT8, fused=Fused(alpha=0.3))


def test_a_requantised_outputs_alpha_fits_a_typical_conv_to_int8():
    for reduction in (27, 576, 2304, 4608):
        alpha = epilogue.default_alpha(DType.INT8_INT8, reduction)
        assert math.frexp(alpha)[0] == 0.5  # a power of two
        assert 32 <= alpha * epilogue.typical(DType.INT8_INT8, reduction) <= 128
        assert epilogue.default_alpha(DType.INT8, reduction) == epilogue.default_alpha(DType.FP16, reduction) == 1.0


def test_inputs_are_drawn_around_the_typical_output():
    rng = np.random.default_rng(0)
    bias = epilogue.draw(rng, "bias", (512,), np.float32, DType.INT8_INT8, 64.0)
    assert np.array_equal(bias, np.rint(bias)) and bias.max() > 50 and bias.min() < -50
    z = epilogue.draw(rng, "z", (4096,), np.int8, DType.INT8_INT8, 500.0)  # never wraps: clipped to the type
    assert z.max() == 127 and z.min() == -127
    assert epilogue.draw(rng, "channel_scale", (5,), np.float32, DType.FP16, 1.0).tolist() == [0.5, 1, 2, 0.5, 1]


def test_no_epilogue_keeps_the_lab_problem_as_it_was():
    plain = conv_shape(512, 1)
    assert plain.label == "512" and "epilogue" not in plain.record() and plain.fused == NO_EPILOGUE
    fused = conv_shape(512, 1, fused=Fused(Epilogue.BIAS_RELU_ADD, gamma=-1.0))
    assert fused.label == "512 bias-relu-add γ-1" and fused != plain and fused.full_label != plain.full_label
    assert fused.record() == {**plain.record(), "epilogue": "bias-relu-add", "gamma": -1.0}
    assert type(plain).from_record(fused.record()) == fused
    # a bias-relu-add adds five flops an output (β·bias, γ·z, the ReLU) and K floats of bias and a residual's bytes
    assert fused.flops - plain.flops == 5 * plain.output_elems
    assert fused.min_bytes - plain.min_bytes == 4 * 1 + 4 * plain.output_elems
