import numpy as np
import pytest

from gpubench.ops import conv, gemm, reference


def naive_conv(x, w, stride, pad):
    n, c, h, wd = x.shape
    k, _, r_, s_ = w.shape
    oh, ow = (h + 2 * pad - r_) // stride + 1, (wd + 2 * pad - s_) // stride + 1
    y = np.zeros((n, k, oh, ow))
    for b in range(n):
        for o in range(k):
            for i in range(oh):
                for j in range(ow):
                    for ch in range(c):
                        for r in range(r_):
                            for s in range(s_):
                                ih, iw = i * stride - pad + r, j * stride - pad + s
                                if 0 <= ih < h and 0 <= iw < wd:
                                    y[b, o, i, j] += x[b, ch, ih, iw] * w[o, ch, r, s]
    return y


@pytest.mark.parametrize("shape,kernel,stride,pad", [((2, 3, 9, 7), 3, 1, 1), ((1, 2, 10, 10), 3, 2, 0),
                                                     ((1, 3, 11, 11), 5, 3, 2), ((2, 4, 6, 6), 1, 1, 0)])
def test_conv_references_match_the_definition(shape, kernel, stride, pad):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((3, shape[1], kernel, kernel)).astype(np.float32)
    want = naive_conv(x.astype(np.float64), w.astype(np.float64), stride, pad)
    np.testing.assert_allclose(conv.sliding(np, x, w, stride, pad), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(conv.via_im2col(np, x, w, stride, pad), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv.sliding(np, x, w, stride, pad, dtype=np.float32), want, rtol=1e-4,
                               atol=1e-4)


def test_im2col_layout_is_batch_major_kcrs():
    x = np.arange(2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 3, 3)
    cols = conv.im2col(np, x, 2, 1, 0)
    assert cols.shape == (2, 2 * 2 * 2, 4)
    # image 1, channel 1, tap (r=1, s=0), output pixel (0, 1) reads x[1, 1, 1, 1]
    assert cols[1, 1 * 4 + 1 * 2 + 0, 1] == x[1, 1, 1, 1]


def test_gemm_reference_is_float64():
    a = np.random.default_rng(0).random((5, 7), dtype=np.float32)
    b = np.random.default_rng(1).random((7, 3), dtype=np.float32)
    ref = gemm.reference(np, gemm.GemmShape(5, 3, 7), {"A": a, "B": b})["C"]
    assert ref.dtype == np.float64
    np.testing.assert_allclose(ref, a.astype(np.float64) @ b.astype(np.float64))


def test_rel_err_catches_nan_and_scales():
    ref = np.ones((4, 4))
    out = np.ones((4, 4), np.float32)
    assert reference.rel_err(np, out, ref) == 0
    out[0, 0] = np.nan
    assert reference.rel_err(np, out, ref) == float("inf")
    out[0, 0] = 1 + 4  # one error of 4 against a norm of 4
    assert reference.rel_err(np, out, ref) == pytest.approx(1.0)


def test_an_all_zero_reference_is_passed_only_by_zeros():
    """Where the reference is all zeros (a reference of your own, a problem whose inputs cancel) there is no scale to
    divide by: the error is the output's distance from zero, so a kernel that writes anything else still fails."""
    ref = np.zeros((4, 5))
    assert reference.rel_err(np, np.zeros((4, 5), np.float32), ref) == 0
    out = np.zeros((4, 5), np.float32)
    out[2, 3] = 0.5
    assert reference.rel_err(np, out, ref) == pytest.approx(0.5)
