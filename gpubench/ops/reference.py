"""Reference implementations, written once for any array module ``xp`` (NumPy on the CPU, CuPy on the GPU).

In float64 they are the ground truth every variant is checked against; in float32 the NumPy versions are the
CPU backend's own variants.
"""

from __future__ import annotations

import math


def gemm(xp, a, b, dtype="float64"):
    return xp.matmul(a.astype(dtype, copy=False), b.astype(dtype, copy=False))


def _padded(xp, x, pad: int, dtype):
    x = x.astype(dtype, copy=False)
    if pad == 0:
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))


def _tap(xp_in, r: int, s: int, stride: int, oh: int, ow: int):
    """The input pixels filter tap (r, s) meets, for every output pixel: a strided view (N, C, OH, OW)."""
    return xp_in[:, :, r : r + stride * (oh - 1) + 1 : stride, s : s + stride * (ow - 1) + 1 : stride]


def conv_out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def conv_sliding(xp, x, w, stride: int, pad: int, dtype="float64"):
    """Direct convolution as R·S shifted, strided views of the padded input, each contracted over channels."""
    n, c, h, wd = x.shape
    k, _, r_, s_ = w.shape
    oh, ow = conv_out_size(h, r_, stride, pad), conv_out_size(wd, s_, stride, pad)
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
    oh, ow = conv_out_size(h, kernel, stride, pad), conv_out_size(wd, kernel, stride, pad)
    xin = _padded(xp, x, pad, dtype)
    cols = xp.empty((n, c, kernel, kernel, oh, ow), dtype=dtype)
    for r in range(kernel):
        for s in range(kernel):
            cols[:, :, r, s] = _tap(xin, r, s, stride, oh, ow)
    return cols.reshape(n, c * kernel * kernel, oh * ow)


def conv_im2col(xp, x, w, stride: int, pad: int, dtype="float32"):
    """im2col followed by one (batched) matmul: y[n] = W[K, CRS] · cols[n]."""
    n = x.shape[0]
    k, _, r_, _ = w.shape
    cols = im2col(xp, x, r_, stride, pad, dtype)
    oh = conv_out_size(x.shape[2], r_, stride, pad)
    ow = conv_out_size(x.shape[3], r_, stride, pad)
    y = xp.matmul(w.reshape(k, -1).astype(dtype, copy=False), cols)
    return y.reshape(n, k, oh, ow)


def rel_err(xp, out, ref) -> float:
    """||out − ref|| / ||ref|| in float64; NaN or Inf anywhere in the output gives inf (never passes)."""
    out64 = out.astype("float64", copy=False)
    diff = float(xp.linalg.norm((out64 - ref).ravel()))
    scale = float(xp.linalg.norm(ref.ravel()))
    if not math.isfinite(diff):
        return math.inf
    return diff / scale if scale > 0 else diff
