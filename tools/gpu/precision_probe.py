"""The vendor libraries in every precision, measured: what they take, how fast, and how exact.

    python3 tools/gpu/precision_probe.py [out.json]

(a) cuBLAS GEMM in fp16, bf16 and tf32 (fp32 storage) in layouts nn/nt/tn, fp32 accumulation; (b) cuBLASLt
FP8 e4m3 × e4m3 with per-tensor scales, bf16 out, and int8 × int8 → int32, in every layout (Hopper takes only
`nt`); (c) cuDNN's forward convolution in fp16 and bf16, NCHW and NHWC, fp32 compute, every plan timed;
(d) the tensor-core ceilings at 8192³. Inputs are uniform in [-1, 1) rounded to the dtype on the host (ml_dtypes;
CuPy has no bfloat16/fp8, so those live on the device as raw uint16/uint8); every output is poisoned with NaN
and checked against a float64 product of the *rounded* inputs: rel_err = ‖out − ref‖/‖ref‖, printed beside
rel_err / u of the output format (≈ 0.42 for a correctly rounded fp32-accumulated result). Times are medians of
CUDA events around single calls, after warm-up, without an L2 flush (every timed size is far past L2).
"""

from __future__ import annotations

import json
import sys
import time

import cupy as cp
import ml_dtypes
import numpy as np

from gpubench.backends.cuda import blas
from gpubench.backends.cuda.cudnn_conv import CudnnConvGraph, CudnnUnavailable, cudnn_version
from events import median_ms  # tools/gpu/events.py

BF16, FP8 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn
# name: (host storage, device dtype (raw where CuPy lacks it), output host type, output device dtype, u of output)
TYPES = {
    "tf32": (np.float32, cp.float32, np.float32, cp.float32, 2.0 ** -24),
    "fp16": (np.float16, cp.float16, np.float16, cp.float16, 2.0 ** -11),
    "bf16": (BF16, cp.uint16, BF16, cp.uint16, 2.0 ** -8),
    "fp8": (FP8, cp.uint8, BF16, cp.uint16, 2.0 ** -8),
    "int8": (np.int8, cp.int8, np.int32, cp.int32, 0.0),
}
CODES = {
    "tf32": blas.BlasTypes(blas.CUDA_R_32F, blas.CUDA_R_32F, blas.COMPUTE_32F_FAST_TF32, blas.CUDA_R_32F),
    "fp16": blas.BlasTypes(blas.CUDA_R_16F, blas.CUDA_R_16F, blas.COMPUTE_32F, blas.CUDA_R_32F),
    "bf16": blas.BlasTypes(blas.CUDA_R_16BF, blas.CUDA_R_16BF, blas.COMPUTE_32F, blas.CUDA_R_32F),
    "fp8": blas.BlasTypes(blas.CUDA_R_8F_E4M3, blas.CUDA_R_16BF, blas.COMPUTE_32F, blas.CUDA_R_32F),
    "int8": blas.BlasTypes(blas.CUDA_R_8I, blas.CUDA_R_32I, blas.COMPUTE_32I, blas.CUDA_R_32I),
}
LAYOUTS = ("nn", "nt", "tn")
RAGGED = [(127, 77, 33), (1000, 1001, 999), (1024, 1000, 1024), (1000, 1024, 1024), (1024, 1024, 1000),
          (1040, 1008, 1056), (1004, 1012, 1020)]
TIMED = [4096, 8192]
rows: list[dict] = []


def nan_of(host_type):
    return np.array([np.nan], host_type)


def draw(rng, shape, name):
    """Host array in the dtype, its scale (fp8) and its float64 values."""
    host = TYPES[name][0]
    if name == "int8":
        x = rng.integers(-127, 128, size=shape, dtype=np.int8)
        return x, None, x.astype(np.float64)
    x = rng.random(shape, dtype=np.float32) * 2 - 1
    if name != "fp8":
        stored = x.astype(host)
        return stored, None, stored.astype(np.float64)
    scale = float(np.abs(x).max()) / float(ml_dtypes.finfo(FP8).max)
    stored = (x / np.float32(scale)).astype(FP8)
    return stored, scale, stored.astype(np.float64) * scale


def upload(host, name):
    return cp.asarray(host.view(TYPES[name][1]) if host.dtype != TYPES[name][1] else host)


def poison(name):
    """NaN in the output's device storage; int32 has none: a value no product of ±127 reaches instead."""
    if name == "int8":
        return np.int32(-(2 ** 31))
    return nan_of(TYPES[name][2]).view(TYPES[name][3])[0]


