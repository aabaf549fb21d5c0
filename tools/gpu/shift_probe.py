"""Where a whole run's shift on 7-16 µs kernels comes from: the same short calls, timed as gpubench times a point
(flushed, events, behind a wait), at several placements of their buffers in one process.

    python tools/gpu/shift_probe.py LABEL >> shift.jsonl     # once per process; run it in several processes

Two lab pairs on the H100 moved 1-5% across the whole `conv-small` section between two processes while the
SM clock stayed at 1980 MHz. If a process's placement of its buffers decides it, the medians here spread as much
between placements inside one process as between processes; if the card's state decides it, placements agree
and processes differ. Each line: the process's label, the placement, the buffers' addresses modulo 2 MiB, and the
median (µs) of 600 flushed calls of each kernel:
- `empty`: one thread that does nothing (the floor every point sits on);
- `chain`: one warp that follows nine dependent loads through a 4 KiB input (the lab's 32² image), each a miss in
  the flushed L2: what a tiny convolution's time is made of;
- `chain_zero` / `chain_5a`: `chain` behind a flush that always writes the same byte (0x00 / 0x5A), where
  gpubench alternates them.
"""

import json
import random
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from gpubench import api  # noqa: E402

SOURCE = r"""
extern "C" __global__ void empty() {}
// Nine dependent loads: each index is read from the line before, so no load can start before the last returns.
extern "C" __global__ void chain(const int* x, int* y) {
    int i = threadIdx.x;
    for (int step = 0; step < 9; ++step) i = x[i];
    y[threadIdx.x] = i;
}
"""
SAMPLES = 600


def median_us(clock, call, fixed_byte=None) -> float:
    out = []
    for _ in range(SAMPLES):
        if fixed_byte is None:
            clock.flush()
        else:
            cp.cuda.runtime.memsetAsync(clock.scratch.data.ptr, fixed_byte, clock.scratch.nbytes, 0)
            clock.flushed = True
        out.append(clock.time_ms(call))
    return statistics.median(out) * 1000


def main(label: str) -> None:
    backend = api.backend_for("cuda")
    clock = backend.clock
    module = cp.RawModule(code=SOURCE)
    empty, chain = module.get_function("empty"), module.get_function("chain")
    rng = random.Random(label)
    spacers = []
    for placement in range(8):
        spacers.append(cp.empty(rng.randrange(1, 64 << 20), dtype=cp.uint8))  # moves the next buffers
        n = 1024  # 4 KiB of int32: index i points 128 bytes (32 ints) further on, wrapping
        x = cp.asarray(((np.arange(n) + 32 * 3 + 7) % n).astype(np.int32))
        y = cp.empty(32, dtype=cp.int32)
        run_chain = lambda: chain((1,), (32,), (x, y))  # noqa: E731
        line = {"label": label, "placement": placement, "x_mod_2m": x.data.ptr % (2 << 20),
                "y_mod_2m": y.data.ptr % (2 << 20), "scratch_mod_2m": clock.scratch.data.ptr % (2 << 20),
                "empty": median_us(clock, lambda: empty((1,), (1,), ())), "chain": median_us(clock, run_chain)}
        if placement == 0:
            line["chain_zero"] = median_us(clock, run_chain, 0x00)
            line["chain_5a"] = median_us(clock, run_chain, 0x5A)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
