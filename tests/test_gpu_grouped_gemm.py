"""On a GPU: every grouped GEMM variant (torch's grouped products, the per-group cuBLAS / cuBLASLt loop) in every
precision and layout it declares, on ragged groups (an empty group, counts that are multiples of no tile) and on
sizes the libraries' fp8 paths take (multiples of 16), verified against the exact float64 reference with the output
poisoned first; rows of no group are not checked. A library that refuses says why (Skip) and the test skips with
its words. The hand-written kernels are checked in every configuration, also on more groups than its scheduler scans
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


KERNELS = [CATALOG.get("grouped-gemm", "cuda", name) for name in ("wgmma-grouped", "fp8-grouped")]
# 70 groups (the kernels' walk scans 32 groups a step), every fifth empty, the others of 9 to 296 rows (ragged); K of
# 208 and 144: a last scale block of 80 and 16 k (fp8 takes multiples of 16); K of 112: a tile of one slot, which the
# two-accumulator loop (a2) takes by a path of its own; groups of 2,500 and 3,000 rows (20 and 24 row blocks of 128):
# more than one band of 16 row blocks (g16; c2 g8's bands of 8 units of 256 rows are as tall), the last band partial
MANY = tuple(0 if g % 5 == 0 else 37 * g % 300 for g in range(70))
KERNEL_SIZES = [(m, n, k, 0) for m, n, k in SIZES] + [(MANY, 264, 208, 0), ((100, 0, 77, 130), 200, 144, 150),
                                                      ((3, 129, 0, 250), 136, 112, 0), ((2500, 0, 3000), 264, 144, 0)]


def kernel_cases():
    """Every configuration, precision and layout on the ragged sizes; m_max = 150 (the masked layouts only): slabs
    that start at rows no tile's height divides, a group's last tile running into the next slab."""
    for v in KERNELS:
        for config in v.space.configs:
            for dtype in v.scope.dtypes:
                for layout in v.scope.layouts:
                    for group_m, n, k, m_max in KERNEL_SIZES:
                        if m_max and not layout.masked:
                            continue
                        shape = GroupedShape(group_m, n, k, m_max, dtype=dtype, layout=layout)
                        yield pytest.param(v, config, shape,
                                           id=f"{v.name}-{config.label}-{shape.full_label}".replace(" ", "-"))


@pytest.mark.parametrize("variant,config,shape", list(kernel_cases()))
def test_the_grouped_kernels_verify_in_every_configuration(cuda, data, variant, config, shape):
    check(cuda, variant, shape, *data(shape), config=config, unwritten="NaN in a group's rows")
