"""On a GPU: every attention variant (the hand kernels, cuDNN's SDPA, PyTorch's SDPA backends) in every precision
it declares, on shapes that are multiples of no tile (S of 100, 257, 1000: no multiple of 64), grouped-query heads
and causal or not, verified against the float64 reference with the output poisoned first (tasks.verify). A library
that is missing or refuses a problem must say why (Skip); the test then skips with its words. Then the full-size
problem (S = 16k, the float64 reference in chunks on the device) and large logits, where a softmax without its
running maximum overflows fp16 (and saturates fp8's P, scaled by 448 before its rounding)."""

import math

import pytest

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.ops.attention import AttentionShape
from gpubench.specs import catalog
from gpu_verify import check

pytestmark = pytest.mark.gpu

CATALOG = catalog.Catalog(catalog.builtin())
VARIANTS = CATALOG.variants("attention", "cuda")
RAGGED = [(2, 4, 2, 100, 128, False), (2, 4, 2, 100, 128, True), (1, 6, 1, 257, 128, True),
          (2, 4, 1, 257, 128, False), (1, 2, 2, 1000, 128, False), (1, 8, 2, 1000, 128, True),
          (1, 4, 4, 77, 64, True)]


def cases():
    """Every variant, precision and ragged shape; each configuration of a variant that has several (fa3-wgmma's
    orders, rings and tiles)."""
    for v in VARIANTS:
        for config in v.space.configs:
            tag = f"-{config.label.replace(' ', '-')}" if len(v.space.configs) > 1 else ""
            for dtype in v.scope.dtypes:
                for b, h, hkv, s, d, causal in RAGGED:
                    shape = AttentionShape(b, h, hkv, s, d, causal, dtype=dtype)
                    yield pytest.param(v, config, shape, id=f"{v.name}{tag}-{dtype}-{shape.label.replace(' ', '-')}")


@pytest.mark.parametrize("variant,config,shape", list(cases()))
def test_each_variant_verifies_on_ragged_shapes(cuda, data, variant, config, shape):
    check(cuda, variant, shape, *data(shape), config=config)


@pytest.mark.parametrize("name", ["flash-mma", "fa3-wgmma", "cudnn-sdpa"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_full_size_problem_verifies_against_the_chunked_reference(cuda, name, causal):
    shape = AttentionShape(1, 16, 16, 16384, 128, causal, dtype=DType.BF16)  # B·S = 16k tokens, H = 16
    inputs = cuda.inputs(shape, seed=3)
    check(cuda, CATALOG.get("attention", "cuda", name), shape, inputs, cuda.reference(shape, inputs))


@pytest.mark.parametrize("causal", [False, True])
def test_flash_fp8_verifies_on_the_full_size_problem(cuda, causal):
    """flash-fp8 over 256 key tiles a block: P requantised to e4m3 on every tile and O rescaled as the maximum grows,
    held to the same tolerance as on the ragged shapes."""
    shape = AttentionShape(1, 16, 16, 16384, 128, causal, dtype=DType.FP8)
    inputs = cuda.inputs(shape, seed=3)
    check(cuda, CATALOG.get("attention", "cuda", "flash-fp8"), shape, inputs, cuda.reference(shape, inputs))


FA3 = CATALOG.get("attention", "cuda", "fa3-wgmma")


@pytest.mark.parametrize("config", FA3.space.configs[1:], ids=lambda c: c.label.replace(" ", "-"))
@pytest.mark.parametrize("causal", [False, True])
def test_each_fa3_configuration_verifies_on_the_full_size_problem(cuda, config, causal):
    """The test above runs the first configuration; here the others, fp16: about a hundred key tiles a block go
    round the ring (its phases, KV_SPLIT's separate barriers for K and V, three slots), and S = 16k is a multiple of
    neither 176 nor 192, so the ragged last key tile meets the causal diagonal on full-size data."""
    shape = AttentionShape(1, 16, 16, 16384, 128, causal, dtype=DType.FP16)
    inputs = cuda.inputs(shape, seed=4)
    check(cuda, FA3, shape, inputs, cuda.reference(shape, inputs), config=config)


@pytest.mark.parametrize("name", ["flash-mma", "fa3-wgmma"])
def test_the_hand_kernels_keep_their_running_maximum_at_large_logits(cuda, name):
    """Q and K times 4 (exact in fp16): many scores pass ln(65504) ≈ 11.1, where exp of a raw score overflows a
    16-bit P. With its running maximum the kernel still verifies."""
    shape = AttentionShape(1, 4, 2, 300, 128, True, dtype=DType.FP16)
    inputs = cuda.inputs(shape, seed=5)
    for array in ("Q", "K"):
        inputs[array] *= 4
    ref = cuda.reference(shape, inputs)
    scores = cuda.xp.einsum("hsd,htd->hst", inputs["Q"][0].astype("float32"),
                            inputs["K"][0].repeat(2, axis=0).astype("float32")) / math.sqrt(128)
    assert float(scores.max()) > 11.1  # the data does reach fp16's overflow
    check(cuda, CATALOG.get("attention", "cuda", name), shape, inputs, ref)


def test_flash_fp8_keeps_its_running_maximum_at_large_logits(cuda):
    """Q_scale and K_scale times 4 (the stored bytes unchanged): the logits pass 11 as above. fp8's P is scaled by
    448 before its rounding to e4m3, so that without the running maximum every positive score would saturate it."""
    shape = AttentionShape(1, 4, 2, 300, 128, True, dtype=DType.FP8)
    inputs = cuda.inputs(shape, seed=5)
    for scale in ("Q_scale", "K_scale"):
        inputs[scale] *= 4
    ref = cuda.reference(shape, inputs)
    q, k = (cuda.values64(inputs[a], PRECISIONS[DType.FP8].storage) * cuda.scale(inputs, f"{a}_scale")
            for a in ("Q", "K"))
    scores = cuda.xp.einsum("hsd,htd->hst", q[0], k[0].repeat(2, axis=0)) / math.sqrt(128)
    assert float(scores.max()) > 11.1
    check(cuda, CATALOG.get("attention", "cuda", "flash-fp8"), shape, inputs, ref)
