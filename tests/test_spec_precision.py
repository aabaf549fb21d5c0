"""A spec's dtypes, layouts and the macros that tell a kernel which: defaults, and each rule refused in one line."""

import pytest

from gpubench.specs import files
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.specs.parse import SpecError

KERNEL = 'extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}\n'


def parse(tmp_path, **table):
    (tmp_path / "k.cu").write_text(KERNEL)
    base = {"name": "mine", "op": "gemm", "source": "k.cu", "kernel": "k", "args": ["A", "B", "C", "M", "N", "K"],
            "grid": ["1"], "block": ["32"]}
    (variant,) = files.parse_specs({"variant": [{**base, **table}]}, "gpubench.toml", tmp_path)
    return variant


def test_a_variant_computes_in_fp32_and_the_lab_layout_unless_it_says(tmp_path):
    v = parse(tmp_path)
    assert v.scope.dtypes == (DType.FP32,) and v.scope.layouts == (GemmLayout.NN,)
    assert v.scope.takes(GemmShape(8, 8, 8)) is None
    assert "computes in fp32, not bf16" in v.scope.takes(GemmShape(8, 8, 8, DType.BF16))
    assert "layout(s) nn, not nt" in v.scope.takes(GemmShape(8, 8, 8, layout=GemmLayout.NT))


def test_the_element_type_and_layout_reach_the_kernel_as_defines(tmp_path):
    v = parse(tmp_path, dtypes=["fp16", "bf16"], layouts=["nn", "nt"], dtype_define="ELEM", layout_define="LAYOUT")
    shape = GemmShape(8, 8, 8, DType.BF16, GemmLayout.NT)
    params = v.code.defines(v.space.configs[0], shape.dtype, shape.layout)
    assert params == {"ELEM": "__nv_bfloat16", "ELEM_OUT": "__nv_bfloat16", "LAYOUT_NT": 1}
    (build,) = v.builds(v.space.configs[0], "sm_90", shape)
    assert dict(build[1]) == params


def test_a_hyphenated_layout_reaches_the_kernel_as_a_c_name():
    """grouped-gemm's block layouts (contiguous-block, masked-block) become -DLAYOUT_CONTIGUOUS_BLOCK=1: a hyphen is
    no part of a macro's name."""
    from gpubench.ops.grouped_gemm import GroupedLayout
    from gpubench.specs import catalog
    v = catalog.Catalog(catalog.builtin()).get("grouped-gemm", "cuda", "fp8-grouped")
    params = v.code.defines(v.space.configs[0], DType.FP8, GroupedLayout.MASKED_BLOCK)
    assert [k for k in params if k.startswith("LAYOUT")] == ["LAYOUT_MASKED_BLOCK"]


def test_without_a_problem_every_precision_and_layout_is_built(tmp_path):
    """What `gpubench check` and CI's nvcc tests compile: each element type and layout the kernel takes, not only
    its first (a kernel that breaks only in bf16, or only in nt, fails there)."""
    v = parse(tmp_path, dtypes=["fp16", "bf16"], layouts=["nn", "nt"], dtype_define="ELEM", layout_define="LAYOUT")
    built = {tuple(sorted(dict(b[1]).items())) for b in v.builds(v.space.configs[0], "sm_90")}
    assert built == {tuple(sorted({"ELEM": e, "ELEM_OUT": e, f"LAYOUT_{x}": 1}.items()))
                     for e in ("__half", "__nv_bfloat16") for x in ("NN", "NT")}
    one = parse(tmp_path, dtypes=["fp32", "tf32"])  # one C type, no macro: one build
    assert len(one.builds(one.space.configs[0], "sm_90")) == 1


@pytest.mark.parametrize("table,words", [
    ({"dtypes": ["fp64"]}, "dtypes: 'fp64' is not allowed; allowed: fp32, tf32, fp16, bf16, fp8, int8"),
    ({"dtypes": []}, "dtypes must be a non-empty list"),
    ({"dtypes": "bf16"}, "dtypes must be a non-empty list"),
    ({"dtypes": ["bf16", "bf16"]}, "dtypes names a value twice"),
    ({"layouts": ["nhwc"]}, "layouts: 'nhwc' is not allowed; allowed: nn, nt, tn"),
    ({"dtypes": ["fp16", "bf16"]}, "name the macro that tells the kernel which"),
    ({"layouts": ["nn", "tn"]}, "name the macro that tells the kernel which"),
    ({"dtypes": ["fp16"], "dtype_define": "1ELEM"}, "dtype_define must be a C macro name"),
])
def test_each_rule_is_one_line(tmp_path, table, words):
    with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse(tmp_path, **table)


def test_one_element_type_needs_no_macro_and_a_python_function_takes_a_keyword(tmp_path):
    assert parse(tmp_path, dtypes=["fp32", "tf32"]).scope.dtypes == (DType.FP32, DType.TF32)  # both float
    (tmp_path / "f.py").write_text("def f(A, B, C, M, N, K, ELEM):\n    pass\n")
    (f,) = files.parse_specs({"variant": [{"name": "f", "op": "gemm", "source": "f.py", "kernel": "f",
                                                "args": ["A", "B", "C", "M", "N", "K"], "dtype_define": "ELEM",
                                                "dtypes": ["fp32", "bf16"]}]}, "gpubench.toml", tmp_path)
    assert f.code.call_keywords(f.space.configs[0], f.scope.dtypes[0], f.scope.layouts[0]) == {"ELEM": "fp32"}
    assert f.code.defines(f.space.configs[0]) == {}