def poisoned(shape, name):
    return cp.full(shape, poison(name), TYPES[name][3])


def download(out, name):
    return cp.asnumpy(out).view(TYPES[name][2]).astype(np.float64)


def rel_err(out, ref64):
    diff = out - ref64
    return float(np.linalg.norm(diff) / np.linalg.norm(ref64)) if np.isfinite(out).all() else float("nan")


def gemm_case(lib, name, layout, m, n, k, timed):
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a_t, b_t = layout[0] == "t", layout[1] == "t"
    a_host, a_scale, a64 = draw(rng, (k, m) if a_t else (m, k), name)
    b_host, b_scale, b64 = draw(rng, (n, k) if b_t else (k, n), name)
    a, b = upload(a_host, name), upload(b_host, name)
    c = poisoned((m, n), name)
    row = {"lib": lib, "dtype": name, "layout": layout, "m": m, "n": n, "k": k}
    try:
        if lib == "cublas":
            run = blas.cublas_gemm(cp, m, n, k, a.data.ptr, a_t, b.data.ptr, b_t, c.data.ptr, CODES[name])
        else:
            scales = None
            if a_scale is not None:  # one allocation each (a pointer 4 bytes into one array was refused)
                held = [cp.asarray(np.array([v], np.float32)) for v in (a_scale, b_scale)]
                scales = tuple(x.data.ptr for x in held)
            mm = blas.LtMatmul(cp, m, n, k, a_t, b_t, CODES[name], scales)
            row["workspace"] = mm.workspace_bytes
            run = lambda: mm.run(a.data.ptr, b.data.ptr, c.data.ptr)  # noqa: E731
        run()
        cp.cuda.runtime.deviceSynchronize()
    except Exception as e:  # a refusal is a finding: record the library's words
        row["refused"] = " ".join(str(e).split())[:160]
        rows.append(row)
        print(f"{lib:7} {name:5} {layout} {m}x{n}x{k}: refused: {row['refused']}", flush=True)
        return
    ref = (cp.asarray(a64.T if a_t else a64) @ cp.asarray(b64.T if b_t else b64)).get()
    out = download(c, name)
    row["rel_err"] = rel_err(out, ref)
    u = TYPES[name][4]
    row["err_over_u"] = row["rel_err"] / u if u else None
    if timed:
        ms = median_ms(run)
        row["ms"], row["tflops"] = ms, 2 * m * n * k / ms / 1e9
    rows.append(row)
    extra = f" {row['tflops']:7.1f} TFLOP/s" if timed else ""
    ratio = f" ({row['err_over_u']:.2f} u)" if u else ""
    print(f"{lib:7} {name:5} {layout} {m}x{n}x{k}: rel_err {row['rel_err']:.2e}{ratio}{extra}", flush=True)


