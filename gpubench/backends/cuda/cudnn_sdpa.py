"""cuDNN's scaled dot-product attention (forward), the attention baseline, through the cuDNN frontend's graph API.

One problem (Q, O of [B, H, S, D] and K, V of [B, H_kv, S, D], each head's rows contiguous; attn_scale 1/√D;
causal with the diagonal at the top left) becomes one `sdpa` graph (fp16, bf16) or `sdpa_fp8` graph (e4m3 in, with
descale factors for Q, K and V, a scale and descale for P of 448 and 1/448, as gpubench's error model assumes, and
O in bf16: cuDNN refuses that where it has no such engine, and the point is skipped with its words). Every plan
cuDNN's heuristics offer is built once, untimed; `run` launches one on CuPy's current stream with bare device
pointers. Grouped-query heads are K and V tensors of H_kv heads (cuDNN takes MHA, MQA and GQA alike).

The frontend's Python API has spelt "no stats" and the causal mask two ways over its versions (generate_stats or
is_inference; use_causal_mask or a diagonal band): :func:`_attention` tries the spellings in turn. The import,
handle, plan-naming and fast-execution helpers are cudnn_conv.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpubench.backends.cuda.cudnn_conv import (CudnnNotSupported, _fast_execute, _handle, _import_cudnn,
                                               _import_cupy, _one_line, _plan_names)

P_SCALE = 448.0  # fp8: P is scaled to e4m3's largest value before its rounding (scale_s), and back (descale_s)
SCALARS = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")  # fp8's float32 inputs
AMAXES = ("amax_s", "amax_o")  # fp8's float32 outputs (the largest |P| and |O|; unused here)


@dataclass(frozen=True)
class SdpaPlan:
    index: int  # rank among the plans that build: 0 is the heuristic's first
    engine: str
    workspace_bytes: int


def _attention(fn, causal: bool, **kw):
    """fn(**kw) with "no stats" and the causal mask in the first spelling this frontend takes."""
    masks = ({"use_causal_mask": True}, {"diagonal_band_right_bound": 0}) if causal else ({},)
    last = None
    for stats in ({"generate_stats": False}, {"is_inference": True}):
        for mask in masks:
            try:
                return fn(**kw, **stats, **mask)
            except TypeError as e:  # pybind's "incompatible function arguments": another version's keywords
                last = e
    raise last


class CudnnSdpaGraph:
    """SDPA forward for one problem, its plans built; `run(plan, pointers)` with device pointers by tensor name
    (Q, K, V, O, and fp8's SCALARS and AMAXES)."""

    def __init__(self, b: int, h: int, hkv: int, s: int, d: int, causal: bool, io_type: str, out_type: str,
                 fp8: bool = False):
        self._cupy = cupy = _import_cupy()
        self._cudnn = cudnn = _import_cudnn()
        self._h = _handle(cudnn, cupy)
        what = f"sdpa {io_type.lower()} B={b} H={h}/{hkv} S={s} D={d}{' causal' if causal else ''}"
        try:
            self._g, self._uids = self._make_graph(b, h, hkv, s, d, causal, io_type, out_type, fp8)
            names = _plan_names(self._g)
        except Exception as exc:  # noqa: BLE001 - the frontend's refusal, whatever raised it
            raise CudnnNotSupported(f"cuDNN cannot plan {what}: {_one_line(exc)}") from None
        self.plans: list[SdpaPlan] = []
        self._where: list[tuple] = []  # per plan: its index in the ranked list, the fast path, the backend index
        failures = []
        for i, name in enumerate(names):
            if name is None or any(p.engine == name for p in self.plans):
                continue
            try:
                self._g.build_plan_at_index(i)
                ws = int(self._g.get_workspace_size_plan_at_index(i))
            except Exception as exc:  # noqa: BLE001 - cuDNN declined this engine
                failures.append(f"{name}: {_one_line(exc)}")
                continue
            self.plans.append(SdpaPlan(len(self.plans), name, ws))
            self._where.append((i, _fast_execute(self._g), self._g.plans[i].cpp_index))
        if not self.plans:
            raise CudnnNotSupported(f"cuDNN has no plan for {what} ({failures[0] if failures else 'no engines'})")
        self._workspaces: dict[int, object] = {}

    def _make_graph(self, b, h, hkv, s, d, causal, io_type, out_type, fp8):
        cudnn = self._cudnn
        f32, io, out = cudnn.data_type.FLOAT, getattr(cudnn.data_type, io_type), getattr(cudnn.data_type, out_type)
        g = cudnn.pygraph(name="gpubench_sdpa", io_data_type=io, intermediate_data_type=f32, compute_data_type=f32,
                          handle=self._h)

        def bhsd(name, heads):
            return g.tensor(name=name, dim=[b, heads, s, d], stride=[heads * s * d, s * d, d, 1], data_type=io)

        def scalar(name):
            return g.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)

        q, k, v = bhsd("Q", h), bhsd("K", hkv), bhsd("V", hkv)
        tensors = {"Q": q, "K": k, "V": v}
        if fp8:
            scalars = {name: scalar(name) for name in SCALARS}
            o, _, *amaxes = _attention(g.sdpa_fp8, causal, q=q, k=k, v=v, attn_scale=1.0 / math.sqrt(d), name="sdpa",
                                       **scalars)
            for name, t in zip(AMAXES, amaxes):
                t.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
                tensors[name] = t
            tensors.update(scalars)
        else:
            o, _ = _attention(g.sdpa, causal, q=q, k=k, v=v, attn_scale=1.0 / math.sqrt(d), name="sdpa")
        o.set_output(True).set_dim([b, h, s, d]).set_stride([h * s * d, s * d, d, 1]).set_data_type(out)
        tensors["O"] = o
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        return g, {name: t.get_uid() for name, t in tensors.items()}

    def run(self, plan: SdpaPlan, pointers: dict[str, int]) -> None:
        """Launch `plan` on CuPy's current stream; its workspace is allocated once (cupy's OutOfMemoryError goes
        up)."""
        i, fast, cpp_index = self._where[plan.index]
        ws = self._workspaces.get(plan.index)
        if ws is None and plan.workspace_bytes > 0:
            ws = self._workspaces[plan.index] = self._cupy.empty(plan.workspace_bytes, dtype=self._cupy.uint8)
        self._cudnn.set_stream(self._h, self._cupy.cuda.get_current_stream().ptr)
        pack = {uid: pointers[name] for name, uid in self._uids.items()}
        if fast is not None:
            fast(pack, 0 if ws is None else ws.data.ptr, cpp_index, self._h.backend_handle, None, None, None)
        else:
            self._g.execute_plan_at_index(pack, None if ws is None else ws.data.ptr, index=i, handle=self._h)

    def release_workspaces(self) -> None:
        self._workspaces.clear()
