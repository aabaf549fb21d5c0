"""fp8-tma's error against how often it promotes: rel_err of cuBLASLt and of fp8-tma promoted every p slots of 128 k
(p = 1, 2, 4, 8, 16; two alternating fp8 sets) and not at all, on the same inputs, at each size given.

    python3 tools/gpu/fp8_promotion.py 4096 8192 2048x2048x16384

rel_err = ||out - ref|| / ||ref|| against the float64 product of the rounded inputs (gpubench's check). The output is
bfloat16, whose rounding alone gives cuBLASLt's ~1.66e-3; the accumulation's own error adds in quadrature (the two
are independent), so each line also prints acc = sqrt(rel_err^2 - e_out^2) with e_out the p1 figure: the error of
the fp8 accumulation in each window of 128p k, seen through the bf16 rounding.
"""

import math
import sys

from gpubench.specs import catalog
from gpubench.backends.cuda import CudaBackend
from gpubench.core.dtypes import DType
from gpubench.ops.gemm import GemmLayout
from gpubench.ops.gemm import GemmShape
from gpubench.execution.tasks import verify

TILE = {"BN": 128, "BK": 128, "STAGES": 6, "CLUSTER": 2, "SWIZZLE": 8}
WINDOWS = [1, 2, 4, 8, 16, 0]  # slots of 128 k per promotion; 0: never (the tensor cores' accumulation throughout)


def shape_of(text: str) -> GemmShape:
    m, n, k = (int(x) for x in text.split("x")) if "x" in text else (int(text),) * 3
    return GemmShape(m, n, k, DType.FP8, GemmLayout.NT)


def main(sizes: list[str]):
    backend = CudaBackend()
    known = catalog.Catalog(catalog.builtin())
    lt, ours = known.get("gemm", "cuda", "cublaslt"), known.get("gemm", "cuda", "fp8-tma")
    for text in sizes:
        shape = shape_of(text)
        inputs = backend.inputs(shape, seed=0)
        ref = backend.reference(shape, inputs)
        runs = [("cublaslt", lt, lt.space.configs[0])]
        for p in WINDOWS:
            params = {**TILE, "PROMOTE": p, "SETS": 2} if p else TILE
            runs.append((f"p{p}" if p else "unpromoted", ours, ours.space.config(params)))
        errs = {}
        for name, v, c in runs:
            prepared = backend.prepare(v, c, shape, inputs)
            errs[name] = verify(backend, prepared, ref, shape)
            prepared.release()
        out = errs["p1"]
        for name, err in errs.items():
            acc = math.sqrt(max(err * err - out * out, 0.0))
            window = f"  (windows of {128 * int(name[1:])} k)" if name.startswith("p") else ""
            print(f"{shape.label:>18} {name:>10} rel_err {err:.5e}  x cuBLASLt {err / errs['cublaslt']:.4f}  "
                  f"acc {acc:.2e}{window}", flush=True)

if __name__ == "__main__":
    main(sys.argv[1:] or ["4096"])
