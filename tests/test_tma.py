"""TMA descriptors: the checks made before the driver is asked to encode one (the encoding itself, and the kernels
that use it, run on a GPU: tests/test_gpu.py)."""

import numpy as np
import pytest

from gpubench.backends.cuda import tma
from gpubench.dtypes import PRECISIONS
from gpubench.errors import Skip


@pytest.mark.parametrize("pointer,cols", [(256, 777), (8, 776)])
def test_rows_that_do_not_start_on_16_bytes_are_a_skip_saying_why(pointer, cols):
    with pytest.raises(Skip, match="TMA needs 16-byte aligned rows"):
        tma.check_tiling("map_a", pointer, cols)


def test_aligned_rows_pass():
    tma.check_tiling("map_a", 256, 776)


@pytest.mark.parametrize("size,cols,ok", [(2, 1000, True), (2, 1001, False), (2, 1004, False), (1, 1008, True),
                                          (1, 1000, False)])
def test_row_alignment_counts_bytes_of_the_element(size, cols, ok):
    if ok:
        tma.check_tiling("map_b", 256, cols, size)
    else:
        with pytest.raises(Skip, match=f"rows of {cols} elements of {size} bytes .* a multiple of {16 // size}"):
            tma.check_tiling("map_b", 256, cols, size)


def test_every_precision_s_arrays_have_a_tensor_map_element_type():
    """A map's element type follows its array (inputs in the storage type, the output in the output type): each
    one the precisions store must have a CUtensorMapDataType of its own size."""
    sizes = {0: 1, 3: 4, 6: 2, 7: 4, 9: 2}  # UINT8, INT32, FLOAT16, FLOAT32, BFLOAT16
    for p in PRECISIONS.values():
        for host in (p.storage, p.output):
            assert sizes[tma.DATA_TYPES[np.dtype(host)]] == np.dtype(host).itemsize, host
