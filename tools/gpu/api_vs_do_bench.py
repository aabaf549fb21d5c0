"""The same Triton kernels timed in one process by gpubench's API (api.measure) and by triton.testing.do_bench.

    python tools/gpu/api_vs_do_bench.py PROJECT_DIR      # PROJECT_DIR holds the Triton example's matmul.py

For each problem: gpubench measures (verifies, then times with its protocol: L2 flush, events on the timed
stream, queued batches below 1 ms, sampling until a 5% comparison could be decided), then do_bench times the same
launcher on tensors of the same shape (its L2 flush, median of its samples), then gpubench again, so that a drift
of the GPU between the two tools shows. The autotuner keeps one configuration per shape, chosen on gpubench's
first call, so both tools time the same compiled kernel. Prints one Markdown table.
"""

import sys

import torch
import triton.testing

from gpubench import api

sys.path.insert(0, sys.argv[1])
import matmul  # noqa: E402  (the Triton example, from the project directory)

CASES = [("matmul_fp32", 2048, False), ("matmul_fp32", 4096, False), ("matmul_tf32", 4096, True),
         ("matmul_tf32", 8192, True)]


def main():
    print("| kernel | size | gpubench median ms (IQR/median) | do_bench median ms | gpubench again | "
          "do_bench / gpubench | rel_err | first call ms | autotuned |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, n, tf32 in CASES:
        fn = getattr(matmul, name)
        first = api.measure(fn, api.gemm(n), arrays="torch", tf32=tf32)
        a = torch.rand(n, n, device="cuda") * 2 - 1
        b = torch.rand(n, n, device="cuda") * 2 - 1
        c = torch.empty(n, n, device="cuda")
        theirs = triton.testing.do_bench(lambda: fn(a, b, c, n, n, n), warmup=100, rep=2000, return_mode="median")
        again = api.measure(fn, api.gemm(n), arrays="torch", tf32=tf32)
        print(f"| {name} | {n} | {first.median_ms:.4f} ({first.spread:.3%}) | {theirs:.4f} | {again.median_ms:.4f} | "
              f"{theirs / first.median_ms:.4f} | {first.rel_err:.1e} | {first.first_call_ms:.0f} | "
              f"{first.reported.get('autotuned')} |", flush=True)


if __name__ == "__main__":
    main()
