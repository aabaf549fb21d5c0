"""Is the whole-run shift of short calls one offset per process, the same one an empty kernel shows?

Ten A/A processes of the lab's small convolutions fell into two groups about 0.2 µs a call apart, every point of a
process together. An empty kernel timed the way every point is (behind a wait kernel, between events, L2 flushed)
is the process's floor. If each process's floor moves with its points, the offset lies in how the GPU takes a
launch and its events in that process, not in any kernel.

Each of PROCESSES fresh processes opens gpubench's CUDA backend and times, in turns of TURN samples, the empty
kernel, events around nothing, and the lab's smallest convolutions (sliding 32² stride 2, implicit 64²), each call
alone as measure() times it. It prints each process's medians and, at the end, how each call's offset per process
follows the empty kernel's. Run on the GPU machine from the repository root:
    python3 tools/gpu/process_floor_probe.py
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

PROCESSES = 12
TURNS, TURN = 8, 150

CHILD = r'''
import json, statistics, sys
import numpy as np
from gpubench.backends import open_backend
from gpubench.core import paths
TURNS, TURN = int(sys.argv[1]), int(sys.argv[2])
b = open_backend("cuda")
cp, clock = b.cp, b.clock
empty = b.probe("empty")
src = paths.cuda_src_dir() / "conv" / "01_sliding.cu"
sliding = b.function(src, "conv_sliding", {"BLOCK": 16})
rng = np.random.default_rng(0)
def conv(n, c, h, k, stride):
    x = cp.asarray(rng.standard_normal((n, c, h, h), dtype=np.float32))
    w = cp.asarray(rng.standard_normal((k, c, 3, 3), dtype=np.float32))
    oh = (h - 3) // stride + 1
    y = cp.empty((n, k, oh, oh), dtype=cp.float32)
    args = [np.uintp(x.data.ptr), np.uintp(w.data.ptr), np.uintp(y.data.ptr)] + [np.int32(v) for v in
            (n, c, h, h, k, 3, 3, stride, 0, oh, oh)]
    grid = ((oh + 15) // 16, (oh + 15) // 16, n * k)
    return (x, w, y), lambda: sliding(*args, block=(16, 16, 1), grid=grid)
keep32, s32 = conv(1, 3, 32, 1, 2)
keep128, s128 = conv(1, 3, 128, 8, 1)
calls = {"empty": lambda: empty(block=(1, 1, 1), grid=(1, 1)), "events only": lambda: None,
         "sliding 32 s2": s32, "sliding 128 k8": s128}
for f in calls.values():
    for _ in range(20):
        clock.flush(); clock.time_ms(f)
got = {k: [] for k in calls}
for _ in range(TURNS):
    for k, f in calls.items():
        for _ in range(TURN):
            clock.flush()
            got[k].append(clock.time_ms(f) * 1000)
print(json.dumps({k: statistics.median(v) for k, v in got.items()}))
'''


def main() -> None:
    rows = []
    for i in range(PROCESSES):
        out = subprocess.run([sys.executable, "-c", CHILD, str(TURNS), str(TURN)], capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-2000:])
            sys.exit(1)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"process {i + 1:2d}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()) + " µs", flush=True)
    names = list(rows[0])
    table = np.array([[r[k] for k in names] for r in rows])
    offsets = table - table.mean(axis=0)
    print("\noffset from the mean of the processes, µs (each column), and its slope on the empty kernel's:")
    for j, k in enumerate(names):
        slope = np.polyfit(offsets[:, 0], offsets[:, j], 1)[0] if offsets[:, 0].std() > 0 else float("nan")
        corr = np.corrcoef(offsets[:, 0], offsets[:, j])[0, 1] if offsets[:, j].std() > 0 else float("nan")
        print(f"  {k:16s} sd {offsets[:, j].std():.3f} µs, range {np.ptp(offsets[:, j]):.3f}; slope {slope:+.2f}, "
              f"r {corr:+.2f}")


if __name__ == "__main__":
    main()
