"""Is the launch path's per-process offset the process's, or the stream's?

By CUDA events, the A/A runs of the lab's small convolutions fall into two groups about 0.2 µs a call apart, every
point of a run together; by CUPTI's kernel times the same runs move by only ±0.3% (docs/evidence/launch-floor-h200.md).
So the offset lies between a call's events and its kernel: in how the GPU takes the launch. A CUDA stream is fed
through one of the GPU's hardware queues, and the driver hands a context's streams out over several. If the offset
belongs to the queue, the streams of one process differ as much as processes do, and timing a call in turn on
several streams would average it out as the copies a page apart average out the buffers' places.

Each of PROCESSES fresh processes times an empty kernel the way gpubench times a short call (queued in batches
behind a wait kernel, each call between its own two events) on the legacy default stream and on STREAMS
non-blocking streams of its own, in turns, and prints each stream's median. At the end: the spread of the medians
within a process (over its streams) against the spread between processes (of each process's mean over streams).

    python3 tools/gpu/stream_probe.py          # about a minute on one GPU
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

PROCESSES, STREAMS = 10, 8

CHILD = r'''
import json, statistics, sys
import cupy as cp
STREAMS = int(sys.argv[1])
source = r"""
extern "C" __global__ void empty() {}
extern "C" __global__ void spin(long long ns) {
    long long start = clock64();  // about 2 GHz: cycles stand in for nanoseconds, a wait long enough either way
    while (clock64() - start < 2 * ns) {}
}
"""
module = cp.RawModule(code=source)
empty, spin = module.get_function("empty"), module.get_function("spin")
streams = [cp.cuda.Stream.null] + [cp.cuda.Stream(non_blocking=True) for _ in range(STREAMS)]
BATCH, TURNS = 40, 12
events = [cp.cuda.Event() for _ in range(2 * BATCH)]


def batch(stream):
    spin((1,), (1,), (cp.int64(400_000),), stream=stream)  # 0.4 ms: the host queues the batch behind it
    for i in range(BATCH):
        events[2 * i].record(stream)
        empty((1,), (1,), (), stream=stream)
        events[2 * i + 1].record(stream)
    events[-1].synchronize()
    return [cp.cuda.get_elapsed_time(events[2 * i], events[2 * i + 1]) * 1000 for i in range(BATCH)]


for s in streams:
    batch(s)
got = [[] for _ in streams]
for _ in range(TURNS):
    for i, s in enumerate(streams):
        got[i] += batch(s)
print(json.dumps([statistics.median(g) for g in got]))
'''


def main() -> None:
    rows = []
    for i in range(PROCESSES):
        out = subprocess.run([sys.executable, "-c", CHILD, str(STREAMS)], capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-2000:])
            sys.exit(1)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"process {i + 1:2d}: legacy {row[0]:.3f} | streams " + " ".join(f"{v:.3f}" for v in row[1:]) + " µs",
              flush=True)
    within = statistics.mean(statistics.stdev(r[1:]) for r in rows)
    means = [statistics.mean(r[1:]) for r in rows]
    legacy = [r[0] for r in rows]
    print(f"\nSD over a process's {STREAMS} streams, mean over processes: {within:.3f} µs")
    print(f"SD between processes of their mean over streams: {statistics.stdev(means):.3f} µs "
          f"(range {max(means) - min(means):.3f})")
    print(f"SD between processes on the legacy stream: {statistics.stdev(legacy):.3f} µs "
          f"(range {max(legacy) - min(legacy):.3f})")


if __name__ == "__main__":
    main()
