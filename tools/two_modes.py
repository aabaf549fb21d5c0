"""The two-mode rule (gpubench/measure/modes.py) over every point saved under results/: how many it flags, and each flagged
point's sorted samples to judge by eye. What docs/evidence/two-modes.md reports comes from this.

    python3 tools/two_modes.py              # the counts, and every flagged point in one line each
    python3 tools/two_modes.py --samples    # ... with each flagged point's sorted samples (µs)
    python3 tools/two_modes.py --simulate   # how often seeded synthetic samples of known shape are flagged
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from gpubench.analysis.compare import point_label  # noqa: E402
from gpubench.measure.modes import MIN_SAMPLES, two_modes  # noqa: E402
from gpubench.results import Status, load, saved_under  # noqa: E402


def survey(root: Path = REPO / "results"):
    """(files, points, points with enough samples, [(file, point, modes)]) over every ok point under root."""
    files, points, long_enough, flagged = saved_under(root), 0, 0, []
    for path in files:
        for p in load(path).points:
            if p.status != Status.OK or not p.samples_ms:
                continue
            points += 1
            long_enough += len(p.samples_ms) >= MIN_SAMPLES
            modes = two_modes(p.samples_ms)
            if modes is not None:
                flagged.append((path.relative_to(root).as_posix(), p, modes))
    return len(files), points, long_enough, flagged


SHAPES = {  # name: draw(rng, n), times around 10 (units do not matter: the rule is scale-free)
    "normal, 1%": lambda rng, n: rng.normal(10, 0.1, n),
    "lognormal, 5%": lambda rng, n: 10 * np.exp(rng.normal(0, 0.05, n)),
    "10 + exponential(1)": lambda rng, n: 10 + rng.exponential(1, n),
    "uniform 10-11": lambda rng, n: rng.uniform(10, 11, n),
    "Student t3, 1%": lambda rng, n: 10 + 0.1 * rng.standard_t(3, n),
    "normal 1% + 5% at +30%": lambda rng, n: np.where(rng.random(n) < 0.05, rng.normal(13, 0.1, n),
                                                      rng.normal(10, 0.1, n)),
    "two normals 1%, D 2, 50/50": lambda rng, n: _mixture(rng, n, 0.5, 0.2),
    "two normals 1%, D 3, 50/50": lambda rng, n: _mixture(rng, n, 0.5, 0.3),
    "two normals 1%, D 4, 30/70": lambda rng, n: _mixture(rng, n, 0.3, 0.4),
    "two normals 1%, D 6, 20/80": lambda rng, n: _mixture(rng, n, 0.2, 0.6),
}


def _mixture(rng, n, fast_share, apart):
    """Two normals of standard deviation 0.1 (1%) with centres `apart` around 10: Ashman's D is apart / 0.1."""
    return np.where(rng.random(n) < fast_share, rng.normal(10 - apart / 2, 0.1, n), rng.normal(10 + apart / 2, 0.1, n))


def simulate(repeats: int = 400, sizes=(20, 40, 100, 400)) -> None:
    rng = np.random.default_rng(7)
    print("| samples | " + " | ".join(f"n = {n}" for n in sizes) + " |\n|---|" + "---:|" * len(sizes))
    for name, draw in SHAPES.items():
        rates = [sum(two_modes(draw(rng, n)) is not None for _ in range(repeats)) / repeats for n in sizes]
        print(f"| {name} | " + " | ".join(f"{r:.1%}" for r in rates) + " |")


def main(show_samples: bool) -> None:
    files, points, long_enough, flagged = survey()
    print(f"{files} files, {points} ok points, {long_enough} with at least {MIN_SAMPLES} samples, "
          f"{len(flagged)} with two modes")
    for name, p, m in sorted(flagged, key=lambda f: -f[2].gap):
        print(f"{name}: {point_label(p)}: {m.describe()}, gap {m.gap:.1%}, D {m.separation:.1f}, "
              f"valley {m.amplitude:.2f}, n {m.n}")
        if show_samples:
            print("   ", " ".join(f"{s * 1e3:.4g}" for s in sorted(p.samples_ms)))


if __name__ == "__main__":
    simulate() if "--simulate" in sys.argv[1:] else main("--samples" in sys.argv[1:])
