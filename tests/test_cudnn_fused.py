"""cuDNN's fused convolution graph (gpubench/backends/cuda/cudnn_fused.py, fused_conv.py), built against a stand-in of
the frontend's C++ graph that records every call: the nodes in the document's order (the ReLU after the residual
add), int8 computed in INT32 and written in the output's type, NCHW_VECT_C as 32-vectors along dimension 1, the
plans cuDNN ranks, and a refusal becoming CudnnNotSupported (the backend then times the unfused sequence). The
graphs themselves run on a GPU in tests/test_gpu_int8_conv.py."""

import types
from dataclasses import replace

import pytest

from gpubench.backends.cuda import cudnn_conv, cudnn_fused, cudnn_reorder, fused_conv
from gpubench.backends.cuda.cudnn_fused import FusedConvGraph, Lay, describe
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout, conv_shape
from gpubench.ops.epilogue import Epilogue, Fused, Scaling
from gpubench.results import Details


class Names:
    """An enum of the frontend's, by attribute: its members are their names."""

    def __getattr__(self, name):
        return name


class FakeTensor:
    def __init__(self, log, **kw):
        self.log, self.kw = log, kw

    def __getattr__(self, name):
        if not name.startswith("set_"):
            raise AttributeError(name)

        def setter(*args):
            self.kw[name[4:]] = args if len(args) > 1 else args[0]
            return self
        return setter


class FakeGraph:
    """The C++ graph's surface fused graphs use; `refuse` makes validate() raise, as cuDNN does."""

    refuse = None
    refuse_reordered = None  # validate() raises this where a tensor is declared reordered (an H200's cuDNN did)
    engines = ("eng7_k2=1", "eng0", "eng7_k2=1", "eng31")  # a name twice: built once
    # Each plan's notes, numerical and behavioural alike; the engine appended past the heuristics' list (eng12)
    # rounds its inputs to TF32, as an H200's cuDNN had a plan do in an fp32 graph
    notes = {"eng12": ("TENSOR_CORE",)}

    def __init__(self, **kw):
        self.kw, self.ops, self.tensors, self.calls = kw, [], [], []
        self.plans, self.barred = [], set()

    def tensor(self, **kw):
        t = FakeTensor(self.ops, **kw)
        self.tensors.append(t)
        return t

    def _node(self, op, *inputs, **kw):
        self.ops.append((op, tuple(t.kw.get("name") for t in inputs), kw.get("compute_data_type")))
        out = FakeTensor(self.ops, name=f"{op}_out")
        self.tensors.append(out)
        return out

    def conv_fprop(self, x, w, **kw):
        self.conv_kw = kw
        return self._node("conv_fprop", x, w, **kw)

    def __getattr__(self, op):
        if op in ("scale", "bias", "add", "relu", "identity"):
            return lambda *inputs, **kw: self._node(op, *inputs, **kw)
        raise AttributeError(op)

    def validate(self):
        if self.refuse:
            raise RuntimeError(self.refuse + "\nmore detail")
        if self.refuse_reordered and any("reordering_type" in t.kw for t in self.tensors):
            raise RuntimeError(self.refuse_reordered)

    def build_operation_graph(self):
        pass

    def _deselect(self, notes):
        """As plans.h filter_*_notes: only the plans held now are marked."""
        self.barred |= {i for i, name in enumerate(self.plans) if set(self.notes.get(name, ())) & set(notes)}

    def deselect_behavior_notes(self, notes):
        self.calls.append(("deselect_behavior_notes", tuple(notes)))
        self._deselect(notes)

    def deselect_numeric_notes(self, notes):
        self.calls.append(("deselect_numeric_notes", tuple(notes)))
        self._deselect(notes)

    def create_execution_plans(self, modes):
        if modes == ["A"]:  # FALLBACK adds nothing new here
            self.plans += list(self.engines)

    def get_execution_plan_count(self):
        return len(self.plans)

    def get_engine_and_knobs_at_index(self, i):
        return (int(self.plans[i].split("_")[0][3:]), {})

    def get_engine_count(self):
        return 40

    def create_execution_plan(self, engine_id, knobs):
        if engine_id == 12:  # one more engine takes it, at its default knobs
            self.plans.append("eng12")
        else:
            raise RuntimeError("not supported")

    def get_plan_name_at_index(self, i):
        return self.plans[i]

    def build_plan_at_index(self, i):
        if i in self.barred:
            raise RuntimeError("[cudnn_frontend] Error: Deselecting execution plan at position " + str(i))
        if self.plans[i] == "eng31":
            raise RuntimeError("eng31 declined")

    def get_workspace_size_plan_at_index(self, i):
        return 1024 * i


