"""The precisions and layouts a spec's variant takes, and how the choice reaches its kernel.

    dtypes = ["fp16", "bf16"]      # default ["fp32"] (["tf32"] for a kernel with options = { tf32 = true })
    layouts = ["nn", "nt"]         # GEMM: nn, nt, tn; conv: nchw, nhwc, nchw_vect_c (default: the lab's, nn / nchw)
    epilogues = ["none", "bias-relu-add"]  # the fused epilogues it computes (default ["none"])
    dtype_define = "ELEM"          # the kernel is compiled with -DELEM=__half -DELEM_OUT=__half (per dtype)
    layout_define = "LAYOUT"       # ... and with -DLAYOUT_NT=1 (per layout)
    epilogue_define = "EPILOGUE"   # ... and with -DEPILOGUE=3 (per epilogue: its index, none = 0)

A kernel that takes more than one element type, layout or epilogue must name the macro that tells it which:
otherwise the same binary would be run on data it does not read. A kernel (or Python function) that takes an
epilogue names the arrays it brings among its arguments (bias; z for bias-relu-add), and reads α, β and γ as the
float arguments alpha, beta, gamma where it names them; a library or NumPy variant that lists epilogues computes
every term itself. A Python function names a keyword
argument instead (dtype_define = "precision": it is called with precision="bf16"), and must where it takes more
than one precision (fp32 and tf32 data look alike) or layout.
"""

from __future__ import annotations

import re

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench import ops
from gpubench.ops.epilogue import Epilogue, Fused

IDENT = re.compile(r"[A-Za-z_]\w*$")
KEYS = {"dtypes", "layouts", "epilogues", "dtype_define", "layout_define", "epilogue_define"}


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
    epilogues = _names(entry, "epilogues", Epilogue, [Epilogue.NONE.value])
    dtype_define, layout_define = _macro(entry, "dtype_define"), _macro(entry, "layout_define")
    epilogue_define = _macro(entry, "epilogue_define")
    compiled = runner.SOURCE == ".cu"
    if not compiled and not runner.FUNCTION and (dtype_define or layout_define or epilogue_define):
        entry.fail(f"dtype_define, layout_define and epilogue_define are for CUDA kernels and Python functions; the "
                   f"{runner.NAME} runner has none")
    if (compiled or runner.FUNCTION) and len(epilogues) > 1 and not epilogue_define:
        entry.fail(f"epilogues {', '.join(epilogues)}: name the macro (or keyword) that tells the code which "
                   "(epilogue_define = \"EPILOGUE\" compiles it with -DEPILOGUE=3 for bias-relu-add ...)")
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
    return {"dtypes": dtypes, "layouts": layouts, "epilogues": epilogues, "dtype_define": dtype_define,
            "layout_define": layout_define, "epilogue_define": epilogue_define}


def reads(entry, op, runner, kernels, args: tuple[str, ...], epilogues: tuple) -> tuple[str, ...] | None:
    """The optional arrays a variant's code reads (an epilogue's): those its kernels' or function's arguments name,
    each epilogue it lists checked to have its arrays there; None (all) for a library or NumPy variant that lists
    epilogues, which computes the whole problem; none for the others."""
    optional = {a.name for a in ops.get(op).arrays if a.optional}
    if not runner.ARGS and not runner.LAUNCHES:
        return None if epilogues != (Epilogue.NONE,) else ()
    passed = set(args) | {a for step in (kernels.before if kernels else ()) for a in step.args}
    named = tuple(sorted(optional & passed))
    for e in epilogues:
        needed = [a for a in Fused(e).arrays() if a not in named]
        if needed:
            entry.fail(f"epilogues: {e} brings {', '.join(needed)}, which args must name")
    return named
