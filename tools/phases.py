"""Print where a run's time went, from the files a run with GPUBENCH_PHASES=DIR left in DIR.

    GPUBENCH_PHASES=/tmp/phases gpubench run lab && python tools/phases.py /tmp/phases

One tree per role (the coordinator; the workers, added up): each phase's inclusive and own (self) seconds and
how often it ran, then the amounts recorded under phases (`timed`: the GPU time of the timed samples).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpubench.core import phases  # noqa: E402


def report(directory: str | Path, min_seconds: float = 0.05) -> str:
    lines = []
    for role, totals in phases.merged(directory).items():
        lines.append(f"## {role} ({totals['processes']} process{'es' if totals['processes'] != 1 else ''})")
        lines.append(f"{'phase':<58} {'total s':>9} {'self s':>9} {'count':>8}")
        for key, depth, total, own, count in phases.tree(totals):
            if total < min_seconds:
                continue
            name = "  " * depth + key.rsplit(phases.SEP, 1)[-1]
            lines.append(f"{name:<58} {total:9.2f} {own:9.2f} {count:8d}")
        by_name: dict[str, float] = {}
        for key, amount in totals["amounts"].items():
            leaf = key.rsplit(phases.SEP, 1)[-1]
            by_name[leaf] = by_name.get(leaf, 0.0) + amount
            if amount >= min_seconds:
                lines.append(f"amount {key}: {amount:.2f}")
        for leaf, amount in sorted(by_name.items()):
            lines.append(f"amount {leaf} (everywhere): {amount:.2f}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/phases.py DIR (the GPUBENCH_PHASES directory of a run)")
    print(report(sys.argv[1]))
