"""cuDNN's convolution with the fused epilogue, and in int8, as one graph of the frontend's classic C++ API.

The graph is the problem's (gpubench/ops/epilogue.py), in the document's order:

    conv_fprop(x, w) → scale(α·s[k]) → bias(β·bias[k]) → add(γ·z) → relu → y

each node only where the problem has its term (a requantised int8 output keeps the scale node, its α). The
convolution computes in INT32 for int8 data (FLOAT otherwise), the pointwise nodes in FLOAT, and y is written in the
output's type: cuDNN's own conversion rounds and saturates an int8 output.

y is always written by a pointwise node. A bare int8 convolution into int32 gets an identity node: on an H200
(cuDNN frontend 1.32) a conv_fprop written straight to an INT32 y ran and gave wrong sums, while every graph ending
in a pointwise node was exact. The identity computes in INT32 on an INT32 conv output (`pass_type`), so the sums
come through unchanged at any size; where cuDNN refuses that, a FLOAT identity is used only if every sum is exact
in float32 (|sum| ≤ 128·128·C·R·S ≤ 2^24: `float_pass`), else the refusal stands. An int8 graph with an epilogue
passes its sums through FLOAT (the graph's intermediate type): exact up to 2^24 like the float pass. β is folded into the bias (β·bias[k], K values made once before the timing) and α into the channel
scales (α·s[k]); γ·z is a scale node of its own where γ is not 1.

This path builds on ``cudnn._pybind_module.backend_graph`` rather than the frontend's Python graph
(gpubench/backends/cuda/cudnn_conv.py's), because only the C++ graph's tensors take a vector count: cuDNN's
NCHW_VECT_C with 32-channel vectors is a tensor of dims [N, C/32, H, W] and packed strides in units of vectors,
vectorized (32) along dimension 1 (MegEngine's NCHW32 descriptors, and the frontend's own INT8x32 sample,
samples/legacy_samples/conv_sample.cpp's run_imma: x [N, C/32, H, W], w [K, C/32, R, S], y [N, K/32, OH, OW]).
Per-channel terms lie the same way ([1, K/32, 1, 1], 32-vectors) and so does every virtual tensor between the
nodes: the frontend infers conv_fprop's output as [N, w's dim 0 = K, OH, OW] (it knows no vectors), which no
[1, K/32, 1, 1] term broadcasts against, so the graph declares each intermediate's dims itself (`GraphSpec.between`).
Every int8 plan cuDNN offers for NCHW_VECT_C wants the filters reordered (behaviour note
REQUIRES_FILTER_INT8x32_REORDER, on an H200 with cuDNN frontend 1.32), so there w is declared with the frontend's
reordering INT8x32 and the graph reads a copy of the filters reordered once, untimed, by cuDNN's
cudnnReorderFilterAndBias (`FusedConvGraph.filters`, through cudnn_reorder.py: the frontend's Python does not offer
the call; its sample run_imma does the same in C++). On that H200 cuDNN then offered no engine at all, so where the
declared graph is refused the graph is built again with w declared as it lies, keeping the plans that ask for the
filters reordered: they would read the same reordered copy. On the H200 (cuDNN 9.19) no engine took either graph:
neither heuristic mode, nor any of its engines tried one by one, so NCHW_VECT_C int8 points are skipped there with
cuDNN's words. Plans that want the bias reordered
(REQUIRES_BIAS_INT8x32_REORDER) are left out wherever the graph has a per-channel term (alpha or bias): those are
given as they lie, and how such a plan would read a per-channel scale, which no note covers, is not known. Other
layouts and types declare every tensor with reordering NONE and leave out both kinds of plan. Where cuDNN refuses
the graph the caller times cuDNN's unfused sequence instead (the bare convolution, then
cuda_src/conv/epilogue_pass.cu), and records the refusal.

Nothing here imports CuPy or cuDNN at module import: `describe` is plain data, tested on the CPU against a stand-in
of the frontend (tests/test_cudnn_fused.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from gpubench.backends.cuda import cudnn_reorder
from gpubench.backends.cuda.cudnn_conv import (CudnnNotSupported, CudnnPlan, _handle, _import_cudnn, _import_cupy,
                                               _one_line)
from gpubench.ops.epilogue import Epilogue

VECTOR = 32  # NCHW_VECT_C's channels per vector
FLOAT_EXACT = 2 ** 24  # every integer up to this is a float32
INT8_PRODUCT = 128 * 128  # the largest |x·w| of two int8 values
REORDER_LEFT_OUT = " (plans that need cuDNN's INT8x32 filter or bias reorder are left out)"
BIAS_REORDER_LEFT_OUT = " (filters reordered; plans that need cuDNN's INT8x32 bias reorder are left out)"
# fp32 data keeps fp32 arithmetic: no TF32 tensor cores, and no plan that converts its inputs down or sums in a
# narrower type. These filters once reached no plan (set before the plans existed: FusedConvGraph._plan), and fp32
# graphs came out at TF32's error on an H200 (rel_err 1.9-2.3e-4 on a 3x3 of 24 channels); set after, the same test
# verified at fp32's tolerance (docs/evidence/gpu-tests-int8-attention-h200.txt).
FP32_NOTES = ("TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION")
PER_CHANNEL = ("alpha", "bias")  # the graph's per-channel terms, which the bias-reorder plans may read reordered
UID_BASE = 101  # the graph's own tensors' uids (its virtual ones get theirs from cuDNN)


class Lay(Enum):
    """How the graph's 4-D tensors lie: cuDNN's three formats of them."""

    PACKED = "NCHW"
    CHANNELS_LAST = "NHWC"
    VECTORS = "NCHW_VECT_C"


@dataclass(frozen=True)
class Tensor:
    """One tensor as the graph declares it: dims and strides in cuDNN's order (N, C, H, W), its type's name
    (cudnn.data_type's), and its vector count along dimension 1 (1: none)."""

    name: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    data_type: str
    vector: int = 1
    reordering: str = "NONE"  # cudnn.tensor_reordering's name: INT8x32 for NCHW_VECT_C int8 filters


def laid(name: str, n: int, c: int, h: int, w: int, lay: Lay, data_type: str) -> Tensor:
    """A logical (N, C, H, W) tensor in a format: NCHW packed, NHWC channels last, or 32-channel vectors."""
    if lay == Lay.CHANNELS_LAST:
        return Tensor(name, (n, c, h, w), (h * w * c, 1, w * c, c), data_type)
    if lay == Lay.VECTORS:
        cv = c // VECTOR
        return Tensor(name, (n, cv, h, w), (cv * h * w, h * w, w, 1), data_type, VECTOR)
    return Tensor(name, (n, c, h, w), (c * h * w, h * w, w, 1), data_type)


@dataclass(frozen=True)
class FusedProblem:
    """What the graph computes, in cuDNN's words (no gpubench op type here)."""

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int
    pad: int
    io_type: str  # x and w: FLOAT, HALF, BFLOAT16, INT8
    out_type: str  # y (and z): FLOAT, HALF, BFLOAT16, INT8, INT32
    lay: Lay = Lay.PACKED
    epilogue: Epilogue = Epilogue.NONE
    scaled: bool = False  # an α·s[k] node (α is not 1, or the scaling is per channel, or the output requantised)
    gamma_node: bool = False  # a γ·z node (γ is not 1)
    tensor_cores: bool | None = None  # False: only plans without TENSOR_CORE (fp32 data, no TF32); None: any
    pass_type: str = "INT32"  # a bare int32 output's identity node: its compute type and its input's
    declare_reordered: bool = True  # NCHW_VECT_C int8: w declared INT8x32-reordered (False: as it lies, the data
    # reordered all the same, for the plans whose behaviour note asks for it: FusedConvGraph's second attempt)

    @property
    def integer(self) -> bool:
        return self.io_type == "INT8"

    @property
    def reorder_filters(self) -> bool:
        """int8 in NCHW_VECT_C: the graph reads the filters reordered by cuDNN (module docstring)."""
        return self.integer and self.lay == Lay.VECTORS

    @property
    def reduction(self) -> int:
        return self.c * self.r * self.s

    @property
    def out_hw(self) -> tuple[int, int]:
        return (self.h + 2 * self.pad - self.r) // self.stride + 1, (self.w + 2 * self.pad - self.s) // self.stride + 1

    def text(self) -> str:
        return (f"{self.io_type.lower()}→{self.out_type.lower()} {self.lay.value} N={self.n} C={self.c} H={self.h} "
                f"W={self.w} K={self.k} {self.r}x{self.s} stride {self.stride} pad {self.pad} epilogue {self.epilogue}")


@dataclass(frozen=True)
class Node:
    """One operation: its kind (the C++ graph's method), its inputs (tensor names), its compute type, and its
    output's type where not the graph's intermediate (FLOAT)."""

    op: str
    inputs: tuple[str, ...]
    compute: str
    out_type: str | None = None


@dataclass(frozen=True)
class GraphSpec:
    """The whole graph as data: its tensors by name (inputs and y), its nodes in order (each node's output feeds
    the next; the last one's is y), and where given the dims, strides and vectors every virtual tensor between
    them takes (None: the frontend infers them)."""

    tensors: dict[str, Tensor] = field(default_factory=dict)
    nodes: tuple[Node, ...] = ()
    between: Tensor | None = None

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(name for name in self.tensors if name != "y")


def describe(p: FusedProblem) -> GraphSpec:
    """The graph of a problem: conv_fprop, then its epilogue's nodes, y in the output's type."""
    oh, ow = p.out_hw
    channel = Lay.VECTORS if p.lay == Lay.VECTORS else Lay.PACKED  # a per-channel vector lies like y's channels
    tensors = {"x": laid("x", p.n, p.c, p.h, p.w, p.lay, p.io_type),
               "w": laid("w", p.k, p.c, p.r, p.s, p.lay, p.io_type)}
    if p.reorder_filters and p.declare_reordered:
        tensors["w"] = replace(tensors["w"], reordering="INT8x32")
    nodes = [Node("conv_fprop", ("x", "w"), "INT32" if p.integer else "FLOAT")]
    if p.out_type == "INT32" and not (p.scaled or p.epilogue.bias or p.epilogue.add or p.epilogue.relu):
        # y written by a pointwise node, never by conv_fprop itself (module docstring)
        nodes = [replace(nodes[0], out_type=p.pass_type), Node("identity", (), p.pass_type)]
    if p.scaled:
        tensors["alpha"] = laid("alpha", 1, p.k, 1, 1, channel, "FLOAT")
        nodes.append(Node("scale", ("alpha",), "FLOAT"))
    if p.epilogue.bias:
        tensors["bias"] = laid("bias", 1, p.k, 1, 1, channel, "FLOAT")
        nodes.append(Node("bias", ("bias",), "FLOAT"))
    if p.epilogue.add:
        tensors["z"] = laid("z", p.n, p.k, oh, ow, p.lay, p.out_type)
        if p.gamma_node:
            tensors["gamma"] = Tensor("gamma", (1, 1, 1, 1), (1, 1, 1, 1), "FLOAT")
        nodes.append(Node("add", ("z",) + (("gamma",) if p.gamma_node else ()), "FLOAT"))
    if p.epilogue.relu:
        nodes.append(Node("relu", (), "FLOAT"))
    tensors["y"] = laid("y", p.n, p.k, oh, ow, p.lay, p.out_type)
    between = laid("between", p.n, p.k, oh, ow, p.lay, "FLOAT") if p.lay == Lay.VECTORS else None
    return GraphSpec(tensors, tuple(nodes), between)


def float_pass(p: FusedProblem) -> FusedProblem | None:
    """The problem with its int32 output's identity computed in FLOAT, where every sum it can hold is exact in
    float32 (|sum| ≤ 128·128·C·R·S ≤ 2^24), else None (then only an INT32 pass keeps the sums)."""
    if p.pass_type != "INT32" or p.out_type != "INT32" or INT8_PRODUCT * p.reduction > FLOAT_EXACT:
        return None
    return replace(p, pass_type="FLOAT")


def build(cudnn, spec: GraphSpec, p: FusedProblem, handle=None):
    """The C++ graph of a spec, validated and its operation graph built: (graph, uid of each tensor by name)."""
    m = cudnn._pybind_module
    dt = m.data_type
    g = m.backend_graph(name="gpubench_fused_conv", io_data_type=getattr(dt, p.io_type),
                        intermediate_data_type=dt.FLOAT, compute_data_type=dt.FLOAT, handle=handle)
    made, uids = {}, {name: UID_BASE + i for i, name in enumerate(spec.tensors)}
    for name, t in spec.tensors.items():
        if name != "y":
            made[name] = _declare(g.tensor(dim=list(t.dims), stride=list(t.strides),
                                           data_type=getattr(dt, t.data_type), name=name), t, uids[name], m)
    out = None
    for node in spec.nodes:
        compute = getattr(dt, node.compute)
        if node.op == "conv_fprop":
            out = g.conv_fprop(made["x"], made["w"], pre_padding=[p.pad, p.pad], post_padding=[p.pad, p.pad],
                               stride=[p.stride, p.stride], dilation=[1, 1], compute_data_type=compute, name="conv")
        elif node.op == "add" and len(node.inputs) == 2:  # γ·z first, then the sum
            scaled_z = _between(g.scale(made["z"], made["gamma"], compute_data_type=compute, name="gamma_z"), spec)
            out = g.add(out, scaled_z, compute_data_type=compute, name="add")
        else:
            out = getattr(g, node.op)(out, *(made[n] for n in node.inputs), compute_data_type=compute, name=node.op)
        if node.out_type is not None:
            out.set_data_type(getattr(dt, node.out_type))
        if node is not spec.nodes[-1]:
            _between(out, spec)
    y = spec.tensors["y"]
    out.set_output(True)
    out.set_data_type(getattr(dt, y.data_type))
    out.set_dim(list(y.dims))
    out.set_stride(list(y.strides))
    _declare(out, y, uids["y"], m)
    g.validate()
    g.build_operation_graph()
    return g, uids


def reorder_notes_left_out(p: FusedProblem, spec: GraphSpec) -> tuple[str, ...]:
    """The behaviour notes (cudnn.behavior_note's names) whose plans the graph leaves out: for int8, those wanting
    the filters reordered unless it reorders them (NCHW_VECT_C), and those wanting the bias reordered where it
    has a per-channel term; none for other types."""
    if not p.integer:
        return ()
    filters = () if p.reorder_filters else ("REQUIRES_FILTER_INT8x32_REORDER",)
    bias = ("REQUIRES_BIAS_INT8x32_REORDER",) if not p.reorder_filters or any(
        name in spec.tensors for name in PER_CHANNEL) else ()
    return filters + bias


def left_out_text(p: FusedProblem, spec: GraphSpec) -> str:
    """What a refusal adds about the plans left out (reorder_notes_left_out), for the reader of the skip."""
    left_out = reorder_notes_left_out(p, spec)
    if not left_out:
        return " (filters reordered)" if p.reorder_filters else ""
    return BIAS_REORDER_LEFT_OUT if p.reorder_filters else REORDER_LEFT_OUT


def _between(t, spec: GraphSpec):
    """A virtual tensor between two nodes given the graph's layout for them, where it has one (32-channel vectors)."""
    if spec.between is not None:
        t.set_dim(list(spec.between.dims))
        t.set_stride(list(spec.between.strides))
        t.set_vector_count_and_dimension(spec.between.vector, 1)
    return t


def _declare(t, spec: Tensor, uid: int, m):
    """A C++ tensor given its uid (the variant pack's key), its vector count (vectorized along dimension 1), its
    reordering where not NONE (m: the frontend's pybind module) and 16-byte alignment (CuPy's allocations are
    256-byte aligned)."""
    if spec.vector > 1:
        t.set_vector_count_and_dimension(spec.vector, 1)
    if spec.reordering != "NONE":
        t.set_reordering_type(getattr(m.tensor_reordering, spec.reordering))
    t.set_alignment(16)
    t.set_uid(uid)
    return t


class FusedConvGraph:
    """One problem's fused graph and every plan cuDNN builds for it (ranked as cuDNN ranks them: heuristic mode A,
    then FALLBACK, then the engines neither lists), run on CuPy arrays like cudnn_conv.CudnnConvGraph: x, w, y,
    and the epilogue's arrays bound once (`bind`)."""

    def __init__(self, problem: FusedProblem):
        self._cupy = cupy = _import_cupy()
        self._cudnn = _import_cudnn()
        self._h = _handle(self._cudnn, cupy)
        self._reorder = cudnn_reorder.library() if problem.reorder_filters else None  # else its one-line refusal
        try:
            self._plan(problem)
        except CudnnNotSupported as declared:
            if not (problem.reorder_filters and problem.declare_reordered):
                raise
            # On an H200 (frontend 1.32) cuDNN had no engine for w declared INT8x32, while with w declared as it
            # lies every plan it offered asked for the filters reordered (REQUIRES_FILTER_INT8x32_REORDER): those
            # plans read the reordered copy all the same (filters()).
            try:
                self._plan(replace(problem, declare_reordered=False))
            except CudnnNotSupported as undeclared:
                raise CudnnNotSupported(f"{declared}; with w declared as it lies: {undeclared}") from None

    def _plan(self, problem: FusedProblem) -> None:
        """Build the problem's graph and every plan cuDNN builds for it (CudnnNotSupported where none)."""
        cudnn = self._cudnn
        self.problem, self.spec = problem, describe(problem)
        m = cudnn._pybind_module
        try:
            self._g, self.uids = build(cudnn, self.spec, problem, self._h.backend_handle)
            refused = self._offer_plans(m)
            if not self._g.get_execution_plan_count():
                raise refused or RuntimeError("no engine offers a plan")
            # Only now: the backend's note filters mark the plans it holds when called (plans.h
            # filter_*_notes), so a filter set before the plans exist, or before an engine is appended, misses them
            left_out = reorder_notes_left_out(problem, self.spec)
            if left_out:  # plans that want arrays reordered which are given as they lie
                self._g.deselect_behavior_notes([getattr(m.behavior_note, note) for note in left_out])
            if problem.tensor_cores is False:  # fp32 data: no plan that rounds the inputs or the sums (FP32_NOTES)
                self._g.deselect_numeric_notes([getattr(m.numerical_note, note) for note in FP32_NOTES])
            if problem.io_type in ("HALF", "BFLOAT16"):  # sums kept in the 16-bit type: not fp32 accumulation
                self._g.deselect_numeric_notes([m.numerical_note.REDUCED_PRECISION_REDUCTION])
        except Exception as exc:  # noqa: BLE001 - cuDNN's refusal, whatever it raised
            raise CudnnNotSupported(f"cuDNN cannot build the graph {problem.text()}: {_one_line(exc)}"
                                    f"{left_out_text(problem, self.spec)}") from None
        self.plans, self._index, failures, seen = [], [], [], set()
        for i in range(self._g.get_execution_plan_count()):
            try:
                name = self._g.get_plan_name_at_index(i)
                if name in seen:
                    continue
                seen.add(name)
                self._g.build_plan_at_index(i)
                ws = int(self._g.get_workspace_size_plan_at_index(i))
            except Exception as exc:  # noqa: BLE001 - cuDNN declined this plan
                failures.append(_one_line(exc))
                continue
            self.plans.append(CudnnPlan(len(self.plans), name, ws, None))
            self._index.append(i)
        if not self.plans:
            raise CudnnNotSupported(f"cuDNN has no plan for the graph {problem.text()} "
                                    f"({failures[0] if failures else 'no engines'})"
                                    f"{left_out_text(problem, self.spec)}")
        self.heuristic = self.plans[0]
        self._workspaces: dict[int, object] = {}
        self._bound: dict[str, int] = {}

    def _offer_plans(self, m) -> Exception | None:
        """Every plan cuDNN offers, ranked as it ranks them: heuristic mode A, then FALLBACK (each asked on its
        own, so that one mode's refusal leaves the other's plans), then every engine neither listed, at its default
        knobs. Returns the first refusal, for the message where nothing at all is offered."""
        refused = None
        for mode in (m.heur_mode.A, m.heur_mode.FALLBACK):
            try:
                self._g.create_execution_plans([mode])
            except Exception as exc:  # noqa: BLE001 - no engine config from this mode
                refused = refused or exc
        listed = {self._g.get_engine_and_knobs_at_index(i)[0] for i in range(self._g.get_execution_plan_count())}
        for engine_id in range(int(self._g.get_engine_count())):
            if engine_id not in listed:
                try:
                    self._g.create_execution_plan(engine_id, {})
                except Exception:  # noqa: BLE001 - the engine does not take this graph
                    pass
        return refused

    def filters(self, w):
        """The filters as the graph reads them: w itself, or for int8 in NCHW_VECT_C a new array of w reordered by
        cuDNN (made now, untimed; w is left as it is, for the reference)."""
        if self._reorder is None:
            return w
        p = self.problem
        return cudnn_reorder.reorder_filters(self._cupy, w, cudnn_reorder.FilterShape(p.k, p.c, p.r, p.s),
                                             self._reorder)

    def bind(self, arrays: dict) -> None:
        """The epilogue's device arrays by tensor name (alpha, bias, z, gamma), as every run() passes them (kept
        here too: a pointer outlives no array)."""
        self._arrays = dict(arrays)
        self._bound = {name: a.data.ptr for name, a in arrays.items() if name in self.uids}

    def run(self, plan: CudnnPlan, x, w, y) -> None:
        """Execute `plan` once, asynchronously on CuPy's current stream (workspace cached per plan)."""
        ws = self._workspaces.get(plan.index)
        if ws is None and plan.workspace_bytes > 0:
            ws = self._workspaces[plan.index] = self._cupy.empty(plan.workspace_bytes, dtype=self._cupy.uint8)
        self._cudnn.set_stream(self._h, self._cupy.cuda.get_current_stream().ptr)
        pointers = {"x": x.data.ptr, "w": w.data.ptr, "y": y.data.ptr, **self._bound}
        pack = {self.uids[name]: ptr for name, ptr in pointers.items()}
        self._g._execute_plan_at_index(pack, 0 if ws is None else ws.data.ptr, self._index[plan.index],
                                       self._h.backend_handle)

    def release_workspaces(self) -> None:
        self._workspaces.clear()
