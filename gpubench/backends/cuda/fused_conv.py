"""cuDNN's convolution of a problem with an epilogue, int8 data or 32-channel vectors: the fused graph of
cudnn_fused.py where cuDNN builds it, else cuDNN's unfused sequence (the bare convolution into float32 or int32
accumulators, then cuda_src/conv/epilogue_pass.cu), with cuDNN's refusal recorded in the point's details
(`unfused`) and each step's time in its parts.

fp32 data with an epilogue (or an α node) runs the unfused sequence at once (FP32_UNFUSED says why). On an H200
(cuDNN frontend 1.32, tests/test_gpu_int8_conv.py) the fused fp32 graph, and the unfused sequence too, came out with
rel_err 2.0-2.3e-4 on a 3×3 of 24 channels, TF32's size and twice fp32's tolerance: the note filters that leave out
TF32 plans (cudnn_fused.FP32_NOTES) were set on the backend graph before its plans existed, and the backend marks
only the plans it holds. With the filters set once every plan exists, the unfused sequence verified at fp32's
tolerance (docs/evidence/gpu-tests-int8-attention-h200.txt); the fused fp32 graph has not run since, so fp32 stays
on the unfused sequence until it has. The bare convolution is a conv_fprop alone, and the epilogue pass computes
in fp32.

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpubench.backends import Prepared
from gpubench.backends.cuda import cudnn_reorder, storage
from gpubench.backends.cuda.cudnn_conv import CudnnMissing, CudnnNotSupported, CudnnUnavailable
from gpubench.backends.cuda.cudnn_fused import FusedConvGraph, FusedProblem, Lay, describe, float_pass
from gpubench.core import paths
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import GpubenchError, Skip
from gpubench.core.phases import phase
from gpubench.ops import epilogue
from gpubench.ops.conv import ConvLayout, ConvShape
from gpubench.ops.epilogue import Epilogue, Scaling
from gpubench.results import Details
from gpubench.specs.geometry import Launch

LAYS = {ConvLayout.NCHW: Lay.PACKED, ConvLayout.NHWC: Lay.CHANNELS_LAST, ConvLayout.NCHW_VECT_C: Lay.VECTORS}
PASS_LAYOUT = {ConvLayout.NCHW: 0, ConvLayout.NHWC: 1, ConvLayout.NCHW_VECT_C: 2}  # epilogue_pass.cu's codes
PASS_THREADS = 256
FP32_UNFUSED = ("cuDNN's fused fp32 graph is not yet verified on a GPU with TF32's plans left out: fp32 runs cuDNN's "
                "bare convolution, then the epilogue pass")


def fused_problem(shape: ConvShape) -> FusedProblem:
    """The graph's problem in cuDNN's words: types, format, and which epilogue nodes it has."""
    alpha, _, gamma = shape.fused.factors(shape.dtype, shape.reduction)
    return FusedProblem(shape.batch, shape.in_channels, shape.height, shape.width, shape.out_channels, shape.kernel,
                        shape.kernel, shape.stride, shape.pad, storage.CUDNN_IO[shape.dtype],
                        storage.CUDNN_OUT[shape.dtype], LAYS[shape.layout], shape.fused.epilogue,
                        scaled=alpha != 1.0 or shape.fused.scaling == Scaling.CHANNEL, gamma_node=gamma != 1.0,
                        tensor_cores=None if shape.dtype != DType.FP32 else False)


def reordered(graph: FusedConvGraph, details: Details) -> Details:
    """The details with the engine's text saying the filters it read were reordered by cuDNN, where they were."""
    if not graph.problem.reorder_filters:
        return details
    declared = "" if graph.problem.declare_reordered else ", w declared as it lies"
    return replace(details, engine=f"{details.engine}; {cudnn_reorder.REORDERED}{declared}")


def fused_graph_needed(shape: ConvShape) -> bool:
    """Whether cuDNN runs the problem as a graph of this module (an epilogue, int8 data, 32-channel vectors) rather
    than the frontend's conv_fprop graph (cudnn_conv.py), as every other problem ran before."""
    return PRECISIONS[shape.dtype].integer or not shape.fused.default or shape.layout == ConvLayout.NCHW_VECT_C


