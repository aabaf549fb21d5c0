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


class Copies(Arrays):
    """What spread() asks of CuPy, on NumPy: its array type, and empty() for the copies."""

    ndarray = np.ndarray


def prepared_on(inputs, calls, capturable=True):
    """A Prepared whose run records which inputs it ran on."""
    from gpubench.backends import Prepared
    released = []
    p = Prepared(run=lambda: calls.append(id(inputs["x"])), output=np.empty(4, dtype=np.float32),
                 release=lambda: released.append(id(inputs["x"])), capturable=capturable)
    return p, released


def test_a_small_call_goes_in_turn_to_every_set_of_its_buffers():
    cp, calls, made, released, pages = Copies(), [], [], [], []
    inputs = {"x": np.arange(64, dtype=np.float32), "n": 64}

    def prepare_on(copies):
        assert copies["n"] == 64 and copies["x"] is not inputs["x"]
        assert np.array_equal(copies["x"], inputs["x"])  # the same values, another place
        p, r = prepared_on(copies, calls)
        made.append(id(copies["x"]))
        pages.append(placement.address(copies["x"]))
        released.append(r)
        return p

    first, first_released = prepared_on(inputs, calls)
    spread = placement.spread(cp, first, inputs, first.output, prepare_on, 8)
    assert spread.details.places == 8 and len(made) == 7
    assert all(start % placement.PAGE == 0 for start in pages)  # each copy starts a page ...
    assert len({start // placement.PAGE for start in pages}) == 7  # ... of its own
    for _ in range(2 * 8):
        spread.run()
    order = [id(inputs["x"])] + made
    assert calls == order + order  # each set in turn, the verified one first
    spread.release()
    assert first_released and all(r for r in released)


@pytest.mark.parametrize("shape, dtype", [((5, 7), np.float16), ((64,), np.float32), ((3, 3, 3), np.int8)])
def test_a_copy_apart_keeps_values_shape_and_type_at_a_page_boundary(shape, dtype):
    cp = Arrays()
    array = np.random.default_rng(1).integers(-100, 100, size=shape).astype(dtype)
    copy = placement.apart(cp, array)
    assert copy.shape == array.shape and copy.dtype == array.dtype and np.array_equal(copy, array)
    assert placement.address(copy) % placement.PAGE == 0
    again = placement.apart(cp, array)
    assert placement.address(again) // placement.PAGE != placement.address(copy) // placement.PAGE


def test_large_or_foreign_calls_are_timed_as_prepared():
    cp, calls = Copies(), []
    big = {"x": np.zeros(placement.SPREAD_BYTES // 4, dtype=np.float32)}
    p, _ = prepared_on(big, calls)
    assert placement.spread(cp, p, big, p.output, lambda c: pytest.fail("no copies of large buffers"), 8) is p
    small = {"x": np.zeros(8, dtype=np.float32)}
    user, _ = prepared_on(small, calls, capturable=False)  # a user's Python function: not ours to repeat
    assert placement.spread(cp, user, small, user.output, lambda c: pytest.fail("no copies"), 8) is user
    assert placement.spread(cp, p, small, p.output, lambda c: pytest.fail("--places 1: no copies"), 1) is p
    assert cp.made == 0


def test_a_point_is_timed_by_the_call_its_backend_spreads_and_records_the_places():
    """run_point asks the backend to spread the verified call (after verification, before timing): every timed
    call goes through what spread returns, and the point's details carry what it records."""
    from dataclasses import replace

    from gpubench.backends import cpu
    from gpubench.execution.tasks import PointTask, run_point
    from gpubench.measure.timing import TimingPolicy
    from gpubench.ops.gemm import GemmShape
    from gpubench.results import Details
    from gpubench.specs.catalog import Catalog

    backend, shape = cpu.CpuBackend(), GemmShape(16, 16, 16)
    variant = next(iter(Catalog.with_user([]).variants("gemm", "cpu")))
    inputs = backend.inputs(shape, 0)
    spread_calls = []

    def spread(variant, config, shape, inputs, prepared, places):
        assert places == 5  # the policy's

        def run():
            spread_calls.append(1)
            prepared.run()
        return replace(prepared, run=run, details=prepared.details.merged(Details(places=3)))

    backend.spread = spread
    policy = TimingPolicy(reps=7, min_reps=5, budget_s=0.0, warmup=0, places=5)
    point = run_point(backend, shape, PointTask(0, variant, variant.space.configs[0], policy), inputs,
                      backend.reference(shape, inputs))
    assert point.details.places == 3
    assert len(spread_calls) >= len(point.samples_ms) >= 5
