"""Whether the byte an L2 flush writes decides the next call's time: one 16 µs kernel timed call after call, each
after its own flush, in the CUDA clock's queued batches, with the flush writing (a) 0x5A and 0xA5 in turn, (b)
0x5A every time, (c) 0 and 0x5A in turn; per mode, the mean time of the calls after each byte and by the call's
parity in its batch.

    python3 tools/gpu/flush_parity.py        # ~30 s on one GPU
"""

import statistics

import cupy as cp
import numpy as np

from gpubench.backends.cuda import CudaBackend

SOURCE = r"""extern "C" __global__ void busy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int j = 0; j < 64; ++j) v = v * 1.0001f + 0.5f;  // a little arithmetic on each loaded value
    y[i] = v;
}"""
MODES = {"0x5A/0xA5 in turn": (0x5A, 0xA5), "0x5A always": (0x5A,), "0/0x5A in turn": (0, 0x5A)}
BATCH, BATCHES = 60, 40


def main() -> None:
    backend = CudaBackend()
    clock = backend.clock
    kernel = cp.RawKernel(SOURCE, "busy")
    n = 1 << 22
    x, y = cp.ones(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)

    def run():
        kernel(((n + 255) // 256,), (256,), (x, y, np.int32(n)))

    for mode, pattern in MODES.items():
        written = []

        def flush(pattern=pattern, written=written):
            value = pattern[len(written) % len(pattern)]
            written.append(value)
            cp.cuda.runtime.memsetAsync(clock.scratch.data.ptr, value, clock.scratch.nbytes, 0)
            clock.flushed = True

        clock.flush = flush
        for _ in range(3):
            clock.time_batch_ms(run, BATCH, True)
        by_byte, by_parity = {}, {0: [], 1: []}
        for _ in range(BATCHES):
            samples = clock.time_batch_ms(run, BATCH, True)
            for i, (t, byte) in enumerate(zip(samples, written[-BATCH:])):  # a batch timed again: its last flushes
                by_byte.setdefault(byte, []).append(t * 1000)
                by_parity[i % 2].append(t * 1000)
        print(f"{mode:20} " + ", ".join(f"after 0x{b:02X}: {statistics.fmean(v):.3f} µs (n {len(v)})"
                                           for b, v in sorted(by_byte.items())) +
              f"; even calls {statistics.fmean(by_parity[0]):.3f}, odd {statistics.fmean(by_parity[1]):.3f}",
              flush=True)


if __name__ == "__main__":
    main()
