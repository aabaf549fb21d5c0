"""The CUDA backend's grouped GEMM libraries: torch._grouped_mm (bf16) and torch._scaled_grouped_mm (fp8, per-tensor
scales given as the row-wise ones it takes) where the installed PyTorch has them, and a loop of one library GEMM per
group (cuBLAS's GemmEx in fp16 and bf16, cuBLASLt's fp8 matmul with the per-tensor scales) wherever it runs.

What each is: the torch calls read the group offsets on the device, as a grouped kernel does, and return a fresh D
that is copied into the point's output (timed with the call, and on its own as a part, `parts_ms`). The loop needs
each group's rows on the host (it launches one GEMM per group, sized on the host): it reads them from the problem,
which is what a framework holding the routing on the host would do, and it is recorded as such. In the masked
layouts torch's batched product computes every slab's M_max rows, the loop each group's count only. Neither library
takes DeepGEMM's 1×128 / 128×128 block scales here: those points are skipped, saying so.

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`; it reads a problem's fields (group_m, n, k,
offsets, layout) by name, as every backend reads a shape.
"""

from __future__ import annotations

from dataclasses import replace

from gpubench import ops
from gpubench.backends import Prepared
from gpubench.backends.cuda import blas, storage
from gpubench.backends.cuda.attention_libraries import import_torch, one_line
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import Skip
from gpubench.results import Details
from gpubench.specs.runners import CublasLtRunner, GroupedLibrary

BLOCK_SCALES = "DeepGEMM's 1x128 / 128x128 block scales"


def refuse_unscaled_block(shape) -> None:
    """A 16-bit type in a block layout is told that the block layouts scale fp8 alone, not that a library wants
    other fp8 scales (before any library is tried: the words are the same for each)."""
    if shape.layout.block_scaled and not PRECISIONS[shape.dtype].scaled:
        plain = ", ".join(str(x) for x in type(shape.layout) if not x.block_scaled)
        raise Skip(f"the block layouts scale {DType.FP8} alone; {shape.dtype} has no scales (its layouts: {plain})")


class GroupedLibraries:
    """torch's grouped products and the per-group library loop (methods of the CUDA backend)."""

    def prepare_grouped_library(self, variant, config, shape, inputs, out) -> Prepared:
        """The runner's library: torch's, the loop, or (first) torch's where it runs and else the loop, the reason
        torch's did not run kept in the point's engine."""
        library = variant.code.runner.library
        refuse_unscaled_block(shape)
        if library == GroupedLibrary.LOOP:
            return self.prepare_cublas_loop(shape, inputs, out)
        try:
            return self.prepare_torch_grouped_mm(shape, inputs, out)
        except Skip as why:
            if library == GroupedLibrary.TORCH:
                raise
            torch_why = str(why)
        try:
            prepared = self.prepare_cublas_loop(shape, inputs, out)
        except Skip as why:
            raise Skip(f"{torch_why}; and {why}") from None
        prepared.details = replace(prepared.details, engine=f"{prepared.details.engine}; not torch: {torch_why}")
        return prepared

    def prepare_torch_grouped_mm(self, shape, inputs, out) -> Prepared:
        from gpubench.backends.cuda.python_calls import torch_views

        if shape.layout.block_scaled:
            raise Skip(f"torch._scaled_grouped_mm takes row-wise scales, not {BLOCK_SCALES}")
        torch = import_torch()
        scaled = PRECISIONS[shape.dtype].scaled
        name = "_scaled_grouped_mm" if scaled else "_grouped_mm"
        product = getattr(torch, name, None)
        if product is None:
            raise Skip(f"PyTorch {torch.__version__} has no torch.{name}")
        types = {a.name: a.storage.host_type(shape.dtype) for a in ops.of(shape).arrays}
        t = torch_views({**{n: inputs[n] for n in ("A", "B", "SA", "SB", "offsets")}, "D": out}, types)
        a, bt = t["A"], t["B"].transpose(-2, -1)  # B as [G, K, N], K-contiguous: the column-major operand it wants
        masked = shape.layout.masked
        offs = None if masked else t["offsets"][1:]  # each group's end row (the masked slabs: a batched product)
        if scaled:  # the per-tensor scales as the row-wise ones it takes: one per row of A, one per column of B
            rows = a.shape[:-1]
            scale_a = t["SA"].reshape(1).expand(rows).contiguous()
            scale_b = t["SB"].reshape(1).expand(shape.groups, shape.n).contiguous()

            def compute():
                return product(a, bt, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16)
        else:
            def compute():
                return product(a, bt, offs=offs)
        last = {}

        def run():
            last["D"] = compute()
            t["D"].copy_(last["D"])

        self.on_timed_stream()
        try:
            run()
            self.cp.cuda.runtime.deviceSynchronize()
        except (RuntimeError, TypeError, ValueError) as e:
            raise Skip(f"torch.{name} refused it: {one_line(e)}") from None
        details = Details(engine=f"torch {torch.__version__} {name}")
        return Prepared(run, out, parts={"copy into D": lambda: t["D"].copy_(last["D"])}, details=details,
                        capturable=False)

    def prepare_cublas_loop(self, shape, inputs, out) -> Prepared:
        """One GEMM per group with rows, D_g = A_g·B_gᵀ (row-major, B stored N×K: the `nt` product)."""
        if shape.layout.block_scaled:
            raise Skip(f"the cuBLASLt loop takes per-tensor fp8 scales, not {BLOCK_SCALES}")
        p = PRECISIONS[shape.dtype]
        types = storage.BLAS_TYPES[shape.dtype]
        n, k = shape.n, shape.k
        a0, b0, d0 = inputs["A"].data.ptr, inputs["B"].data.ptr, out.data.ptr
        groups = [(g, start, m) for g, (start, m) in enumerate(zip(shape.offsets, shape.group_m)) if m]
        products: dict[int, blas.LtMatmul] = {}  # fp8: one cuBLASLt plan per distinct group size

        def close():
            for product in products.values():
                product.close()
            products.clear()

        calls = []
        try:
            for g, start, m in groups:
                a, b, d = a0 + start * k * p.in_bytes, b0 + g * n * k * p.in_bytes, d0 + start * n * p.out_bytes
                if p.scaled:
                    if m not in products:
                        products[m] = blas.LtMatmul(self.cp, m, n, k, False, True, types,
                                                    (inputs["SA"].data.ptr, inputs["SB"].data.ptr))
                    calls.append(lambda a=a, b=b, d=d, product=products[m]: product.run(a, b, d))
                else:
                    calls.append(blas.cublas_gemm(self.cp, m, n, k, a, False, b, True, d, types))
        except ImportError:  # nvmath-python (cuBLASLt's bindings) is not installed: this point says so
            close()
            raise Skip(CublasLtRunner.MISSING) from None
        except blas.LtRefused as e:
            close()
            raise Skip(str(e)) from None

        def run():
            for call in calls:
                call()

        try:
            run()
            self.clock.sync()
        except blas.LtRefused as e:
            close()
            raise Skip(str(e)) from None
        engine = "cuBLASLt fp8 matmul per group" if p.scaled else "cuBLAS GemmEx per group"
        return Prepared(run, out, details=Details(engine=f"{engine} ({len(calls)} calls)"), release=close)
