"""One GPU test's check, shared by the op test files: a variant prepared on a problem (skipped, saying why, where it
does not fit or refuses it), its output verified against the reference, and rel_err held to the variant's
tolerance. Returns the rel_err."""

import math

import pytest

from gpubench.core.errors import Skip
from gpubench.execution.tasks import verify


def check(cuda, variant, shape, inputs, ref, config=None, unwritten="NaN or unwritten output"):
    unfit = variant.scope.unfit(shape.dims())
    if unfit:
        pytest.skip(f"{variant.name} {unfit}")
    try:
        prepared = cuda.prepare(variant, config or variant.space.configs[0], shape, inputs)
    except Skip as why:
        assert str(why), "a refusal says why"
        pytest.skip(f"{variant.name} refused {shape.full_label}: {why}")
    try:
        err = verify(cuda, prepared, ref, shape)
    finally:
        prepared.release()
    assert math.isfinite(err), f"{variant.name} {shape.full_label}: {unwritten}"
    tol = cuda.tolerance(variant, shape)
    assert err <= tol, f"{variant.name} {shape.full_label}: rel_err {err:.2e} over {tol:.2e}"
    return err
