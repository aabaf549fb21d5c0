"""The same Triton kernel timed in one process by gpubench's API (api.measure), by triton.testing.do_bench, and by
events behind a long sleep (the kernel alone, whatever the host's launch takes).

    python tools/gpu/api_vs_do_bench.py PROJECT_DIR [DTYPES]   # PROJECT_DIR holds the Triton example's matmul.py

For each problem the kernel is first measured once by gpubench (its first call autotunes; the autotuner then keeps
one configuration per shape and dtype, so every timer times the same compiled kernel), then two rounds of gpubench
(verify, then its protocol: L2 flush, events on the timed stream, queued batches below 1 ms, sampling until a 5%
comparison could be decided) and do_bench (its L2 flush, the median of 1 s of calls) alternate on tensors of the
same shape and type, so that a drift of the GPU between the tools shows in the rounds. The third timer, `slept`,
flushes L2 as do_bench does, then keeps the GPU asleep 2 ms (torch.cuda._sleep) before the start event, far longer
than any launch, and takes the median of 30 calls: no host time can be inside its intervals. Also printed: the
host's time to launch one call (the median of 50 calls queued back to back) and the clock's own record of it
(CudaClock.launch_us: the time to queue its wait, the start event and the call), and the SM clock and power
while each timer ran: gpubench's own telemetry (read after each sample) for its two rounds, NVML read every 5 ms
by a thread for do_bench and the slept timer (the median of the readings). Prints one Markdown table.
"""

import contextlib
import statistics
import sys
import threading
import time

import pynvml

import torch
import triton.testing

from gpubench import api

sys.path.insert(0, sys.argv[1])
import matmul  # noqa: E402  (the Triton example, from the project directory)

DTYPES = (sys.argv[2] if len(sys.argv) > 2 else "fp32,tf32").split(",")
SIZES = {"fp32": (2048, 4096), "tf32": (4096, 8192), "bf16": (4096, 8192), "fp16": (4096, 8192)}
TORCH = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
SLEEP_CYCLES = 4_000_000  # about 2 ms at the H100's clock


def slept_ms(call, reps: int = 30) -> float:
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")  # do_bench's flush
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in pairs:
        cache.zero_()
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs)


@contextlib.contextmanager
def clocks(readings: list):
    """(SM MHz, W) read every 5 ms while the block runs, appended to `readings`."""
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    stop = threading.Event()

    def sample():
        while not stop.wait(0.005):
            readings.append((pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                             pynvml.nvmlDeviceGetPowerUsage(handle) / 1000))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def median_clocks(readings: list) -> str:
    if not readings:
        return "-"
    return f"{statistics.median(r[0] for r in readings):.0f} MHz {statistics.median(r[1] for r in readings):.0f} W"


def gpubench_clocks(m) -> str:
    """What gpubench's own telemetry read after each of its samples (its medians)."""
    return f"{m.telemetry['sm_mhz']:.0f} MHz {m.telemetry.get('power_w') or 0:.0f} W"


def launch_us(call, n: int = 50) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    clock = api.backend_for("cuda").clock
    print("| dtype | size | gpubench ms, rounds 1 and 2 (IQR/median) | do_bench ms, rounds 1 and 2 | slept ms "
          "| do_bench / gpubench | slept / gpubench | how gpubench timed it | launch µs (host; clock's) "
          "| SM clock and power: gpubench rounds 1, 2 / do_bench / slept | rel_err | first call ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|")
    for dtype in DTYPES:
        for n in SIZES[dtype]:
            problem = api.gemm(n, dtype=dtype)
            first = api.measure(matmul.matmul, problem, arrays="torch", precision="precision")
            a = (torch.rand(n, n, device="cuda") * 2 - 1).to(TORCH[dtype])
            b = (torch.rand(n, n, device="cuda") * 2 - 1).to(TORCH[dtype])
            c = torch.empty(n, n, device="cuda", dtype=TORCH[dtype])

            def call():
                matmul.matmul(a, b, c, n, n, n, precision=dtype)

            ours, theirs, slept = [], [], []
            seen = {"do_bench": [], "slept": []}
            for _ in range(2):
                ours.append(api.measure(matmul.matmul, problem, arrays="torch", precision="precision"))
                clock_us = statistics.median(clock.launch_us)
                with clocks(seen["do_bench"]):
                    theirs.append(triton.testing.do_bench(call, warmup=100, rep=1000, return_mode="median"))
                with clocks(seen["slept"]):
                    slept.append(slept_ms(call))
            host_us = launch_us(call)
            mean_ours = statistics.fmean(m.median_ms for m in ours)
            batch = ours[-1].point.details.batch
            how = f"queued batches of {batch}" if batch else "one call at a time"
            print(f"| {dtype} | {n} | {' / '.join(f'{m.median_ms:.4f} ({m.spread:.2%})' for m in ours)} | "
                  f"{' / '.join(f'{t:.4f}' for t in theirs)} | {' / '.join(f'{t:.4f}' for t in slept)} | "
                  f"{statistics.fmean(theirs) / mean_ours:.4f} | {statistics.fmean(slept) / mean_ours:.4f} | {how} | "
                  f"{host_us:.0f}; {clock_us:.0f} | {' / '.join(gpubench_clocks(m) for m in ours)} / "
                  f"{' / '.join(median_clocks(r) for r in seen.values())} | "
                  f"{first.rel_err:.1e} | {first.first_call_ms:.0f} |", flush=True)


if __name__ == "__main__":
    main()
