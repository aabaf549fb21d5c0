"""The grouped GEMM op: its layouts' structure (offsets, counts, per-row groups), its inputs and scales, its
reference against a plain per-group definition, its problems, and the CPU's variant within the error model."""

import numpy as np
import pytest

from gpubench import ops
from gpubench.backends.cpu import CpuBackend, emulated
from gpubench.core.dtypes import DType, tolerance
from gpubench.core.errors import GpubenchError
from gpubench.ops import grouped_gemm
from gpubench.ops.grouped_gemm import ALIGN, GroupedLayout, GroupedShape, draw, emulation, reference, structure

L = GroupedLayout


def test_the_contiguous_layout_aligns_each_groups_run():
    s = GroupedShape((300, 0, 1000), 4000, 1000)
    assert s.offsets == (0, 384, 384, 1408) and s.rows == 1408  # 300 → 384 rows, 0 → none, 1000 → 1024
    st = structure(s)
    assert (st["groups"][:300] == 0).all() and (st["groups"][300:384] == -1).all()
    assert (st["groups"][384:1384] == 2).all() and (st["groups"][1384:] == -1).all()
    assert st["counts"].tolist() == [300, 0, 1000] and st["offsets"].tolist() == [0, 384, 384, 1408]
    assert s.flops == 2 * 1300 * 4000 * 1000 and s.output_elems == 1300 * 4000
    assert s.array_dims()["A"] == (1408, 1000) and s.array_dims()["D"] == (1408, 4000)
    assert s.array_dims()["SA"] == (1,) and s.array_dims()["B"] == (3, 4000, 1000)


def test_the_masked_layout_is_one_slab_per_group():
    s = GroupedShape((300, 0, 1000), 4000, 1000, m_max=1100, layout=L.MASKED_BLOCK)
    assert s.capacity == 1100 and s.offsets == (0, 1100, 2200, 3300)
    dims = s.array_dims()
    assert dims["A"] == (3, 1100, 1000) and dims["D"] == (3, 1100, 4000)
    assert dims["SA"] == (8, 3, 1100) and dims["SB"] == (3, 32, 8)  # ⌈1000/128⌉ = 8, ⌈4000/128⌉ = 32
    assert GroupedShape((300, 1000), 64, 64, layout=L.MASKED).capacity == 1024  # the largest group's, aligned
    assert s.label == "3x[0-1000] of 1100x4000x1000" and GroupedShape((8192,) * 4, 4096, 7168).label == \
        "4x8192x4096x7168"


def test_a_problem_comes_back_from_its_record_and_checks_itself():
    s = GroupedShape((300, 0, 1000), 4000, 1000, m_max=1024, dtype=DType.FP8, layout=L.CONTIGUOUS_BLOCK)
    assert ops.shape_from("grouped-gemm", s.record()) == s and ops.of(s).name == "grouped-gemm"
    with pytest.raises(GpubenchError, match="m_max 500 must hold the largest group's 1000 rows"):
        GroupedShape((300, 1000), 64, 64, m_max=500)
    with pytest.raises(GpubenchError, match="group_m must list each group.s rows"):
        GroupedShape((0, 0), 64, 64)


@pytest.mark.parametrize("layout", list(L))
def test_the_inputs_carry_their_scales_and_zeros_in_rows_of_no_group(layout):
    s = GroupedShape((150, 0, 200), 300, 260, dtype=DType.FP8, layout=layout)
    x = draw(np.random.default_rng(1), s)
    assert {k: v.shape for k, v in x.items()} == {k: v for k, v in s.array_dims().items() if k != "D"}
    a = x["A"].astype(np.float64).reshape(-1, 260)
    assert not a[structure(s)["groups"] < 0].any() and a[structure(s)["groups"] >= 0].any()
    assert np.abs(x["A"].astype(np.float32)).max() <= 448 and (x["SA"] > 0).all() and (x["SB"] > 0).all()
    if layout.block_scaled:  # the scales differ block to block: a scale in the wrong place is an error
        assert x["SB"].max() / x["SB"].min() > 4 and x["SA"][x["SA"] != 1].std() > 0


