"""Every CUDA variant × configuration against the float64 reference at ragged shapes (needs a GPU)."""

import math

import pytest

from gpubench import registry
from gpubench.problems import GemmShape, conv_shape
from gpubench.sweep import verify

pytestmark = pytest.mark.gpu

GEMM_SHAPES = [GemmShape(1000, 1500, 777), GemmShape(1, 512, 300), GemmShape(8191, 65, 129), GemmShape(33, 1, 7)]
CONV_SHAPES = [
    conv_shape(1000, 1), conv_shape(777, 2), conv_shape(1000, 3),  # the lab's shape, SAME padding
    conv_shape(33, 1, batch=2, in_channels=64, out_channels=32),
    conv_shape(29, 2, batch=3, in_channels=3, out_channels=32, kernel=5, padding=2),
    conv_shape(20, 1, batch=2, in_channels=64, out_channels=1, kernel=1, padding="valid"),
    conv_shape(17, 3, batch=1, in_channels=5, out_channels=7, kernel=5, padding="same"),
]


def cases(op, shapes):
    for v in registry.variants(op, "cuda"):
        for c in v.configs_for(registry.LAB_BLOCK_SIZES):
            for s in shapes:
                yield pytest.param(v, c, s, id=f"{v.name}-{c.label}-{s.label}-s{getattr(s, 'stride', '')}")


@pytest.fixture(scope="module")
def data(cuda):
    """Inputs and references drawn once per shape (fresh random data, seeded per shape)."""
    cache = {}

    def get(shape):
        if shape not in cache:
            inputs = cuda.inputs(shape, seed=len(cache) + 11)
            cache[shape] = (inputs, cuda.reference(shape, inputs))
        return cache[shape]

    return get


def check(cuda, data, variant, config, shape):
    inputs, ref = data(shape)
    prepared = cuda.prepare(variant, config, shape, inputs)
    err = verify(cuda, prepared, ref)
    assert math.isfinite(err), f"{variant.name} {config.label} {shape}: NaN/unwritten output"
    assert err <= cuda.tolerance(variant), f"{variant.name} {config.label} {shape}: rel_err {err:.2e}"
    prepared.release()


@pytest.mark.parametrize("variant,config,shape", list(cases("gemm", GEMM_SHAPES)))
def test_gemm(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)


@pytest.mark.parametrize("variant,config,shape", list(cases("conv", CONV_SHAPES)))
def test_conv(cuda, data, variant, config, shape):
    check(cuda, data, variant, config, shape)


def test_poisoned_output_fails_verification(cuda, data):
    """The check itself can fail: a run that writes nothing leaves NaN, which never passes."""
    shape = GEMM_SHAPES[0]
    inputs, ref = data(shape)
    prepared = cuda.prepare(registry.get("gemm", "cuda", "tiled"), registry.TILED_CONFIGS[0], shape, inputs)
    prepared.run = lambda: None
    assert verify(cuda, prepared, ref) == math.inf
