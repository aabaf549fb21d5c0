"""On a GPU: INT8 convolution and the fused epilogue, every variant that takes them checked against the exact
reference (int64 sums, the float64 epilogue, int8 rounded half to even and saturated) on shapes that are multiples
of no tile, the output poisoned first (verify): the document's step (tc-int8-mma) bit for bit in every output type,
layout, epilogue and configuration; the Hopper step (tc-wgmma-int8, NHWC) likewise, and on ResNet-50's 3×3 layers
with filters that fill no tile; cuDNN's int8 in NHWC and NCHW_VECT_C exactly (its fused graph, or where it refuses
that its unfused sequence, which the point's details name; NCHW_VECT_C's filters reordered by cuDNN first); cuDNN's
fused graph in fp16 and bf16 within the error model's tolerance. Run: python3 -m pytest -q -m gpu tests/test_gpu_int8_conv.py -n 0"""

import math

import pytest

from gpubench.backends.cuda import cudnn_reorder, fused_conv
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.errors import Skip
from gpubench.execution.tasks import verify
from gpubench.ops.conv import ConvLayout, conv_shape
from gpubench.ops.epilogue import Epilogue, Fused, Scaling
from gpubench.specs import catalog

pytestmark = pytest.mark.gpu

CATALOG = catalog.Catalog(catalog.builtin())
INT8S = (DType.INT8, DType.INT8_FP32, DType.INT8_INT8)

# Channels 32 and 64 (one and two vectors: less than any BK of 64 or 128), filters 32, 64 and 96 (no BN's multiple),
# odd spatial sizes and batch 3 (pixel counts that fill no BM), strides 1 and 2, padding and not, a 1×1 and a 5×5.
SHAPES = [
    dict(size=13, stride=1, batch=3, in_channels=32, out_channels=96, padding=1),
    dict(size=17, stride=2, batch=3, in_channels=64, out_channels=32, padding=1),
    dict(size=9, stride=1, batch=3, in_channels=64, out_channels=64, padding="valid"),
    dict(size=11, stride=1, batch=3, in_channels=96, out_channels=64, kernel=1, padding="valid"),
    dict(size=15, stride=2, batch=3, in_channels=32, out_channels=32, kernel=5, padding=2),
]
NHWC_ONLY = [dict(size=13, stride=1, batch=3, in_channels=32, out_channels=40, padding=1)]  # K % 16 != 0: the tail
EPILOGUES = [Fused(), Fused(Epilogue.BIAS), Fused(Epilogue.BIAS_RELU), Fused(Epilogue.BIAS_RELU_ADD)]


def shape_of(kw, dtype, layout, fused):
    size, stride = kw["size"], kw["stride"]
    rest = {k: v for k, v in kw.items() if k not in ("size", "stride")}
    return conv_shape(size, stride, dtype=dtype, layout=layout, fused=fused, **rest)


def check(cuda, data, variant, config, shape, refusal_ok=False):
    """The variant's output against the reference within its tolerance (exactly for int32 and int8 outputs).
    refusal_ok: a library's refusal to prepare the problem (Skip, in its words) is a skip, not a failure; what it
    does prepare is checked all the same."""
    inputs, ref = data(shape)
    try:
        prepared = cuda.prepare(variant, config, shape, inputs)
    except Skip as why:
        if not refusal_ok:
            raise
        pytest.skip(str(why))
    err = verify(cuda, prepared, ref, shape)
    tol = cuda.tolerance(variant, shape)
    prepared.release()
    assert math.isfinite(err), f"{variant.name} {config.label} {shape.full_label}: NaN or unwritten output"
    assert err <= tol, f"{variant.name} {config.label} {shape.full_label}: rel_err {err:.3e} over {tol:.3e}"
    if PRECISIONS[shape.dtype].integer and shape.dtype != DType.INT8_FP32:
        assert err == 0.0  # int32 and int8 outputs: exactly the reference
    return prepared


def cases():
    v = CATALOG.get("conv", "cuda", "tc-int8-mma")
    for config in v.space.configs:
        for dtype in INT8S:
            for layout in v.scope.layouts:
                for kw in SHAPES + (NHWC_ONLY if layout == ConvLayout.NHWC else []):
                    for fused in EPILOGUES:
                        yield pytest.param(v, config, shape_of(kw, dtype, layout, fused),
                                           id=f"{config.label}-{dtype}-{layout}-{kw['size']}-{kw['in_channels']}-"
                                              f"{kw['out_channels']}-s{kw['stride']}-{fused.epilogue}")


