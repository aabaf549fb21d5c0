"""cuDNN baseline for forward convolution, through the cuDNN frontend's Python graph API.

The frontend is the wheel ``nvidia-cudnn-frontend`` (import name ``cudnn``); the cuDNN 9 libraries must be
loadable beside it. One problem (cross-correlation, symmetric zero padding, no bias; float32, half or bfloat16 data
in NCHW or NHWC, always float32 compute) becomes one conv_fprop graph; every execution plan cuDNN offers for it is
built once, untimed, and ``run`` then launches one of them on CuPy arrays, asynchronously on CuPy's current
stream. CuPy has no bfloat16: such arrays are raw uint16 storage, which cuDNN reads by address alone.

What the code below relies on was read in the 1.32.0 wheel (paths inside its ``cudnn/`` folder or its
``include/`` headers) and run with cuDNN 9.19 on an H200 (the self-check at the bottom).
"""

from __future__ import annotations

from dataclasses import dataclass


class CudnnUnavailable(RuntimeError):
    """The cuDNN baseline cannot run here; the message is one line, for the user."""


class CudnnMissing(CudnnUnavailable):
    """A piece of the stack is not installed (CuPy, the frontend, libcudnn): the user must install it."""


class CudnnNotSupported(CudnnUnavailable):
    """cuDNN has no plan (or no graph) for this problem."""


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0][:200] if lines else type(exc).__name__)


def _import_cupy():
    try:
        import cupy
    except ImportError:
        raise CudnnMissing("CuPy not installed: pip install cupy-cuda13x") from None
    return cupy


def _import_cudnn():
    """The ``cudnn`` module with a loadable libcudnn, else CudnnUnavailable."""
    try:
        import cudnn
    except ModuleNotFoundError as exc:
        if exc.name == "cudnn":
            raise CudnnMissing("cuDNN frontend not installed: pip install nvidia-cudnn-frontend") from None
        raise CudnnUnavailable(f"cuDNN frontend failed to import: {_one_line(exc)}") from None
    except Exception as exc:  # wrong Python ABI, missing CUDA runtime, ...
        raise CudnnUnavailable(f"cuDNN frontend failed to import: {_one_line(exc)}") from None
    # `import cudnn` does not fail when libcudnn is missing (__init__.py:_dlopen_cudnn leaves it unloaded); the
    # first backend call then raises "Unable to find symbol cudnnGetVersion" (include/cudnn_frontend_shim.h
    # get_backend_version). backend_version is exported at __init__.py symbols_to_import.
    try:
        cudnn.backend_version()
    except Exception:
        raise CudnnMissing(
            "libcudnn not found: install cuDNN 9 (e.g. pip install nvidia-cudnn-cu13) or add it to LD_LIBRARY_PATH"
        ) from None
    return cudnn


def _backend_version_text(cudnn) -> str:
    try:
        return str(cudnn.backend_version_string())  # "9.19.0" on the H200 test machine
    except Exception:
        v = int(cudnn.backend_version())  # cuDNN 9 encodes major*10000 + minor*100 + patch
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


def cudnn_version() -> str | None:
    """'frontend X / backend Y' if the frontend imports and libcudnn loads, else None. Never raises."""
    try:
        cudnn = _import_cudnn()
        return f"frontend {cudnn.__version__} / backend {_backend_version_text(cudnn)}"
    except Exception:
        return None


_HANDLE = None  # one cudnn.Handle per process, made on the device current at first use


def _handle(cudnn, cupy):
    global _HANDLE
    if _HANDLE is None:
        try:
            cupy.cuda.Device().use()  # the CUDA runtime's primary context exists before cudnnCreate
            _HANDLE = cudnn.create_handle()  # __init__.py create_handle: returns a cudnn.Handle
        except Exception as exc:
            raise CudnnUnavailable(f"cannot create a cuDNN handle: {_one_line(exc)}") from None
    # __init__.py set_stream: a no-op when the stream is unchanged, so calling it per run() is cheap.
    cudnn.set_stream(_HANDLE, cupy.cuda.get_current_stream().ptr)
    return _HANDLE


@dataclass(frozen=True)
class CudnnPlan:
    index: int  # rank among the usable plans: 0 = the heuristic's (mode A) first choice that builds
    engine: str  # cuDNN's name for it: "eng<global id>" then "_k<knob type>=<choice>" per knob
    workspace_bytes: int
    tensor_cores: bool  # its numerical notes include TENSOR_CORE (TF32 math for FP32 data)