def conv_reference(x64, w64, stride, pad):
    """float64 cross-correlation (NCHW) on the GPU: a sum over taps of strided slices."""
    (n, _, h, wd), (k, _, r, s) = x64.shape, w64.shape
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    xp = cp.pad(x64, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = cp.zeros((n, k, oh, ow), cp.float64)
    for i in range(r):
        for j in range(s):
            tap = xp[:, :, i: i + stride * (oh - 1) + 1: stride, j: j + stride * (ow - 1) + 1: stride]
            out += cp.einsum("nchw,kc->nkhw", tap, w64[:, :, i, j])
    return out


def conv_case(name, nhwc, n, c, hw, k, rs, stride, pad, timed):
    io = {"fp16": "HALF", "bf16": "BFLOAT16"}[name]
    row = {"lib": "cudnn", "dtype": name, "layout": "nhwc" if nhwc else "nchw", "n": n, "c": c, "hw": hw, "k": k,
           "rs": rs}
    t0 = time.perf_counter()
    try:
        g = CudnnConvGraph(n, c, hw, hw, k, rs, rs, stride, pad, io_type=io, channels_last=nhwc)
    except CudnnUnavailable as e:
        row["refused"] = str(e)
        rows.append(row)
        print(f"cudnn {name} {row['layout']} {n},{c},{hw},{k}: refused: {e}", flush=True)
        return
    row["build_s"] = time.perf_counter() - t0
    rng = np.random.default_rng(n + c + k)
    xs, ws, ys = g.shapes
    x_host, _, x64 = draw(rng, xs, name)  # logical NCHW; stored in the graph's layout
    w_host, _, w64 = draw(rng, ws, name)
    to_store = (lambda t: np.ascontiguousarray(t.transpose(0, 2, 3, 1))) if nhwc else (lambda t: t)
    x, w = upload(to_store(x_host), name), upload(to_store(w_host), name)
    y = poisoned(g.array_shapes[2], name)
    ref = conv_reference(cp.asarray(x64), cp.asarray(w64), stride, pad)
    if nhwc:
        ref = ref.transpose(0, 2, 3, 1)
    ref = cp.asnumpy(ref)
    flops = 2 * n * k * ys[2] * ys[3] * c * rs * rs
    plans = []
    for plan in g.plans:
        y.fill(poison(name))
        try:
            g.run(plan, x, w, y)
            cp.cuda.runtime.deviceSynchronize()
        except Exception as e:
            plans.append({"engine": plan.engine, "failed": str(e)[:100]})
            continue
        entry = {"engine": plan.engine, "tc": plan.tensor_cores, "ws": plan.workspace_bytes,
                 "rel_err": rel_err(download(y, name), ref)}
        if timed:
            entry["ms"] = median_ms(lambda plan=plan: g.run(plan, x, w, y), reps=10, warmup=2)
            entry["tflops"] = flops / entry["ms"] / 1e9
        plans.append(entry)
    g.release_workspaces()
    ok = [p for p in plans if "rel_err" in p]
    row["plans"] = plans
    row["heuristic"] = g.heuristic.engine
    row["worst_rel_err"] = max((p["rel_err"] for p in ok), default=None)
    row["err_over_u_worst"] = row["worst_rel_err"] / TYPES[name][4] if ok else None
    if timed and ok:
        best = min(ok, key=lambda p: p["ms"])
        row.update(best_engine=best["engine"], best_tc=best["tc"], ms=best["ms"], tflops=best["tflops"],
                   heuristic_tflops=next(p.get("tflops") for p in plans if p["engine"] == g.heuristic.engine))
    rows.append(row)
    print(f"cudnn {name} {row['layout']} N={n} C={c} {hw}x{hw} K={k} {rs}x{rs}: {len(ok)}/{len(plans)} plans ran, "
          f"worst rel_err {row['worst_rel_err']:.2e} ({row['err_over_u_worst']:.2f} u)"
          + (f", best {row['tflops']:.0f} TFLOP/s ({row['best_engine']}, tc={row['best_tc']}), heuristic "
             f"{row['heuristic_tflops']:.0f}" if timed and ok else "") + f", build {row['build_s']:.1f} s", flush=True)


def safe(case, *args):
    """One case; a crash in it is printed and recorded, and the probe goes on."""
    try:
        case(*args)
    except Exception as e:
        rows.append({"case": case.__name__, "args": list(map(str, args)), "crashed": repr(e)[:300]})
        print(f"{case.__name__}{args}: CRASHED {e!r}"[:400], flush=True)


def main(path):
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    meta = {"gpu": props["name"].decode(), "cc": f"{props['major']}.{props['minor']}", "cudnn": cudnn_version(),
            "cublasLt": blas.lt_version(), "cupy": cp.__version__}
    print(meta, flush=True)
    for name in ("fp16", "bf16", "tf32"):
        for layout in LAYOUTS:
            for m, n, k in RAGGED[:2] + RAGGED[-1:]:
                safe(gemm_case, "cublas", name, layout, m, n, k, False)
            for s in TIMED:
                safe(gemm_case, "cublas", name, layout, s, s, s, True)
    for name in ("fp8", "int8"):
        for layout in LAYOUTS:
            for m, n, k in RAGGED:
                safe(gemm_case, "cublasLt", name, layout, m, n, k, False)
            for s in TIMED:
                safe(gemm_case, "cublasLt", name, layout, s, s, s, True)
    for name in ("fp16", "bf16"):
        for nhwc in (True, False):
            safe(conv_case, name, nhwc, 3, 13, 17, 7, 3, 1, 1, False)  # ragged: channels not multiples of 8
            safe(conv_case, name, nhwc, 2, 16, 19, 24, 3, 2, 1, False)
            safe(conv_case, name, nhwc, 128, 64, 56, 64, 3, 1, 1, True)  # ResNet-50 conv2_x 3×3
            safe(conv_case, name, nhwc, 128, 256, 14, 256, 3, 1, 1, True)  # conv4_x 3×3
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "precision_probe.json")
