"""One call bracketed for a profiler: cudaProfilerStart/Stop around it (what `ncu --profile-from-start off`
profiles) and an NVTX range named after the point (what Nsight Systems and `ncu --nvtx-include` see), the device
idle before and after, so that the bracket holds that call's launches and nothing else."""

from __future__ import annotations

import importlib
from typing import Callable


def bracketed(cp, run: Callable[[], None], name: str) -> None:
    """Run `run` once inside the bracket (cp: CuPy, whose runtime and NVTX bindings make the calls)."""
    try:
        nvtx = importlib.import_module(f"{cp.__name__}.cuda.nvtx")
    except ImportError:  # a CuPy built without NVTX: the profiler bracket is what counts
        nvtx = None
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.start()
    pushed = False
    try:
        if nvtx is not None:
            try:
                nvtx.RangePush(f"gpubench {name}")
                pushed = True
            except Exception:  # noqa: BLE001 - NVTX's library missing at run time: as above
                pass
        run()
        cp.cuda.runtime.deviceSynchronize()
    finally:
        if pushed:
            nvtx.RangePop()
        cp.cuda.profiler.stop()
