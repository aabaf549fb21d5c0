"""Planted faults fail verification on the CPU backend: a missing causal mask, a softmax without its running
maximum (fp16 overflows at large logits: the test makes such data), a group's offset off by one, and a block scale
applied to the wrong block. Each wrong variant (tests/fixtures/planted/) runs beside the built-in NumPy variant on
the same points, which passes; the sweeps exit 1 (a point failed)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpubench import api, results
from gpubench.backends.cpu import CpuBackend
from gpubench.ops.attention import AttentionShape, flash
from gpubench.core.dtypes import DType
from gpubench.results import Status

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "fixtures" / "planted" / "gpubench.toml"


def sweep(tmp_path, op: str, variants: str, *options: str):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUBENCH_CACHE": str(tmp_path / "cache")}
    env.pop("GPUBENCH_CONFIG", None)
    done = subprocess.run([sys.executable, "-m", "gpubench", "sweep", op, "--backend", "cpu", "--config", str(PLANTED),
                           "--variants", variants, "--reps", "5", "--warmup", "0", "-o", "r.json", *options],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    points = results.load(tmp_path / "r.json").points
    return done, {(p.variant, p.problem.full_label): p for p in points}


def test_a_missing_causal_mask_fails_where_the_mask_matters(tmp_path):
    done, points = sweep(tmp_path, "attention", "numpy-flash,no-causal-mask", "--seq", "100", "--heads", "4",
                         "--kv-heads", "2", "--head-dim", "32", "--causal", "0,1", "--dtype", "fp16,bf16")
    assert done.returncode == 1, done.stdout + done.stderr
    for dtype in ("FP16", "BF16"):
        assert points[("no-causal-mask", f"1x4/2x100x32 {dtype}")].status == Status.OK  # right without a mask
        wrong = points[("no-causal-mask", f"1x4/2x100x32 causal {dtype}")]
        assert wrong.status == Status.FAIL and wrong.rel_err > 10 * wrong.tolerance
        assert points[("numpy-flash", f"1x4/2x100x32 causal {dtype}")].status == Status.OK


def test_an_offset_off_by_one_fails_in_both_layouts(tmp_path):
    done, points = sweep(tmp_path, "grouped-gemm", "numpy-grouped,offset-off-by-one", "--group-m", "30,20,40", "--n",
                         "64", "--k", "256", "--dtype", "bf16,fp8", "--layout", "contiguous,masked")
    assert done.returncode == 1, done.stdout + done.stderr
    for tag in ("BF16", "FP8", "BF16 MASKED", "FP8 MASKED"):
        wrong = points[("offset-off-by-one", f"3x[20-40]x64x256 {tag}")]
        assert wrong.status == Status.FAIL and wrong.rel_err > 10 * wrong.tolerance
        assert points[("numpy-grouped", f"3x[20-40]x64x256 {tag}")].status == Status.OK


def test_a_block_scale_applied_to_the_wrong_block_fails(tmp_path):
    done, points = sweep(tmp_path, "grouped-gemm", "numpy-grouped-block,scale-of-the-next-block", "--group-m", "100,60,120",
                         "--n", "200", "--k", "384", "--dtype", "fp8", "--layout", "contiguous-block,masked-block")
    assert done.returncode == 1, done.stdout + done.stderr
    for tag in ("FP8 CONTIGUOUS-BLOCK", "FP8 MASKED-BLOCK"):
        wrong = points[("scale-of-the-next-block", f"3x[60-120]x200x384 {tag}")]
        assert wrong.status == Status.FAIL and wrong.rel_err > 10 * wrong.tolerance
        assert points[("numpy-grouped-block", f"3x[60-120]x200x384 {tag}")].status == Status.OK


# --- softmax without its running maximum: data with large logits -----------------------------------------------


LOGIT_GAIN = 4.0  # Q and K drawn in [-4, 4): logits of spread ≈ 16·√D/3/√D ≈ 5, the largest past fp16's exp limit


@pytest.fixture
def large_logits(monkeypatch):
    """The CPU backend's attention inputs with Q and K times LOGIT_GAIN (still exact in fp16: a power of two), so
    that many scores pass ln(65504) ≈ 11.1, where exp overflows fp16."""
    drawn = CpuBackend.inputs

    def inputs(self, shape, seed):
        made = drawn(self, shape, seed)
        for name in ("Q", "K"):
            made[name] = (made[name].astype(np.float32) * LOGIT_GAIN).astype(made[name].dtype)
        return made

    monkeypatch.setattr(CpuBackend, "inputs", inputs)


def loop(running_max: bool):
    """The CPU's FlashAttention loop as a Python variant, with or without its running maximum."""
    def attention(Q, K, V, O, B, H, H_kv, S, D, causal):
        shape = AttentionShape(B, H, H_kv, S, D, bool(causal), dtype=DType.FP16)
        values = {"Q": Q.astype(np.float32), "K": K.astype(np.float32), "V": V.astype(np.float32)}
        with np.errstate(over="ignore", invalid="ignore"):  # the fault overflows, on purpose
            O[...] = flash(np, shape, values, running_max=running_max)["O"].astype(O.dtype)

    return attention


def measured(running_max: bool):
    problem = api.problem("attention", seq=128, heads=2, head_dim=64, causal=1, dtype="fp16")
    return api.measure(loop(running_max), problem, backend="cpu", reps=5, warmup=0, max_time=5.0,
                       args=["Q", "K", "V", "O", "B", "H", "H_kv", "S", "D", "causal"],
                       name="with-max" if running_max else "no-max")


def test_softmax_without_its_running_maximum_overflows_fp16_at_large_logits(large_logits):
    wrong, right = measured(running_max=False), measured(running_max=True)
    assert wrong.status == Status.FAIL and wrong.rel_err == float("inf")
    assert right.ok, right.point.reason


def test_at_ordinary_logits_the_fault_goes_unseen_which_is_why_the_data_must_be_large():
    assert measured(running_max=False).ok
