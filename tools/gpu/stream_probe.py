"""Whether the stream a call is queued on decides its floor: the empty kernel and a tiny convolution-like chain,
flushed, on the legacy default stream and on several created streams, in one process.

    python tools/gpu/stream_probe.py LABEL >> streams.jsonl     # in several processes

Four H100 lab pairs moved 1.6-3% on every short kernel from one process to the next, each the way its
empty-kernel floor moved, while the flush buffer's place and the inputs' places did not matter
(flush_probe.py, shift_probe.py). A stream is a channel of the GPU's front end with its own command buffer; if
that is what differs between processes, the floor here differs between streams of one process.
"""

import json
import statistics
import sys

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void empty() {}
extern "C" __global__ void chain(const int* x, int* y) {
    int i = threadIdx.x;
    for (int step = 0; step < 9; ++step) i = x[i];
    y[threadIdx.x] = i;
}
"""
SAMPLES = 400


def median_us(stream, call, scratch) -> float:
    start, end = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for i in range(SAMPLES):
        cp.cuda.runtime.memsetAsync(scratch.data.ptr, i & 0xFF, scratch.nbytes, stream.ptr)  # covers the launch too
        start.record(stream)
        call(stream)
        end.record(stream)
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end))
    return round(statistics.median(out) * 1000, 3)


def main(label: str) -> None:
    module = cp.RawModule(code=SOURCE)
    empty, chain = module.get_function("empty"), module.get_function("chain")
    scratch = cp.empty(128 << 20, dtype=cp.uint8)
    n = 1024
    x = cp.asarray(((np.arange(n) + 32 * 3 + 7) % n).astype(np.int32))
    y = cp.empty(32, dtype=cp.int32)
    streams = [("default", cp.cuda.Stream.null)] + [(f"s{i}", cp.cuda.Stream(non_blocking=True)) for i in range(8)]
    for name, stream in streams:
        line = {"label": label, "stream": name,
                "empty": median_us(stream, lambda s: empty((1,), (1,), (), stream=s), scratch),
                "chain": median_us(stream, lambda s: chain((1,), (32,), (x, y), stream=s), scratch)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
