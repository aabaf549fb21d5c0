"""The attention and grouped GEMM baselines' plumbing, without a GPU: their runners' options, the cuDNN frontend's
two spellings of SDPA's keywords, and the per-group library loop's sizes and pointers (cuBLAS faked), in both
layouts."""

from types import SimpleNamespace

import pytest

from gpubench.backends.cuda import attention_libraries, blas, cudnn_sdpa, grouped_libraries
from gpubench.backends.cuda.grouped_libraries import GroupedLibraries
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import Skip
from gpubench.ops.grouped_gemm import GroupedLayout, GroupedShape
from gpubench.specs import catalog
from gpubench.specs.runners import (CudnnSdpaRunner, GroupedLibrary, PlanPolicy, SdpaBackend, TorchSdpaRunner,
                                    runner_from)


def test_the_runners_check_their_options():
    assert runner_from("torch-sdpa", {"backend": "cudnn"}) == TorchSdpaRunner(SdpaBackend.CUDNN)
    assert runner_from("cudnn-sdpa", {}) == CudnnSdpaRunner(PlanPolicy.BEST)
    with pytest.raises(ValueError, match="backend 'xla'; allowed: flash, efficient, cudnn, math"):
        runner_from("torch-sdpa", {"backend": "xla"})
    assert set(attention_libraries.SDPA_KINDS) == set(SdpaBackend)


def test_cudnn_sdpa_names_every_type_its_variant_declares():
    v = catalog.Catalog(catalog.builtin()).get("attention", "cuda", "cudnn-sdpa")
    for dtype in v.scope.dtypes:
        p = PRECISIONS[dtype]
        assert p.c_type in attention_libraries.CUDNN_TYPES and p.c_out_type in attention_libraries.CUDNN_TYPES


def test_sdpa_keywords_are_tried_in_each_spelling_until_one_is_taken():
    calls = []

    def old_frontend(*, q, is_inference, use_causal_mask=False):  # before generate_stats
        calls.append((is_inference, use_causal_mask))
        return "o", None

    assert cudnn_sdpa._attention(old_frontend, True, q=1) == ("o", None) and calls == [(True, True)]

    def newest(*, q, generate_stats, diagonal_band_right_bound=None):  # the causal flag only as a band
        return diagonal_band_right_bound

    assert cudnn_sdpa._attention(newest, True, q=1) == 0 and cudnn_sdpa._attention(newest, False, q=1) is None


class FakeArray:
    def __init__(self, ptr):
        self.data = SimpleNamespace(ptr=ptr)


@pytest.mark.parametrize("layout", [GroupedLayout.CONTIGUOUS, GroupedLayout.MASKED])
def test_the_loop_runs_one_gemm_per_group_with_rows_at_its_offsets(monkeypatch, layout):
    made = []

    def gemm(cp, m, n, k, a, a_t, b, b_t, c, types):
        made.append((m, n, k, a, a_t, b, b_t, c))
        return lambda: None

    monkeypatch.setattr(blas, "cublas_gemm", gemm)
    shape = GroupedShape((100, 0, 300), 64, 32, dtype=DType.BF16, layout=layout)
    backend = SimpleNamespace(cp=None, clock=SimpleNamespace(sync=lambda: None))
    inputs = {"A": FakeArray(10_000), "B": FakeArray(20_000), "SA": FakeArray(0), "SB": FakeArray(0)}
    prepared = GroupedLibraries.prepare_cublas_loop(backend, shape, inputs, FakeArray(30_000))
    third = shape.offsets[2]  # 128 contiguous (100 rows aligned), 2 · 384 masked
    assert made == [(100, 64, 32, 10_000, False, 20_000, True, 30_000),
                    (300, 64, 32, 10_000 + third * 32 * 2, False, 20_000 + 2 * 64 * 32 * 2, True,
                     30_000 + third * 64 * 2)]  # the empty group launches nothing
    assert "2 calls" in prepared.details.engine


def test_block_scales_are_refused_in_words_by_both_libraries():
    shape = GroupedShape((100,), 256, 256, dtype=DType.FP8, layout=GroupedLayout.CONTIGUOUS_BLOCK)
    with pytest.raises(Skip, match="the cuBLASLt loop takes per-tensor fp8 scales, not .*128x128 block scales"):
        GroupedLibraries.prepare_cublas_loop(SimpleNamespace(), shape, {}, None)
    with pytest.raises(Skip, match="torch._scaled_grouped_mm takes row-wise scales, not .*128x128 block scales"):
        GroupedLibraries.prepare_torch_grouped_mm(SimpleNamespace(), shape, {}, None)


@pytest.mark.parametrize("layout", [GroupedLayout.CONTIGUOUS_BLOCK, GroupedLayout.MASKED_BLOCK])
def test_a_16_bit_type_in_a_block_layout_is_told_the_block_layouts_are_fp8s(layout):
    """Not that the library wants other fp8 scales: bf16 has none to give."""
    shape = GroupedShape((100,), 256, 256, dtype=DType.BF16, layout=layout)
    words = "the block layouts scale fp8 alone; bf16 has no scales (its layouts: contiguous, masked)"
    for library in GroupedLibrary:  # first (torch's, then the loop's: said once), torch's alone, the loop alone
        variant = SimpleNamespace(code=SimpleNamespace(runner=SimpleNamespace(library=library)))
        with pytest.raises(Skip) as refused:
            GroupedLibraries.prepare_grouped_library(SimpleNamespace(), variant, None, shape, {}, None)
        assert str(refused.value) == words, library


@pytest.mark.parametrize("library,engine", [("first", "cuBLAS loop; not torch: no torch here"),
                                            ("loop", "cuBLAS loop"), ("torch", None)])
def test_the_grouped_library_falls_back_to_the_loop_only_where_asked_and_says_so(library, engine):
    from gpubench.backends import Prepared
    from gpubench.results import Details

    def no_torch(shape, inputs, out):
        raise Skip("no torch here")

    backend = SimpleNamespace(prepare_torch_grouped_mm=no_torch,
                              prepare_cublas_loop=lambda s, i, o: Prepared(lambda: None, o,
                                                                           details=Details(engine="cuBLAS loop")))
    variant = SimpleNamespace(code=SimpleNamespace(runner=runner_from("grouped-library", {"library": library})))
    shape = GroupedShape((10,), 16, 16, dtype=DType.BF16)
    if engine is None:
        with pytest.raises(Skip, match="no torch here"):
            GroupedLibraries.prepare_grouped_library(backend, variant, None, shape, {}, None)
    else:
        assert GroupedLibraries.prepare_grouped_library(backend, variant, None, shape, {}, None).details.engine == \
            engine
