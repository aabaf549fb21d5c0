"""The targets judged over their rounds, by the rules of docs/evidence/int8-attention-rounds.md (INT8/epilogue,
attention) and docs/evidence/grouped-rounds.md (grouped GEMM): each row's hand kernel runs the configuration
fastest on that problem in pass 0; per round its figure is the library's median time over the kernel's (where a
problem has several libraries, the fastest of them that ran and passed in that round), or, for a target in TFLOP/s,
the kernel's own rate; every round counts, whatever its clocks (the clocks are shown). Met when the rounds' median
reaches the row's threshold and the 90% sign-test interval of that median holds the threshold or lies above it, not
met when the interval lies below it, else at the line (gpubench/analysis/targets.py).

    python3 tools/gpu/judge_rounds.py PASS0.json.gz ROUND1.json.gz ROUND2.json.gz ...   # Markdown tables
    python3 tools/gpu/judge_rounds.py --new n1 PASS0.json.gz ROUND1.json.gz ...

--new WORD: the series exists to judge WORD (a word of a configuration label, grouped-rounds.md's guard): a row whose
fixed configuration lacks it is judged all the same, but marked as reported, its earlier verdict standing.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.analysis.rounds import fastest_of, measured, problem_of, problem_text, rows  # noqa: E402
from gpubench.analysis.targets import Measure, Threshold, judge, rates  # noqa: E402
from gpubench.core.dtypes import DType  # noqa: E402
from gpubench.results import load  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fix_configs import fastest_points  # noqa: E402

LEVEL = 0.90


@dataclass(frozen=True)
class Target:
    """A hand kernel held to a threshold on each problem of its op in the rounds (None: reported, not judged)."""

    op: str
    kernel: str
    libraries: tuple[str, ...]  # the variants that stand for the library; per round the fastest that passed
    threshold: Callable[[object], Threshold | None]
    beside: Callable[[object], object] | None = None  # a TFLOP/s target: the problem whose library error is shown


def per_tensor(shape):
    """The same grouped problem with per-tensor scales: the nearest the libraries take to a block-scaled one."""
    return replace(shape, layout=shape.LAYOUT.MASKED if shape.layout.masked else shape.LAYOUT.CONTIGUOUS)


GROUPED_LIBRARIES = ("library", "cublas-loop")
TARGETS = [
    Target("attention", "fa3-wgmma", ("cudnn-sdpa",), lambda shape: Threshold(0.95)),
    Target("gemm", "int8-wgmma-tma", ("cublaslt",), lambda shape: Threshold(0.95)),
    Target("conv", "tc-wgmma-int8", ("cudnn",), lambda shape: Threshold(1.00 if shape.stride == 1 else 0.90)),
    Target("conv", "tc-wgmma-tma", ("cudnn",), lambda shape: Threshold(1.00) if shape.stride == 1 else None),
    Target("grouped-gemm", "wgmma-grouped", GROUPED_LIBRARIES,
           lambda shape: Threshold(1.00) if shape.dtype == DType.BF16 else None),
    Target("grouped-gemm", "fp8-grouped", GROUPED_LIBRARIES,
           lambda shape: Threshold(1250, Measure.TFLOPS) if shape.layout.block_scaled else None, per_tensor),
]
RATIO_HEAD = ("| problem | kernel (fixed in pass 0) | library | rounds' ratios | median (90% interval) | target "
              "| verdict | SM MHz, library / kernel; the ratio per clock |\n|---|---|---|---|---:|---:|---|---|")
RATE_HEAD = ("| problem | kernel (fixed in pass 0) | rounds' TFLOP/s | median (90% interval) | target | verdict "
             "| rel_err per round; the per-tensor library's | SM MHz of the kernel |\n"
             "|---|---|---|---:|---:|---|---|---|")


def fixed(pass0) -> dict[tuple[str, str], tuple[str, object]]:
    """{(problem, variant): (configuration, shape)}: the configuration fastest in pass 0, of each judged kernel."""
    judged = {(t.op, t.kernel) for t in TARGETS}
    best = fastest_points(pass0.points, lambda p: (p.problem.op, p.variant) in judged)
    return {(problem_of(p), p.variant): (p.config, p.problem) for p in best.values()}


def find(run, problem: str, name: str):
    """The run's point of that problem named `name` (a library's variant, or a kernel's variant and configuration)."""
    return next((p for p in run.points if problem_of(p) == problem and name in (p.variant, f"{p.variant} {p.config}")),
                None)


def clocks(sides: list[tuple]) -> str:
    """Where the power limiter stood, from each round's points (library and kernel, or the kernel alone): each
    side's median SM clock over the rounds, in how many rounds either had NVML-capped samples, and with two sides
    the ratio per clock: per round, the library's cycles over the kernel's (time × median SM clock), their median.
    The verdict counts every round whatever its clocks."""
    mhz: list[list[float]] = [[] for _ in sides[0]] if sides else []
    capped, per_clock = 0, []
    for points in sides:
        hit, cycles = False, []
        for i, p in enumerate(points):
            t = (p.telemetry or {}) if p is not None else {}
            if "sm_mhz" in t and p.samples_ms:
                mhz[i].append(t["sm_mhz"])
                cycles.append(p.median_ms * t["sm_mhz"])
                hit |= bool(t.get("throttled"))
        capped += hit
        if len(points) == 2 and len(cycles) == 2:
            per_clock.append(cycles[0] / cycles[1])
    text = " / ".join(f"{statistics.median(v):.0f}" if v else "?" for v in mhz)
    ratio = f"; per clock {statistics.median(per_clock):.3f}" if per_clock else ""
    return f"{text}; capped in {capped} of {len(sides)}{ratio}"


