"""INT8 convolution and the fused epilogue end to end on the CPU backend: the exact integer reference against a
definition by loops, the exact-match rule, and kernels with planted faults (a dropped bias, the ReLU before the
residual add, an int8 output that wraps instead of saturating, rounding half away from zero) failing while the honest
one passes exactly. The planted kernels are a project's Python functions, run as a user's variant would be."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from gpubench.backends.cpu import CpuBackend
from gpubench.core import dtypes
from gpubench.core.dtypes import DType
from gpubench.execution.tasks import verify
from gpubench.ops.conv import ConvLayout, conv_shape
from gpubench.ops.epilogue import Epilogue, Fused, Scaling
from gpubench.specs import files
from gpubench.specs.variant import NO_CONFIG

INT8S = (DType.INT8, DType.INT8_FP32, DType.INT8_INT8)


def naive(x, w, bias, z, scale, stride, pad, alpha, beta, gamma, fused, dtype):
    """The definition, one output at a time in Python integers (NCHW), then the epilogue and the output's rule."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, oh, ow))
    for b, f, i, j in itertools.product(range(n), range(k), range(oh), range(ow)):
        acc = 0
        for ch, a, e in itertools.product(range(c), range(r), range(s)):
            ih, iw = i * stride - pad + a, j * stride - pad + e
            if 0 <= ih < h and 0 <= iw < wd:
                acc += int(x[b, ch, ih, iw]) * int(w[f, ch, a, e])
        v = alpha * (scale[f] if scale is not None else 1) * acc
        v += beta * bias[f] if fused.epilogue.bias else 0
        v += gamma * z[b, f, i, j] if fused.epilogue.add else 0
        v = max(v, 0) if fused.epilogue.relu else v
        y[b, f, i, j] = min(max(round(v), -128), 127) if dtype == DType.INT8_INT8 else v  # round(): half to even
    return y


@pytest.mark.parametrize("dtype", INT8S)
@pytest.mark.parametrize("layout", [ConvLayout.NCHW, ConvLayout.NHWC, ConvLayout.NCHW_VECT_C])
@pytest.mark.parametrize("fused", [Fused(), Fused(Epilogue.BIAS_RELU_ADD), Fused(Epilogue.BIAS, scaling=Scaling.CHANNEL)])
def test_the_integer_reference_is_the_definition(dtype, layout, fused):
    if dtype == DType.INT8 and fused.scaling == Scaling.CHANNEL:
        fused = Fused(Epilogue.BIAS, alpha=2.0)
    shape = conv_shape(5, 2, batch=2, in_channels=32, out_channels=64, padding=1, dtype=dtype, layout=layout,
                       fused=fused)
    cpu = CpuBackend()
    inputs = cpu.inputs(shape, seed=5)
    ref = cpu.reference(shape, inputs)
    nchw = {name: layout.to_nchw(inputs[name]) if inputs[name].ndim > 1 else inputs[name] for name in inputs}
    alpha, beta, gamma = shape.fused.factors(dtype, shape.reduction)
    want = naive(nchw["x"], nchw["w"], nchw.get("bias"), nchw.get("z"), nchw.get("channel_scale"), 2, 1, alpha, beta,
                 gamma, fused, dtype)
    assert np.array_equal(layout.to_nchw(ref), want)
    assert ref.shape == shape.array_dims()["y"] and (layout != ConvLayout.NCHW_VECT_C or ref.shape[-1] == 32)


def test_vectors_of_32_channels_hold_the_channels_in_order():
    """NCHW_VECT_C: element [n, c // 32, h, w, c % 32] is channel c (cuDNN's INT8x32)."""
    x = np.arange(2 * 64 * 3 * 3).reshape(2, 64, 3, 3)
    stored = ConvLayout.NCHW_VECT_C.from_nchw(x)
    assert stored.shape == (2, 2, 3, 3, 32) and stored[1, 1, 2, 0, 5] == x[1, 37, 2, 0]
    assert np.array_equal(ConvLayout.NCHW_VECT_C.to_nchw(stored), x)
    with pytest.raises(Exception, match="multiples of 32, got C=3, K=1"):
        conv_shape(9, 1, dtype=DType.INT8, layout=ConvLayout.NCHW_VECT_C)


