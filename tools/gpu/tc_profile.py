"""The tensor-core GEMMs (wgmma-tma, fp8-tma) beside their libraries, one launch each bracketed for a profiler,
and each timed back to back (tools/gpu/events.py: CUDA events, L2 not flushed) for a quick look.

    python3 tools/gpu/tc_profile.py 4096 fp16:nt bf16:nt fp8:nt
    ncu --profile-from-start off --section SpeedOfLight python3 tools/gpu/tc_profile.py 4096 fp16:nt
CONFIGS=0,2 picks our configurations by index (default: all). Only the bracketed launch of each is profiled: the
first calls (compilation, warm-up) and the timing loop are left out.
"""

import os
import sys

from gpubench.specs import catalog
from gpubench.backends.cuda import CudaBackend
from gpubench.core.dtypes import DType
from gpubench.ops.gemm import GemmLayout
from gpubench.ops.gemm import GemmShape
from events import bracketed, median_ms  # tools/gpu/events.py

OURS = {DType.FP16: ("cublas", "wgmma-tma"), DType.BF16: ("cublas", "wgmma-tma"), DType.FP8: ("cublaslt", "fp8-tma")}


def main(n: int, points: list[str]):
    if "TMA_L2_PROMOTION" in os.environ:  # a probe: the tensor maps' L2 promotion (CUtensorMapL2promotion, 0-3)
        from gpubench.backends.cuda import tma
        tma.L2_PROMOTION_256B = int(os.environ["TMA_L2_PROMOTION"])
        print(f"tensor maps with L2 promotion {tma.L2_PROMOTION_256B}", flush=True)
    backend = CudaBackend()
    known = catalog.Catalog(catalog.builtin())
    picked = os.environ.get("CONFIGS")
    for point in points:
        dtype, layout = (DType(point.split(":")[0]), GemmLayout(point.split(":")[1]))
        shape = GemmShape(n, n, n, dtype, layout)
        inputs = backend.inputs(shape, seed=1)
        for name in OURS[dtype]:
            v = known.get("gemm", "cuda", name)
            configs = v.space.configs if v.entry.baseline or not picked else [v.space.configs[int(i)] for i in picked.split(",")]
            for c in configs:
                p = backend.prepare(v, c, shape, inputs)
                bracketed(p.run)
                ms = median_ms(p.run)
                print(f"{n} {dtype} {layout} {name:10} {c.label:24} {ms:.4f} ms {2 * n**3 / ms / 1e9:7.1f} TFLOP/s",
                      flush=True)
                p.release()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:] or ["bf16:nt"])