@pytest.fixture
def frontend(monkeypatch):
    """A stand-in `cudnn` (its _pybind_module) and CuPy, so FusedConvGraph builds here as it would on a GPU."""
    graphs = []

    def backend_graph(**kw):
        graphs.append(FakeGraph(**kw))
        return graphs[-1]

    module = types.SimpleNamespace(backend_graph=backend_graph, data_type=Names(), behavior_note=Names(),
                                   numerical_note=Names(), heur_mode=Names(), tensor_reordering=Names())
    cudnn = types.SimpleNamespace(_pybind_module=module, set_stream=lambda *a: None)
    monkeypatch.setattr(cudnn_fused, "_import_cudnn", lambda: cudnn)
    monkeypatch.setattr(cudnn_fused, "_import_cupy", lambda: types.SimpleNamespace())
    monkeypatch.setattr(cudnn_fused, "_handle", lambda cudnn, cupy: types.SimpleNamespace(backend_handle=7))
    monkeypatch.setattr(cudnn_reorder, "library", lambda: "libcudnn")  # found: tests/test_cudnn_reorder.py
    FakeGraph.refuse = FakeGraph.refuse_reordered = None
    return graphs


def problem(dtype=DType.INT8_INT8, layout=ConvLayout.NCHW_VECT_C, fused=Fused(Epilogue.BIAS_RELU_ADD), **kw):
    shape = conv_shape(28, 1, batch=4, in_channels=64, out_channels=96, padding=1, dtype=dtype, layout=layout,
                       fused=fused, **kw)
    return fused_conv.fused_problem(shape)


def test_the_graph_is_the_documents_epilogue_relu_last(frontend):
    graph = FusedConvGraph(problem())
    g = frontend[0]
    assert [op for op, _, _ in g.ops] == ["conv_fprop", "scale", "bias", "add", "relu"]
    assert g.ops[0][2] == "INT32" and all(c == "FLOAT" for _, _, c in g.ops[1:])  # int8 sums in int32
    assert [inputs for _, inputs, _ in g.ops] == [("x", "w"), ("conv_fprop_out", "alpha"), ("scale_out", "bias"),
                                                  ("bias_out", "z"), ("add_out",)]
    y = g.tensors[-1].kw
    assert y["output"] is True and y["data_type"] == "INT8" and y["dim"] == [4, 3, 28, 28]
    assert g.kw["io_data_type"] == "INT8" and g.kw["intermediate_data_type"] == "FLOAT"
    assert g.conv_kw["pre_padding"] == [1, 1] and g.conv_kw["stride"] == [1, 1]
    assert set(graph.uids) == {"x", "w", "alpha", "bias", "z", "y"}


def test_32_channel_vectors_are_declared_as_cudnn_reads_them(frontend):
    FusedConvGraph(problem())
    by_name = {t.kw.get("name"): t.kw for t in frontend[0].tensors}
    x = by_name["x"]
    assert x["dim"] == [4, 2, 28, 28] and x["stride"] == [2 * 28 * 28, 28 * 28, 28, 1]  # in units of vectors
    assert x["vector_count_and_dimension"] == (32, 1) and by_name["w"]["dim"] == [96, 2, 3, 3]
    assert by_name["bias"]["dim"] == [1, 3, 1, 1] and by_name["bias"]["vector_count_and_dimension"] == (32, 1)
    assert by_name["z"]["data_type"] == "INT8" and frontend[0].tensors[-1].kw["vector_count_and_dimension"] == (32, 1)


