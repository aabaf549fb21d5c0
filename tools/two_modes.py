"""The two-mode rule (gpubench/modes.py) over every point saved under results/: how many it flags, and each flagged
point's sorted samples to judge by eye. What docs/evidence/two-modes.md reports comes from this.

    python3 tools/two_modes.py              # the counts, and every flagged point in one line each
    python3 tools/two_modes.py --samples    # ... with each flagged point's sorted samples (µs)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.compare import point_label  # noqa: E402
from gpubench.modes import MIN_SAMPLES, two_modes  # noqa: E402
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
    main("--samples" in sys.argv[1:])
