"""Why CUPTI traced no kernels on the GPU machine: small traces in fresh processes, one scenario each.

    python3 tools/gpu/cupti_probe.py     # every scenario, each in its own process

Scenarios: CUPTI's kernel records enabled before the process creates its CUDA context, or after it (as gpubench
enabled them: per point, long after the worker's context); the kernel kind CONCURRENT_KERNEL or KERNEL; with or
without external correlation ids. Each prints the libcupti the process mapped, each CUPTI call's outcome, and how
many kernel and correlation records came back.
"""

from __future__ import annotations

import subprocess
import sys

SCENARIOS = ("before", "after", "after-kernel-kind", "after-no-external", "gpubench")


def step(what, f, *args):
    try:
        out = f(*args)
        print(f"  ok   {what}" + (f": {out}" if out is not None else ""), flush=True)
        return out
    except Exception as e:  # noqa: BLE001 - a probe: say it and go on
        print(f"  FAIL {what}: {type(e).__name__}: {e}", flush=True)
        return None


def mapped() -> list[str]:
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "libcupti" in line})


def scenario(name: str) -> None:
    from cupti import cupti

    got = {"kernels": [], "links": [], "other": []}
    kind = cupti.ActivityKind.KERNEL if name == "after-kernel-kind" else cupti.ActivityKind.CONCURRENT_KERNEL
    external = name != "after-no-external"

    def requested():
        return 8 << 20, 0

    def completed(activities):
        for a in activities:
            if a.kind == kind:
                got["kernels"].append((a.name, a.end - a.start, a.correlation_id))
            elif a.kind == cupti.ActivityKind.EXTERNAL_CORRELATION:
                got["links"].append((a.correlation_id, a.external_id))
            else:
                got["other"].append(int(a.kind))

    def enable():
        step("activity_register_callbacks", cupti.activity_register_callbacks, requested, completed)
        step(f"activity_enable {kind.name}", cupti.activity_enable, kind)
        if external:
            step("activity_enable EXTERNAL_CORRELATION", cupti.activity_enable,
                 cupti.ActivityKind.EXTERNAL_CORRELATION)

    if name == "before":
        enable()
    import cupy as cp

    x = cp.arange(1 << 20, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    if name != "before":
        enable()
    for i in range(5):
        if external:
            cupti.activity_push_external_correlation_id(cupti.ExternalCorrelationKind.CUSTOM0, 100 + i)
        x = x * 1.0001 + 1
        if external:
            cupti.activity_pop_external_correlation_id(cupti.ExternalCorrelationKind.CUSTOM0)
    cp.cuda.Device().synchronize()
    step("activity_flush_all(1)", cupti.activity_flush_all, 1)
    print(f"  records: {len(got['kernels'])} kernels, {len(got['links'])} links, other kinds {sorted(set(got['other']))}")
    for k in got["kernels"][:2]:
        print(f"    kernel {k[0][:50]} {k[1]} ns, correlation {k[2]}")
    print(f"    links {got['links'][:3]}")


def through_gpubench() -> None:
    import cupy as cp
    from gpubench.backends.cuda.cupti_clock import CuptiClock

    x = cp.arange(1 << 20, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    clock = CuptiClock()
    trace = clock.point()
    tagger = trace.tagger

    def call():
        nonlocal x
        x = x * 1.0001 + 1

    tagger.timing(lambda: [tagger.traced(call)() for _ in range(5)], None)
    cp.cuda.Device().synchronize()
    print("  finish:", trace.finish(5))


def main() -> int:
    if len(sys.argv) > 1:
        name = sys.argv[1]
        try:
            through_gpubench() if name == "gpubench" else scenario(name)
        finally:
            print("  libcupti mapped:", mapped())
        return 0
    for name in SCENARIOS:
        print(f"== {name}", flush=True)
        r = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, timeout=120)
        print((r.stdout + r.stderr)[-3000:], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