def test_nhwc_is_channels_last_without_vectors(frontend):
    FusedConvGraph(problem(layout=ConvLayout.NHWC))
    x = {t.kw.get("name"): t.kw for t in frontend[0].tensors}["x"]
    assert x["dim"] == [4, 64, 28, 28] and x["stride"] == [28 * 28 * 64, 1, 28 * 64, 64]
    assert "vector_count_and_dimension" not in x


@pytest.mark.parametrize("dtype,out,nodes", [
    (DType.INT8, "INT32", ["conv_fprop", "identity"]),  # the bare accumulators, written by a pointwise node
    (DType.INT8_INT8, "INT8", ["conv_fprop", "scale"]),  # requantised: α's scale stays
    (DType.FP16, "HALF", ["conv_fprop"]),
])
def test_a_bare_convolution_has_only_what_its_output_needs(frontend, dtype, out, nodes):
    FusedConvGraph(problem(dtype, ConvLayout.NHWC, Fused()))
    assert [op for op, _, _ in frontend[0].ops] == nodes and frontend[0].tensors[-1].kw["data_type"] == out


def test_each_precision_keeps_its_own_arithmetic(frontend):
    FusedConvGraph(problem(DType.INT8, ConvLayout.NHWC))
    assert ("deselect_behavior_notes", ("REQUIRES_FILTER_INT8x32_REORDER", "REQUIRES_BIAS_INT8x32_REORDER")) in \
        frontend[0].calls  # arrays given as they lie: no plan that wants them reordered
    FusedConvGraph(problem(DType.FP32, ConvLayout.NHWC))
    assert ("deselect_numeric_notes", ("TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION")) in \
        frontend[1].calls  # fp32: no TF32, no inputs converted down, no narrower sums
    FusedConvGraph(problem(DType.BF16, ConvLayout.NHWC))
    assert ("deselect_numeric_notes", ("REDUCED_PRECISION_REDUCTION",)) in frontend[2].calls


def test_note_filters_reach_the_engines_appended_past_the_heuristics(frontend):
    """The backend marks only the plans it holds when a filter is set: an fp32 graph must not keep the TF32 engine
    appended after the heuristics' list, while a 16-bit graph, which allows tensor cores, keeps it."""
    fp32 = FusedConvGraph(problem(DType.FP32, ConvLayout.NHWC))
    assert "eng12" not in [p.engine for p in fp32.plans] and fp32.plans
    fp16 = FusedConvGraph(problem(DType.FP16, ConvLayout.NHWC))
    assert "eng12" in [p.engine for p in fp16.plans]


def test_factors_other_than_one_get_their_nodes():
    p = problem(DType.FP16, ConvLayout.NHWC, Fused(Epilogue.BIAS_RELU_ADD, gamma=-2.0))
    assert not p.scaled and p.gamma_node and describe(p).nodes[-2].inputs == ("z", "gamma")
    assert problem(DType.FP16, ConvLayout.NHWC, Fused(scaling=Scaling.CHANNEL)).scaled
    assert problem(DType.FP16, ConvLayout.NHWC, Fused(Epilogue.BIAS, beta=0.5)).scaled is False  # β: in the bias


def test_plans_are_cudnns_ranking_each_once_the_declined_left_out(frontend):
    graph = FusedConvGraph(problem())
    assert [p.engine for p in graph.plans] == ["eng7_k2=1", "eng0", "eng12"] and graph.heuristic.engine == "eng7_k2=1"
    assert [p.index for p in graph.plans] == [0, 1, 2] and graph.plans[2].workspace_bytes == 4 * 1024


