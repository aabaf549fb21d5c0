"""One cold-then-warm pair of saved runs, read as the cold-run probe reads it (tools/gpu/cold_probe.sh): per duration
class of the cold run's medians, the median warm/cold ratio and the median cold - warm difference per call in µs;
each run's empty-kernel floor; and `gpubench compare`'s counts at its default threshold.

    python3 tools/gpu/cold_pair.py COLD.json.gz WARM.json.gz [--by-point] [--around VARIANT]

--by-point adds every point in the cold run's order with its cold - warm difference in µs: where in the run the
difference starts, and how it scales with the kernels a call launches. --around VARIANT adds the median difference
before the run's first point of VARIANT (cudnn: where a cold run searches cuDNN's plans) and after it, by variant.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.analysis import compare  # noqa: E402
from gpubench.results import load  # noqa: E402

CLASSES = ((0.0, 0.010, "< 10 µs"), (0.010, 0.020, "10-20 µs"), (0.020, 0.100, "20-100 µs"), (0.100, 1e9, "> 0.1 ms"))


def by_class(cold, warm) -> list[str]:
    """One line per duration class with points in both runs."""
    warm_ms = {p.key(): p.median_ms for p in warm.points if p.samples_ms}
    lines = []
    for low, high, name in CLASSES:
        pairs = [(p.median_ms, warm_ms[p.key()]) for p in cold.points
                 if p.samples_ms and p.key() in warm_ms and low <= p.median_ms < high]
        if pairs:
            ratio = statistics.median(w / c for c, w in pairs)
            extra_us = statistics.median((c - w) * 1000 for c, w in pairs)
            lines.append(f"  {name}: {len(pairs)} points, warm/cold {ratio:.4f}, cold - warm {extra_us:+.3f} µs")
    return lines


def floor_us(run) -> str:
    floor = (run.environment.get("device") or {}).get("floor_ms")
    return "?" if floor is None else f"{floor * 1000:.3f}"


def by_point(cold, warm) -> list[str]:
    """Each point of the cold run, in its order: its label and cold - warm in µs (blank where either has none)."""
    warm_ms = {p.key(): p.median_ms for p in warm.points if p.samples_ms}
    lines = []
    for i, p in enumerate(cold.points):
        w = warm_ms.get(p.key()) if p.samples_ms else None
        diff = "" if w is None else f"{(p.median_ms - w) * 1000:+.3f}"
        lines.append(f"  {i:4d} {p.variant:18s} {p.config:22s} {p.shape_label():28s} {diff}")
    return lines


def around(cold, warm, variant: str) -> list[str]:
    """The median cold - warm difference (µs) before the cold run's first point of `variant`, and after it by
    variant (the first point itself left out)."""
    warm_ms = {p.key(): p.median_ms for p in warm.points if p.samples_ms}
    first = next((i for i, p in enumerate(cold.points) if p.variant == variant), None)
    if first is None:
        return [f"  no {variant} point in the cold run"]
    diffs: dict[str, list[float]] = {}
    for i, p in enumerate(cold.points):
        if i != first and p.samples_ms and p.key() in warm_ms:
            side = "before" if i < first else p.variant
            diffs.setdefault(side, []).append((p.median_ms - warm_ms[p.key()]) * 1000)
    before = diffs.pop("before", [])
    head = f"  before the first {variant} point (#{first}): " + \
        (f"{statistics.median(before):+.3f} µs ({len(before)} points)" if before else "no points")
    return [head] + [f"  after it, {name}: {statistics.median(d):+.3f} µs ({len(d)} points)"
                     for name, d in diffs.items()]


def main(cold_path: str, warm_path: str, points: bool = False, variant: str | None = None) -> None:
    cold, warm = load(cold_path), load(warm_path)
    report = compare.compare(cold, warm)
    counts = ", ".join(f"{report.count(v)} {v}" for v in compare.Verdict)
    print(f"{Path(cold_path).name} -> {Path(warm_path).name}: {counts}; floor {floor_us(cold)} -> {floor_us(warm)} µs")
    lines = by_class(cold, warm) + (around(cold, warm, variant) if variant else [])
    print("\n".join(lines + (by_point(cold, warm) if points else [])))


if __name__ == "__main__":
    args, variant, points = sys.argv[1:], None, False
    if "--by-point" in args:
        args.remove("--by-point")
        points = True
    if "--around" in args:
        at = args.index("--around")
        variant = args[at + 1] if at + 1 < len(args) else None
        del args[at:at + 2]
    if len(args) != 2 or ("--around" in sys.argv and variant is None):
        sys.exit(__doc__)
    main(*args, points=points, variant=variant)