def test_an_int32_output_one_off_fails_the_exact_rule():
    shape = conv_shape(7, 1, batch=1, in_channels=8, out_channels=4, dtype=DType.INT8, layout=ConvLayout.NHWC)
    cpu = CpuBackend()
    inputs = cpu.inputs(shape, seed=1)
    ref = cpu.reference(shape, inputs)
    out = ref.astype(np.int32)
    assert cpu.rel_err(out, ref, shape) == 0.0 and dtypes.tolerance(DType.INT8, shape.reduction, 1) == 0.0
    out[0, 3, 2, 1] += 1
    assert cpu.rel_err(out, ref, shape) > 0.0


PLANTED = '''
import numpy as np
from gpubench.ops.conv_math import sliding


def _nchw(a, layout):
    if layout == "nhwc":
        return a.transpose(0, 3, 1, 2)
    n, cv, h, w, v = a.shape
    return a.transpose(0, 1, 4, 2, 3).reshape(n, cv * v, h, w)


def _stored(a, layout):
    if layout == "nhwc":
        return a.transpose(0, 2, 3, 1)
    n, c, h, w = a.shape
    return a.reshape(n, c // 32, 32, h, w).transpose(0, 1, 3, 4, 2)


def _terms(x, w, bias, z, stride, pad, alpha, beta, gamma, layout, integer):
    kind = "int64" if integer else "float32"
    acc = sliding(np, _nchw(x, layout).astype(kind), _nchw(w, layout).astype(kind), stride, pad, dtype=kind)
    acc = acc.astype(np.float64 if integer else np.float32)
    return alpha * acc, beta * bias.astype(acc.dtype)[None, :, None, None], gamma * _nchw(z, layout).astype(acc.dtype)


def _store(y, e, layout):
    if y.dtype == np.int8:
        e = np.clip(np.rint(e), -128, 127)
    y[...] = _stored(e, layout).astype(y.dtype)


def honest(x, w, bias, z, y, stride, pad, alpha, beta, gamma, layout):
    a, b, c = _terms(x, w, bias, z, stride, pad, alpha, beta, gamma, layout, x.dtype == np.int8)
    _store(y, np.maximum(a + b + c, 0), layout)


def drops_the_bias(x, w, bias, z, y, stride, pad, alpha, beta, gamma, layout):
    a, b, c = _terms(x, w, bias, z, stride, pad, alpha, beta, gamma, layout, x.dtype == np.int8)
    _store(y, np.maximum(a + c, 0), layout)


def relu_before_the_add(x, w, bias, z, y, stride, pad, alpha, beta, gamma, layout):
    a, b, c = _terms(x, w, bias, z, stride, pad, alpha, beta, gamma, layout, x.dtype == np.int8)
    _store(y, np.maximum(a + b, 0) + c, layout)


def wraps(x, w, bias, z, y, stride, pad, alpha, beta, gamma, layout):
    a, b, c = _terms(x, w, bias, z, stride, pad, alpha, beta, gamma, layout, True)
    y[...] = _stored(np.rint(np.maximum(a + b + c, 0)), layout).astype(np.int64).astype(np.int8)


def rounds_half_away(x, w, bias, z, y, stride, pad, alpha, beta, gamma, layout):
    a, b, c = _terms(x, w, bias, z, stride, pad, alpha, beta, gamma, layout, True)
    e = np.maximum(a + b + c, 0)
    y[...] = _stored(np.clip(np.sign(e) * np.floor(np.abs(e) + 0.5), -128, 127), layout).astype(np.int8)
'''


def planted(tmp_path, name: str, dtype: DType):
    (tmp_path / "planted.py").write_text(PLANTED)
    (variant,) = files.parse_specs({"variant": [{
        "name": name.replace("_", "-"), "op": "conv", "source": "planted.py", "kernel": name,
        "args": ["x", "w", "bias", "z", "y", "stride", "pad", "alpha", "beta", "gamma"],
        "dtypes": [str(dtype)], "layouts": ["nhwc", "nchw_vect_c"], "layout_define": "layout",
        "epilogues": ["bias-relu-add"]}]}, "gpubench.toml", tmp_path)
    return variant


def run_planted(tmp_path, name: str, dtype: DType, layout: ConvLayout) -> tuple[float, float, object]:
    shape = conv_shape(15, 1, batch=3, in_channels=64, out_channels=64, padding=1, dtype=dtype, layout=layout,
                       fused=Fused(Epilogue.BIAS_RELU_ADD))
    cpu = CpuBackend()
    variant = planted(tmp_path, name, dtype)
    inputs = cpu.inputs(shape, seed=7)
    ref = cpu.reference(shape, inputs)
    err = verify(cpu, cpu.prepare(variant, NO_CONFIG, shape, inputs), ref, shape)
    return err, cpu.tolerance(variant, shape), ref


