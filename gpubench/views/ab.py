"""What `gpubench ab` prints: the two sides, the rounds' ratios, the paired test and the verdict (text or JSON).

It reads the A/B's outcome (gpubench/usecases/ab.py's ABOutcome) by its fields; it runs nothing."""

from __future__ import annotations

import json

from gpubench.analysis.compare import Verdict
from gpubench.results import neighbours


def _us(ms: float | None) -> str:
    return "-" if ms is None else f"{ms * 1e3:,.2f} µs" if ms < 1 else f"{ms:,.4f} ms"


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.2f}%"


def lines(o) -> list[str]:
    """The outcome as lines of text (names escaped for rich's markup by the caller where it prints through rich)."""
    a_name, b_name = o.names
    rounds = o.rounds
    medians = [(a.median_ms, b.median_ms) for a, b in rounds if a.median_ms and b.median_ms]
    out = [f"A/B on {o.device}: {o.shape.op} {o.shape.full_label}, {len(rounds)} round(s) in one process",
           f"  A  {o.sides[0]} [{o.configs[0]}]" + (f"  median of rounds {_us(_mid([m[0] for m in medians]))}"
                                                    if medians else ""),
           f"  B  {o.sides[1]} [{o.configs[1]}]" + (f"  median of rounds {_us(_mid([m[1] for m in medians]))}"
                                                    if medians else "")]
    ratios = o.ratios
    if ratios and len(ratios) <= SHOWN_ROUNDS:
        out.append("  B/A by round: " + " ".join(f"{r:.4f}" for r in ratios))
    elif ratios:
        q1, q2, q3 = _quartiles(ratios)
        out.append(f"  B/A by round: quartiles {q1:.4f} {q2:.4f} {q3:.4f}, range {min(ratios):.4f}-{max(ratios):.4f} "
                   f"(every round's in --format json)")
    by_order = {first: [r for r, o_ in zip(ratios, o.orders) if o_ == first] for first in dict.fromkeys(o.orders)}
    if len(by_order) == 2 and all(by_order.values()):
        out.append("  median B/A by order: " + ", ".join(f"{first} {_mid(rs):.4f} ({len(rs)} rounds)"
                                                         for first, rs in by_order.items()))
    r = o.result
    if r is not None:
        out.append(f"  median B/A {r.median:.4f} ({_pct(r.median)}), sign-test interval {r.low:.4f}-{r.high:.4f} "
                   f"({100 * r.level:.1f}% coverage); B slower in {r.above}, faster in {r.below} of {r.n} rounds, "
                   f"exact sign test p = {r.p_value:.2g}")
        out.append(f"  geometric mean B/A {r.geomean:.4f}, bootstrap {100 * o.level:.0f}% interval "
                   f"{r.boot_low:.4f}-{r.boot_high:.4f}")
    k = o.kernel_result
    if k is not None:
        out.append(f"  by CUPTI's kernel times ({k.n} rounds): median B/A {k.median:.4f} ({_pct(k.median)}), interval "
                   f"{k.low:.4f}-{k.high:.4f}, p = {k.p_value:.2g} (beside the events' verdict)")
    if company := neighbours.warning(o.company):
        out.append(f"  {company}")
    if o.verdict is not None:
        why = "" if r is None or r.enough else f" (fewer than the rounds a {100 * o.level:.0f}% interval needs)"
        out.append(f"verdict: B is {o.verdict} than A at ±{100 * o.threshold:.2g}%{why}"
                   if o.verdict in (Verdict.SLOWER, Verdict.FASTER) else
                   f"verdict: {o.verdict} at ±{100 * o.threshold:.2g}%{why}")
    else:
        out.append(f"no verdict: {o.problem}")
    return out


SHOWN_ROUNDS = 40  # more rounds than this are summarised in the text (JSON keeps each)


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    import statistics

    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def _mid(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def as_json(o) -> str:
    rounds = [(a.median_ms, b.median_ms) for a, b in o.rounds if a.median_ms and b.median_ms]
    data = {"device": o.device, "op": str(o.shape.op), "problem": o.shape.record(), "sides": list(o.sides),
            "configs": list(o.configs), "threshold": o.threshold, "level": o.level,
            "median_ms": [_mid([r[0] for r in rounds]), _mid([r[1] for r in rounds])],
            "ratios": o.ratios, "test": o.result.as_dict() if o.result else None,
            "rounds": [_round(first, a, b, ratio) for first, (a, b), ratio in zip(o.orders, o.rounds, o.ratios)],
            "kernel_ratios": o.kernel_ratios, "kernel_test": o.kernel_result.as_dict() if o.kernel_result else None,
            "verdict": str(o.verdict) if o.verdict is not None else None, "problem_text": o.problem or None,
            "exit_code": int(o.exit_code), neighbours.KEY: o.company.as_dict() if o.company else None}
    return json.dumps(data, indent=1)


def _round(first: str, a, b, ratio: float) -> dict:
    """One round as the JSON keeps it: which side's call came first, its ratio, both sides' samples in the order
    taken (the i-th of each side are adjacent calls) and, with --clock both, their kernel times pair by pair."""
    out = {"order": first, "ratio": ratio, "a_ms": list(a.samples_ms), "b_ms": list(b.samples_ms)}
    if a.details.kernel_ms and b.details.kernel_ms:
        out.update(a_kernel_ms=list(a.details.kernel_ms), b_kernel_ms=list(b.details.kernel_ms))
    return out


def show(o, fmt: str, echo) -> None:
    if fmt == "json":
        echo(as_json(o))
        return
    for line in lines(o):
        echo(line)

