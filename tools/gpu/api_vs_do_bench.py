"""The same Triton kernel timed in one process by gpubench's API (api.measure) and by triton.testing.do_bench.

    python tools/gpu/api_vs_do_bench.py PROJECT_DIR [DTYPES]   # PROJECT_DIR holds the Triton example's matmul.py

For each problem the kernel is first measured once by gpubench (its first call autotunes; the autotuner then keeps
one configuration per shape and dtype, so both tools time the same compiled kernel), then two rounds of gpubench
(verify, then its protocol: L2 flush, events on the timed stream, queued batches below 1 ms, sampling until a 5%
comparison could be decided) and do_bench (its L2 flush, the median of 1 s of calls) alternate on tensors of the
same shape and type, so that a drift of the GPU between the tools shows in the rounds. Prints one Markdown table.
"""

import statistics
import sys

import torch
import triton.testing

from gpubench import api

sys.path.insert(0, sys.argv[1])
import matmul  # noqa: E402  (the Triton example, from the project directory)

DTYPES = (sys.argv[2] if len(sys.argv) > 2 else "fp32,tf32").split(",")
SIZES = {"fp32": (2048, 4096), "tf32": (4096, 8192), "bf16": (4096, 8192), "fp16": (4096, 8192)}
TORCH = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def main():
    print("| dtype | size | gpubench ms, rounds 1 and 2 (IQR/median) | do_bench ms, rounds 1 and 2 | do_bench / gpubench "
          "| SM MHz | rel_err | first call ms | autotuned |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for dtype in DTYPES:
        for n in SIZES[dtype]:
            problem = api.gemm(n, dtype=dtype)
            first = api.measure(matmul.matmul, problem, arrays="torch", precision="precision")
            a = (torch.rand(n, n, device="cuda") * 2 - 1).to(TORCH[dtype])
            b = (torch.rand(n, n, device="cuda") * 2 - 1).to(TORCH[dtype])
            c = torch.empty(n, n, device="cuda", dtype=TORCH[dtype])
            ours, theirs = [], []
            for _ in range(2):
                ours.append(api.measure(matmul.matmul, problem, arrays="torch", precision="precision"))
                theirs.append(triton.testing.do_bench(lambda: matmul.matmul(a, b, c, n, n, n, precision=dtype),
                                                      warmup=100, rep=1000, return_mode="median"))
            ratio = statistics.fmean(theirs) / statistics.fmean(m.median_ms for m in ours)
            print(f"| {dtype} | {n} | {' / '.join(f'{m.median_ms:.4f} ({m.spread:.2%})' for m in ours)} | "
                  f"{' / '.join(f'{t:.4f}' for t in theirs)} | {ratio:.4f} | "
                  f"{' / '.join(str(m.telemetry['sm_mhz']) for m in ours)} | {first.rel_err:.1e} | "
                  f"{first.first_call_ms:.0f} | {first.reported.get('autotuned')} |", flush=True)


if __name__ == "__main__":
    main()
