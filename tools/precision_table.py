"""The precision table of a saved run: TFLOP/s (TOP/s for int8) of each library point per dtype and layout, with
its share of the run's measured ceiling for that precision (roofline.py), as Markdown for the README.

    python tools/precision_table.py results/nvidia-h100-80gb-hbm3/precision.json.gz [more runs ...]
"""

from __future__ import annotations

import sys

from gpubench import results
from gpubench.analysis import roofline
from gpubench import ops
from gpubench.results import Status


def row_label(p) -> str:
    """The problem without its precision and layout (those are the row's dtype and the columns)."""
    stride = getattr(p.problem, "stride", None)
    return p.problem.label + (f" s{stride}" if stride else "")


def cell(p, run) -> str:
    if p is None:
        return ""
    if p.status != Status.OK:
        return f"{p.status}"
    share = roofline.share(p, run)
    return f"{p.gflops / 1e3:,.0f}" + (f" ({100 * share:.0f}%)" if share else "")


def table(run) -> list[str]:
    ok = [p for p in run.points if p.gflops or p.status != Status.OK]
    c = roofline.ceilings(run)
    lines = [f"### {run.device}", "",
             "ceilings (TFLOP/s; 8192³, nt, the library): " + ", ".join(
                 f"{name} {peak / 1e3:,.0f}" for name, peak in roofline.peaks(run)
                 if name in {"FP32", *(str(p.dtype).upper() for p in ok)}), ""]
    if c.get("copy_gbps"):
        lines[-2] += f"; DRAM copy {c['copy_gbps']:,} GB/s"
    for op in ops.names():
        mine = [p for p in ok if p.op == op]
        if not mine:
            continue
        layouts = list(dict.fromkeys(str(p.problem.layout) for p in mine))
        rows = list(dict.fromkeys((row_label(p), str(p.dtype)) for p in mine))
        lines += [f"| {op} | dtype | {' | '.join(layouts)} |", "|---|---|" + "---:|" * len(layouts)]
        for label, dtype in rows:
            by_layout = {str(p.problem.layout): p for p in mine if row_label(p) == label and str(p.dtype) == dtype}
            variant = next(iter(by_layout.values())).variant
            lines.append(f"| {label} | {dtype} ({variant}) | "
                         + " | ".join(cell(by_layout.get(x), run) for x in layouts) + " |")
        lines.append("")
    return lines


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print("\n".join(table(results.load(path))))
