"""How far an output is from its float64 reference: the one measure of error every variant is checked by.

Each op's reference itself lives in the op's module (gpubench/ops/<op>.py), written once for any array module
``xp`` (NumPy on the CPU, CuPy on the GPU).
"""

from __future__ import annotations

import math


def rel_err(xp, out, ref) -> float:
    """||out − ref|| / ||ref|| in float64; NaN or Inf anywhere in the output gives inf (never passes)."""
    out64 = out.astype("float64", copy=False)
    diff = float(xp.linalg.norm((out64 - ref).ravel()))
    scale = float(xp.linalg.norm(ref.ravel()))
    if not math.isfinite(diff):
        return math.inf
    return diff / scale if scale > 0 else diff