def _plan_names(g) -> list[str | None]:
    """cuDNN's name for each entry of g's ranked plan list; None for an entry that is not a backend engine
    (ids 0..9999 are cuDNN's, cudnn/engines/engine_ids.py; python engines, opt-in through
    CUDNN_FRONTEND_ENABLE_FROST_ENGINES, and the delegating entry, id -1, are not used here)."""
    return [g.get_plan_name_at_index(i) if 0 <= cfg.engine_id < 10_000 else None for i, cfg in enumerate(g.plans)]


def _fast_execute(g):
    """The lowered backend graph's own execute-by-index, or None.

    The public ``pygraph.execute_plan_at_index`` re-normalizes the variant pack in Python on every call: about
    30 us of host time per launch on an H200 host, against about 7 us for this call, which is the one it ends
    in for a backend plan (_pygraph.py _execute, last lines: ``self._lowered_graph._execute_plan_at_index(
    var_pack, ws_ptr, cpp_index, to_backend_handle(handle), override_uids, override_shapes, override_strides)``).
    A CUDA-event-timed single call counts that host time, so the baseline takes the short path. It is private
    frontend API: where it is missing, run() falls back to the public call.
    """
    fn = getattr(g.__dict__.get("_lowered_graph"), "_execute_plan_at_index", None)
    return fn if callable(fn) else None


# The element types cuDNN reads and writes (cudnn.data_type's names) and the CuPy dtype holding each.
IO_TYPES = {"FLOAT": "float32", "HALF": "float16", "BFLOAT16": "uint16"}


def _channels_last(dims) -> list[int]:
    """Strides of logical (N, C, H, W) dims stored as N, H, W, C."""
    n, c, h, w = dims
    return [h * w * c, 1, w * c, c]


def _packed(dims) -> list[int]:
    strides, acc = [], 1
    for d in reversed(dims):
        strides.insert(0, acc)
        acc *= d
    return strides