def test_the_shipped_libraries_take_every_precision_they_compute():
    from gpubench.specs.catalog import Catalog

    by_name = {(v.name, v.backend): v for v in Catalog.with_user([]).all}
    assert set(by_name["cublas", "cuda"].scope.dtypes) >= {DType.FP32, DType.TF32, DType.FP16, DType.BF16}
    assert set(by_name["cudnn", "cuda"].scope.layouts) == set(ConvLayout)
    assert by_name["numpy", "cpu"].scope.takes(GemmShape(8, 8, 8, DType.FP8, GemmLayout.TN)) is None
    assert by_name["sliding", "cpu"].scope.takes(conv_shape(8, 1, dtype=DType.BF16, layout=ConvLayout.NHWC)) is None


CONV_KERNEL = ('extern "C" __global__ void k(const signed char* x, const signed char* w, const float* bias, '
               'const signed char* z, const float* channel_scale, signed char* y, float alpha, int N) {}\n')
CONV_ARGS = ["x", "w", "bias", "z", "channel_scale", "y", "alpha", "N"]


def parse_conv(tmp_path, **table):
    (tmp_path / "c.cu").write_text(CONV_KERNEL)
    base = {"name": "mine-conv", "op": "conv", "source": "c.cu", "kernel": "k", "args": CONV_ARGS, "grid": ["1"],
            "block": ["32"], "dtypes": ["int8-int8"], "layouts": ["nhwc"]}
    (variant,) = files.parse_specs({"variant": [{**base, **table}]}, "gpubench.toml", tmp_path)
    return variant


def test_a_kernel_takes_the_epilogues_it_lists_and_reads_their_arrays(tmp_path):
    from gpubench.ops.epilogue import Epilogue, Fused, Scaling

    v = parse_conv(tmp_path, epilogues=["none", "bias-relu-add"], epilogue_define="EPILOGUE")
    shape = conv_shape(9, 1, in_channels=32, out_channels=32, dtype=DType.INT8_INT8, layout=ConvLayout.NHWC,
                       fused=Fused(Epilogue.BIAS_RELU_ADD))
    assert v.scope.takes(shape) is None and v.scope.reads == ("bias", "channel_scale", "z")
    assert "epilogue(s) none, bias-relu-add, not bias-relu" in v.scope.takes(
        conv_shape(9, 1, in_channels=32, out_channels=32, dtype=DType.INT8_INT8, layout=ConvLayout.NHWC,
                   fused=Fused(Epilogue.BIAS_RELU)))
    assert v.code.defines(v.space.configs[0], shape.dtype, shape.layout, shape.fused.epilogue)["EPILOGUE"] == 3
    built = {dict(b[1])["EPILOGUE"] for b in v.builds(v.space.configs[0], "sm_90")}
    assert built == {0, 3}  # CI compiles each epilogue the kernel lists
    plain = parse_conv(tmp_path, args=["x", "w", "y", "N"])
    per_channel = conv_shape(9, 1, in_channels=32, out_channels=32, dtype=DType.INT8_INT8, layout=ConvLayout.NHWC,
                             fused=Fused(scaling=Scaling.CHANNEL))
    assert "does not read channel_scale" in plain.scope.takes(per_channel)  # its args do not name it


@pytest.mark.parametrize("table,words", [
    ({"epilogues": ["bias-relu-add"], "args": ["x", "w", "bias", "y", "N"]}, "bias-relu-add brings z, which args"),
    ({"epilogues": ["none", "bias"]}, r"name the macro \(or keyword\) that tells the code which"),
    ({"epilogues": ["relu"]}, "epilogues: 'relu' is not allowed; allowed: none, bias, bias-relu, bias-relu-add"),
])
def test_an_epilogue_a_kernel_cannot_compute_is_refused(tmp_path, table, words):
    with pytest.raises(SpecError, match=words):
        parse_conv(tmp_path, **table)


def test_the_library_and_numpy_compute_every_epilogue_the_kernels_of_the_document_too():
    from gpubench.ops.epilogue import Epilogue
    from gpubench.specs.catalog import Catalog

    by_name = {(v.name, v.backend): v for v in Catalog.with_user([]).all}
    for key in (("cudnn", "cuda"), ("im2col", "cpu"), ("sliding", "cpu"), ("tc-int8-mma", "cuda")):
        assert set(by_name[key].scope.epilogues) == set(Epilogue), key
    assert by_name["cudnn", "cuda"].scope.reads is None  # a library computes the whole problem
    assert set(by_name["tc-wgmma-tma", "cuda"].scope.epilogues) == {Epilogue.NONE, Epilogue.BIAS_RELU_ADD}
    assert by_name["im2col-cublas", "cuda"].scope.epilogues == (Epilogue.NONE,)  # cuBLAS's GEMM: no epilogue
