"""Compile every kernel configuration the built-in specs (and optionally a project's, and the tuner) can ask for.

    GPUBENCH_CACHE=.kcache python tools/precompile.py sm_90 [--project DIR/gpubench.toml] [--tuner N] [--only A,B]

Used to carry compiled kernels to a GPU machine whose nvcc has the same version (the cache key includes it), or on
the GPU machine before a sweep, so that its builds run in parallel rather than one at a time as points need them.
--only compiles just the named variants (e.g. --only wgmma-tma,fp8-tma: what one device call is about to sweep).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpubench.specs import parse as specs  # noqa: E402
from gpubench.usecases import autotune
from gpubench.specs import catalog
from gpubench.execution import nvcc
from gpubench.specs import project

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("arch", nargs="?", default="sm_90", help="the architecture to build for, e.g. sm_90")
parser.add_argument("--project", help="a project's gpubench.toml: its kernels too")
parser.add_argument("--tuner", type=int, help="the tuner's first N candidates too")
parser.add_argument("--only", help="comma-separated variant names: just these")
args = parser.parse_args()
arch = args.arch
mine = project.load(args.project).variants if args.project else []
known = catalog.Catalog.with_user(mine)
jobs = [(catalog.kernels_dir() / "probes.cu", (), arch, ())]
only = set(args.only.split(",")) if args.only else None
for v in known.all if only is None else [v for v in known.all if v.name in only]:
    for c in v.space.configs_for(specs.LAB_BLOCK_SIZES):
        for problem in specs.sample_problems(v):  # a kernel told its precision or layout is built in each
            jobs += v.builds(c, (v.code.program.arch if v.code.program else None) or arch, problem)
if args.tuner:
    tuned = known.get("gemm", "cuda", "tuned")
    jobs += [j for c in autotune.candidates(tuned, args.tuner) for j in tuned.builds(c, arch)]
failures = nvcc.compile_all(jobs)
print(f"{len(set(jobs))} builds, {len(failures)} failed", *(str(e) for _, e in failures), sep="\n")
