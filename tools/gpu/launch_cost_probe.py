"""What makes every kernel launch of a process cost ~0.35 µs more on the GPU after cuDNN's plan search?

A cold lab run (cuDNN's plan search runs in it) timed every call after its first autotuned cuDNN point about 0.35 µs
slower per kernel than the warm run after it (no search: the engine is kept), in CUDA graphs as in plain launches
(docs/measuring/preheat.md). This probe times one empty kernel as a captured graph of 64 launches, in one process,
before and after each candidate change to the context, each change kept for the next:

    base      nothing changed (twice: the probe's own spread)
    stack     the stack limit raised to 32 KiB a thread (the driver grows the local memory it reserves)
    kernels   400 distinct kernels loaded and launched once each (lazy loading puts each in the context)
    buffers   200 allocations of 64 MiB (more mappings in the GPU's page tables)
    cudnn     PyTorch's cuDNN autotuner (benchmark mode) over a few small convolutions, where PyTorch is installed

Run on the GPU machine from the repository root: python3 tools/gpu/launch_cost_probe.py. It prints the per-launch
time of each step (median of 300 graph launches, and its 10th and 90th percentiles).
"""

from __future__ import annotations

import sys

import cupy as cp
import numpy as np

LAUNCHES = 64  # kernels a graph holds
SAMPLES = 300  # graph launches timed a step
EMPTY = r'extern "C" __global__ void empty(int *p) { if (p == nullptr && threadIdx.x == 1024) p[0] = 1; }'
MANY = 400


def per_launch_us(kernel, stream) -> tuple[float, float, float]:
    """Median, p10 and p90 of one empty launch's time inside a graph of LAUNCHES, by the events around each graph."""
    arg = cp.zeros(1, dtype=cp.int32)
    with stream:
        stream.begin_capture()
        for _ in range(LAUNCHES):
            kernel((1,), (32,), (arg,))
        graph = stream.end_capture()
    for _ in range(20):
        graph.launch(stream)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(SAMPLES):
        start.record(stream)
        graph.launch(stream)
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1000 / LAUNCHES)
    return tuple(float(x) for x in np.percentile(times, [50, 10, 90]))


def main() -> None:
    stream = cp.cuda.Stream(non_blocking=True)
    kernel = cp.RawKernel(EMPTY, "empty")
    keep = []

    def report(step: str) -> None:
        med, p10, p90 = per_launch_us(kernel, stream)
        print(f"{step:8s} {med:.3f} µs a launch (p10 {p10:.3f}, p90 {p90:.3f})", flush=True)

    report("base")
    report("base")
    cp.cuda.runtime.deviceSetLimit(0x00, 32 * 1024)  # cudaLimitStackSize
    report("stack")
    source = "\n".join(f'extern "C" __global__ void k{i}(float *p) {{ if (threadIdx.x == 1024) p[0] = {i}; }}'
                       for i in range(MANY))
    module = cp.RawModule(code=source)
    x = cp.zeros(1, dtype=cp.float32)
    for i in range(MANY):
        module.get_function(f"k{i}")((1,), (32,), (x,))
    cp.cuda.Device().synchronize()
    report("kernels")
    keep += [cp.cuda.alloc(64 << 20) for _ in range(200)]
    report("buffers")
    try:
        import torch
    except ImportError:
        print("cudnn    (PyTorch is not installed)")
    else:
        torch.backends.cudnn.benchmark = True
        for size, channels in [(32, 3), (64, 16), (128, 32)]:
            x = torch.randn(1, channels, size, size, device="cuda")
            w = torch.randn(32, channels, 3, 3, device="cuda")
            for stride in (1, 2, 3):
                torch.nn.functional.conv2d(x, w, stride=stride)
        torch.cuda.synchronize()
        report("cudnn")
    report("base")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
