"""What `gpubench ab` prints: the two sides, the rounds' ratios, the paired test and the verdict (text or JSON).

It reads the A/B's outcome (gpubench/usecases/ab.py's ABOutcome) by its fields; it runs nothing."""

from __future__ import annotations

import json

from gpubench.analysis.compare import Verdict


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
    if ratios:
        out.append("  B/A by round: " + " ".join(f"{r:.4f}" for r in ratios))
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
    if o.verdict is not None:
        why = "" if r is None or r.enough else f" (fewer than the rounds a {100 * o.level:.0f}% interval needs)"
        out.append(f"verdict: B is {o.verdict} than A at ±{100 * o.threshold:.2g}%{why}"
                   if o.verdict in (Verdict.SLOWER, Verdict.FASTER) else
                   f"verdict: {o.verdict} at ±{100 * o.threshold:.2g}%{why}")
    else:
        out.append(f"no verdict: {o.problem}")
    return out


def _mid(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def as_json(o) -> str:
    rounds = [(a.median_ms, b.median_ms) for a, b in o.rounds if a.median_ms and b.median_ms]
    data = {"device": o.device, "op": str(o.shape.op), "problem": o.shape.record(), "sides": list(o.sides),
            "configs": list(o.configs), "threshold": o.threshold, "level": o.level,
            "median_ms": [_mid([r[0] for r in rounds]), _mid([r[1] for r in rounds])],
            "ratios": o.ratios, "test": o.result.as_dict() if o.result else None,
            "kernel_ratios": o.kernel_ratios, "kernel_test": o.kernel_result.as_dict() if o.kernel_result else None,
            "verdict": str(o.verdict) if o.verdict is not None else None, "problem_text": o.problem or None,
            "exit_code": int(o.exit_code)}
    return json.dumps(data, indent=1)


def show(o, fmt: str, echo) -> None:
    if fmt == "json":
        echo(as_json(o))
        return
    for line in lines(o):
        echo(line)

