"""Attention's float64 reference, for any array module xp, a block of query rows at a time so that the S×S
scores of a long sequence never exist whole (4096 rows of 16k keys in float64 is 512 MiB)."""

import math

ROWS = 1024  # query rows per block


def attention(xp, q, k, v, B, H, S, D, causal):
    o = xp.empty_like(q)
    scale = 1.0 / math.sqrt(D)
    keys = xp.arange(S)
    for b in range(B):
        for h in range(H):
            for start in range(0, S, ROWS):
                rows = slice(start, min(S, start + ROWS))
                s = (q[b, h, rows] @ k[b, h].T) * scale
                if causal:
                    s = xp.where(keys[None, :] <= xp.arange(rows.start, rows.stop)[:, None], s, -xp.inf)
                p = xp.exp(s - s.max(axis=1, keepdims=True))
                o[b, h, rows] = (p @ v[b, h]) / p.sum(axis=1, keepdims=True)
    return o
