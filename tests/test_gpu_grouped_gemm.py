"""On a GPU: every grouped GEMM variant (torch's grouped products, the per-group cuBLAS / cuBLASLt loop) in every
precision and layout it declares, on ragged groups (an empty group, counts that are multiples of no tile) and on
sizes the libraries' fp8 paths take (multiples of 16), verified against the exact float64 reference with the output
poisoned first; rows of no group are not checked. A library that refuses says why (Skip) and the test skips with
its words."""


import pytest

from gpubench.ops.grouped_gemm import GroupedShape
from gpubench.specs import catalog
from gpu_verify import check

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
    check(cuda, variant, shape, *data(shape), unwritten="NaN in a group's rows")