def shown(value: float, fmt: str, line: float | None) -> str:
    """value as fmt gives it (ratios ".3f", TFLOP/s ",.0f"), with more places where fmt's rounding would carry it
    to the other side of the line: 1,249.65 TFLOP/s reads "1,249.7", not "1,250", beside a line of 1,250, so that
    no printed figure seems to reach a threshold it misses (or to miss one it reaches)."""
    text = f"{value:{fmt}}"
    if line is None:
        return text
    places = int(fmt.rstrip("f").split(".")[1])
    while (float(text.replace(",", "")) >= line) != (value >= line) and places < 6:
        places += 1
        text = f"{value:{fmt.split('.')[0]}.{places}f}"
    return text


def span(m, fmt: str = ".3f", line: float | None = None) -> str:
    """The rounds' median and its interval (ratios to three places; TFLOP/s with fmt ",.0f"), each figure on its
    own side of the line (shown)."""
    return (f"{shown(m.median, fmt, line)} ({shown(m.low, fmt, line)}-{shown(m.high, fmt, line)})" if m else "—")


def verdict(m, threshold, kernel: str, new: str | None) -> str:
    """judge()'s verdict, marked as reported where the series judges `new` and this row's configuration lacks it."""
    said = judge(m, threshold, LEVEL)
    if new is None or threshold is None or new in kernel.split()[1:]:  # (a row with no threshold: reported already)
        return said
    return f"{said} (reported: not {new})"


def ratio_line(rounds, target: Target, row, shape, kernel: str, new: str | None = None) -> str:
    threshold = target.threshold(shape)
    stood = Counter(b for b, r in zip(row.baselines, row.ratios) if r is not None)
    library = target.libraries[0] if len(target.libraries) == 1 else (
        f"the faster of {' / '.join(target.libraries)}: "
        + ", ".join(f"{n} in {c} of {len(row.ratios)}" for n, c in stood.most_common()))
    line = None if threshold is None else threshold.value
    ratios = " ".join("—" if r is None else shown(r, ".3f", line) for r in row.ratios)
    m = row.interval(LEVEL)
    sides = [(find(run, row.problem, b), find(run, row.problem, kernel)) for run, b in zip(rounds, row.baselines)]
    return (f"| {shape.full_label} | {kernel} | {library} | {ratios} | {span(m, '.3f', line)} | "
            f"{'' if threshold is None else threshold} | {verdict(m, threshold, kernel, new)} | "
            f"{clocks(sides)} |")


def errors(rounds, target: Target, rate, shape) -> str:
    """The kernel's rel_err per round, and per round the fastest library's on the problem beside it."""
    mine = " ".join("—" if e is None else f"{e:.3e}" for e in rate.rel_errs)
    if target.beside is None:
        return mine
    beside = problem_text(target.beside(shape))
    theirs = [fastest_of(p for p in run.points if problem_of(p) == beside and p.variant in target.libraries)
              for run in rounds]
    theirs = [p if p is not None and not measured(p) else None for p in theirs]
    if not any(theirs):
        return f"{mine}; none ran"
    names = ", ".join(sorted({p.variant for p in theirs if p}))
    return f"{mine}; {names}: " + " ".join("—" if p is None else f"{p.rel_err:.3e}" for p in theirs)


def rate_line(rounds, target: Target, rate, shape, kernel: str, new: str | None = None) -> str:
    threshold = target.threshold(shape)
    values = " ".join("—" if t is None else shown(t, ",.0f", threshold.value) for t in rate.tflops)
    m = rate.interval(LEVEL)
    sides = [(find(run, rate.problem, kernel),) for run in rounds]
    return (f"| {shape.full_label} | {kernel} | {values} | {span(m, ',.0f', threshold.value)} | {threshold} | "
            f"{verdict(m, threshold, kernel, new)} | {errors(rounds, target, rate, shape)} | {clocks(sides)} |")


def main(pass0_path: str, round_paths: list[str], new: str | None = None) -> None:
    pass0, rounds = load(pass0_path), [load(p) for p in round_paths]
    chosen = fixed(pass0)
    by_rate = {(r.problem, r.kernel): r for r in rates(rounds)}
    ratio_lines, rate_lines = [], []
    for target in TARGETS:
        by_ratio = {(r.problem, r.kernel): r for r in rows(rounds, target.libraries, any_state=True)}
        for (problem, variant), (config, shape) in chosen.items():
            if variant != target.kernel or shape.op != target.op:
                continue
            kernel, threshold = f"{variant} {config}", target.threshold(shape)
            if threshold is not None and threshold.measure == Measure.TFLOPS:
                rate = by_rate.get((problem, kernel))
                rate_lines.append(rate_line(rounds, target, rate, shape, kernel, new) if rate else
                                  f"| {shape.full_label} | {kernel} | not in the rounds | | {threshold} | — | | |")
                continue
            row = by_ratio.get((problem, kernel))
            ratio_lines.append(ratio_line(rounds, target, row, shape, kernel, new) if row else
                               f"| {shape.full_label} | {kernel} | {' / '.join(target.libraries)} | not in the rounds "
                               f"| | {'' if threshold is None else threshold} | — | |")
    print("\n".join([RATIO_HEAD, *ratio_lines]))
    if rate_lines:
        print("\n" + "\n".join([RATE_HEAD, *rate_lines]))


if __name__ == "__main__":
    args = sys.argv[1:]
    new = None
    if args[:1] == ["--new"]:
        new, args = (args[1], args[2:]) if len(args) > 1 else (None, [])
    if len(args) < 2:
        sys.exit(__doc__)
    main(args[0], args[1:], new)
