"""Where a quick pass stands against its libraries: for each problem of a saved run, the fastest library point and,
per hand kernel, its fastest configuration, as a Markdown table (library ms, kernel ms, library / kernel, the
kernel's TFLOP/s and its SM clock). The exploratory passes and pass 0 of the target rounds are read with it
(docs/evidence/targets-explore-h200.md). The best of several noisy configurations flatters the kernel by a percent
or two: these are not judged figures.

    python3 tools/gpu/explore_table.py RUN.json.gz [RUN.json.gz ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fix_configs import fastest_points  # noqa: E402

from gpubench.results import load  # noqa: E402

# the variants that stand for a library in these passes (the grouped GEMM's per-group cuBLAS loop counts as one:
# it is the best library call there is for that problem on this machine)
LIBRARIES = {"cudnn", "cudnn-sdpa", "cublas", "cublaslt", "library", "cublas-loop", "torch-flash"}


def table(path: str) -> str:
    run = load(path)
    best = fastest_points(run.points, lambda p: True)
    by_problem: dict[str, dict[str, object]] = {}
    for (variant, key), p in best.items():
        by_problem.setdefault(key, {})[variant] = p
    lines = [f"### `{path}`", "",
             "| problem | library | ms | hand kernel and configuration | ms | library / hand | TFLOP/s | SM MHz |",
             "|---|---|---:|---|---:|---:|---:|---:|"]
    for points in by_problem.values():
        libraries = {v: p for v, p in points.items() if v in LIBRARIES}
        hands = {v: p for v, p in points.items() if v not in LIBRARIES}
        if not hands:
            continue
        lib = min(libraries.values(), key=lambda p: p.median_ms) if libraries else None
        for variant, p in sorted(hands.items()):
            ratio = f"{lib.median_ms / p.median_ms:.3f}" if lib else "—"
            mhz = (p.telemetry or {}).get("sm_mhz")
            lines.append(f"| {p.problem.full_label} | {lib.variant if lib else 'none ran'} | "
                         f"{f'{lib.median_ms:.4f}' if lib else '—'} | {variant} `{p.config}` | {p.median_ms:.4f} | "
                         f"{ratio} | {p.gflops / 1e3:.0f} | {f'{mhz:.0f}' if mhz else '?'} |")
    return "\n".join(lines) + "\n"


def main(paths: list[str]) -> None:
    print("\n".join(table(p) for p in paths))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
