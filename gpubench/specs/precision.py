"""The precisions and layouts a spec's variant takes, and how the choice reaches its kernel.

    dtypes = ["fp16", "bf16"]      # default ["fp32"] (["tf32"] for a kernel with options = { tf32 = true })
    layouts = ["nn", "nt"]         # GEMM: nn, nt, tn; conv: nchw, nhwc (default: the lab's, nn / nchw)
    dtype_define = "ELEM"          # the kernel is compiled with -DELEM=__half -DELEM_OUT=__half (per dtype)
    layout_define = "LAYOUT"       # ... and with -DLAYOUT_NT=1 (per layout)

A kernel that takes more than one element type, or more than one layout, must name the macro that tells it
which: otherwise the same binary would be run on data it does not read. A Python function names a keyword
argument instead (dtype_define = "precision": it is called with precision="bf16"), and must where it takes more
than one precision (fp32 and tf32 data look alike) or layout.
"""

from __future__ import annotations

import re

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench import ops

IDENT = re.compile(r"[A-Za-z_]\w*$")
KEYS = {"dtypes", "layouts", "dtype_define", "layout_define"}


def _names(entry, key: str, kind, default: list) -> tuple:
    values = entry.table.get(key, default)
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        entry.fail(f"{key} must be a non-empty list of names; allowed: {', '.join(kind)}")
    bad = [v for v in values if v not in {k.value for k in kind}]
    if bad:
        entry.fail(f"{key}: {', '.join(repr(b) for b in bad)} is not allowed; allowed: {', '.join(kind)}")
    if len(set(values)) < len(values):
        entry.fail(f"{key} names a value twice")
    return tuple(kind(v) for v in values)


def _macro(entry, key: str) -> str | None:
    name = entry.table.get(key)
    if name is not None and not (isinstance(name, str) and IDENT.match(name)):
        entry.fail(f"{key} must be a C macro name, got {name!r}")
    return name


def precisions(entry, op, runner) -> dict:
    """The table's dtypes and layouts (the variant's scope) and their macros (its program's), every rule checked."""
    shape = ops.get(op).shape
    dtypes = _names(entry, "dtypes", DType, [DType.TF32.value if runner.tf32 else DType.FP32.value])
    layouts = _names(entry, "layouts", shape.LAYOUT, [shape.DEFAULT_LAYOUT.value])
    dtype_define, layout_define = _macro(entry, "dtype_define"), _macro(entry, "layout_define")
    compiled = runner.SOURCE == ".cu"
    if not compiled and not runner.FUNCTION and (dtype_define or layout_define):
        entry.fail(f"dtype_define and layout_define are for CUDA kernels and Python functions; the {runner.NAME} "
                   "runner has none")
    if runner.FUNCTION and len(dtypes) > 1 and not dtype_define:
        entry.fail(f"dtypes {', '.join(dtypes)}: name the keyword that tells the function which (dtype_define = "
                   "\"precision\" calls it with precision=\"bf16\" ...)")
    if runner.FUNCTION and len(layouts) > 1 and not layout_define:
        entry.fail(f"layouts {', '.join(layouts)}: name the keyword that tells the function which (layout_define = "
                   "\"layout\" calls it with layout=\"nt\" ...)")
    if compiled and len({PRECISIONS[d].c_type for d in dtypes}) > 1 and not dtype_define:
        entry.fail(f"dtypes {', '.join(dtypes)} need different element types: name the macro that tells the kernel "
                   f"which (dtype_define = \"ELEM\" compiles it with -DELEM=__half ...)")
    if compiled and len(layouts) > 1 and not layout_define:
        entry.fail(f"layouts {', '.join(layouts)}: name the macro that tells the kernel which (layout_define = "
                   f"\"LAYOUT\" compiles it with -DLAYOUT_NT=1 ...)")
    return {"dtypes": dtypes, "layouts": layouts, "dtype_define": dtype_define, "layout_define": layout_define}
