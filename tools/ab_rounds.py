"""Ratios to a baseline over repeated rounds: the A/B that tells a kernel 0.5% from a library.

    python3 tools/ab_rounds.py results/<gpu>/tc-gemm-ab-r*.json [--baseline cublas] [--level 0.9] [--markdown]

Each file is one round: one process (`gpubench gemm ...` or `gpubench run tools/gpu/tc-gemm-ab.toml`,
tools/gpu/gemm_ab.sh makes several, back to back, the baseline first on each problem in every round) that
measured the baseline and the kernels on the same problems. In each round every kernel point is paired with the baseline's point of
the same problem and its ratio taken, baseline median time / kernel median time (above 1: the kernel is
faster). A pair counts only where both points passed and ran clock-unclamped: no sample flagged by NVML as
power- or thermally-capped, and their median SM clocks equal (a capped point compares power limits, not
kernels). Over the rounds each ratio gets its median and the sign test's interval for it
(gpubench.measure.stats.median_interval): the spread from process to process, not the samples' within one, is what a
0.5% difference has to stand out of. Without --markdown: a plain table; the per-round ratios are listed too.

--screen KERNEL applies the screening rule of the 16-bit rounds (fixed before the rounds it picks for): each other
kernel's mean over the problems of its median ratio (clean pairs), less KERNEL's over the same problems; those at
or above it go on, at most --keep of them (2), the best first. It prints one line a kernel, then `PASSING: ...`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpubench import results  # noqa: E402
from gpubench.results import Point, Run, Status  # noqa: E402
from gpubench.measure.stats import MedianInterval, median_interval  # noqa: E402


@dataclass(frozen=True)
class Row:
    """One kernel configuration on one problem against the baseline, over the rounds."""

    problem: str  # the shape: precision, layout, size ("bf16 nn 4096")
    kernel: str  # variant and configuration
    ratios: tuple[float | None, ...]  # per round, in the order given; None: not a clean pair in that round
    why_not: tuple[str, ...]  # per round: why the pair did not count ("" where it did)
    baseline_tflops: float | None  # the baseline's median TFLOP/s over its clean rounds

    @property
    def clean(self) -> list[float]:
        return [r for r in self.ratios if r is not None]

    def interval(self, level: float) -> MedianInterval | None:
        return median_interval(self.clean, level) if self.clean else None


def measured(p: Point) -> str:
    """Why this point cannot be paired in any power state ("" when it can): not ok, or no samples."""
    return "" if p.status == Status.OK and p.samples_ms else f"{p.variant} {p.status}"


def unclamped(p: Point) -> str:
    """Why this point cannot be paired ("" when it can): not ok, no telemetry, or capped samples."""
    if why := measured(p):
        return why
    t = p.telemetry or {}
    if "throttled" not in t or "sm_mhz" not in t:
        return f"{p.variant}: no clock telemetry"
    if t["throttled"]:
        return f"{p.variant} {t['sm_mhz']:.0f} MHz, {t['throttled']} capped"
    return ""


def pair(base: Point, ours: Point, any_state: bool = False) -> str:
    """Why the pair does not count ("" when it does). any_state: pairs count whatever the two points' clocks,
    for a layer where one side is always the limiter's (the ratio is then the power-capped race itself)."""
    if any_state:
        return measured(base) or measured(ours)
    why = unclamped(base) or unclamped(ours)
    if not why and base.telemetry["sm_mhz"] != ours.telemetry["sm_mhz"]:
        why = f"clocks {base.telemetry['sm_mhz']:.0f} / {ours.telemetry['sm_mhz']:.0f} MHz"
    return why


def problem_of(p: Point) -> str:
    shape = p.problem
    return " ".join(str(x) for x in (getattr(shape, "dtype", ""), getattr(shape, "layout", ""), shape.label) if str(x))


def rows(runs: list[Run], baseline: str, any_state: bool = False) -> list[Row]:
    """Every (problem, kernel) of the runs against the baseline's point of the same problem in the same run."""
    keys: dict[tuple[str, str], None] = {}
    per_run = []
    for run in runs:
        base = {problem_of(p): p for p in run.points if p.variant == baseline}
        ours = {(problem_of(p), f"{p.variant} {p.config}"): p for p in run.points if p.variant != baseline}
        per_run.append((base, ours))
        for key in ours:
            keys.setdefault(key)
    out = []
    for problem, kernel in keys:
        ratios, why_not, base_tflops = [], [], []
        for base, ours in per_run:
            b, o = base.get(problem), ours.get((problem, kernel))
            why = "not in this round" if b is None or o is None else pair(b, o, any_state)
            ratios.append(None if why else b.median_ms / o.median_ms)
            why_not.append(why)
            if b is not None and not unclamped(b):
                base_tflops.append(b.flops / b.median_ms / 1e9)
        out.append(Row(problem, kernel, tuple(ratios), tuple(why_not),
                       statistics.median(base_tflops) if base_tflops else None))
    return out


