"""The CUDA backend's libraries: cuBLAS's GEMM (through CuPy's bindings) in fp32, tf32, fp16 and bf16,
cuBLASLt's (through nvmath-python's) in fp8 and int8, and cuDNN's forward convolution (through its frontend,
gpubench/backends/cuda/cudnn_conv.py) in fp32, tf32, fp16 and bf16, NCHW or NHWC, with the plan policy of the
cuDNN runner. The row-major to column-major plumbing of every GEMM layout is blas.py's.

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`.
"""

from __future__ import annotations

import math
from functools import cached_property

from gpubench.backends import Prepared
from gpubench.backends.cuda import blas, storage
from gpubench.backends.cuda.cudnn_conv import CudnnConvGraph, CudnnMissing, CudnnUnavailable, cudnn_version
from gpubench.backends.cuda.fused_conv import fused_graph_needed
from gpubench.backends.cuda.plan_cache import PlanCache
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.core.errors import GpubenchError, Skip
from gpubench.core.phases import phase
from gpubench import ops
from gpubench.ops.conv import ConvShape
from gpubench.ops.gemm import GemmShape
from gpubench.results import Details
from gpubench.specs.runners import CublasLtRunner, PlanPolicy, searches_kept_plans
from gpubench.measure.timing import TimingPolicy, measure, summarize

# cuDNN's plan search (not the point's timing): each plan timed as points are, in queued batches after a flush.
PLAN_SEARCH = TimingPolicy(warmup=1, reps=20, min_reps=5, budget_s=0.02)
PLAN_TIE = 0.03  # plans within 3% of the fastest are ties, settled by cuDNN's own ranking (stable across runs)
# A plan whose second call (the first may carry first-use work) takes at least SCREEN_MS and over SCREEN times the
# fastest median so far cannot be among the ties: it is left out without being timed in full (single calls this
# long vary by a few percent, nowhere near 50%). Shorter plans are cheap to time in full.
SCREEN, SCREEN_MS = 1.5, 1.0
# The plan's first call (timed as well) is enough where it is past CLEAR times the fastest plus FIRST_USE_MS, what
# a first call can add (its workspace's allocation, loading its kernels): the second call is left out.
CLEAR, FIRST_USE_MS = 3.0, 2.0
# Near the launch floor (a fastest plan under FLOOR_MS) plans within FLOOR_TIE are ties: on the H100 lab's 7-8 µs
# layers eng70 and eng28 changed places from one process to the next by 5-13%, so a 3% tie let two runs time
# different engines and compare call one of them "slower". cuDNN's ranking settles the tie the same way each time.
FLOOR_MS, FLOOR_TIE = 0.02, 0.15
# On a short layer (a fastest under SCREEN_MS) the plans within CONTEND of the fastest are timed once more, after
# all the others, and keep the faster of their two medians: the first plans are timed right after the shape's host
# work, with the GPU idle a moment before (on the H100 lab cuDNN's first-ranked eng28 read more than 15% slow in one
# process of two, so the ties above went another way).
CONTEND = 0.5
# A plan that ran over FAR times the fastest on a layer is not tried on larger layers of the same kind (the same
# problem but its height and width) in this process. On the H100 lab cuDNN's eng4 (an engine neither heuristic
# lists) took 300 times the fastest at 512² and 1.3 s a call at 8192² (2,000 times eng0): its single screening
# calls were 4-5 s of the lab's 8 s search. A plan's speed relative to the others moves with size, but not by
# a factor of FAR between two sizes of one sweep.
FAR = 30.0


def _kind(shape: ConvShape) -> str:
    """A layer's kind: its problem but its height and width (FAR)."""
    return str(sorted((k, v) for k, v in shape.record().items() if k not in ("height", "width")))


def contenders(timed: list) -> list:
    """The (median ms, plan) pairs timed a second time: within CONTEND of the fastest, on a short layer only."""
    fastest = min(ms for ms, _ in timed)
    return [(ms, plan) for ms, plan in timed if ms <= fastest * (1 + CONTEND)] if fastest < SCREEN_MS else []


