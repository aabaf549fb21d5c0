"""TMA descriptors: the checks made before the driver is asked to encode one (the encoding itself, and the kernels
that use it, run on a GPU: tests/test_gpu.py)."""

import pytest

from gpubench.backends.cuda import tma
from gpubench.errors import Skip


@pytest.mark.parametrize("pointer,cols", [(256, 777), (8, 776)])
def test_rows_that_do_not_start_on_16_bytes_are_a_skip_saying_why(pointer, cols):
    with pytest.raises(Skip, match="TMA needs 16-byte aligned rows"):
        tma.check_tiling("map_a", pointer, cols)


def test_aligned_rows_pass():
    tma.check_tiling("map_a", 256, 776)
