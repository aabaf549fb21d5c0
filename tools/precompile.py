"""Compile every kernel configuration the registry (and optionally the tuner) can ask for, into the cache.

    GPUBENCH_CACHE=.kcache python tools/precompile.py sm_90 [--tuner N]

Used to carry compiled kernels to a GPU machine whose nvcc has the same version (the cache key includes it).
"""

import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpubench import nvcc, registry, tune  # noqa: E402

arch = sys.argv[1] if len(sys.argv) > 1 else "sm_90"
jobs = set()
for v in registry.VARIANTS:
    if not v.source:
        continue
    for c in v.configs_for(registry.LAB_BLOCK_SIZES):
        jobs.add((v.source, c.params, v.arch or arch))
        if v.options.get("gemm") not in (None, "cublas"):
            jobs.add((registry.get("gemm", "cuda", v.options["gemm"]).source, c.params, arch))
jobs.add(("timing_spin.cu", (), arch))
if "--tuner" in sys.argv:
    count = int(sys.argv[sys.argv.index("--tuner") + 1])
    source = registry.get("gemm", "cuda", tune.SEARCH_VARIANT).source
    jobs |= {(source, c.params, arch) for c in tune.candidates(count)}


def build(job):
    source, params, a = job
    try:
        nvcc.compile_cubin(source, a, dict(params))
        return None
    except Exception as e:  # noqa: BLE001
        return f"{source} {params}: {str(e).splitlines()[0]}"


with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    failures = [f for f in pool.map(build, sorted(jobs)) if f]
print(f"{len(jobs)} builds, {len(failures)} failed", *failures, sep="\n")