def pick_plan(timed: list):
    """Of (median ms, plan) pairs, the plan of least median, ties (within PLAN_TIE, or FLOOR_TIE where the fastest
    is under FLOOR_MS) settled by cuDNN's own ranking (stable across runs)."""
    fastest = min(ms for ms, _ in timed)
    tie = FLOOR_TIE if fastest < FLOOR_MS else PLAN_TIE
    return min((plan for ms, plan in timed if ms <= fastest * (1 + tie)), key=lambda plan: plan.index)


class Libraries:
    """cuBLAS, cuBLASLt and cuDNN calls (methods of the CUDA backend)."""

    plan_searches = 0  # cuDNN plan searches run in this process (cudnn_plan)

    @cached_property
    def _far_slow(self) -> dict[str, dict[str, float]]:
        """By layer kind: each plan left out as over FAR times the fastest, with the FLOPs of the smallest layer
        where it was (it is not tried on layers at least that large)."""
        return {}

    @cached_property
    def plan_cache(self) -> PlanCache:
        """cuDNN's plan choices kept between runs, for this device and cuDNN (made at the first convolution)."""
        return PlanCache.for_device(self.device_name, cudnn_version())

    def _cublas_gemm(self, m, n, k, a, stride_a, b, stride_b, c, stride_c, batch, tf32: bool):
        """Row-major float32 C[m,n] = A[m,k]·B[k,n] (batched by strides; TF32 tensor cores if `tf32`)."""
        types = storage.BLAS_TYPES[DType.TF32 if tf32 else DType.FP32]
        return blas.cublas_gemm(self.cp, m, n, k, a.data.ptr, False, b.data.ptr, False, c.data.ptr, types,
                                stride_a, stride_b, stride_c, batch)

    def prepare_cublas(self, variant, config, shape: GemmShape, inputs, out) -> Prepared:
        """cublasGemmEx in the shape's precision and layout: any shape, fp32 accumulation (TF32 math for tf32)."""
        run = blas.cublas_gemm(self.cp, shape.m, shape.n, shape.k, inputs["A"].data.ptr, shape.layout.a_transposed,
                               inputs["B"].data.ptr, shape.layout.b_transposed, out.data.ptr,
                               storage.BLAS_TYPES[shape.dtype])
        return Prepared(run, out)

    def prepare_cublaslt(self, variant, config, shape: GemmShape, inputs, out) -> Prepared:
        """cublasLtMatmul in the shape's precision and layout, with the inputs' per-tensor scales (fp8), planned by
        cuBLASLt's heuristic and run once here: a product it refuses, at planning or at its first run, is
        skipped with its words (Hopper's fp8 takes only `nt`, sizes multiples of 16)."""
        try:
            names = [name for name in ops.of(shape).scales if name in inputs]  # fp8's, one allocation each
            pointers = tuple(inputs[name].data.ptr for name in names) or None
            product = blas.LtMatmul(self.cp, shape.m, shape.n, shape.k, shape.layout.a_transposed,
                                    shape.layout.b_transposed, storage.BLAS_TYPES[shape.dtype], pointers)
        except ImportError:
            raise GpubenchError(CublasLtRunner.MISSING) from None
        except blas.LtRefused as e:
            raise Skip(str(e)) from None
        a, b = inputs["A"].data.ptr, inputs["B"].data.ptr

        def run():
            product.run(a, b, out.data.ptr)

        try:
            run()
            self.clock.sync()
        except blas.LtRefused as e:
            product.close()
            raise Skip(str(e)) from None
        return Prepared(run, out, details=Details(workspace_bytes=product.workspace_bytes), release=product.close)

    def prepare_cudnn(self, variant, config, shape: ConvShape, inputs, out) -> Prepared:
        """cuDNN's convolution at its best (or heuristic) plan. A problem with an epilogue, int8 data or 32-channel
        vectors is a fused graph of cuDNN's C++ API (fused_conv.py); the others the frontend's conv_fprop graph."""
        if fused_graph_needed(shape):
            return self.prepare_cudnn_fused(variant, config, shape, inputs, out)
        key = shape  # its dtype says whether TF32 is allowed, its layout how the tensors lie
        try:
            if key not in self._cudnn:
                with phase("cudnn graph"):
                    self._cudnn[key] = CudnnConvGraph(
                        shape.batch, shape.in_channels, shape.height, shape.width, shape.out_channels, shape.kernel,
                        shape.kernel, shape.stride, shape.pad, allow_tf32=shape.dtype == DType.TF32,
                        io_type=storage.CUDNN_IO[shape.dtype], channels_last=shape.layout == ConvLayout.NHWC)
        except CudnnMissing as e:  # the user must install something: one line, exit 2
            raise GpubenchError(str(e)) from None
        except CudnnUnavailable as e:  # not for this problem (or this GPU): the point is skipped, saying why
            raise Skip(str(e)) from None
        graph = self._cudnn[key]
        x, w = inputs["x"], inputs["w"]
        plan, details = Libraries.cudnn_plan(self, variant, graph, x, w, out, shape)
        return Prepared(lambda: graph.run(plan, x, w, out), out, details=details)

    def plan_search_due(self, variant, shape) -> bool:
        """Whether the point's cuDNN plan would be searched now: a variant that times every plan, and no choice kept
        for the problem (its record: the key cudnn_plan keeps a bare or fused convolution under)."""
        runner = variant.code.runner
        return searches_kept_plans(runner) and self.plan_cache.get(shape.record()) is None

    def cudnn_plan(self, variant, graph, x, w, out, shape, key=None):
        """The plan a cuDNN variant runs (its heuristic's first, or the fastest: kept between runs under `key`, the
        problem's record unless given) and the details that say which."""
        kept = None
        if variant.code.runner.plans == PlanPolicy.HEURISTIC:
            plan = graph.heuristic
        else:
            problem = shape.record() if key is None else key
            engine = self.plan_cache.get(problem)
            plan = kept = next((p for p in graph.plans if p.engine == engine), None) if engine else None
            if plan is None:
                with phase("cudnn plans"):
                    plan = self._fastest_plan(graph, x, w, out, shape)
                self.plan_searches += 1
                self.plan_cache.put(problem, plan.engine)
        return plan, Details(engine=plan.engine, plans=len(graph.plans), tensor_cores=plan.tensor_cores,
                             workspace_bytes=plan.workspace_bytes,
                             engine_kept=str(self.plan_cache.path) if kept else None)

    def _fastest_plan(self, graph, x, w, out, shape=None):
        """The plan of least median (pick_plan), every plan timed as points are but those screened out; `shape`,
        where given, lets plans far too slow on a smaller layer of its kind be left out here (FAR)."""
        kind, size = (_kind(shape), shape.flops) if shape is not None else (None, 0)
        far = self._far_slow.setdefault(kind, {}) if kind is not None else {}
        timed = []
        for plan in graph.plans:
            def run(plan=plan):
                graph.run(plan, x, w, out)

            if far.get(plan.engine, math.inf) <= size:
                continue
            try:
                if timed:
                    fastest = min(ms for ms, _ in timed)
                    slow_ms = self._screened_out(run, fastest)
                    if slow_ms is not None:
                        if slow_ms > FAR * fastest:
                            far[plan.engine] = min(far.get(plan.engine, math.inf), size)
                        continue
                samples = measure(run, self.clock, PLAN_SEARCH).samples_ms
            except self.cp.cuda.memory.OutOfMemoryError:
                continue  # its workspace does not fit: not a candidate
            except Exception:  # a plan that fails to run is not a candidate either
                continue
            timed.append((summarize(samples).median, plan))
        if not timed:
            graph.release_workspaces()
            raise Skip("no cuDNN plan could run")
        again = {plan.index for _, plan in contenders(timed)}
        for i, (ms, plan) in enumerate(timed):
            if plan.index in again:
                second = summarize(measure(lambda plan=plan: graph.run(plan, x, w, out), self.clock,
                                           PLAN_SEARCH).samples_ms).median
                timed[i] = (min(ms, second), plan)
        graph.release_workspaces()
        return pick_plan(timed)

    def _screened_out(self, run, fastest_ms: float) -> float | None:
        """One call (workspace, any first-use work), then, unless it was clearly slow (CLEAR), one more, both timed
        as the search times them (flushed): the milliseconds that leave the plan out as too slow to be worth timing
        in full (SCREEN), or None where it is worth it."""
        self.clock.flush()
        first = self.clock.time_ms(run)
        if first >= SCREEN_MS and first > CLEAR * fastest_ms + FIRST_USE_MS:
            return first
        self.clock.flush()
        again = self.clock.time_ms(run)
        return again if again >= SCREEN_MS and again > SCREEN * fastest_ms else None
