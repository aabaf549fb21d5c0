"""Where the TMA-fed TF32 kernel's time goes: the same launch with parts switched off (PROBE in
cuda_src/gemm/09_tf32_tma.cu), timed with CUDA events, L2 not flushed (back-to-back calls).

    python3 tools/gpu/tf32_probe.py 4096 8192
    PROBES=0,3 EXTRA="SWIZZLE=0;SWIZZLE=8" python3 tools/gpu/tf32_probe.py 4096   # some probes, with extra -D sets
Prints one line per configuration × probe: the median ms of 20 calls. Results of probes 1-3 are wrong by
design; probes 4 (clusters without multicast) and 5 (cluster-scope release arrives) are correct products.
"""

import os
import sys

from gpubench.backends.cuda import CudaBackend
from gpubench.ops.gemm import GemmShape
from gpubench.specs import catalog
from events import median_ms  # tools/gpu/events.py

PROBES = {0: "whole kernel", 1: "copies only", 2: "products only", 3: "no C stores", 4: "no multicast",
          5: "cluster arrives"}


def main(sizes):
    probes = [int(p) for p in os.environ.get("PROBES", "0,1,2,3,4,5").split(",")]
    extras = [dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in e.split(",") if kv)
              for e in os.environ.get("EXTRA", "").split(";")]
    backend = CudaBackend(tf32=True)
    v = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "tf32-tma")
    for n in sizes:
        shape = GemmShape(n, n, n)
        inputs = backend.inputs(shape, seed=1)
        for c in v.space.configs:
            for extra in extras:
                for probe in probes:
                    if probe == 4 and c.values["CLUSTER"] == 1:
                        continue
                    config = v.space.config({**c.values, **extra, "PROBE": probe})
                    p = backend.prepare(v, config, shape, inputs)
                    ms = median_ms(p.run)
                    label = c.label + "".join(f" {k}={x}" for k, x in extra.items())
                    print(f"{n} {label:36} probe {probe} {PROBES[probe]:14} {ms:.3f} ms  "
                          f"{2 * n**3 / ms / 1e9:.0f} TFLOP/s")
                    p.release()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [4096])
