"""The CUDA backend's attention libraries: cuDNN's SDPA through its frontend (cudnn_sdpa.py: the op's baseline) and
PyTorch's scaled_dot_product_attention pinned to one of its backends (flash, efficient, cudnn, math), where PyTorch
is installed. A library that is missing, or that refuses a problem, skips the point with its words: the op's own
kernels still run.

PyTorch returns a fresh O, which is copied into the point's output; the copy is timed with the call and on its own
too (the point's `parts_ms`), so that a reader can take it out. A mixin of
:class:`~gpubench.backends.cuda.backend.CudaBackend`: it reads a problem's fields (batch, heads, kv_heads, seq,
head_dim, causal) by name, as every backend reads a shape.
"""

from __future__ import annotations

import math

from gpubench import ops
from gpubench.backends import Prepared
from gpubench.backends.cuda.cudnn_conv import CudnnUnavailable
from gpubench.core.dtypes import PRECISIONS
from gpubench.core.errors import Skip
from gpubench.core.phases import phase
from gpubench.measure.timing import measure, summarize
from gpubench.results import Details
from gpubench.specs.runners import PlanPolicy, SdpaBackend

# cuDNN's names of the element types: the inputs' and the output's, by the precision's C types
CUDNN_TYPES = {"__half": "HALF", "__nv_bfloat16": "BFLOAT16", "__nv_fp8_e4m3": "FP8_E4M3"}
# PyTorch's torch.nn.attention.SDPBackend member of each backend a variant may pin
SDPA_KINDS = {SdpaBackend.FLASH: "FLASH_ATTENTION", SdpaBackend.EFFICIENT: "EFFICIENT_ATTENTION",
              SdpaBackend.CUDNN: "CUDNN_ATTENTION", SdpaBackend.MATH: "MATH"}


def one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:200] if lines else ''}"


def import_torch():
    """PyTorch, or Skip saying it is not installed (a baseline that is missing skips its points)."""
    try:
        import torch
    except ImportError:
        raise Skip("PyTorch is not installed here (pip install torch)") from None
    return torch


class AttentionLibraries:
    """cuDNN SDPA and PyTorch SDPA calls (methods of the CUDA backend)."""

    def prepare_cudnn_sdpa(self, variant, config, shape, inputs, out) -> Prepared:
        from gpubench.backends.cuda.cudnn_sdpa import P_SCALE, CudnnSdpaGraph

        p = PRECISIONS[shape.dtype]
        io, out_type = CUDNN_TYPES.get(p.c_type), CUDNN_TYPES.get(p.c_out_type)
        if io is None or out_type is None:
            raise Skip(f"cuDNN's SDPA takes fp16, bf16 and fp8, not {shape.dtype}")
        key = ("sdpa", shape)
        try:
            if key not in self._cudnn:
                with phase("cudnn graph"):
                    self._cudnn[key] = CudnnSdpaGraph(shape.batch, shape.heads, shape.kv_heads, shape.seq,
                                                      shape.head_dim, shape.causal, io, out_type, fp8=p.scaled)
        except CudnnUnavailable as e:  # not installed, or no plan for this problem: the point says which
            raise Skip(str(e)) from None
        graph = self._cudnn[key]
        pointers = {name: inputs[name].data.ptr for name in ("Q", "K", "V")} | {"O": out.data.ptr}
        scalars = {}  # fp8's device scalars, held by the call below for as long as it lives
        if p.scaled:
            cp = self.cp
            fixed = {"descale_s": 1.0 / P_SCALE, "scale_s": P_SCALE, "scale_o": 1.0, "amax_s": 0.0, "amax_o": 0.0}
            scalars = {name: cp.full(1, value, dtype=cp.float32) for name, value in fixed.items()}
            scalars |= {f"descale_{n.lower()}": inputs[f"{n}_scale"] for n in ("Q", "K", "V")}
            pointers |= {name: a.data.ptr for name, a in scalars.items()}
        if variant.code.runner.plans == PlanPolicy.HEURISTIC:
            plan = graph.plans[0]
        else:
            with phase("cudnn plans"):
                plan = self._fastest_sdpa_plan(graph, pointers)
        try:
            graph.run(plan, pointers)
            self.clock.sync()
        except Exception as e:  # noqa: BLE001 - cuDNN declined to run it after all
            raise Skip(f"cuDNN's SDPA did not run: {one_line(e)}") from None
        details = Details(engine=plan.engine, plans=len(graph.plans), workspace_bytes=plan.workspace_bytes)
        return Prepared(lambda held=scalars: graph.run(plan, pointers), out, details=details,
                        release=graph.release_workspaces)

    def _fastest_sdpa_plan(self, graph, pointers):
        """The plan of least median, each timed as the conv baseline's plans are (PLAN_SEARCH); ties go to the
        heuristic's order."""
        from gpubench.backends.cuda.libraries import PLAN_SEARCH, PLAN_TIE

        timed = []
        for plan in graph.plans:
            try:
                samples = measure(lambda plan=plan: graph.run(plan, pointers), self.clock, PLAN_SEARCH).samples_ms
            except Exception:  # noqa: BLE001 - a plan that cannot run (its workspace, a refusal) is no candidate
                continue
            timed.append((summarize(samples).median, plan))
        if not timed:
            raise Skip("no cuDNN SDPA plan could run")
        fastest = min(ms for ms, _ in timed)
        return min((plan for ms, plan in timed if ms <= fastest * (1 + PLAN_TIE)), key=lambda plan: plan.index)

    def prepare_torch_sdpa(self, variant, config, shape, inputs, out) -> Prepared:
        from gpubench.backends.cuda.python_calls import torch_views

        torch = import_torch()
        backend = variant.code.runner.backend
        if PRECISIONS[shape.dtype].scaled:
            raise Skip("PyTorch's scaled_dot_product_attention takes no fp8 inputs")
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except ImportError:
            raise Skip(f"PyTorch {torch.__version__} has no torch.nn.attention.sdpa_kernel (2.3 or later)") from None
        kind = getattr(SDPBackend, SDPA_KINDS[backend], None)
        if kind is None:
            raise Skip(f"PyTorch {torch.__version__} has no SDPA backend {SDPA_KINDS[backend]}")
        types = {a.name: a.storage.host_type(shape.dtype) for a in ops.of(shape).arrays}
        t = torch_views({"Q": inputs["Q"], "K": inputs["K"], "V": inputs["V"], "O": out}, types)
        options = {"is_causal": bool(shape.causal), "scale": 1.0 / math.sqrt(shape.head_dim)}
        if shape.kv_heads != shape.heads:
            options["enable_gqa"] = True  # PyTorch 2.5 and later; K and V are not repeated into H heads
        attend = torch.nn.functional.scaled_dot_product_attention
        last = {}

        def compute():
            with sdpa_kernel([kind]):
                last["O"] = attend(t["Q"], t["K"], t["V"], **options)

        def run():
            compute()
            t["O"].copy_(last["O"])

        self.on_timed_stream()
        try:
            run()
            self.cp.cuda.runtime.deviceSynchronize()
        except (RuntimeError, TypeError, ValueError) as e:  # the backend refuses (no kernel for it), or no GQA
            raise Skip(f"PyTorch's {backend} SDPA refused it: {one_line(e)}") from None
        details = Details(engine=f"torch {torch.__version__} {backend}")
        return Prepared(run, out, parts={"copy into O": lambda: t["O"].copy_(last["O"])}, details=details,
                        capturable=False)  # PyTorch launches on its own current stream, not a capturing one
