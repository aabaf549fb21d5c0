"""How long must a point's calls run before a refresh of NVML's instant power for that reading to be theirs?

    python3 tools/gpu/settle_probe.py   (on the GPU machine)

Learns the refresh period and phase by polling NVML_FI_DEV_POWER_INSTANT as fast as it answers, then, for each
burst length L, starts back-to-back SGEMMs (2048³, ~0.3 ms each) L ms before a predicted refresh, runs them until
the refresh is seen and idles 250 ms. Prints, per L, the reading's share of the way from idle to steady load
(1.0: the reading describes the burst alone). gpubench's energy windows wait SETTLE_S (telemetry.py) before a
reading counts.
"""

from __future__ import annotations

import statistics
import time

import cupy as cp
import pynvml as nv

INSTANT = 186


def main() -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)

    def read() -> int:
        return int(nv.nvmlDeviceGetFieldValues(h, [INSTANT])[0].value.uiVal)

    a = cp.random.rand(2048, 2048, dtype=cp.float32)
    c = a @ a
    cp.cuda.Device().synchronize()

    def changes(seconds: float, busy: bool) -> list[tuple[float, int]]:
        out, last, end = [], read(), time.perf_counter() + seconds
        while time.perf_counter() < end:
            if busy:
                cp.matmul(a, a, out=c)
                cp.cuda.Device().synchronize()
            v = read()
            if v != last:
                out.append((time.perf_counter(), v))
                last = v
        return out

    idle = changes(1.5, False)
    gaps = [b[0] - a_[0] for a_, b in zip(idle, idle[1:])]
    period = statistics.median(gaps)
    anchor = idle[-1][0]
    idle_w = statistics.median(v for _, v in idle) / 1000
    steady = changes(1.0, True)
    steady_w = statistics.median(v for _, v in steady[2:]) / 1000
    print(f"period {period * 1e3:.2f} ms (gaps p10 {sorted(gaps)[len(gaps) // 10] * 1e3:.1f} p90 "
          f"{sorted(gaps)[9 * len(gaps) // 10] * 1e3:.1f}); idle {idle_w:.1f} W; steady SGEMM {steady_w:.1f} W")
    rows = {}
    for L in (5, 10, 15, 20, 25, 30, 35, 40, 50, 70):
        for _ in range(5):
            now = time.perf_counter()
            k = int((now - anchor) / period) + 1
            target = anchor + k * period
            while target - now < L / 1e3 + 0.02:
                target += period
            last = read()
            while time.perf_counter() < target - L / 1e3:  # idle, polling: keep the anchor fresh
                v = read()
                if v != last:
                    anchor, last = time.perf_counter(), v
            start = time.perf_counter()
            while True:
                cp.matmul(a, a, out=c)
                cp.cuda.Device().synchronize()
                v = read()
                if v != last:
                    seen = time.perf_counter()
                    anchor = seen
                    break
            ran = (seen - start) * 1e3
            rows.setdefault(L, []).append((ran, (v / 1000 - idle_w) / (steady_w - idle_w)))
            time.sleep(0.25)
        ran = [r for r, _ in rows[L]]
        share = [s for _, s in rows[L]]
        print(f"L {L:3d} ms: ran {min(ran):6.1f}-{max(ran):6.1f} ms; share of steady "
              + " ".join(f"{s:.3f}" for s in share))


if __name__ == "__main__":
    main()
