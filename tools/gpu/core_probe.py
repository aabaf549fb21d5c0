"""Does the host core a process runs on decide its launch path's cost?

Ten A/A processes of the lab's small convolutions split into two groups whose every point moved together, about
2% apart (a process-wide offset of 0.1-0.2 µs a call). A host-side cause of that size is the core the timing
thread runs on: its distance to the GPU's PCIe root decides how long a launch's doorbell write takes.

For each core this process may use, a child pinned to that core (os.sched_setaffinity before CUDA starts) times
one empty kernel as events see it (start, kernel, end: the launch path's share included), a captured graph of 64
launches per launch (the GPU's own pace), and the host's time to issue a launch. Then unpinned children report
which core they ended on beside the same figures. Run on the GPU machine: python3 tools/gpu/core_probe.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r'''
import json, os, sys, time
cpu = int(sys.argv[1])
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
import cupy as cp, numpy as np
src = 'extern "C" __global__ void empty(int *p) { if (p == nullptr && threadIdx.x == 1024) p[0] = 1; }'
k = cp.RawKernel(src, "empty")
arg = cp.zeros(1, dtype=cp.int32)
s = cp.cuda.Stream(non_blocking=True)
a, b = cp.cuda.Event(), cp.cuda.Event()
ev, host = [], []
for i in range(3000):
    a.record(s); t = time.perf_counter_ns(); k((1,), (32,), (arg,), stream=s); host.append(time.perf_counter_ns() - t)
    b.record(s); b.synchronize(); ev.append(cp.cuda.get_elapsed_time(a, b) * 1000)
with s:
    s.begin_capture()
    for _ in range(64):
        k((1,), (32,), (arg,))
    g = s.end_capture()
gr = []
for i in range(300):
    a.record(s); g.launch(s); b.record(s); b.synchronize(); gr.append(cp.cuda.get_elapsed_time(a, b) * 1000 / 64)
with open("/proc/self/stat") as f:
    ended = int(f.read().rsplit(")", 1)[1].split()[36])
print(json.dumps({"pinned": cpu, "ended": ended, "events_us": float(np.median(ev[500:])),
                  "graph_us": float(np.median(gr[50:])), "issue_us": float(np.median(host[500:])) / 1000}))
'''


def child(cpu: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(cpu)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    print(f"cores {cpus}")
    for label, plan in (("pinned", cpus + cpus), ("free", [-1] * 8)):
        for cpu in plan:
            r = child(cpu)
            print(f"{label:6s} core {r['ended']:3d}: events {r['events_us']:.3f} µs, graph {r['graph_us']:.3f} µs a "
                  f"launch, issue {r['issue_us']:.3f} µs", flush=True)


if __name__ == "__main__":
    main()
