"""A Triton convolution for gpubench, computed directly from the input (an implicit GEMM: no unfolded copy).

y[n, k, oh, ow] = Σ_{c, r, s} x[n, c, oh·stride − pad + r, ow·stride − pad + s] · w[k, c, r, s], NCHW / KCRS / NKHW.

Seen as a matrix product, the output is (N·OH·OW pixels) × (K channels) and the reduction runs over C·R·S. Each
program computes a BP × BK block of it: for each slice of BC reduction indices it gathers the input pixels those
indices touch (zero outside the padded image, so the edges need no special case) and the matching filter taps, and
multiplies them with tl.dot. The autotuner picks the block per layer shape.
"""

import triton
import triton.language as tl


def _configs():
    blocks = [(64, 32, 32, 4, 3), (128, 32, 32, 4, 3), (64, 64, 32, 4, 3), (128, 64, 32, 8, 3), (32, 16, 16, 2, 2),
              (128, 128, 32, 8, 3)]
    return [triton.Config({"BP": bp, "BK": bk, "BC": bc}, num_warps=warps, num_stages=stages)
            for bp, bk, bc, warps, stages in blocks]


@triton.autotune(configs=_configs(), key=["N", "C", "H", "W", "K", "R", "S", "stride", "pad", "PRECISION"])
@triton.jit
def _conv_kernel(x, w, y, N, C, H, W, K, R, S, stride, pad, OH, OW, PRECISION: tl.constexpr, BP: tl.constexpr,
                 BK: tl.constexpr, BC: tl.constexpr):
    pixels = N * OH * OW
    taps = C * R * S
    p = tl.program_id(0) * BP + tl.arange(0, BP)  # output pixels (n, oh, ow), flattened
    k = tl.program_id(1) * BK + tl.arange(0, BK)  # output channels
    n = p // (OH * OW)
    oh = (p // OW) % OH
    ow = p % OW
    acc = tl.zeros((BP, BK), dtype=tl.float32)
    for q0 in range(0, taps, BC):
        q = q0 + tl.arange(0, BC)  # reduction indices (c, r, s), flattened as w's last three axes are
        c = q // (R * S)
        r = (q // S) % R
        s = q % S
        ih = oh[:, None] * stride - pad + r[None, :]
        iw = ow[:, None] * stride - pad + s[None, :]
        inside = (p[:, None] < pixels) & (q[None, :] < taps) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_tile = tl.load(x + ((n[:, None] * C + c[None, :]) * H + ih) * W + iw, mask=inside, other=0.0)
        w_tile = tl.load(w + k[None, :] * taps + q[:, None], mask=(q[:, None] < taps) & (k[None, :] < K), other=0.0)
        acc = tl.dot(x_tile, w_tile, acc, input_precision=PRECISION)
    out = ((n[:, None] * K + k[None, :]) * OH + oh[:, None]) * OW + ow[:, None]
    tl.store(y + out, acc.to(y.dtype.element_ty), mask=(p[:, None] < pixels) & (k[None, :] < K))


DOT_PRECISION = {"fp32": "ieee", "tf32": "tf32"}  # float32 inputs only; 16-bit ones go to tensor cores as they are


def conv(x, w, y, N, C, H, W, K, R, S, stride, pad, OH, OW, precision: str = "fp32") -> dict:
    def grid(meta):
        return (triton.cdiv(N * OH * OW, meta["BP"]), triton.cdiv(K, meta["BK"]))

    _conv_kernel[grid](x, w, y, N, C, H, W, K, R, S, stride, pad, OH, OW, PRECISION=DOT_PRECISION.get(precision))
    best = _conv_kernel.best_config
    return {"autotuned": {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}}
