"""Small inputs are placed where their lines answer soonest (gpubench/backends/cuda/placement.py), on NumPy."""

import numpy as np
import pytest

from gpubench.backends.cuda import placement


class Arrays:
    """The two things place() asks of CuPy, on NumPy: empty() and a .data.ptr on the arrays it makes."""

    def __init__(self):
        self.made = 0
        self.uint8 = np.uint8

    def empty(self, n, dtype):
        self.made += 1
        return np.empty(n, dtype=dtype)


@pytest.mark.parametrize("nbytes", [4, 36, 128, 4096, 5000, 65536])
def test_the_chain_stays_inside_the_buffer_and_on_distinct_lines(nbytes):
    lines, step = placement.chain_shape(nbytes)
    assert 1 <= lines <= placement.MAX_LINES
    assert (lines - 1) * step < nbytes
    assert lines == 1 or step >= 128


def test_the_fastest_place_is_kept_with_the_same_values():
    cp, array = Arrays(), np.arange(24, dtype=np.float32).reshape(4, 6)
    answers = iter([7.0, 6.9, 6.0, 6.8])  # the third place tried is the near one
    placed, tried = placement.place(cp, array, lambda a: next(answers))
    assert tried == [7.0, 6.9, 6.0, 6.8] and cp.made == placement.CANDIDATES - 1
    assert placed is not array and placed.shape == array.shape and placed.dtype == array.dtype
    assert np.array_equal(placed, array)


def test_the_array_itself_is_kept_when_it_is_already_nearest():
    cp, array = Arrays(), np.ones(16, dtype=np.int8)
    answers = iter([5.0, 6.0, 6.0, 6.0])
    placed, _ = placement.place(cp, array, lambda a: next(answers))
    assert placed is array


def test_large_inputs_are_left_where_they_are():
    cp, array = Arrays(), np.zeros(placement.SMALL_BYTES // 4 + 1, dtype=np.float32)
    placed, tried = placement.place(cp, array, lambda a: pytest.fail("a large input is never probed"))
    assert placed is array and tried == [] and cp.made == 0


def test_candidates_lie_in_distinct_address_blocks():
    """Each candidate is its own allocation of at least two blocks of the hash, so none shares the array's."""
    cp, array = Arrays(), np.ones(10, dtype=np.float32)
    sizes = []
    real_empty = cp.empty
    cp.empty = lambda n, dtype: sizes.append(n) or real_empty(n, dtype)
    placement.place(cp, array, lambda a: 1.0)
    assert sizes and all(n >= 2 * placement.SPACING for n in sizes)
