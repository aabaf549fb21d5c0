"""Whether where a kernel's code lies decides a short call's time: one lab convolution (`conv_sliding`, 64² at
stride 2, the lab's three channels and one 3×3 filter) and the empty kernel, flushed, through several copies of
the same compiled module in one process, and through fresh copies of the input for one module.

    python tools/gpu/code_probe.py LABEL CUBIN >> code.jsonl     # in several processes

The lab's short convolutions moved by 0.3-0.6 µs from one process to the next (3-6%), more than the empty
kernel's floor did (0.1 µs; whole-run-shift-h100.md). The flush evicts the kernels' code from L2 as it does
their data, so each call fetches its instructions from DRAM again; a module is loaded wherever the driver puts
it, once per process. If that is what differs, copies of one module differ here the same way.
"""

import json
import sys

import cupy as cp
import numpy as np

from short_calls import flushed_median_us

SAMPLES = 300
COPIES = 6


def main(label: str, cubin: str) -> None:
    scratch = cp.empty(128 << 20, dtype=cp.uint8)
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal((1, 3, 64, 64), dtype=np.float32))
    w = cp.asarray(rng.standard_normal((1, 3, 3, 3), dtype=np.float32))
    y = cp.empty((1, 1, 32, 32), dtype=cp.float32)
    i32 = np.int32
    args = lambda x, w, y: (x, w, y, i32(1), i32(3), i32(64), i32(64), i32(1), i32(3), i32(3), i32(2), i32(1),
                            i32(32), i32(32))
    modules = []
    for copy in range(COPIES):
        m = cp.cuda.function.Module()
        m.load_file(cubin)
        modules.append(m)
    def timed(call) -> float:
        return flushed_median_us(cp, lambda i: call(), scratch, SAMPLES)

    for copy, m in enumerate(modules + modules[:1]):
        conv, empty = m.get_function("conv_sliding"), m.get_function("empty_probe")
        print(json.dumps({"label": label, "what": "code copy", "copy": copy % COPIES,
                          "conv": timed(lambda: conv((2, 2, 1), (16, 16, 1), args(x, w, y))),
                          "empty": timed(lambda: empty((1,), (1,), ()))}), flush=True)
    conv = modules[0].get_function("conv_sliding")
    for copy in range(4):
        x2, w2, y2 = x.copy(), w.copy(), y.copy()
        print(json.dumps({"label": label, "what": "data copy", "copy": copy,
                          "conv": timed(lambda: conv((2, 2, 1), (16, 16, 1), args(x2, w2, y2)))}), flush=True)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
