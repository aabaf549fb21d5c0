"""The INT8/epilogue and attention targets judged over their rounds, by the rule of
docs/evidence/int8-attention-rounds.md: each row's hand kernel runs the configuration fastest on that problem in
pass 0; per round the ratio is the library's median over the kernel's (every pair counts, whatever its clocks; the
clocks are shown); met when the rounds' median ratio reaches the row's threshold and the 90% sign-test interval of
that median holds the threshold or lies above it, not met when the interval lies below it, else at the line.

    python3 tools/gpu/judge_rounds.py PASS0.json.gz ROUND1.json.gz ROUND2.json.gz ...   # a markdown table
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.analysis.rounds import problem_of, rows  # noqa: E402
from gpubench.results import load  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fix_configs import fastest_points  # noqa: E402

LEVEL = 0.90
# (op, the hand kernel judged, its library, the threshold of a problem; None: reported, not judged)
TARGETS = [
    ("attention", "fa3-wgmma", "cudnn-sdpa", lambda shape: 0.95),
    ("gemm", "int8-wgmma-tma", "cublaslt", lambda shape: 0.95),
    ("conv", "tc-wgmma-int8", "cudnn", lambda shape: 1.00 if shape.stride == 1 else 0.90),
    ("conv", "tc-wgmma-tma", "cudnn", lambda shape: 1.00 if shape.stride == 1 else None),
]


def fixed(pass0) -> dict[tuple[str, str], tuple[str, object]]:
    """{(problem, variant): (configuration, shape)}: the configuration fastest in pass 0, of each judged kernel."""
    judged = {(op, v) for op, v, _, _ in TARGETS}
    best = fastest_points(pass0.points, lambda p: (p.problem.op, p.variant) in judged)
    return {(problem_of(p), p.variant): (p.config, p.problem) for p in best.values()}


def verdict(interval, threshold: float | None) -> str:
    if threshold is None:
        return "reported"
    if interval is None or interval.level < LEVEL:
        return "too few rounds"
    if interval.median >= threshold and interval.low >= threshold:
        return "met"
    if interval.high < threshold:
        return "not met"
    return "at the line"


def clocks(rounds, problem: str, names: tuple[str, str]) -> str:
    """Where the power limiter stood: the library's and the kernel's median SM clock over the rounds, in how many
    rounds either had NVML-capped samples, and the ratio per clock: per round, the library's cycles over the
    kernel's (time × median SM clock), their median. The verdict counts every pair whatever its clocks."""
    mhz: dict[str, list[float]] = {n: [] for n in names}
    capped, per_clock = 0, []
    for run in rounds:
        points = {f"{p.variant} {p.config}": p for p in run.points if problem_of(p) == problem}
        points.update({p.variant: p for p in run.points if problem_of(p) == problem and p.variant == names[0]})
        hit, cycles = False, []
        for n in names:
            p = points.get(n)
            t = (p.telemetry or {}) if p is not None else {}
            if "sm_mhz" in t and p.samples_ms:
                mhz[n].append(t["sm_mhz"])
                cycles.append(p.median_ms * t["sm_mhz"])
                hit |= bool(t.get("throttled"))
        capped += hit
        if len(cycles) == 2:
            per_clock.append(cycles[0] / cycles[1])
    text = " / ".join(f"{statistics.median(v):.0f}" if v else "?" for v in mhz.values())
    ratio = f"; per clock {statistics.median(per_clock):.3f}" if per_clock else ""
    return f"{text}; capped in {capped} of {len(rounds)}{ratio}"


def main(pass0_path: str, round_paths: list[str]) -> None:
    pass0, rounds = load(pass0_path), [load(p) for p in round_paths]
    chosen = fixed(pass0)
    print("| problem | kernel (fixed in pass 0) | library | rounds' ratios | median (90% interval) | target | verdict "
          "| SM MHz, library / kernel; the ratio per clock |")
    print("|---|---|---|---|---:|---:|---|---|")
    for op, variant, library, threshold_of in TARGETS:
        by_kernel = {(r.problem, r.kernel): r for r in rows(rounds, library, any_state=True)}
        for (problem, v), (config, shape) in chosen.items():
            if v != variant:
                continue
            row = by_kernel.get((problem, f"{variant} {config}"))
            threshold = threshold_of(shape)
            if row is None:
                print(f"| {shape.full_label} | {variant} {config} | {library} | not in the rounds | | {threshold} | — |")
                continue
            m = row.interval(LEVEL)
            ratios = " ".join("—" if r is None else f"{r:.3f}" for r in row.ratios)
            span = f"{m.median:.3f} ({m.low:.3f}-{m.high:.3f})" if m else "—"
            print(f"| {shape.full_label} | {variant} {config} | {library} | {ratios} | {span} | "
                  f"{'' if threshold is None else f'{threshold:.2f}'} | {verdict(m, threshold)} | "
                  f"{clocks(rounds, problem, (library, f'{variant} {config}'))} |")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
