"""The CUDA backend's libraries: cuBLAS's SGEMM (through CuPy's bindings) and cuDNN's forward convolution
(through its frontend, gpubench/backends/cuda/cudnn_conv.py), with the plan policy of the cuDNN runner.

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`.
"""

from __future__ import annotations

import numpy as np

from gpubench.backends import Prepared
from gpubench.backends.cuda.cudnn_conv import CudnnConvGraph, CudnnMissing, CudnnUnavailable
from gpubench.dtypes import DType
from gpubench.errors import GpubenchError, Skip
from gpubench.phases import phase
from gpubench.problems import ConvShape
from gpubench.results import Details
from gpubench.runners import PlanPolicy
from gpubench.timing import TimingPolicy, measure, summarize

# cuDNN's plan search (not the point's timing): each plan timed as points are, in queued batches after a flush.
PLAN_SEARCH = TimingPolicy(warmup=1, reps=20, min_reps=5, budget_s=0.02)
PLAN_TIE = 0.03  # plans within 3% of the fastest are ties, settled by cuDNN's own ranking (stable across runs)
# A plan whose first timed call (after an untimed one) takes at least SCREEN_MS and over SCREEN times the fastest
# median so far cannot be among the ties: it is left out without being timed in full (single calls this long
# vary by a few percent, nowhere near 50%). Shorter plans are cheap to time in full.
SCREEN, SCREEN_MS = 1.5, 1.0


class Libraries:
    """cuBLAS and cuDNN calls (methods of the CUDA backend)."""

    def _cublas_gemm(self, m, n, k, a, stride_a, b, stride_b, c, stride_c, batch, tf32: bool):
        """Row-major C[m,n] = A[m,k]·B[k,n] (batched by strides) as cuBLAS's column-major C^T = B^T·A^T."""
        from cupy_backends.cuda.libs import cublas

        handle = self.cp.cuda.device.get_cublas_handle()
        one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
        compute = cublas.CUBLAS_COMPUTE_32F_FAST_TF32 if tf32 else cublas.CUBLAS_COMPUTE_32F
        f32, op_n = 0, cublas.CUBLAS_OP_N  # CUDA_R_32F = 0

        def run():
            cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
            cublas.gemmStridedBatchedEx(
                handle, op_n, op_n, n, m, k, one.ctypes.data, b.data.ptr, f32, n, stride_b, a.data.ptr, f32, k,
                stride_a, zero.ctypes.data, c.data.ptr, f32, n, stride_c, batch, compute, cublas.CUBLAS_GEMM_DEFAULT)

        return run

    def prepare_cublas(self, variant, config, shape, inputs, out) -> Prepared:
        run = self._cublas_gemm(shape.m, shape.n, shape.k, inputs["A"], 0, inputs["B"], 0, out, 0, 1,
                                tf32=shape.dtype == DType.TF32)
        return Prepared(run, out)

    def prepare_cudnn(self, variant, config, shape: ConvShape, inputs, out) -> Prepared:
        key = shape  # its dtype says whether TF32 is allowed
        try:
            if key not in self._cudnn:
                with phase("cudnn graph"):
                    self._cudnn[key] = CudnnConvGraph(
                        shape.batch, shape.in_channels, shape.height, shape.width, shape.out_channels, shape.kernel,
                        shape.kernel, shape.stride, shape.pad, allow_tf32=shape.dtype == DType.TF32)
        except CudnnMissing as e:  # the user must install something: one line, exit 2
            raise GpubenchError(str(e)) from None
        except CudnnUnavailable as e:  # not for this problem (or this GPU): the point is skipped, saying why
            raise Skip(str(e)) from None
        graph = self._cudnn[key]
        x, w = inputs["x"], inputs["w"]
        if variant.runner.plans == PlanPolicy.HEURISTIC:
            plan = graph.heuristic
        else:
            with phase("cudnn plans"):
                plan = self._fastest_plan(graph, x, w, out)
        details = Details(engine=plan.engine, plans=len(graph.plans), tensor_cores=plan.tensor_cores,
                          workspace_bytes=plan.workspace_bytes)
        return Prepared(lambda: graph.run(plan, x, w, out), out, details=details)

    def _fastest_plan(self, graph, x, w, out):
        timed = []
        for plan in graph.plans:
            def run(plan=plan):
                graph.run(plan, x, w, out)

            try:
                if timed and self._screened_out(run, min(ms for ms, _ in timed)):
                    continue
                samples = measure(run, self.clock, PLAN_SEARCH).samples_ms
            except self.cp.cuda.memory.OutOfMemoryError:
                continue  # its workspace does not fit: not a candidate
            except Exception:  # a plan that fails to run is not a candidate either
                continue
            timed.append((summarize(samples).median, plan))
        graph.release_workspaces()
        if not timed:
            raise Skip("no cuDNN plan could run")
        fastest = min(ms for ms, _ in timed)
        return min((plan for ms, plan in timed if ms <= fastest * (1 + PLAN_TIE)), key=lambda plan: plan.index)

    def _screened_out(self, run, fastest_ms: float) -> bool:
        """One untimed call (workspace, any first-use work), then one timed as the search times them (flushed):
        whether the plan is too slow to be worth timing in full (SCREEN)."""
        run()
        self.clock.sync()
        self.clock.flush()
        first = self.clock.time_ms(run)
        return first >= SCREEN_MS and first > SCREEN * fastest_ms
