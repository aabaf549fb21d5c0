"""The probes' one timer: the median of single calls between CUDA events, after a few warm-up calls.

The probes measure the hardware and the libraries outside gpubench's own clock (no L2 flush, no telemetry), so that
a fault in that clock cannot hide in what they say about it. `python3 tools/gpu/<probe>.py` puts this folder on
sys.path, so they import it as `from events import median_ms`.
"""

import cupy as cp
import numpy as np


def median_ms(run, reps: int = 30, warmup: int = 5) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def bracketed(run, warmup: int = 3) -> None:
    """One call of `run` bracketed for a profiler (ncu --profile-from-start off), after `warmup` calls that
    compile, load and warm it (and find a library's plan), so that only the steady call is profiled."""
    for _ in range(warmup):
        run()
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.start()
    run()
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.stop()