def verdict(m: MedianInterval | None, level: float) -> str:
    if m is None:
        return "no clean round"
    if m.level < level:
        return f"{m.n} clean rounds: too few for a {100 * level:.0f}% interval"
    if m.low >= 1:
        return "at or past 1.00"
    if m.high < 1:
        return f"below 1.00 by {100 * (1 - m.median):.1f}% (at most {100 * (1 - m.high):.1f}%)"
    return "within the interval of 1.00"


def fastest_layouts(table: list[Row]) -> dict[str, str]:
    """For each precision and size, the problem the baseline is fastest in (its median TFLOP/s over rounds)."""
    best: dict[str, tuple[float, str]] = {}
    for r in table:
        if r.baseline_tflops is None:
            continue
        parts = r.problem.split()  # precision, layout, size: grouped by precision and size
        group = " ".join(parts[:1] + parts[2:])
        if group not in best or r.baseline_tflops > best[group][0]:
            best[group] = (r.baseline_tflops, r.problem)
    return {problem: group for group, (_, problem) in best.items()}


def render(table: list[Row], level: float, markdown: bool) -> str:
    fastest = fastest_layouts(table)
    head = ["problem", "kernel", "baseline TFLOP/s", "clean rounds", "median ratio", "interval", "verdict", "ratio by round"]
    lines = []
    for r in table:
        m = r.interval(level)
        rounds = " ".join("-" if x is None else f"{x:.4f}" for x in r.ratios)
        lines.append([r.problem + (" (baseline's fastest)" if r.problem in fastest else ""), r.kernel,
                      "-" if r.baseline_tflops is None else f"{r.baseline_tflops:,.0f}",
                      f"{len(r.clean)}/{len(r.ratios)}", "-" if m is None else f"{m.median:.4f}",
                      "-" if m is None else f"{m.low:.4f}-{m.high:.4f} ({100 * m.level:.0f}%)", verdict(m, level), rounds])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *lines)]
        out = ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *lines]]
    skipped = [(r, i, w) for r in table for i, w in enumerate(r.why_not) if w]
    if skipped:
        out.append("")
        out.append("Pairs left out (round: why):")
        out += [f"  {r.problem} {r.kernel}, round {i + 1}: {w}" for r, i, w in skipped]
    return "\n".join(out)


def screen(table: list[Row], reference: str, keep: int) -> tuple[list[tuple[str, float, int]], list[str]]:
    """Each kernel's mean median ratio less the reference's, over the problems where both have a clean pair (kernel,
    difference, problems; best first), and the kernels that pass: at or above the reference, the `keep` best."""
    medians = {(r.problem, r.kernel): statistics.median(r.clean) for r in table if r.clean}
    ours = {p: m for (p, k), m in medians.items() if k == reference}
    scores = []
    for kernel in dict.fromkeys(r.kernel for r in table if r.kernel != reference):
        both = [p for (p, k) in medians if k == kernel and p in ours]
        if both:
            scores.append((kernel, statistics.fmean(medians[p, kernel] - ours[p] for p in both), len(both)))
    scores.sort(key=lambda s: -s[1])
    return scores, [k for k, diff, _ in scores if diff >= 0][:keep]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="results files, one per round")
    parser.add_argument("--baseline", default="cublas", help="the variant every other is divided by [cublas]")
    parser.add_argument("--level", type=float, default=0.9, help="the median interval's coverage [0.9]")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--screen", metavar="KERNEL", help="the screening rule against this kernel (variant config)")
    parser.add_argument("--keep", type=int, default=2, help="with --screen: how many may pass at most [2]")
    parser.add_argument("--any-power-state", action="store_true",
                        help="count every pair whatever its clocks (a layer where one side is always power-capped)")
    args = parser.parse_args(argv)
    if not 0 < args.level < 1:
        parser.error(f"--level {args.level}: give a coverage between 0 and 1, e.g. 0.9")
    try:
        runs = [results.load(p) for p in args.runs]
    except results.GpubenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    names = {p.variant for run in runs for p in run.points}
    if args.baseline not in names or names == {args.baseline}:
        print(f"error: the runs hold {', '.join(sorted(names)) or 'no points'}: --baseline must name one of them, "
              "and another variant must be there to compare", file=sys.stderr)
        return 2
    table = rows(runs, args.baseline, args.any_power_state)
    print(render(table, args.level, args.markdown))
    if args.screen:
        if args.screen not in {r.kernel for r in table}:
            print(f"error: --screen {args.screen!r} is none of the runs' kernels", file=sys.stderr)
            return 2
        scores, passing = screen(table, args.screen, args.keep)
        print(f"\nScreening against {args.screen}: mean median ratio less the reference's, best first")
        print("\n".join(f"{k}: {diff:+.4f} over {n} problems" for k, diff, n in scores))
        print("PASSING: " + "; ".join(passing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