class CudnnConvGraph:
    """Forward convolution y = conv(x, w), cross-correlation, symmetric zero padding, no bias, FP32 compute;
    x, w and y of `io_type` (a key of IO_TYPES), NCHW or, with `channels_last`, NHWC (w as K, R, S, C). Built once
    per problem; graph build and plan search are not timed. Half and bfloat16 graphs leave out the plans noted
    REDUCED_PRECISION_REDUCTION (sums kept in the 16-bit type), so every plan accumulates in float32."""

    def __init__(self, n, c, h, w, k, r, s, stride: int, pad: int, allow_tf32: bool = False, io_type: str = "FLOAT",
                 channels_last: bool = False):
        self._cupy = cupy = _import_cupy()
        self._cudnn = cudnn = _import_cudnn()
        self._h = _handle(cudnn, cupy)
        self.io_type, self.channels_last = io_type, channels_last
        oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
        self.shapes = ((n, c, h, w), (k, c, r, s), (n, k, oh, ow))  # logical dims, cuDNN's order
        # The arrays' own shapes: channels innermost for NHWC.
        self.array_shapes = tuple((d[0], d[2], d[3], d[1]) for d in self.shapes) if channels_last else self.shapes
        self._strides = _channels_last if channels_last else _packed
        allow_tc = allow_tf32 or io_type != "FLOAT"  # 16-bit data: tensor cores are what the plans are for
        layout = " NHWC" if channels_last else ""
        what = f"{io_type.lower()}{layout} N={n} C={c} H={h} W={w} K={k} {r}x{s} stride {stride} pad {pad}"
        # A plan is either TENSOR_CORE or not, and the frontend's note filters bar plans per graph
        # (include/cudnn_frontend/plans.h filter_numeric_notes). So: one graph keeping the non-tensor-core
        # plans and, with TF32 allowed, a second keeping only the tensor-core ones. Every plan is built in
        # the one graph that allows it (a barred one fails fast in plans.h check_support_at_index) and its
        # graph says whether it uses tensor cores. The Python API exposes no per-plan numerical notes.
        try:
            graphs = [self._make_graph(False, stride, pad)] + ([self._make_graph(True, stride, pad)] if allow_tc else [])
            names = [_plan_names(g) for g, _ in graphs]
        except Exception as exc:
            raise CudnnNotSupported(f"cuDNN cannot plan conv {what}: {_one_line(exc)}") from None
        # Per CudnnPlan.index: (graph, its x/w/y uids, index in its ranked list, fast path, backend plan index).
        self._where: list[tuple] = []
        self.plans: list[CudnnPlan] = []
        failures: list[str] = []
        seen: set[str | None] = {None}
        # Rank order = the first graph's list: mode A's configs, then FALLBACK's, then engines neither listed.
        for name in names[0]:
            if name in seen:
                continue
            seen.add(name)
            for tc, ((g, uids), gnames) in enumerate(zip(graphs, names)):
                if name not in gnames:
                    continue
                i = gnames.index(name)
                try:
                    g.build_plan_at_index(i)  # _pygraph.py build_plan_at_index -> plans.h build_plan_at_index
                    ws = int(g.get_workspace_size_plan_at_index(i))
                except Exception as exc:  # barred by the note filter, or cuDNN declined: leave it out
                    failures.append(f"{name}: {_one_line(exc)}")
                    continue
                self.plans.append(CudnnPlan(len(self.plans), name, ws, bool(tc)))
                self._where.append((g, uids, i, _fast_execute(g), g.plans[i].cpp_index))
                break
        if not self.plans:
            kind = "" if allow_tc else " without tensor cores"
            first = next((f for f in failures if "Deselecting" not in f), failures[0] if failures else "no engines")
            raise CudnnNotSupported(f"cuDNN has no plan{kind} for conv {what} ({first})")
        self.heuristic = self.plans[0]
        self._workspaces: dict[int, object] = {}
        self._checked: tuple = (None, None, None)  # the arrays run() last validated

    def _make_graph(self, tensor_cores: bool, stride: int, pad: int):
        """One planned conv_fprop graph keeping only plans with (True) or without (False) TENSOR_CORE."""
        cudnn = self._cudnn
        f32, io = cudnn.data_type.FLOAT, getattr(cudnn.data_type, self.io_type)
        xs, ws, ys = self.shapes
        # _pygraph.py pygraph.__init__: name, io/intermediate/compute data types, handle (a cudnn.Handle).
        g = cudnn.pygraph(name="gpubench_conv", io_data_type=io, intermediate_data_type=f32,
                          compute_data_type=f32, handle=self._h)
        x = g.tensor(dim=list(xs), stride=self._strides(xs), data_type=io, name="x")  # _pygraph.py pygraph.tensor
        w = g.tensor(dim=list(ws), stride=self._strides(ws), data_type=io, name="w")
        # _pygraph.py _STRUCTURED_OPS["conv_fprop"]: ports image, weight; attrs pre/post_padding, stride,
        # dilation. The mode is left at its default, CROSS_CORRELATION (include/cudnn_frontend/
        # graph_properties.h Conv_fprop_attributes::math_mode); the self-check below would catch a flip.
        y = g.conv_fprop(x, w, pre_padding=[pad, pad], post_padding=[pad, pad], stride=[stride, stride],
                         dilation=[1, 1], compute_data_type=f32, name="conv")
        # Pin y to the layout asked for: left unset, the backend infers a channels-last y (seen on the H200: stride
        # [K*OH*OW, 1, OW*K, K]). A user-set dim/stride is pushed to it (_pygraph.py push_output_attrs).
        y.set_output(True).set_data_type(io).set_dim(list(ys)).set_stride(self._strides(ys))
        g.validate()
        g.build_operation_graph()
        notes = [cudnn.numerical_note.TENSOR_CORE]
        # _pygraph.py _filter_notes: recorded now, replayed on the backend once its plans exist.
        (g.select_numeric_notes if tensor_cores else g.deselect_numeric_notes)(notes)
        if self.io_type != "FLOAT":
            g.deselect_numeric_notes([cudnn.numerical_note.REDUCED_PRECISION_REDUCTION])
        # One query per mode, appended in this order (_pygraph.py _create_backend_plans); duplicates dropped.
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        # Engines that neither mode listed, at their default knobs, go last (_pygraph.py create_execution_plan
        # appends to the ranked list; get_engine_count reaches the lowered graph through pygraph.__getattr__).
        listed = {cfg.engine_id for cfg in g.plans}
        for engine_id in range(int(g.get_engine_count())):  # an int (81 for cuDNN 9.19 conv_fprop on H200)
            if engine_id not in listed:
                try:
                    g.create_execution_plan(engine_id, {})
                except Exception:  # engine does not support this graph
                    pass
        return g, (x.get_uid(), w.get_uid(), y.get_uid())

    def run(self, plan: CudnnPlan, x, w, y) -> None:
        """Execute `plan` once on C-contiguous cupy arrays x, w, y of `array_shapes` (NCHW: (N,C,H,W), (K,C,R,S),
        (N,K,OH,OW)) and IO_TYPES[io_type]'s dtype, asynchronously on the current CuPy stream. Allocates (and caches
        per plan) a uint8 workspace of the plan's size; cupy.cuda.memory.OutOfMemoryError from that allocation
        propagates."""
        if x is not self._checked[0] or w is not self._checked[1] or y is not self._checked[2]:
            kind = IO_TYPES[self.io_type]
            for a, shape in zip((x, w, y), self.array_shapes):  # checked once per new set of arrays (a few us)
                if a.shape != shape or a.dtype != kind or not a.flags.c_contiguous:
                    raise ValueError(f"expected a C-contiguous {kind} array of shape {shape}, got {a.dtype} {a.shape}")
            self._checked = (x, w, y)
        g, (ux, uw, uy), i, fast, cpp_index = self._where[plan.index]
        ws = self._workspaces.get(plan.index)
        if ws is None and plan.workspace_bytes > 0:
            ws = self._workspaces[plan.index] = self._cupy.empty(plan.workspace_bytes, dtype=self._cupy.uint8)
        self._cudnn.set_stream(self._h, self._cupy.cuda.get_current_stream().ptr)  # the plan runs on it
        # Bare device addresses keyed by uid, the backend's classic variant pack (_pygraph.py _native_var_pack).
        ptrs = {ux: x.data.ptr, uw: w.data.ptr, uy: y.data.ptr}
        if fast is not None:
            fast(ptrs, 0 if ws is None else ws.data.ptr, cpp_index, self._h.backend_handle, None, None, None)
        else:
            g.execute_plan_at_index(ptrs, None if ws is None else ws.data.ptr, index=i, handle=self._h)

    def release_workspaces(self) -> None:
        """Drop the cached workspaces (their memory goes back to CuPy's pool)."""
        self._workspaces.clear()
        self._checked = (None, None, None)


