"""The attention op: its counts, its chunked float64 reference against the textbook definition, its error model,
its problems, and the CPU's FlashAttention loop within that model on every precision."""

import math

import numpy as np
import pytest

from gpubench import ops
from gpubench.backends.cpu import CpuBackend, emulated
from gpubench.core.dtypes import DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import attention
from gpubench.ops.attention import AttentionShape, error_model, flash, reference


def textbook(q, k, v, causal):
    """softmax(Q·Kᵀ/√D)·V with K and V repeated over each group of query heads, all at once in float64."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.triu(np.ones(s.shape[-2:], bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def random_qkv(shape, seed=0):
    rng = np.random.default_rng(seed)
    dims = shape.array_dims()
    return {n: rng.standard_normal(dims[n]) for n in ("Q", "K", "V")}


def test_counts_of_a_grouped_query_problem():
    s = AttentionShape(2, 32, 8, 1000, 128)
    assert s.flops == 4 * 2 * 32 * 1000**2 * 128
    assert AttentionShape(2, 32, 8, 1000, 128, causal=True).flops == s.flops / 2  # S²/2 entries: the convention
    assert s.array_dims() == {"Q": (2, 32, 1000, 128), "K": (2, 8, 1000, 128), "V": (2, 8, 1000, 128),
                              "O": (2, 32, 1000, 128)}
    assert s.dims() == {"B": 2, "H": 32, "H_kv": 8, "S": 1000, "D": 128, "causal": 0, "GROUP": 4}
    bf16 = AttentionShape(2, 32, 8, 1000, 128, dtype=DType.BF16)
    assert bf16.min_bytes == 2 * (2 * 32 * 1000 * 128 * 2 + 2 * 2 * 8 * 1000 * 128)  # Q and O, K and V
    assert s.label == "2x32/8x1000x128" and AttentionShape(1, 16, 16, 4096, 128, True).label == "1x16x4096x128 causal"


def test_a_problem_comes_back_from_its_record_and_checks_itself():
    s = AttentionShape(1, 8, 2, 100, 64, causal=True, dtype=DType.FP8)
    assert ops.shape_from("attention", s.record()) == s and ops.of(s).name == "attention"
    with pytest.raises(GpubenchError, match="kv_heads 3 must divide heads 8"):
        AttentionShape(1, 8, 3, 100, 64)
    with pytest.raises(GpubenchError, match="causal must be true or false"):
        AttentionShape(1, 8, 2, 100, 64, causal=2)
    with pytest.raises(GpubenchError, match="seq must be a positive integer"):
        AttentionShape(1, 8, 2, 0, 64)


@pytest.mark.parametrize("causal", [False, True])
def test_the_reference_is_the_textbook_definition_with_grouped_heads(causal):
    shape = AttentionShape(2, 6, 2, 37, 16, causal)
    values = random_qkv(shape)
    assert np.allclose(reference(np, shape, values)["O"], textbook(values["Q"], values["K"], values["V"], causal),
                       rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_the_reference_in_chunks_of_query_rows_is_the_same_as_at_once(monkeypatch, causal):
    shape = AttentionShape(1, 2, 1, 300, 8, causal)
    values = random_qkv(shape, seed=3)
    whole = reference(np, shape, values)["O"]
    monkeypatch.setattr(attention, "CHUNK_BYTES", 8 * 300 * 7)  # 7 rows a chunk: the last chunk is ragged
    assert np.allclose(reference(np, shape, values)["O"], whole, rtol=1e-13, atol=1e-14)


def test_the_reference_holds_a_bounded_block_of_scores_at_16k():
    rows = max(1, attention.CHUNK_BYTES // (8 * 16384))
    assert rows * 16384 * 8 <= attention.CHUNK_BYTES and rows >= 1024


def test_the_error_model_counts_p_s_rounding_and_both_reductions():
    fp16 = AttentionShape(1, 16, 16, 4096, 128, dtype=DType.FP16)
    u = 2.0**-11
    c_out = 0.7 + 0.4 * math.sqrt(64 / (16 * 4096 * 128))  # the output's rounding, over that many outputs
    expected = c_out * u + 0.7 * u + 2 * 2.0**-24 * (math.sqrt(4096) + math.sqrt(128))
    assert error_model(fp16) == pytest.approx(expected)
    fp8 = AttentionShape(1, 16, 16, 4096, 128, dtype=DType.FP8)
    assert error_model(fp8) > 0.7 * 2.0**-4  # P in e4m3 (3 mantissa bits) before P·V
    longer = AttentionShape(1, 16, 16, 16384, 128, dtype=DType.FP8)
    assert error_model(longer) > error_model(fp8)  # the fp8 accumulator's share grows as √S
    assert error_model(AttentionShape(1, 16, 16, 4096, 128, dtype=DType.BF16)) < 0.01  # far under a wrong mask


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "fp8"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_cpu_flash_loop_is_within_the_model_and_a_missing_mask_is_not(dtype, causal):
    shape = AttentionShape(1, 4, 2, 150, 32, causal, dtype=DType(dtype))
    be = CpuBackend()
    inputs = be.inputs(shape, seed=5)
    ref = be.reference(shape, inputs)
    values, acc = emulated(shape, inputs)
    out_type = ops.laid_out_arrays(shape)["O"][1]
    err = be.rel_err(flash(np, shape, values, dtype=acc)["O"].astype(out_type), ref, shape)
    assert err < error_model(shape)
    if causal:
        unmasked = flash(np, AttentionShape(1, 4, 2, 150, 32, False, dtype=DType(dtype)), values, dtype=acc)["O"]
        assert be.rel_err(unmasked.astype(out_type), ref, shape) > 10 * error_model(shape)


def problems(**values):
    shapes, skipped = attention.problems(values, "suite.sweep[0]", strict=False)
    return shapes, skipped


def test_problems_are_every_combination_and_tokens_fix_batch_times_seq():
    shapes, _ = problems(seq=[1024, 2048], heads=[32], kv_heads=[8], causal=[0, 1])
    assert [(s.seq, s.causal) for s in shapes] == [(1024, False), (1024, True), (2048, False), (2048, True)]
    assert all(s.batch == 1 and s.heads == 32 and s.kv_heads == 8 and s.head_dim == 128 for s in shapes)
    shapes, _ = problems(seq=[4096, 8192, 16384], tokens=16384)
    assert [(s.batch, s.seq) for s in shapes] == [(4, 4096), (2, 8192), (1, 16384)]


def test_problems_that_cannot_be_are_left_out_in_a_suite_and_refused_on_the_command_line():
    shapes, skipped = problems(seq=[1000, 4096], tokens=8192)
    assert [s.seq for s in shapes] == [4096] and "seq 1000 does not divide tokens 8192" in skipped[0][1]
    with pytest.raises(GpubenchError, match="--kv-heads|kv_heads 3 must divide"):
        attention.problems({"seq": "1024", "heads": "16", "kv_heads": "3"}, "attention", strict=True)
    with pytest.raises(GpubenchError, match="--causal takes 0"):
        attention.problems({"causal": "0,2"}, "attention", strict=True)
    with pytest.raises(GpubenchError, match="--tokens sets the batch"):
        attention.problems({"tokens": 4096, "batch": "2"}, "attention", strict=True)


def test_the_shipped_suite_holds_the_rule_set_and_llama_3s_prefill():
    from gpubench.planning import suites

    sweeps = {w.name: w for w in suites.load("attention", "cuda").sweeps}
    rule = {(s.batch, s.seq, s.heads, s.head_dim, s.causal, s.dtype) for s in sweeps["rule-16k-tokens"].shapes}
    assert rule == {(16384 // s, s, 16, 128, c, d) for s in (4096, 8192, 16384) for c in (False, True)
                    for d in (DType.FP16, DType.BF16)}
    for name, heads in (("llama3-8b-prefill", 32), ("llama3-70b-prefill", 64)):
        shapes = sweeps[name].shapes
        assert {(s.heads, s.kv_heads, s.head_dim, s.batch) for s in shapes} == {(heads, 8, 128, 1)}
        assert sorted({s.seq for s in shapes}) == [1024, 2048, 4096, 8192, 16384] and {s.causal for s in shapes} == {
            False, True}
    assert sweeps["rule-16k-tokens"].variants[0].name == "cudnn-sdpa"