@pytest.mark.parametrize("variant,config,shape", list(cases()))
def test_the_documents_step_is_exact(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)


@pytest.mark.parametrize("layout", [ConvLayout.NCHW_VECT_C, ConvLayout.NHWC])
def test_the_documents_step_takes_per_channel_scales_and_other_factors(cuda, data, layout):
    v = CATALOG.get("conv", "cuda", "tc-int8-mma")
    for fused in (Fused(Epilogue.BIAS_RELU_ADD, 0.001953125, -2.0, 0.5, Scaling.CHANNEL),
                  Fused(Epilogue.NONE, scaling=Scaling.CHANNEL)):
        check(cuda, data, v, v.space.configs[0], shape_of(SHAPES[0], DType.INT8_INT8, layout, fused))
    check(cuda, data, v, v.space.configs[0],
          shape_of(SHAPES[1], DType.INT8, layout, Fused(Epilogue.BIAS_RELU_ADD, 3.0, 2.0, -1.0)))
    check(cuda, data, v, v.space.configs[0],
          shape_of(SHAPES[0], DType.INT8_FP32, layout, Fused(Epilogue.BIAS_RELU_ADD, 0.3, 0.7, 1.5)))


@pytest.mark.parametrize("dtype", INT8S)
@pytest.mark.parametrize("layout", [ConvLayout.NHWC, ConvLayout.NCHW_VECT_C])
@pytest.mark.parametrize("fused", [Fused(), Fused(Epilogue.BIAS_RELU_ADD)], ids=["none", "bias-relu-add"])
def test_cudnn_int8_is_exact(cuda, data, dtype, layout, fused):
    """cuDNN's int8 in both layouts, bare and with the document's epilogue: its fused graph, or (the details say
    why) its unfused sequence; a convolution it refuses is a skip with cuDNN's words. NCHW_VECT_C's int8 engines
    all want the filters reordered: the graph reads a copy reordered by cudnnReorderFilterAndBias (cudnn_fused.py,
    cudnn_reorder.py), which the engine's text names. What it runs must be exact."""
    v = CATALOG.get("conv", "cuda", "cudnn")
    prepared = check(cuda, data, v, v.space.configs[0], shape_of(SHAPES[0], dtype, layout, fused), refusal_ok=True)
    reordered = cudnn_reorder.REORDERED in (prepared.details.engine or "")
    assert reordered == (layout == ConvLayout.NCHW_VECT_C), prepared.details.engine
    print(f"{dtype} {layout} {fused.epilogue}: engine {prepared.details.engine}, unfused: {prepared.details.unfused}")


@pytest.mark.parametrize("dtype", [DType.FP16, DType.BF16, DType.FP32])
@pytest.mark.parametrize("epilogue", [Epilogue.BIAS, Epilogue.BIAS_RELU, Epilogue.BIAS_RELU_ADD])
def test_cudnn_fuses_the_epilogue_in_every_precision(cuda, data, dtype, epilogue):
    """fp16 and bf16 in cuDNN's fused graph; fp32 in its unfused sequence (its fused graph not yet verified with the
    TF32 plans left out: fused_conv.py), held to fp32's tolerance either way."""
    v = CATALOG.get("conv", "cuda", "cudnn")
    shape = shape_of(dict(size=23, stride=1, batch=3, in_channels=24, out_channels=40, padding=1), dtype,
                     ConvLayout.NHWC, Fused(epilogue))
    prepared = check(cuda, data, v, v.space.configs[0], shape)
    if dtype == DType.FP32:  # never the TF32 fused graph
        assert prepared.details.unfused == fused_conv.FP32_UNFUSED, prepared.details.unfused
    print(f"{dtype} {epilogue}: engine {prepared.details.engine}, unfused: {prepared.details.unfused}")



# ResNet-50's 3×3 layers (56², 28², 14², 7² at stride 1, and 28² at stride 2) at batch 3, with filters 24 fewer than
# the layer's, a multiple of no BN (40, 104, 232, 488) nor of 16 (the int8 rows' whole chunks: the tail path); C as
# the layer's (64: half a 128-channel slice, the filter box running into the next tap's channels), pixel counts
# that fill no BM (3·56² = 9408, 2352, 588, 147).
RESNET = [dict(size=56, stride=1, batch=3, in_channels=64, out_channels=40, padding=1),
          dict(size=28, stride=1, batch=3, in_channels=128, out_channels=104, padding=1),
          dict(size=14, stride=1, batch=3, in_channels=256, out_channels=232, padding=1),
          dict(size=7, stride=1, batch=3, in_channels=512, out_channels=488, padding=1),
          dict(size=56, stride=2, batch=3, in_channels=128, out_channels=104, padding=1)]


