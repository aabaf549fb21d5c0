"""A convolution's arithmetic in the NCHW / KCRS layout, written once for any array module xp (NumPy on the CPU,
CuPy on the GPU): the direct (sliding-window) form the float64 reference uses, and im2col followed by one matmul,
the CPU's second variant; and `in_layout`, which applies either to a problem's arrays as stored, epilogue included.
"""

from __future__ import annotations

from gpubench.core.dtypes import PRECISIONS
from gpubench.ops import epilogue


def _padded(xp, x, pad: int, dtype):
    x = x.astype(dtype, copy=False)
    if pad == 0:
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))


def _tap(xp_in, r: int, s: int, stride: int, oh: int, ow: int):
    """The input pixels filter tap (r, s) meets, for every output pixel: a strided view (N, C, OH, OW)."""
    return xp_in[:, :, r : r + stride * (oh - 1) + 1 : stride, s : s + stride * (ow - 1) + 1 : stride]


def out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def sliding(xp, x, w, stride: int, pad: int, dtype="float64"):
    """Direct convolution (NCHW, KCRS) as R·S shifted, strided views of the padded input, each contracted over
    channels."""
    n, c, h, wd = x.shape
    k, _, r_, s_ = w.shape
    oh, ow = out_size(h, r_, stride, pad), out_size(wd, s_, stride, pad)
    xin = _padded(xp, x, pad, dtype)
    w = w.astype(dtype, copy=False)
    y = xp.zeros((n, k, oh, ow), dtype=dtype)
    for r in range(r_):
        for s in range(s_):
            y += xp.einsum("nchw,kc->nkhw", _tap(xin, r, s, stride, oh, ow), w[:, :, r, s])
    return y


def im2col(xp, x, kernel: int, stride: int, pad: int, dtype="float32"):
    """The column matrix, batch-major: (N, C·R·S, OH·OW), row index c·R·S + r·S + s as in a KCRS filter."""
    n, c, h, wd = x.shape
    oh, ow = out_size(h, kernel, stride, pad), out_size(wd, kernel, stride, pad)
    xin = _padded(xp, x, pad, dtype)
    cols = xp.empty((n, c, kernel, kernel, oh, ow), dtype=dtype)
    for r in range(kernel):
        for s in range(kernel):
            cols[:, :, r, s] = _tap(xin, r, s, stride, oh, ow)
    return cols.reshape(n, c * kernel * kernel, oh * ow)


def via_im2col(xp, x, w, stride: int, pad: int, dtype="float32"):
    """im2col followed by one (batched) matmul: y[n] = W[K, CRS] · cols[n]."""
    n = x.shape[0]
    k, _, r_, _ = w.shape
    cols = im2col(xp, x, r_, stride, pad, dtype)
    oh = out_size(x.shape[2], r_, stride, pad)
    ow = out_size(x.shape[3], r_, stride, pad)
    y = xp.matmul(w.reshape(k, -1).astype(dtype, copy=False), cols)
    return y.reshape(n, k, oh, ow)


def in_layout(convolve, exact_integers: bool = False):
    """A convolution of the logical NCHW order applied to a problem's arrays as they lie (the layout converts them,
    gpubench/ops/conv.py's ConvLayout), then the problem's epilogue: (xp, shape, values, dtype) -> {"y": ...}.

    `dtype` is what it computes in (float64: the reference; float32 for the CPU's own float variants, float64 for
    their integer ones, exact). With `exact_integers` (the reference) an integer problem is summed in int64 instead,
    exact by construction; the epilogue then runs in float64, exact on those whole numbers (below 2^53)."""
    def run(xp, shape, values: dict, dtype="float64") -> dict:
        layout, fused = shape.layout, shape.fused
        precision = PRECISIONS[shape.dtype]
        x, w = layout.to_nchw(values["x"]), layout.to_nchw(values["w"])
        summed = "int64" if exact_integers and precision.integer else dtype
        y = convolve(xp, x, w, shape.stride, shape.pad, dtype=summed)
        if summed == "int64":
            y = y.astype("float64")
        if not fused.default or precision.requantised:  # a requantised output's α applies even with no epilogue
            terms = {name: values[name] for name in fused.arrays()}
            if fused.epilogue.add:
                terms[epilogue.RESIDUAL] = layout.to_nchw(terms[epilogue.RESIDUAL])
            e = epilogue.apply(xp, y, fused, fused.factors(shape.dtype, shape.reduction), terms, channel_axis=1)
            y = epilogue.finish(xp, e, shape.dtype)
        return {"y": layout.from_nchw(y)}

    return run