if __name__ == "__main__":  # self-check on a GPU machine: python -m gpubench.backends.cuda.cudnn_conv
    import sys
    import time

    import cupy as cp

    print("cuDNN:", cudnn_version())

    def reference(x, w, stride, pad):
        """float64 cross-correlation: sum over taps of strided slices of the padded input."""
        (n, _, h, wd), (k, _, r, s) = x.shape, w.shape
        oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
        xp = cp.pad(x.astype(cp.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        out = cp.zeros((n, k, oh, ow), cp.float64)
        for i in range(r):
            for j in range(s):
                tap = xp[:, :, i : i + stride * (oh - 1) + 1 : stride, j : j + stride * (ow - 1) + 1 : stride]
                out += cp.einsum("nchw,kc->nkhw", tap, w[:, :, i, j].astype(cp.float64))
        return out

    bad = 0
    for n, c, k, hw, rs, stride, pad in [(1, 3, 1, 1000, 3, 2, 1), (2, 64, 32, 56, 3, 1, 1)]:
        for tf32 in (False, True):
            conv = CudnnConvGraph(n, c, hw, hw, k, rs, rs, stride, pad, allow_tf32=tf32)
            x = cp.random.standard_normal(conv.shapes[0], dtype=cp.float32)
            w = cp.random.standard_normal(conv.shapes[1], dtype=cp.float32)
            y = cp.empty(conv.shapes[2], dtype=cp.float32)
            ref = reference(x, w, stride, pad)
            print(f"\nN={n} C={c} K={k} {hw}x{hw} {rs}x{rs} stride {stride} pad {pad} allow_tf32={tf32}")
            for plan in conv.plans:
                y.fill(cp.nan)
                try:
                    conv.run(plan, x, w, y)
                except cp.cuda.memory.OutOfMemoryError:
                    print(f"  {plan.index:3d} {plan.engine:40s} skipped: out of memory")
                    continue
                rel = float(cp.linalg.norm(y.astype(cp.float64) - ref) / cp.linalg.norm(ref))
                ok = rel <= (1e-2 if plan.tensor_cores else 1e-5)  # False for NaN
                bad += not ok
                print(f"  {plan.index:3d} {plan.engine:40s} ws={plan.workspace_bytes:>11d} "
                      f"tc={plan.tensor_cores!s:5s} rel={rel:.2e}{'' if ok else '  BAD'}")
            conv.release_workspaces()
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()  # host cost of one run() call (enqueue only)
            for _ in range(200):
                conv.run(conv.heuristic, x, w, y)
            t1 = time.perf_counter()
            cp.cuda.Device().synchronize()
            print(f"  {len(conv.plans)} plans; heuristic {conv.heuristic.engine}; "
                  f"host {1e6 * (t1 - t0) / 200:.1f} us per run()")
            conv.release_workspaces()
    print("\nFAILED plans:", bad if bad else "none")
    sys.exit(1 if bad else 0)
