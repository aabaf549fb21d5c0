"""What compare's verdicts on identical code become with the process as a source of variation, simulated: each run
measures one point in K processes, each process shifted by its own N(0, σ_p) (in log) and its 64 samples scattered by
1% around that; two such runs of the same code are compared as `gpubench compare` compares them (the rank interval
for K = 1, the hierarchical bootstrap for K ≥ 2, family-wise over 132 points, threshold 5%). Prints the share of
each verdict per σ_p and K (docs/measuring/processes.md quotes it). No GPU; seeded, so the table is the same each run.

    python3 tools/processes_simulation.py [pairs per cell, default 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpubench.analysis.compare import Verdict, verdict  # noqa: E402
from gpubench.measure import hierarchical  # noqa: E402
from gpubench.measure.stats import ratio_interval  # noqa: E402

POINTS, THRESHOLD, SAMPLES, NOISE = 132, 0.05, 64, 0.01


def main(pairs: int = 200) -> None:
    rng = np.random.default_rng(2026)
    alpha = 0.05 / POINTS

    def run(k: int, sigma: float) -> list[tuple[float, ...]]:
        return [tuple(0.01 * np.exp(rng.normal(0, sigma) + rng.normal(0, NOISE, SAMPLES))) for _ in range(k)]

    print("| process SD | K | slower | faster | same | inconclusive |")
    print("|---:|---:|---:|---:|---:|---:|")
    for sigma in (0.01, 0.02, 0.03):
        for k in (1, 2, 3, 4):
            counts = dict.fromkeys(Verdict, 0)
            for _ in range(pairs):
                a, b = run(k, sigma), run(k, sigma)
                _, low, high = (ratio_interval(a[0], b[0], alpha) if k == 1 else
                                hierarchical.ratio_interval(a, b, alpha))
                counts[verdict(low, high, THRESHOLD)] += 1
            shares = " | ".join(f"{100 * counts[v] / pairs:.1f}%" for v in (Verdict.SLOWER, Verdict.FASTER,
                                                                             Verdict.SAME, Verdict.INCONCLUSIVE))
            print(f"| {100 * sigma:.0f}% | {k} | {shares} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
