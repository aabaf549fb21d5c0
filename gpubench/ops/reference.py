"""How far an output is from its float64 reference: the one measure of error every variant is checked by.

Each op's reference itself lives in the op's module (gpubench/ops/<op>.py), written once for any array module
``xp`` (NumPy on the CPU, CuPy on the GPU).
"""

from __future__ import annotations

import math


def rel_err(xp, out, ref, unchecked: bool = False) -> float:
    """||out − ref|| / ||ref|| in float64; NaN or Inf anywhere in the output gives inf (never passes). With
    `unchecked`, the elements where the reference is NaN (outputs no variant need write: an op's `unchecked`) are
    left out of both norms."""
    out64 = out.astype("float64", copy=False)
    if unchecked:
        kept = ~xp.isnan(ref)
        out64, ref = xp.where(kept, out64, 0.0), xp.where(kept, ref, 0.0)
    diff = float(xp.linalg.norm((out64 - ref).ravel()))
    scale = float(xp.linalg.norm(ref.ravel()))
    if not math.isfinite(diff):
        return math.inf
    return diff / scale if scale > 0 else diff
