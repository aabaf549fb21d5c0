"""What each of cuDNN's plans costs on a layer: its first call (workspace, loading or compiling its kernels) and
its second, on the host around a synchronize, so that a plan slow to start can be told from one slow to run.

    python tools/gpu/cudnn_plan_probe.py 8192 1     # the lab's layer: 1 channel, 3x3, size², stride

The lab's plan search spent most of its 8 s in single calls of 0.1-1.2 s on its largest layers.
"""

import sys
import time
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from gpubench.backends.cuda.cudnn_conv import CudnnConvGraph  # noqa: E402


def main(size: int, stride: int) -> None:
    t = time.perf_counter()
    graph = CudnnConvGraph(1, 1, size, size, 1, 3, 3, stride, 0)
    print(f"conv {size}² stride {stride}: {len(graph.plans)} plans, graph built in {time.perf_counter() - t:.2f} s")
    x = cp.random.random(graph.array_shapes[0], dtype=cp.float32)
    w = cp.random.random(graph.array_shapes[1], dtype=cp.float32)
    y = cp.empty(graph.array_shapes[2], dtype=cp.float32)
    for plan in graph.plans:
        times = []
        for _ in range(3):
            t = time.perf_counter()
            try:
                graph.run(plan, x, w, y)
                cp.cuda.Stream.null.synchronize()
            except Exception as e:  # noqa: BLE001
                times.append(f"failed: {str(e)[:60]}")
                break
            times.append(f"{(time.perf_counter() - t) * 1000:9.2f}")
        print(f"  {plan.index:3d} {plan.engine:40s} ws {plan.workspace_bytes / 2**20:8.1f} MiB  ms: {' '.join(times)}",
              flush=True)
    graph.release_workspaces()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