class FusedConvCalls:
    """cuDNN's fused (or unfused) convolution calls (methods of the CUDA backend)."""

    def prepare_cudnn_fused(self, variant, config, shape: ConvShape, inputs, out) -> Prepared:
        problem = fused_problem(shape)
        if problem.tensor_cores is False and len(describe(problem).nodes) > 1:
            return self._cudnn_unfused(variant, shape, inputs, out, problem, FP32_UNFUSED)
        try:
            graph = self._cudnn_graph(("fused", shape), problem)
        except cudnn_reorder.ReorderUnavailable as refused:
            raise Skip(str(refused)) from None  # the unfused sequence's convolution would need it too
        except CudnnUnavailable as refused:
            if shape.fused.default and not problem.scaled:
                raise Skip(str(refused)) from None  # a bare convolution: nothing to unfuse
            return self._cudnn_unfused(variant, shape, inputs, out, problem, str(refused))
        terms = self._graph_terms(shape, problem, inputs)
        graph.bind(terms)
        x, w = inputs["x"], self._filters(graph, inputs["w"])
        plan, details = self.cudnn_plan(variant, graph, x, w, out, shape)
        details = reordered(graph, details)

        def run():
            graph.run(plan, x, w, out)

        return Prepared(run, out, details=details, release=terms.clear)  # the terms live as long as the point

    def _cudnn_graph(self, key, problem: FusedProblem) -> FusedConvGraph:
        """The graph of a problem, built once per process (CudnnMissing: the user must install something). A bare
        int32 output whose INT32 identity cuDNN refuses takes a FLOAT one where that is exact (float_pass)."""
        try:
            if key not in self._cudnn:
                with phase("cudnn graph"):
                    try:
                        self._cudnn[key] = FusedConvGraph(problem)
                    except CudnnNotSupported as int32_pass:
                        exact_in_float = float_pass(problem)
                        if exact_in_float is None or isinstance(int32_pass, cudnn_reorder.ReorderUnavailable):
                            raise
                        try:
                            self._cudnn[key] = FusedConvGraph(exact_in_float)
                        except CudnnNotSupported as again:
                            raise CudnnNotSupported(f"{int32_pass}; with a FLOAT identity: {again}") from None
        except CudnnMissing as e:
            raise GpubenchError(str(e)) from None
        return self._cudnn[key]

    def _filters(self, graph: FusedConvGraph, w):
        """The filters the graph reads (a reordered copy for int8 in NCHW_VECT_C), made before any timing; cuDNN's
        refusal of the reorder is a skip in its words."""
        try:
            return self.fits(lambda: graph.filters(w), "cuDNN's reordered filters")
        except CudnnUnavailable as refused:
            raise Skip(str(refused)) from None

    def _graph_terms(self, shape: ConvShape, problem: FusedProblem, inputs) -> dict:
        """The epilogue's device arrays as the graph reads them: α·s[k] and β·bias[k] (K floats each, made once,
        untimed), z as it is, γ as one float."""
        cp, k = self.cp, shape.out_channels
        alpha, beta, gamma = shape.fused.factors(shape.dtype, shape.reduction)
        terms = {}
        if problem.scaled:
            scale = inputs.get(epilogue.SCALE)
            terms["alpha"] = (scale * np.float32(alpha) if scale is not None else
                              cp.full(k, alpha, dtype=cp.float32))
        if shape.fused.epilogue.bias:
            terms["bias"] = inputs[epilogue.BIAS] * np.float32(beta)
        if shape.fused.epilogue.add:
            terms["z"] = inputs[epilogue.RESIDUAL]
        if problem.gamma_node:
            terms["gamma"] = cp.full(1, gamma, dtype=cp.float32)
        return terms

    def _cudnn_unfused(self, variant, shape: ConvShape, inputs, out, problem: FusedProblem, refused: str) -> Prepared:
        """cuDNN's bare convolution into accumulators of the problem's own kind (int32 for int8, float32 otherwise),
        then the epilogue as a pass of its own: cuDNN's unfused sequence, timed where it refuses the fused graph."""
        integer = problem.integer
        bare = replace(problem, out_type="INT32" if integer else "FLOAT", epilogue=Epilogue.NONE, scaled=False,
                       gamma_node=False)
        try:
            conv = self._cudnn_graph(("bare", shape), bare)
        except CudnnUnavailable as again:
            raise Skip(f"{refused}; and unfused: {again}") from None
        acc = self.fits(lambda: self.cp.empty(out.shape, dtype=self.cp.int32 if integer else self.cp.float32),
                        "the unfused sequence's accumulators")
        x, w = inputs["x"], self._filters(conv, inputs["w"])
        plan, details = self.cudnn_plan(variant, conv, x, w, acc, shape, key={**shape.record(), "unfused": True})
        details = reordered(conv, details)
        epilogue_pass = self._epilogue_pass(shape, inputs, acc, out)

        def convolve():
            conv.run(plan, x, w, acc)

        def run():
            convolve()
            epilogue_pass()

        details = replace(details, unfused=refused)
        return Prepared(run, out, parts={"cudnn conv": convolve, "epilogue pass": epilogue_pass}, details=details)

    def _epilogue_pass(self, shape: ConvShape, inputs, acc, out):
        """The launch of epilogue_pass.cu over the accumulators (compiled for the output's type and the epilogue)."""
        p = PRECISIONS[shape.dtype]
        defines = {"ACC": "int" if p.integer else "float", "ELEM_OUT": p.c_out_type,
                   "EPILOGUE": shape.fused.epilogue.index}
        fn = self.function(paths.cuda_src_dir() / "conv" / "epilogue_pass.cu", "epilogue_pass", defines)
        total = int(np.prod(out.shape))
        blocks = max(1, min(-(-total // PASS_THREADS), self.sms * 8))
        alpha, beta, gamma = shape.fused.factors(shape.dtype, shape.reduction)
        null = np.uintp(0)

        def pointer(name):
            return np.uintp(inputs[name].data.ptr) if name in inputs else null

        args = (np.uintp(acc.data.ptr), pointer(epilogue.BIAS), pointer(epilogue.RESIDUAL), pointer(epilogue.SCALE),
                np.uintp(out.data.ptr), np.int64(total), np.int32(PASS_LAYOUT[shape.layout]),
                np.int32(shape.out_channels), np.int32(shape.out_pixels), np.float32(alpha), np.float32(beta),
                np.float32(gamma))
        return self.launcher(fn, Launch((blocks, 1, 1), (PASS_THREADS, 1, 1)), "PPPPPqiiifff", args)
