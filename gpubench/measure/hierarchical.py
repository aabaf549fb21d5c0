"""The change between two runs whose points were each measured in several worker processes (`--processes K`): an
interval that counts the process as a source of variation.

Two processes on one GPU can time the same kernel of a few microseconds 1-5% apart, every such kernel together
(docs/evidence/whole-run-shift-h100.md). Samples from one process are not independent draws of what another
process would measure, so an interval built from them alone (the rank interval of gpubench/measure/stats.py) is too
narrow for a comparison between runs: it sees the samples' spread and not the processes'.

Where both runs have K ≥ 2 processes per point, the interval here is a **hierarchical (two-level) bootstrap**: each
draw resamples a run's processes with replacement (K of its K), then, inside each process drawn, that process's
samples with replacement (as many as it has); the draw's statistic is the median of the pooled resample. The log of
the new run's draw minus the base run's is one draw of the change; the interval is the percentile interval of
DRAWS such draws at the level asked for. This is the scheme of Saravanan, Berman and Sober (2020, "Application of the
hierarchical bootstrap to multi-level data in neuroscience", Neurons, Behavior, Data analysis, and Theory),
resampling at both levels; Davison and Hinkley (1997, Bootstrap Methods and their Application, section 3.8) set out
resampling of two-stage data, at the top level alone or at both. Both levels it is here: the process medians already
carry their samples' noise, and resampling the samples again adds it once more, so the interval errs on the wide
side, the safe side for a gate.

What it cannot do: at the family-wise levels compare asks for (0.05 over a few hundred points: a tail of 1e-4) the
percentile lies past 1 / DRAWS, so the ends are the draws' extremes, and with K ≤ 5 a draw that takes one run's
slowest process K times is common enough to reach them: the interval spans the process medians the runs showed, not
a shift they did not show, and more processes widen it rather than narrow it (docs/measuring/processes.md has a
simulation). A point whose processes disagree by more than the threshold is inconclusive, not slower or faster.
`gpubench stability` (gpubench/measure/stability.py) measures how often that is still too narrow on a GPU. A run
measured in one process (K = 1) has no between-process spread to resample: compare then uses the rank interval.

The draws come from a fixed seed, one stream for each side of the change: the same two runs always give the same
interval (a CI gate must not flicker).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

DRAWS = 2000  # bootstrap draws per point
MAX_PER_PROCESS = 256  # a process's samples are thinned evenly to this many order statistics (their shape kept)
SEED = 0
CACHED = 4096  # a side's draws kept (16 KB each): a stability run of 8 runs of 132 points needs 2,112


def _thinned_logs(samples) -> np.ndarray:
    x = np.sort(np.log(np.asarray(samples, dtype=float)))
    if len(x) <= MAX_PER_PROCESS:
        return x
    return x[np.linspace(0, len(x) - 1, MAX_PER_PROCESS).round().astype(int)]


@lru_cache(maxsize=CACHED)
def _side_draws(side: int, shapes: tuple[int, ...], data: bytes, draws: int) -> np.ndarray:
    """_draws of one run's point as compare's `side` (0 base, 1 new) of a change, from its own seeded stream: a
    stability run's R runs compare in R(R-1)/2 pairs, and each run's point is drawn once per side, not once a pair
    (8 runs of the lab's 132 small convolutions in two processes: minutes of draws otherwise)."""
    flat = np.frombuffer(data, dtype=float)
    groups = np.split(flat, np.cumsum(shapes)[:-1])
    return _draws(groups, draws, np.random.default_rng((SEED, side)))


def _side(groups: list[np.ndarray], side: int, draws: int) -> np.ndarray:
    return _side_draws(side, tuple(len(g) for g in groups), np.concatenate(groups).tobytes(), draws)


def _draws(groups: list[np.ndarray], draws: int, rng: np.random.Generator) -> np.ndarray:
    """The log-median of `draws` two-level resamples of the groups (processes, then samples)."""
    k = len(groups)
    sizes = np.array([len(g) for g in groups])
    width = int(sizes.max())
    table = np.full((k, width), np.nan)
    for i, g in enumerate(groups):
        table[i, : len(g)] = g
    chosen = rng.integers(0, k, size=(draws, k))  # level one: K processes of K, with replacement
    if sizes.min() == width:  # level two, where every process took as many samples (the usual case)
        picks = rng.integers(0, width, size=(draws, k, width))
        return np.median(table.ravel()[chosen[:, :, None] * width + picks].reshape(draws, k * width), axis=1)
    n = sizes[chosen][:, :, None]  # level two: each chosen process's own count of its samples, with replacement
    picks = np.floor(rng.random((draws, k, width)) * n).astype(int)
    values = table.ravel()[chosen[:, :, None] * width + picks]
    short = np.arange(width)[None, None, :] >= n  # a smaller process draws fewer samples: its unused places are
    values[short] = np.inf  # sorted last, after every sample, and the median is taken among those drawn
    pooled = np.sort(values.reshape(draws, k * width), axis=1)
    count = n[:, :, 0].sum(axis=1)
    rows = np.arange(draws)
    return (pooled[rows, (count - 1) // 2] + pooled[rows, count // 2]) / 2


def ratio_interval(base_groups, new_groups, alpha: float, draws: int = DRAWS) -> tuple[float, float, float]:
    """(estimate, low, high) of new/base time for a point measured in ≥ 2 processes in each run: the ratio of the
    runs' pooled medians, and the hierarchical bootstrap's percentile interval at level 1 − alpha."""
    if len(base_groups) < 2 or len(new_groups) < 2:
        raise ValueError("the hierarchical interval needs at least two processes in each run")
    base = [_thinned_logs(g) for g in base_groups]
    new = [_thinned_logs(g) for g in new_groups]
    estimate = math.exp(float(np.median(np.concatenate([np.log(np.asarray(g, float)) for g in new_groups]))
                        - np.median(np.concatenate([np.log(np.asarray(g, float)) for g in base_groups]))))
    change = _side(new, 1, draws) - _side(base, 0, draws)
    low, high = np.quantile(change, [alpha / 2, 1 - alpha / 2])
    return estimate, math.exp(float(low)), math.exp(float(high))


def spread(groups) -> float | None:
    """The between-process spread of one point: the largest process median over the smallest, minus one (0.012:
    its processes' medians lie within 1.2% of each other); None for fewer than two processes."""
    if len(groups) < 2:
        return None
    medians = [float(np.median(np.asarray(g, float))) for g in groups]
    return max(medians) / min(medians) - 1
