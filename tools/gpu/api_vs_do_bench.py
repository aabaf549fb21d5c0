"""The same Triton kernel timed in one process by gpubench's API at both paces, by triton.testing.do_bench, and by
events behind a long sleep (the kernel alone, whatever the host's launch takes).

    python tools/gpu/api_vs_do_bench.py PROJECT_DIR [DTYPES]   # PROJECT_DIR holds the Triton example's matmul.py

For each problem the kernel is first measured once by gpubench (its first call autotunes; the autotuner then keeps
one configuration per shape and dtype, so every timer times the same compiled kernel), then two rounds of four
timers alternate on tensors of the same shape and type, so that a drift of the GPU between them shows in the rounds:

- `idle`: api.measure at the default pace (verify, then L2 flush, events on the timed stream, queued batches below
  1 ms, each call or batch after the GPU waited for the host, sampling until a 5% comparison could be decided);
- `slept`, its control: flushes L2 as do_bench does, keeps the GPU asleep 2 ms (torch.cuda._sleep) before the start
  event, far longer than any launch, and takes the median of 30 calls: no host time can be inside its intervals;
- `sustained`: api.measure at the sustained pace (calls back to back, each flushed and between its own events, in
  a stream kept ahead of the GPU, sampled once they have run 1 s and their time stopped drifting);
- `do_bench`, its counterpart: do_bench(warmup=100, rep=1000, return_mode="median") (its flush, then the calls of
  about a second back to back, each between its own events).

Printed per problem: each timer's two rounds, the two ratios that should hold (slept / idle and do_bench /
sustained), the host's time to launch one call (the median of 50 queued back to back), and the SM clock and board
power while each timer ran: gpubench's own telemetry (read after each sample) for its two paces, NVML read every
5 ms by a thread for do_bench and the slept timer (the medians of the readings). One Markdown table.
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


def rounds(values) -> str:
    return " / ".join(f"{v:.4f}" for v in values)


def main():
    print("| dtype | size | idle ms, rounds 1 and 2 (IQR/median) | slept ms | **slept / idle** "
          "| sustained ms, rounds 1 and 2 (IQR/median, settled s) | do_bench ms | **do_bench / sustained** | do_bench / idle "
          "| how idle timed it | launch µs | SM clock and power: idle / slept / sustained / do_bench | rel_err "
          "| first call ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|")
    for dtype in DTYPES:
        for n in SIZES[dtype]:
            problem = api.gemm(n, dtype=dtype)
            first = api.measure(matmul.matmul, problem, arrays="torch", precision="precision")
            a = (torch.rand(n, n, device="cuda") * 2 - 1).to(TORCH[dtype])
            b = (torch.rand(n, n, device="cuda") * 2 - 1).to(TORCH[dtype])
            c = torch.empty(n, n, device="cuda", dtype=TORCH[dtype])

            def call():
                matmul.matmul(a, b, c, n, n, n, precision=dtype)

            idle, slept, hot, theirs = [], [], [], []
            seen = {"slept": [], "do_bench": []}
            for _ in range(2):
                idle.append(api.measure(matmul.matmul, problem, arrays="torch", precision="precision"))
                with clocks(seen["slept"]):
                    slept.append(slept_ms(call))
                hot.append(api.measure(matmul.matmul, problem, arrays="torch", precision="precision",
                                       pace="sustained"))
                with clocks(seen["do_bench"]):
                    theirs.append(triton.testing.do_bench(call, warmup=100, rep=1000, return_mode="median"))
            host_us = launch_us(call)
            mean_idle = statistics.fmean(m.median_ms for m in idle)
            mean_hot = statistics.fmean(m.median_ms for m in hot)
            batch = idle[-1].point.details.batch
            how = f"queued batches of {batch}" if batch else "one call at a time"
            print(f"| {dtype} | {n} | {' / '.join(f'{m.median_ms:.4f} ({m.spread:.2%})' for m in idle)} | "
                  f"{rounds(slept)} | **{statistics.fmean(slept) / mean_idle:.4f}** | "
                  f"{' / '.join(f'{m.median_ms:.4f} ({m.spread:.2%}, {m.point.details.settled_s:.1f})' for m in hot)} | "
                  f"{rounds(theirs)} | **{statistics.fmean(theirs) / mean_hot:.4f}** | "
                  f"{statistics.fmean(theirs) / mean_idle:.4f} | {how} | {host_us:.0f} | "
                  f"{gpubench_clocks(idle[-1])} / {median_clocks(seen['slept'])} / {gpubench_clocks(hot[-1])} / "
                  f"{median_clocks(seen['do_bench'])} | {first.rel_err:.1e} | {first.first_call_ms:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
