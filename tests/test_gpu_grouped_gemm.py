"""On a GPU: every grouped GEMM variant (torch's grouped products, the per-group cuBLAS / cuBLASLt loop) in every
precision and layout it declares, on ragged groups (an empty group, counts that are multiples of no tile) and on
sizes the libraries' fp8 paths take (multiples of 16), verified against the exact float64 reference with the output
poisoned first; rows of no group are not checked. A library that refuses says why (Skip) and the test skips with
its words."""

import math

import pytest

from gpubench.core.errors import Skip
from gpubench.execution.tasks import verify
from gpubench.ops.grouped_gemm import GroupedShape
from gpubench.specs import catalog

pytestmark = pytest.mark.gpu

CATALOG = catalog.Catalog(catalog.builtin())
SIZES = [((100, 0, 77, 130), 200, 136), ((96, 0, 160, 48), 256, 384), ((1000, 700), 4096, 7168)]


def cases():
    for v in CATALOG.variants("grouped-gemm", "cuda"):
        for dtype in v.scope.dtypes:
            for layout in v.scope.layouts:
                for group_m, n, k in SIZES:
                    shape = GroupedShape(group_m, n, k, dtype=dtype, layout=layout)
                    yield pytest.param(v, shape, id=f"{v.name}-{shape.full_label.replace(' ', '-')}")


@pytest.mark.parametrize("variant,shape", list(cases()))
def test_each_variant_verifies_on_ragged_groups(cuda, data, variant, shape):
    inputs, ref = data(shape)
    try:
        prepared = cuda.prepare(variant, variant.space.configs[0], shape, inputs)
    except Skip as why:
        assert str(why), "a refusal says why"
        pytest.skip(f"{variant.name} refused {shape.full_label}: {why}")
    try:
        err = verify(cuda, prepared, ref, shape)
    finally:
        prepared.release()
    assert math.isfinite(err), f"{variant.name} {shape.full_label}: NaN in a group's rows"
    tol = cuda.tolerance(variant, shape)
    assert err <= tol, f"{variant.name} {shape.full_label}: rel_err {err:.2e} over {tol:.2e}"
