"""The CPU backend (gpubench/backends/cpu.py): its own reading of the machine, and NumPy variants that accumulate
as the kernels they stand in for."""

import gc
import warnings

import numpy as np
import pytest

from gpubench.backends import cpu
from gpubench.core.dtypes import DType, tolerance
from gpubench.ops.conv import ConvShape
from gpubench.ops.gemm import GemmShape
from gpubench.specs import catalog
from gpubench.specs.variant import NO_CONFIG


def test_reading_proc_leaves_no_file_open():
    """Under PYTHONWARNINGS=error (or -X dev) a file left to the collector printed "Exception ignored ...
    ResourceWarning" with a traceback into every run's output."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name, free = cpu._cpu_name(), cpu._available_bytes()
        gc.collect()
    assert name and (free is None or free > 0)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


# --- the NumPy variants accumulate in float32, as the kernels they stand in for do ------------------------------


@pytest.mark.parametrize("op,name,shape", [("gemm", "numpy", GemmShape(64, 64, 2048)),
                                           ("conv", "sliding", ConvShape(1, 64, 8, 16, 16, 3, 1, 1)),
                                           ("conv", "im2col", ConvShape(1, 64, 8, 16, 16, 3, 1, 1))],
                         ids=["gemm", "sliding", "im2col"])
def test_fp32_sums_are_accumulated_in_float32_not_float64(op, name, shape):
    """Every accuracy check bounds the error from above, so a CPU variant that summed in float64 would pass them
    all while measuring something no fp32 kernel computes. Summed in float64 and rounded once, nearly every output
    would be the float64 reference rounded to float32 (the sum of float32 products is exact to ~1e-16); summed in
    float32, the partial sums' roundings leave most outputs an ulp or more away, an error of float32's size."""
    backend = cpu.CpuBackend()
    variant = catalog.Catalog(catalog.builtin()).get(op, "cpu", name)
    inputs = backend.inputs(shape, seed=5)
    ref = backend.reference(shape, inputs)
    configs = variant.space.configs
    prepared = backend.prepare(variant, configs[0] if configs else NO_CONFIG, shape, inputs)
    prepared.run()
    out = np.asarray(prepared.output, dtype=np.float64)
    correctly_rounded = np.mean(out.ravel() == ref.astype(np.float32).astype(np.float64).ravel())
    assert correctly_rounded < 0.5, f"{correctly_rounded:.0%} of the outputs are the float64 sum rounded once"
    err = backend.rel_err(prepared.output, ref, shape)
    assert 2 ** -24 < err < tolerance(DType.FP32, shape.reduction, shape.output_elems)
