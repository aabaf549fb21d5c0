"""Which SM a one-block call runs on, process by process: one lead for the lab's whole-run shift.

    python tools/gpu/sm_probe.py LABEL >> sms.jsonl     # in several processes

A short flushed call waits for its loads in turn, and how long a load takes depends on where the line's home in
L2 lies relative to the SM that asked (placement.py). If the block scheduler puts a process's one-block calls on
the same SM each time, and another process's on an SM elsewhere on the die, every short call of a run moves
together, which is what two lab runs show (whole-run-shift-h100.md). Each line: the SMs the empty kernel and the
chain ran on over SAMPLES flushed calls, and their medians.
"""

import collections
import json
import sys

import cupy as cp

from short_calls import chain_input, flushed_median_us

SOURCE = r"""
__device__ __forceinline__ unsigned sm_id() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }
extern "C" __global__ void empty_sm(unsigned* where, int i) { if (threadIdx.x == 0) where[i] = sm_id(); }
// Nine dependent loads, as short_calls.chain, and the SM it ran on.
extern "C" __global__ void chain_sm(const int* x, int* y, unsigned* where, int i) {
    int j = threadIdx.x;
    for (int step = 0; step < 9; ++step) j = x[j];
    y[threadIdx.x] = j;
    if (threadIdx.x == 0) where[i] = sm_id();
}
"""
SAMPLES = 300


def main(label: str) -> None:
    module = cp.RawModule(code=SOURCE)
    empty, chain = module.get_function("empty_sm"), module.get_function("chain_sm")
    scratch = cp.empty(128 << 20, dtype=cp.uint8)
    x, y = chain_input(cp), cp.empty(32, dtype=cp.int32)
    where = cp.zeros(SAMPLES, dtype=cp.uint32)
    line = {"label": label}
    for name, call in (("empty", lambda i: empty((1,), (1,), (where, cp.int32(i)))),
                       ("chain", lambda i: chain((1,), (32,), (x, y, where, cp.int32(i))))):
        median = flushed_median_us(cp, call, scratch, SAMPLES)
        sms = collections.Counter(int(s) for s in where.get())
        line[name] = {"median_us": median, "sms": dict(sms.most_common(6)), "distinct_sms": len(sms)}
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