@pytest.mark.parametrize("layout", [ConvLayout.NHWC, ConvLayout.NCHW_VECT_C])
@pytest.mark.parametrize("dtype", [DType.INT8_INT8, DType.INT8_FP32, DType.FP16, DType.BF16, DType.FP32])
def test_the_honest_kernel_passes_and_int8_exactly(tmp_path, dtype, layout):
    err, tol, _ = run_planted(tmp_path, "honest", dtype, layout)
    assert err <= tol
    if dtype == DType.INT8_INT8:
        assert err == 0.0 and tol == 0.0


@pytest.mark.parametrize("layout", [ConvLayout.NHWC, ConvLayout.NCHW_VECT_C])
@pytest.mark.parametrize("dtype", [DType.INT8_INT8, DType.INT8_FP32, DType.FP16, DType.BF16, DType.FP32])
@pytest.mark.parametrize("fault", ["drops_the_bias", "relu_before_the_add"])
def test_a_planted_epilogue_fault_fails_in_every_precision(tmp_path, dtype, layout, fault):
    err, tol, _ = run_planted(tmp_path, fault, dtype, layout)
    assert err > tol, f"{fault} in {dtype} {layout}: rel_err {err:.2e} within tolerance {tol:.2e}"


@pytest.mark.parametrize("layout", [ConvLayout.NHWC, ConvLayout.NCHW_VECT_C])
def test_an_int8_output_that_wraps_instead_of_saturating_fails(tmp_path, layout):
    err, tol, ref = run_planted(tmp_path, "wraps", DType.INT8_INT8, layout)
    assert np.count_nonzero(ref == 127) > 100  # the problem saturates: a wrap shows
    assert err > tol == 0.0


def test_rounding_half_away_from_zero_fails_the_stated_rule(tmp_path):
    """The rule is round half to even: the problem has ties (α is a power of two), and rounding them away fails."""
    err, tol, ref = run_planted(tmp_path, "rounds_half_away", DType.INT8_INT8, ConvLayout.NHWC)
    assert err > tol == 0.0


def gpubench(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gpubench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_int8_conv_and_every_epilogue_run_end_to_end_on_the_cpu(tmp_path):
    out = tmp_path / "int8.json"
    done = gpubench("conv", "--backend", "cpu", "--sizes", "7", "--stride", "1,2", "--batch", "3", "--in-channels",
                    "32", "--out-channels", "64", "--padding", "1", "--dtype", "int8,int8-fp32,int8-int8",
                    "--layout", "nhwc,nchw_vect_c", "--epilogue", "bias-relu-add", "--reps", "5", "-o", str(out),
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    points = json.loads(out.read_text())["points"]
    assert len(points) == 2 * 3 * 2 * 2 and all(p["status"] == "ok" and p["rel_err"] == 0.0 for p in points)
    assert {p["problem"]["epilogue"] for p in points} == {"bias-relu-add"}
    for epilogue in ("none", "bias", "bias-relu"):
        done = gpubench("conv", "--backend", "cpu", "--sizes", "6", "--stride", "1", "--in-channels", "32",
                        "--out-channels", "32", "--dtype", "fp16,int8-int8", "--layout", "nchw_vect_c", "--epilogue",
                        epilogue, "--scaling", "channel", "--reps", "5", "-o", str(tmp_path / f"{epilogue}.json"),
                        cwd=tmp_path)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("args,match", [
    (["--epilogue", "relu"], "--epilogue: 'relu' is not allowed; allowed: none, bias, bias-relu, bias-relu-add"),
    (["--dtype", "int8-int8", "--alpha", "0.3"], "int8-int8 is checked exactly: alpha 0.3 must be a power of two"),
    (["--dtype", "int8", "--layout", "nchw_vect_c"], "nchw_vect_c holds channels in vectors of 32"),
    (["--beta", "2"], "beta scales the bias"),
])
def test_a_bad_epilogue_on_the_command_line_is_one_line_and_exit_2(tmp_path, args, match):
    done = gpubench("conv", "--backend", "cpu", "--sizes", "8", "--stride", "1", *args, cwd=tmp_path)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