# More tiles than an H200 has SMs (196-392 at 25088 pixels and 144 filters, the last filter tile 16 wide): each
# persistent block walks several tiles, so tc-wgmma-int8's epilogue alternates its two buffers of bias and scales.
MANY_TILES = [dict(size=28, stride=1, batch=32, in_channels=64, out_channels=144, padding=1)]


def wgmma_int8_cases():
    """tc-wgmma-int8 (NHWC): every configuration and output type; the small odd shapes in every epilogue, the ResNet
    layers and a shape of many tiles a block bare and with bias-relu-add."""
    v = CATALOG.get("conv", "cuda", "tc-wgmma-int8")
    for config in v.space.configs:
        for dtype in INT8S:
            for kw, epilogues in [(k, EPILOGUES) for k in SHAPES + NHWC_ONLY] + [(k, EPILOGUES[::3])
                                                                               for k in RESNET + MANY_TILES]:
                for fused in epilogues:
                    yield pytest.param(v, config, shape_of(kw, dtype, ConvLayout.NHWC, fused),
                                       id=f"{config.label}-{dtype}-{kw['size']}-{kw['in_channels']}-"
                                          f"{kw['out_channels']}-s{kw['stride']}-{fused.epilogue}")


@pytest.mark.parametrize("variant,config,shape", list(wgmma_int8_cases()))
def test_the_hopper_int8_kernel_is_exact(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)


@pytest.mark.parametrize("config", CATALOG.get("conv", "cuda", "tc-wgmma-int8").space.configs, ids=lambda c: c.label)
def test_the_hopper_int8_kernel_takes_per_channel_scales_and_other_factors(cuda, data, config):
    v = CATALOG.get("conv", "cuda", "tc-wgmma-int8")
    for fused in (Fused(Epilogue.BIAS_RELU_ADD, 0.001953125, -2.0, 0.5, Scaling.CHANNEL),
                  Fused(Epilogue.NONE, scaling=Scaling.CHANNEL)):
        for kw in (RESNET[2], MANY_TILES[0]):
            check(cuda, data, v, config, shape_of(kw, DType.INT8_INT8, ConvLayout.NHWC, fused))
    check(cuda, data, v, config,
          shape_of(SHAPES[1], DType.INT8, ConvLayout.NHWC, Fused(Epilogue.BIAS_RELU_ADD, 3.0, 2.0, -1.0)))
    check(cuda, data, v, config,
          shape_of(SHAPES[0], DType.INT8_FP32, ConvLayout.NHWC, Fused(Epilogue.BIAS_RELU_ADD, 0.3, 0.7, 1.5)))


def fused_16bit_cases():
    """tc-wgmma-tma with its bias-relu-add compiled in: every configuration, fp16 and bf16, ragged pixel counts,
    filters that fill no tile (40, 72) and K % 8 != 0 (70: no map_y nor map_z, the copy loop stores and z is read
    from global memory). Where K % 8 == 0 the copy engine brings z and the bias into the staging area during the
    tile's slices; 32 images of 28² with 136 filters (the last filter tile 8 wide, its second box of 64 wholly past
    K) make 196-588 tiles, so each persistent block's epilogue barrier runs through several tiles' phases, the split1
    configuration halves the last wave's tiles, and consumers of 128 pixels load a second block's z a tile."""
    v = CATALOG.get("conv", "cuda", "tc-wgmma-tma")
    for config in v.space.configs:
        for dtype in (DType.FP16, DType.BF16):
            for kw in (dict(size=23, stride=1, batch=3, in_channels=24, out_channels=40, padding=1),
                       dict(size=25, stride=2, batch=2, in_channels=40, out_channels=72, padding=1),
                       dict(size=23, stride=1, batch=3, in_channels=24, out_channels=70, padding=1),
                       dict(size=28, stride=1, batch=32, in_channels=64, out_channels=136, padding=1)):
                shape = shape_of(kw, dtype, ConvLayout.NHWC, Fused(Epilogue.BIAS_RELU_ADD))
                yield pytest.param(v, config, shape, id=f"{config.label}-{dtype}-{kw['size']}-k{kw['out_channels']}")


@pytest.mark.parametrize("variant,config,shape", list(fused_16bit_cases()))
def test_the_16bit_kernel_fuses_bias_relu_add(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)
