"""The two short calls the shift probes time (shift_probe.py, flush_probe.py, stream_probe.py): the empty kernel,
and one warp following nine dependent loads through a 4 KiB input (the lab's 32² image), each a miss in a flushed
L2, which is what a tiny convolution's time is made of."""

import statistics

import numpy as np

SOURCE = r"""
extern "C" __global__ void empty() {}
// Nine dependent loads: each index is read from the line before, so no load can start before the last returns.
extern "C" __global__ void chain(const int* x, int* y) {
    int i = threadIdx.x;
    for (int step = 0; step < 9; ++step) i = x[i];
    y[threadIdx.x] = i;
}
"""


def chain_input(cp):
    """4 KiB of int32 where index i points 103 words (a few lines) further on, wrapping."""
    n = 1024
    return cp.asarray(((np.arange(n) + 32 * 3 + 7) % n).astype(np.int32))


def flushed_median_us(cp, call, scratch, samples: int, stream=None) -> float:
    """Median µs of `samples` calls, each after a memset of `scratch` (a fresh byte each time, so L2 is flushed and
    the memset covers the launch), between two events on `stream` (the legacy default stream unless given);
    call(i) queues the i-th call."""
    stream = stream or cp.cuda.Stream.null
    start, end = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for i in range(samples):
        cp.cuda.runtime.memsetAsync(scratch.data.ptr, i & 0xFF, scratch.nbytes, stream.ptr)
        start.record(stream)
        call(i)
        end.record(stream)
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end))
    return round(statistics.median(out) * 1000, 3)
