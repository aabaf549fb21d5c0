"""The GPU brought to its working state before it is timed: a burn of tensor-core matmuls and memory copies after
the GPU has idled (the process's first point, or one after a compile or a pause).

Why: microsecond kernels ran 3.2% slower in the first of ten fresh A/A processes on an H200 than in the nine after
it, every point alike (docs/measuring/preheat.md), and 2% faster right after a 20 s matmul burn. The first process
had followed an idle GPU; the others followed one another. (A cold lab run's slower small calls have a cause of
their own, cuDNN's plan search: gpubench/execution/tasks.py first_calls.) NVML
read the same SM and memory clocks throughout, so the state is not a clock NVML reports; what it is stays open,
but a burn just before timing puts every process in the same one.
"""

from __future__ import annotations

import time

IDLE_GAP_S = 10.0  # a GPU that has not been timed for this long is burnt again before it is: the A/A series'
# processes, 3-5 s apart, stayed in the working state, and the run after tens of idle seconds did not. Short gaps (a
# test suite's benchmarks between other tests) cost no burn each.
SIDE = 4096  # the matmul's size: fp16, ~0.2 ms a call on an H100/H200, so the loop checks the time often
COPY_BYTES = 256 << 20  # and a copy this large beside it, so that memory works as well as the SMs


class Preheater:
    """Burns the GPU for `seconds` where it has idled IDLE_GAP_S or more since the last timed work (or has not been
    timed yet in this process). `cp` is CuPy; `now` the host's clock (a test gives its own)."""

    def __init__(self, cp, now=time.perf_counter):
        self.cp, self.now = cp, now
        self.last_work: float | None = None  # when timed work last ended in this process
        self.burnt_s = 0.0  # seconds burnt so far in this process (what a run's details may report)

    def due(self) -> bool:
        return self.last_work is None or self.now() - self.last_work >= IDLE_GAP_S

    def before(self, seconds: float) -> float:
        """Burn for `seconds` if due (0: never); returns the seconds burnt."""
        if seconds <= 0 or not self.due():
            return 0.0
        started = self.now()
        self._burn(seconds)
        spent = self.now() - started
        self.burnt_s += spent
        return spent

    def after(self) -> None:
        """Timed work just ended: the GPU is warm from here."""
        self.last_work = self.now()

    def _burn(self, seconds: float) -> None:
        cp = self.cp
        a = cp.full((SIDE, SIDE), 0.5, dtype=cp.float16)
        out = cp.empty_like(a)
        src = cp.empty(COPY_BYTES, dtype=cp.uint8)
        dst = cp.empty_like(src)
        try:
            end = self.now() + seconds
            while self.now() < end:
                for _ in range(8):
                    cp.matmul(a, a, out=out)
                    cp.copyto(dst, src)
                cp.cuda.Stream.null.synchronize()
        finally:
            del a, out, src, dst
