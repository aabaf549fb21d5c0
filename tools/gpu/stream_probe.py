"""Whether the stream a call is queued on decides its floor: the empty kernel and a tiny convolution-like chain,
flushed, on the legacy default stream and on several created streams, in one process.

    python tools/gpu/stream_probe.py LABEL >> streams.jsonl     # in several processes

Four H100 lab pairs moved 1.6-3% on every short kernel from one process to the next, each the way its
empty-kernel floor moved, while the flush buffer's place and the inputs' places did not matter
(flush_probe.py, shift_probe.py). A stream is a channel of the GPU's front end with its own command buffer; if
that is what differs between processes, the floor here differs between streams of one process.
"""

import json
import sys

import cupy as cp

from short_calls import SOURCE, chain_input, flushed_median_us

SAMPLES = 400


def main(label: str) -> None:
    module = cp.RawModule(code=SOURCE)
    empty, chain = module.get_function("empty"), module.get_function("chain")
    scratch = cp.empty(128 << 20, dtype=cp.uint8)
    x = chain_input(cp)
    y = cp.empty(32, dtype=cp.int32)
    streams = [("default", cp.cuda.Stream.null)] + [(f"s{i}", cp.cuda.Stream(non_blocking=True)) for i in range(8)]
    for name, stream in streams:
        line = {"label": label, "stream": name,
                "empty": flushed_median_us(cp, lambda i: empty((1,), (1,), (), stream=stream), scratch, SAMPLES,
                                           stream),
                "chain": flushed_median_us(cp, lambda i: chain((1,), (32,), (x, y), stream=stream), scratch, SAMPLES,
                                           stream)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
