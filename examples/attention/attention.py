"""Attention forward in Triton, FlashAttention's way, beside PyTorch's SDPA, for gpubench (arrays = "torch").

One program takes BM query rows of one (batch, head) and streams the keys and values past them in blocks of BN.
It never stores the S×S scores: for each block it updates a running row maximum m, the running sum l of
exp(s − m), and the accumulator O·l, rescaling both by exp(m_old − m_new) when the maximum grows (the online
softmax). P is rounded to the inputs' precision for the P·V product on tensor cores, as FlashAttention does; the
scores and the accumulator stay in fp32. A causal program stops at its own diagonal block, and masks inside it.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attention(q, k, v, o, S, scale, stride_b, stride_h, stride_s, H,
               CAUSAL: tl.constexpr, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    block_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = (bh // H) * stride_b + (bh % H) * stride_h
    rows = block_m * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    d = tl.arange(0, D)
    qb = tl.load(q + base + rows[:, None] * stride_s + d[None, :], mask=rows[:, None] < S, other=0.0)
    m = tl.full((BM,), -float("inf"), tl.float32)
    l = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    end = tl.minimum(S, (block_m + 1) * BM) if CAUSAL else S
    for start in range(0, end, BN):
        keys = start + cols
        kt = tl.load(k + base + keys[None, :] * stride_s + d[:, None], mask=keys[None, :] < S, other=0.0)
        s = tl.dot(qb, kt) * scale
        keep = keys[None, :] < S
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        grow = tl.exp(m - m_new)
        l = l * grow + tl.sum(p, axis=1)
        vb = tl.load(v + base + keys[:, None] * stride_s + d[None, :], mask=keys[:, None] < S, other=0.0)
        acc = acc * grow[:, None] + tl.dot(p.to(vb.dtype), vb)
        m = m_new
    out = acc / l[:, None]
    tl.store(o + base + rows[:, None] * stride_s + d[None, :], out.to(o.dtype.element_ty), mask=rows[:, None] < S)


def attention(q, k, v, o, B: int, H: int, S: int, D: int, causal: int, precision: str = "fp16") -> dict:
    if D not in (16, 32, 64, 128) or not q.is_contiguous():
        raise ValueError(f"this kernel takes contiguous [B, H, S, D] with D of 16, 32, 64 or 128, not D = {D}")
    bm, bn = (128, 64) if D <= 64 else (128, 32) if causal else (128, 64)
    warps, stages = (8, 3) if D == 128 else (4, 3)
    grid = (triton.cdiv(S, bm), B * H)
    _attention[grid](q, k, v, o, S, 1.0 / math.sqrt(D), q.stride(0), q.stride(1), q.stride(2), H,
                     CAUSAL=bool(causal), D=D, BM=bm, BN=bn, num_warps=warps, num_stages=stages)
    return {"BM": bm, "BN": bn, "num_warps": warps, "num_stages": stages}


def torch_sdpa(q, k, v, o, B: int, H: int, S: int, D: int, causal: int, precision: str = "fp16") -> None:
    o.copy_(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