def test_a_refused_graph_is_not_supported_in_one_line(frontend):
    FakeGraph.refuse = "CUDNN_STATUS_NOT_SUPPORTED: no fusion engine for this graph"
    with pytest.raises(cudnn_conv.CudnnNotSupported, match="cuDNN cannot build the graph int8→int8 NCHW_VECT_C N=4 "
                                                           "C=64 .* epilogue bias-relu-add: CUDNN_STATUS_NOT_SUP"):
        FusedConvGraph(problem())


def test_which_problems_take_the_fused_graph():
    plain = conv_shape(28, 1, batch=4, in_channels=64, out_channels=64, padding=1, dtype=DType.FP16,
                       layout=ConvLayout.NHWC)
    assert not fused_conv.fused_graph_needed(plain)  # the frontend's conv_fprop graph, as before
    for changed in (dict(dtype=DType.INT8), dict(fused=Fused(Epilogue.BIAS)), dict(layout=ConvLayout.NCHW_VECT_C)):
        assert fused_conv.fused_graph_needed(replace(plain, **changed))


def test_the_unfused_pass_reads_the_layouts_channel_as_the_reference_does():
    """epilogue_pass.cu's channel of element i in each layout, written out in Python against ConvLayout's own."""
    import numpy as np

    n, k, oh, ow = 2, 64, 3, 5
    channels = np.broadcast_to(np.arange(k).reshape(1, k, 1, 1), (n, k, oh, ow))
    for layout, code in fused_conv.PASS_LAYOUT.items():
        stored = layout.from_nchw(channels).ravel()
        plane = oh * ow
        i = np.arange(stored.size)
        if code == 1:
            want = i % k
        elif code == 2:
            want = ((i // (32 * plane)) % (k // 32)) * 32 + i % 32
        else:
            want = (i // plane) % k
        assert np.array_equal(stored, want), layout
    assert fused_conv.LAYS[ConvLayout.NCHW_VECT_C] == Lay.VECTORS


def test_a_bare_int32_output_is_written_by_an_exact_identity(frontend):
    graph = FusedConvGraph(problem(DType.INT8, ConvLayout.NHWC, Fused()))
    g = frontend[0]
    assert [(op, compute) for op, _, compute in g.ops] == [("conv_fprop", "INT32"), ("identity", "INT32")]
    conv_out, y = (t.kw for t in g.tensors if t.kw.get("name") in ("conv_fprop_out", "identity_out"))
    assert conv_out["data_type"] == "INT32"  # the sums reach the identity as int32, not through FLOAT
    assert y["output"] is True and y["data_type"] == "INT32" and graph.spec.nodes[-1].op == "identity"


def test_a_float_identity_only_where_every_int8_sum_is_a_float32():
    small = problem(DType.INT8, ConvLayout.NHWC, Fused())  # C·R·S = 64·9 = 576: |sum| ≤ 128²·576 < 2^24
    assert cudnn_fused.float_pass(small).pass_type == "FLOAT"
    assert [n.compute for n in describe(cudnn_fused.float_pass(small)).nodes] == ["INT32", "FLOAT"]
    wide = fused_conv.fused_problem(conv_shape(14, 1, batch=2, in_channels=256, out_channels=64, padding=1,
                                               dtype=DType.INT8, layout=ConvLayout.NHWC))
    assert cudnn_fused.float_pass(wide) is None  # 256·9 = 2304 > 1024: sums past 2^24 would round
    assert cudnn_fused.float_pass(problem(DType.INT8_INT8, ConvLayout.NHWC, Fused())) is None  # not int32 out


@pytest.mark.parametrize("dtype,fused", [
    (dtype, fused) for dtype in (DType.INT8, DType.INT8_INT8, DType.INT8_FP32)
    for fused in (Fused(), Fused(Epilogue.BIAS_RELU_ADD, gamma=-2.0), Fused(Epilogue.BIAS_RELU_ADD, gamma=2.0))
] + [(DType.INT8_INT8, Fused(Epilogue.BIAS_RELU_ADD, scaling=Scaling.CHANNEL))])
def test_vector_tensors_agree_with_every_node_between(frontend, dtype, fused):
    """In NCHW_VECT_C every tensor a node reads or writes has dims in vectors, [N, K/32, OH, OW] or a per-channel
    [1, K/32, 1, 1], so each pair broadcasts (the frontend infers conv_fprop's output as [N, K, OH, OW] itself)."""
    FusedConvGraph(problem(dtype, ConvLayout.NCHW_VECT_C, fused))
    g = frontend[0]
    y = (4, 3, 28, 28)
    for t in g.tensors:
        if t.kw.get("name", "").endswith("_out"):  # every node's output, y last
            assert tuple(t.kw["dim"]) == y and t.kw["vector_count_and_dimension"] == (32, 1), t.kw["name"]
            assert tuple(t.kw["stride"]) == (3 * 28 * 28, 28 * 28, 28, 1)
    for name in ("alpha", "bias", "z"):
        t = next((t.kw for t in g.tensors if t.kw.get("name") == name), None)
        if t is not None:
            assert t["vector_count_and_dimension"] == (32, 1)
            assert all(a in (1, b) for a, b in zip(t["dim"], y)), name  # broadcasts against y's dims


def test_nhwc_leaves_the_virtual_tensors_to_the_frontend(frontend):
    FusedConvGraph(problem(DType.INT8_INT8, ConvLayout.NHWC))
    assert all("dim" not in t.kw for t in frontend[0].tensors if t.kw.get("name") in ("conv_fprop_out", "bias_out"))


def test_fp32_with_an_epilogue_is_never_the_fused_graph():
    """fp32's fused graph is not yet verified with TF32's plans left out (fused_conv.py): the backend times the
    unfused sequence instead, and says why."""
    fp32 = problem(DType.FP32, ConvLayout.NHWC, Fused(Epilogue.BIAS))
    assert fp32.tensor_cores is False and len(describe(fp32).nodes) > 1
    assert "TF32" in fused_conv.FP32_UNFUSED


def test_an_int8_refusal_says_which_reordered_plans_were_left_out(frontend):
    FakeGraph.refuse = "No valid engine configs"
    with pytest.raises(cudnn_conv.CudnnNotSupported, match="No valid engine configs .*INT8x32 filter or bias reorder"):
        FusedConvGraph(problem(DType.INT8, ConvLayout.NHWC, Fused()))
    with pytest.raises(cudnn_conv.CudnnNotSupported, match=r"No valid engine configs \(filters reordered\)$"):
        FusedConvGraph(problem(DType.INT8, ConvLayout.NCHW_VECT_C, Fused()))
    with pytest.raises(cudnn_conv.CudnnNotSupported, match="filters reordered; plans that need cuDNN's INT8x32 bias"):
        FusedConvGraph(problem(DType.INT8_INT8, ConvLayout.NCHW_VECT_C))


@pytest.mark.parametrize("dtype", [DType.INT8, DType.INT8_INT8, DType.INT8_FP32])
def test_vector_int8_filters_are_declared_reordered_and_their_plans_kept(frontend, dtype):
    """NCHW_VECT_C int8: w declared with reordering INT8x32 (the frontend's run_imma sample), no other tensor; the
    filter-reorder plans stay; the bias-reorder plans go only where the graph has a per-channel term."""
    FusedConvGraph(problem(dtype, ConvLayout.NCHW_VECT_C, Fused()))
    FusedConvGraph(problem(dtype, ConvLayout.NCHW_VECT_C, Fused(Epilogue.BIAS_RELU_ADD)))
    for g in frontend:
        by_name = {t.kw.get("name"): t.kw for t in g.tensors}
        assert by_name["w"]["reordering_type"] == "INT8x32"
        assert all("reordering_type" not in t for name, t in by_name.items() if name != "w")
        notes = [n for call, ns in g.calls if call == "deselect_behavior_notes" for n in ns]
        assert "REQUIRES_FILTER_INT8x32_REORDER" not in notes
        per_channel = "alpha" in by_name or "bias" in by_name
        assert ("REQUIRES_BIAS_INT8x32_REORDER" in notes) == per_channel
    assert "bias" in {t.kw.get("name") for t in frontend[1].tensors}  # the second graph has one: its notes went


def test_vector_int8_refused_as_declared_reordered_is_planned_with_w_as_it_lies(frontend):
    """Where cuDNN has no engine for w declared INT8x32 (an H200's, frontend 1.32), the graph is built again with w
    declared as it lies: its plans that ask for the filters reordered stay, read the reordered copy, and the engine's
    text says how w was declared."""
    FakeGraph.refuse_reordered = "No valid engine configs for __"
    graph = FusedConvGraph(problem(DType.INT8, ConvLayout.NCHW_VECT_C, Fused()))
    assert len(frontend) == 2 and not graph.problem.declare_reordered and graph.problem.reorder_filters
    assert all("reordering_type" not in t.kw for t in frontend[1].tensors)
    notes = [n for call, ns in frontend[1].calls if call == "deselect_behavior_notes" for n in ns]
    assert "REQUIRES_FILTER_INT8x32_REORDER" not in notes and graph.plans
    engine = fused_conv.reordered(graph, Details(engine="eng7", plans=3)).engine
    assert engine.endswith(f"{cudnn_reorder.REORDERED}, w declared as it lies")


def test_a_vector_int8_refusal_gives_both_declarations_reasons(frontend):
    FakeGraph.refuse = "No valid engine configs"
    with pytest.raises(cudnn_conv.CudnnNotSupported, match="; with w declared as it lies: cuDNN cannot build"):
        FusedConvGraph(problem(DType.INT8, ConvLayout.NCHW_VECT_C, Fused()))
    assert len(frontend) == 2


@pytest.mark.parametrize("dtype,layout", [(DType.INT8, ConvLayout.NHWC), (DType.INT8_INT8, ConvLayout.NHWC),
                                          (DType.FP16, ConvLayout.NHWC), (DType.FP16, ConvLayout.NCHW_VECT_C)])
def test_other_problems_never_reorder(frontend, monkeypatch, dtype, layout):
    monkeypatch.setattr(cudnn_reorder, "library", lambda: pytest.fail("no reorder outside NCHW_VECT_C int8"))
    graph = FusedConvGraph(problem(dtype, layout, Fused(Epilogue.BIAS)))
    w = object()
    assert not graph.problem.reorder_filters and graph.filters(w) is w
    assert all("reordering_type" not in t.kw for t in frontend[0].tensors)
    assert fused_conv.reordered(graph, Details(engine="eng7", plans=3)).engine == "eng7"


def test_vector_int8_binds_a_reordered_copy_and_says_so(frontend, monkeypatch):
    made = []

    def reorder(cupy, w, shape, lib):
        made.append((w, shape, lib))
        return "reordered"

    monkeypatch.setattr(cudnn_reorder, "reorder_filters", reorder)
    graph = FusedConvGraph(problem())
    assert graph.filters("w") == "reordered"
    assert made == [("w", cudnn_reorder.FilterShape(96, 64, 3, 3), "libcudnn")]  # K, C (logical), R, S
    details = fused_conv.reordered(graph, Details(engine="eng7", plans=3))
    assert details.engine == f"eng7; {cudnn_reorder.REORDERED}" and details.plans == 3


def test_vector_int8_without_the_reorder_call_is_refused_before_any_graph(frontend, monkeypatch):
    def missing():
        raise cudnn_reorder.ReorderUnavailable("cuDNN's INT8x32 filter reorder is unavailable: libcudnn.so.9 does "
                                               "not export cudnnReorderFilterAndBias")

    monkeypatch.setattr(cudnn_reorder, "library", missing)
    with pytest.raises(cudnn_reorder.ReorderUnavailable, match="^cuDNN's INT8x32 filter reorder is unavailable"):
        FusedConvGraph(problem())
    assert frontend == []
