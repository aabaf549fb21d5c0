"""Whether the buffer L2 is flushed with decides a short kernel's time: the empty kernel and one warp's chain of
nine misses (shift_probe.py's), timed flushed, with the flush's buffer allocated afresh at several places in one
process, flushed by a memset (dirty lines left in L2, gpubench's way) or by reading it (clean lines left).

    python tools/gpu/flush_probe.py LABEL >> flush.jsonl     # in several processes

Two lab runs back to back differ on every 7-16 µs kernel by 1.5-3% at times (the whole run, the empty kernel too);
if the flush buffer's place decides it, the medians here move with `scratch`, not with the process.
"""

import json
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from gpubench import api  # noqa: E402

SOURCE = r"""
extern "C" __global__ void empty() {}
extern "C" __global__ void chain(const int* x, int* y) {
    int i = threadIdx.x;
    for (int step = 0; step < 9; ++step) i = x[i];
    y[threadIdx.x] = i;
}
// Reads one word of every 128-byte line: every line of the buffer comes into L2 clean.
extern "C" __global__ void read_lines(const int* buffer, long long lines, int* sink) {
    int acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < lines; i += (long long)gridDim.x * blockDim.x)
        acc += buffer[i * 32];
    if (acc == 0x7fffffff) *sink = acc;
}
"""
SAMPLES = 400


def main(label: str) -> None:
    backend = api.backend_for("cuda")
    clock = backend.clock
    module = cp.RawModule(code=SOURCE)
    empty, chain, read_lines = (module.get_function(n) for n in ("empty", "chain", "read_lines"))
    n = 1024
    x = backend.placed(cp.asarray(((np.arange(n) + 32 * 3 + 7) % n).astype(np.int32)))
    y = cp.empty(32, dtype=cp.int32)
    sink = cp.zeros(1, dtype=cp.int32)
    held = []
    for placement in range(5):
        if placement:
            held.append(clock.scratch)
            clock.scratch = cp.empty(clock.scratch.nbytes, dtype=cp.uint8)
        scratch = clock.scratch
        lines = scratch.nbytes // 128

        def read_flush():
            read_lines((264,), (512,), (scratch, np.int64(lines), sink))

        line = {"label": label, "scratch": placement, "scratch_mod_2m": scratch.data.ptr % (2 << 20)}
        for how, flush in (("memset", clock.flush), ("read", read_flush)):
            for name, call in (("empty", lambda: empty((1,), (1,), ())), ("chain", lambda: chain((1,), (32,), (x, y)))):
                out = []
                for _ in range(SAMPLES):
                    flush()
                    clock.flushed = True
                    out.append(clock.time_ms(call))
                line[f"{name}_{how}"] = round(statistics.median(out) * 1000, 3)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
