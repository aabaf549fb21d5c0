"""What `gpubench ab FILE...` prints: each kernel's ratio to the baseline over saved rounds (analysis/rounds.py), as
aligned text, Markdown or JSON, the pairs left out and why, and the screening rule's scores where asked."""

from __future__ import annotations

import json

from gpubench.analysis.rounds import fastest_layouts, verdict

HEAD = ["problem", "kernel", "baseline TFLOP/s", "clean rounds", "median ratio", "interval", "verdict",
        "ratio by round"]


def _cells(table, level: float) -> list[list[str]]:
    fastest = fastest_layouts(table)
    lines = []
    for r in table:
        m = r.interval(level)
        rounds = " ".join("-" if x is None else f"{x:.4f}" for x in r.ratios)
        lines.append([r.problem + (" (baseline's fastest)" if r.problem in fastest else ""), r.kernel,
                      "-" if r.baseline_tflops is None else f"{r.baseline_tflops:,.0f}",
                      f"{len(r.clean)}/{len(r.ratios)}", "-" if m is None else f"{m.median:.4f}",
                      "-" if m is None else f"{m.low:.4f}-{m.high:.4f} ({100 * m.level:.0f}%)", verdict(m, level),
                      rounds])
    return lines


def render(o, fmt: str) -> str:
    """The outcome (usecases/ab.RoundsOutcome) as text or Markdown, or JSON."""
    if fmt == "json":
        return json.dumps({"baseline": o.baseline, "level": o.level, "rows": [
            {"problem": r.problem, "kernel": r.kernel, "ratios": list(r.ratios), "why_not": list(r.why_not),
             "baseline_tflops": r.baseline_tflops, "interval": (m := r.interval(o.level)) and m.__dict__,
             "verdict": verdict(m, o.level)} for r in o.table],
            "screen": None if o.screened is None else {"scores": o.screened[0], "passing": o.screened[1]}}, indent=1)
    lines = _cells(o.table, o.level)
    if fmt == "markdown":
        out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
    else:
        widths = [max(len(x) for x in col) for col in zip(HEAD, *lines)]
        out = ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [HEAD, *lines]]
    skipped = [(r, i, w) for r in o.table for i, w in enumerate(r.why_not) if w]
    if skipped:
        out += ["", "Pairs left out (round: why):"]
        out += [f"  {r.problem} {r.kernel}, round {i + 1}: {w}" for r, i, w in skipped]
    if o.screened is not None:
        scores, passing = o.screened
        out += ["", f"Screening against {o.screen}: mean median ratio less the reference's, best first"]
        out += [f"{k}: {diff:+.4f} over {n} problems" for k, diff, n in scores]
        out.append("PASSING: " + "; ".join(passing))
    return "\n".join(out)
