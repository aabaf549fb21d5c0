"""Which of several fresh worker processes times a run: the one whose launches cost the GPU least.

On an H200 every kernel launch of a process costs the GPU one of two amounts, set when the process opens its CUDA
context and kept for its life: an empty kernel between two events took 3.26-3.30 µs in four of ten fresh processes
and 3.42-3.49 µs in the other six, on the legacy stream and on each of eight streams of its own alike
(tools/gpu/stream_probe.py). The lab's small convolutions carry it whole: by events, A/A runs fell into two groups
about 2% apart, every point of a run together, while by CUPTI's kernel times the same runs moved by ±0.3% at most
(docs/evidence/launch-floor-h200.md). Neither the host's core, nor the stream, nor the buffers' places decide it; the
driver's choices for the context do, and gpubench cannot set them. Two runs timed in processes of different groups
then differ by about 0.15 µs a call, which at 7-10 µs is the 1.5-2% shift that left back-to-back lab runs
inconclusive.

So a worker that times on a GPU is chosen: CANDIDATES processes open at once (the GPU idle while each reads its
idle clock), then each times an empty kernel as gpubench times a short call (behind the clock's wait, between
events, no flush) in ROUNDS turns, and the one with the lowest floor is kept; the others are ended before any work
starts. With about half the processes in each group, three all fall in the slower one one time in eight: in eight
A/A runs on an H200 one run's three floors were 3.350-3.365 µs against the others' kept 3.24-3.33 µs, and that run
drew most of the series' inconclusive verdicts. Three floors that close say nothing of which group they are in, so
where the lowest is not CONTRAST below the highest, CANDIDATES more open and every one is timed again (at most
BATCHES times): all six in the slower group is one time in 64. The run records every candidate's floor (settings
`launch_floors_us`, the kept one first).
"""

from __future__ import annotations

from collections.abc import Sequence

CANDIDATES = 3  # worker processes opened to choose from where the backend times launches on a GPU
ROUNDS = 2  # turns in which each candidate times its floor (interleaved, so a drift of the card reaches all alike)
CONTRAST = 0.015  # the lowest floor this far (relative) below the highest tells the two groups apart: on an H200
# they lay 3-5% apart and a group's floors spread by up to 2%
BATCHES = 2  # candidates open at most this many times CANDIDATES, while the floors do not contrast


def chosen(floors: Sequence[Sequence[float]]) -> int:
    """The index of the candidate to keep: the lowest floor, each candidate's floor the lowest of its turns (a
    turn that a hiccup lengthened does not count against it)."""
    return min(range(len(floors)), key=lambda i: min(floors[i]))


def contrasted(floors: Sequence[Sequence[float]]) -> bool:
    """Whether the candidates' floors differ enough that the lowest is in the faster group (or all are)."""
    each = [min(f) for f in floors]
    return max(each) - min(each) >= CONTRAST * min(each)


def recorded(floors: Sequence[Sequence[float]], keep: int) -> list[float]:
    """Every candidate's floor in µs, the kept one first: what a run saves."""
    order = [keep] + [i for i in range(len(floors)) if i != keep]
    return [round(min(floors[i]), 3) for i in order]