def per_group(s, x):
    """D_g = (A_g·scales)(B_g·scales)ᵀ written out with loops over the scale blocks."""
    a, b = x["A"].astype(np.float64).reshape(-1, s.k), x["B"].astype(np.float64)
    sa, sb = x["SA"].astype(np.float64), x["SB"].astype(np.float64)
    out = np.full((s.rows, s.n), np.nan)
    for g, (start, m) in enumerate(zip(s.offsets, s.group_m)):
        for r in range(start, start + m):
            for j in range(s.n):
                if s.layout.block_scaled:
                    scales = [sa.reshape(sa.shape[0], -1)[kk // 128, r] * sb[g, j // 128, kk // 128]
                              for kk in range(s.k)]
                else:
                    scales = sa[0] * sb[0]
                out[r, j] = np.sum(a[r] * b[g, j] * scales)
    return out.reshape(s.array_dims()["D"])


@pytest.mark.parametrize("layout", list(L))
def test_the_reference_is_each_groups_product_with_its_scales(layout):
    s = GroupedShape((5, 0, 7), 130, 260, dtype=DType.FP8, layout=layout)
    x = draw(np.random.default_rng(2), s)
    values = {k: v.astype(np.float64) for k, v in x.items()}
    got, want = reference(np, s, values)["D"], per_group(s, x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("dtype,layout", [("bf16", L.CONTIGUOUS), ("bf16", L.MASKED), ("fp8", L.CONTIGUOUS),
                                          ("fp8", L.MASKED), ("fp8", L.CONTIGUOUS_BLOCK), ("fp8", L.MASKED_BLOCK)])
def test_the_cpu_variant_is_within_the_model_and_rows_of_no_group_are_not_checked(dtype, layout):
    s = GroupedShape((100, 0, 230), 200, 300, dtype=DType(dtype), layout=layout)
    be = CpuBackend()
    inputs = be.inputs(s, seed=3)
    ref = be.reference(s, inputs)
    values, acc = emulated(s, inputs)
    out = emulation(np, s, values, dtype=acc)["D"].astype(ops.laid_out_arrays(s)["D"][1])
    out.reshape(-1, 200)[structure(s)["groups"] < 0] = np.nan  # rows of no group: anything, even NaN
    err = be.rel_err(out, ref, s)
    assert 0 < err < tolerance(DType(dtype), s.reduction, s.output_elems)
    broken = out.copy()
    broken.reshape(-1, 200)[np.flatnonzero(structure(s)["groups"] == 2)[0], 0] = np.nan
    assert be.rel_err(broken, ref, s) == np.inf  # a row of a group is checked


def problems(**values):
    return grouped_gemm.problems(values, "suite.sweep[0]", strict=False)[0]


def test_problems_are_equal_groups_and_explicit_lists():
    shapes = problems(groups=[4, 8], m=[4096], n=[4096], k=[7168])
    assert [s.group_m for s in shapes] == [(4096,) * 4, (4096,) * 8]
    shapes = problems(group_m=[[4000, 4100, 3900]], n=[7168], k=[2048])
    assert [(s.group_m, s.n, s.k) for s in shapes] == [((4000, 4100, 3900), 7168, 2048)]
    assert problems(group_m=[10, 20], n=[64], k=[64])[0].group_m == (10, 20)  # one list, as a suite writes it
    assert problems(m=[256], groups=[4], m_max=4096)[0].capacity == 4096
    cli = grouped_gemm.problems({"group_m": ("1,0,3", "20,20"), "n": "64", "k": "128"}, "grouped-gemm",
                                strict=True)[0]
    assert [s.group_m for s in cli] == [(1, 0, 3), (20, 20)]  # two groups of 20 rows: sizes may repeat
    with pytest.raises(GpubenchError, match="--group-m"):
        grouped_gemm.problems({"group_m": ("1,x",)}, "grouped-gemm", strict=True)


def test_the_shipped_suite_holds_deepgemms_contiguous_and_masked_shapes():
    from gpubench.planning import suites

    shapes = [s for w in suites.load("grouped-gemm", "cuda").sweeps for s in w.shapes]
    contiguous = {(s.group_m, s.n, s.k) for s in shapes if not s.layout.masked}
    assert contiguous == {((m,) * g, n, k) for g, m in ((4, 8192), (8, 4096)) for n, k in ((4096, 7168), (7168, 2048))}
    masked = {(s.group_m, s.capacity, s.n, s.k) for s in shapes if s.layout.masked}
    assert masked == {((m,) * g, 4096, n, k) for g, m in ((1, 1024), (2, 512), (4, 256))
                      for n, k in ((4096, 7168), (7168, 2048))}
    assert all(s.dtype == DType.FP8 for s in shapes if s.layout.block_scaled)  # no bf16 point with block scales


def test_too_many_groups_or_too_many_rows_are_one_line():
    with pytest.raises(GpubenchError, match="--groups: 70000 groups; at most 65536"):
        grouped_gemm.problems({"groups": "70000"}, "grouped-gemm", strict=True)
    with pytest.raises(GpubenchError, match="group_m must list"):
        GroupedShape((2**64,), 16, 16)


def test_one_group_in_a_block_layout_is_the_dense_block_scaled_fp8_gemm():
    s = GroupedShape((200,), 256, 384, dtype=DType.FP8, layout=L.CONTIGUOUS_BLOCK)
    x = draw(np.random.default_rng(4), s)
    a = x["A"].astype(np.float64) * np.repeat(x["SA"].T.astype(np.float64), 128, axis=1)  # 1x128 scales along K
    b = x["B"][0].astype(np.float64) * np.kron(x["SB"][0].astype(np.float64), np.ones((128, 128)))  # 128x128
    d = reference(np, s, {k: v.astype(np.float64) for k, v in x.items()})["D"]
    assert np.allclose(d[:200], a[:200] @ b.T, rtol=1e-12) and np.isnan(d[200:]).all()  # 200 rows of 256
