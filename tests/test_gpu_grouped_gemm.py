"""On a GPU: every grouped GEMM variant (torch's grouped products, the per-group cuBLAS / cuBLASLt loop) in every
precision and layout it declares, on ragged groups (an empty group, counts that are multiples of no tile) and on
sizes the libraries' fp8 paths take (multiples of 16), verified against the exact float64 reference with the output
poisoned first; rows of no group are not checked. A library that refuses says why (Skip) and the test skips with
its words. The hand-written kernel is checked in every configuration, also on more groups than its scheduler scans
at once and on masked slabs that no tile divides."""


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


KERNEL = CATALOG.get("grouped-gemm", "cuda", "wgmma-grouped")
# 70 groups (the kernel's walk scans 32 groups a step), every fifth empty, the others of 9 to 296 rows (ragged)
MANY = tuple(0 if g % 5 == 0 else 37 * g % 300 for g in range(70))
KERNEL_SIZES = [(m, n, k, 0) for m, n, k in SIZES] + [(MANY, 264, 200, 0), ((100, 0, 77, 130), 200, 136, 150)]


def kernel_cases():
    """Every configuration, precision and layout on the ragged sizes; m_max = 150: masked slabs that start at rows
    no tile's height divides, a group's last tile running into the next slab (in the contiguous layout, m_max is
    not used)."""
    for config in KERNEL.space.configs:
        for dtype in KERNEL.scope.dtypes:
            for layout in KERNEL.scope.layouts:
                for group_m, n, k, m_max in KERNEL_SIZES:
                    if m_max and layout != "masked":
                        continue
                    shape = GroupedShape(group_m, n, k, m_max, dtype=dtype, layout=layout)
                    yield pytest.param(config, shape, id=f"{config.label}-{shape.full_label}".replace(" ", "-"))


@pytest.mark.parametrize("config,shape", list(kernel_cases()))
def test_the_grouped_kernel_verifies_in_every_configuration(cuda, data, config, shape):
    check(cuda, KERNEL, shape, *data(shape), config=config, unwritten="NaN in a group's rows")
