"""Where a small input lies on the GPU, chosen the same way in every process.

On an H100 a kernel of a few microseconds waits for each of its loads from DRAM in turn, and each takes about
0.1 µs longer where the line's home is, most likely, the far half of L2 (its address decides it, in blocks of
at least 4 KiB; docs/evidence/placement-h100.md).
A 4 KiB image lies wholly in one half, so the lab's 32² convolutions ran 5-15% apart from one process to the next,
every variant of a shape together (they share the shape's inputs): a probe
(`git show 20862c3:tools/gpu/shift_probe.py`) timed one warp's
chain of nine misses at 6.0 or 6.9 µs depending only on where its buffer was allocated, and three processes of
the lab's conv-small section compared with up to 6 points "slower" and 22 inconclusive. Two runs could not agree
on kernels that had not changed.

So each input, output and workspace of at most SMALL_BYTES is copied to CANDIDATES places and the one whose lines answer soonest is
kept (a chain of dependent loads through it, timed flushed, as points are): the near half, in every run. Larger
inputs spread over both halves whatever their address, and are left where they are.

On an H200 that choice is not enough. There a lab point of 7-10 µs prepared six times in one process, each time on
fresh buffers, ran 1.3-9.3% apart from one preparation to the next, placed or not, while one preparation timed
again agreed with itself within about 1.5% (tools/gpu/placement_probe.py, docs/evidence/placement-h200.txt): the
places of all its buffers together decide such a point, and one process draws one set of places. So a call on small
buffers is timed on several sets of them (`spread`; plan.PLACES by default, --places): the calls go in turn to
copies of the inputs and output at other places, and the point's median is taken over all of them.

The sets must be independent draws for that to help. Copies taken from CuPy's pool one after another lie side by
side, mostly in one of the GPU's 2 MiB pages, and a page's physical place is what a process draws: on an H200 such
copies left `sliding` at 64² stride 2 spreading by 2.2% between draws, no less than one set (1.9%), while copies
each at the start of a page of its own spread by 0.5-0.7%, about one set's spread over √8
(tools/gpu/spread_probe.py, docs/evidence/spread-probe-h200.txt). So every copy, and each copy's output, starts a
page of its own (`apart`).
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import replace

from gpubench.results import Details

SMALL_BYTES = 64 << 10  # inputs up to this size are placed
CANDIDATES = 4  # places tried: all four in the far half happens once in 16
PROBE_SAMPLES = 9  # flushed timings of the chain at each place (a median; the halves differ by 5-15%)
MAX_LINES = 16  # the chain visits at most this many lines, spread over the buffer
SPACING = 4096  # candidates lie at least this far apart, so each sits in another block of the address hash
SPREAD_BYTES = 4 << 20  # calls whose inputs and output together take at most this are spread over several sets
PAGE = 2 << 20  # the GPU's large page: the unit a process's physical places are drawn in


def chain_shape(nbytes: int) -> tuple[int, int]:
    """(lines, step in bytes) of the chain through a buffer of `nbytes`: up to MAX_LINES lines, evenly spread,
    each in a different 128-byte line, never past the end."""
    lines = max(1, min(MAX_LINES, nbytes // 128))
    step = max(128, (nbytes // lines) // 128 * 128) if lines > 1 else 0
    return lines, step


def place(cp, array, latency_us):
    """`array` itself, or a copy of it at the place (of CANDIDATES) whose lines `latency_us(candidate)` finds
    soonest. Returns (array, microseconds of each place tried)."""
    if array.nbytes > SMALL_BYTES or array.nbytes == 0:
        return array, []
    padded = math.ceil(max(array.nbytes, SPACING) / SPACING) * SPACING + SPACING
    held, tried = [array], [latency_us(array)]
    for _ in range(CANDIDATES - 1):
        block = cp.empty(padded, dtype=cp.uint8)  # a fresh allocation: the pool hands out new addresses while
        candidate = block[:array.nbytes].view(array.dtype).reshape(array.shape)  # the others are held
        candidate[...] = array
        held.append(candidate)
        tried.append(latency_us(candidate))
    best = min(range(len(held)), key=tried.__getitem__)
    return held[best], tried


def address(array) -> int:
    """Where `array`'s data starts: CuPy's device pointer (or NumPy's host one, where tests stand in for CuPy)."""
    return array.data.ptr if hasattr(array.data, "ptr") else array.ctypes.data


def apart(cp, array):
    """A copy of `array` at the start of a PAGE of its own: a fresh allocation one PAGE longer than the array, the
    copy at its first page boundary, so no other copy shares the page (the copy holds the allocation)."""
    block = cp.empty(PAGE + array.nbytes, dtype=cp.uint8)
    start = -address(block) % PAGE
    copy = block[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def median_us(samples_ms) -> float:
    return statistics.median(samples_ms) * 1000


def spread(cp, prepared, inputs: dict, output, prepare_on, places: int):
    """`prepared`, or where places > 1, its buffers are small (inputs and output within SPREAD_BYTES) and its call
    is ours to repeat (a capturable launch, not a user's Python function), a Prepared whose run goes in turn to it
    and to places - 1 preparations of copies of the inputs, each copy a page apart (`apart`), each preparation with an
    output of its own (`prepare_on(copies)`, which places it `apart` too). Verification stays with `prepared`'s own
    output."""
    arrays = [a for a in inputs.values() if isinstance(a, cp.ndarray)]
    outputs = list(output.values()) if isinstance(output, dict) else [output]
    size = sum(a.nbytes for a in arrays) + sum(getattr(o, "nbytes", 0) for o in outputs)
    if places <= 1 or not prepared.capturable or size > SPREAD_BYTES:
        return prepared
    others = [prepare_on({name: apart(cp, a) if isinstance(a, cp.ndarray) else a for name, a in inputs.items()})
              for _ in range(places - 1)]
    turns = itertools.cycle([prepared.run] + [o.run for o in others])

    def run():
        next(turns)()

    def release():
        for p in [prepared, *others]:
            p.release()

    return replace(prepared, run=run, release=release, details=prepared.details.merged(Details(places=places)))
