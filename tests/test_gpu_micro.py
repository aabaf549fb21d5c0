"""On a GPU: --graph (a point timed as a CUDA graph of N captured calls, kernels and libraries), --clock both
(CUPTI's kernel times and names beside the events, where cupti-python is installed), and `gpubench ab` finding a
kernel slower than itself with work added."""

from dataclasses import replace

import pytest

from gpubench.core.errors import Skip

from gpubench.execution.tasks import PointTask, run_point
from gpubench.measure.kernel_clock import Clocks
from gpubench.measure.timing import TimingPolicy
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.results import Status
from gpubench.specs.catalog import Catalog

pytestmark = pytest.mark.gpu

POLICY = TimingPolicy(reps=20, min_reps=5, budget_s=0.3)
CATALOG = Catalog.with_user([])


def _point(cuda, data, op, name, shape, policy, block=16):
    variant = next(v for v in CATALOG.variants(op, "cuda") if v.name == name)
    inputs, ref = data(shape)
    return run_point(cuda, shape, PointTask(0, variant, variant.space.configs_for((block,))[0], policy), inputs, ref)


@pytest.mark.parametrize("op, name, shape", [
    ("gemm", "global", GemmShape(256, 256, 256)), ("gemm", "cublas", GemmShape(256, 256, 256)),
    ("conv", "sliding", conv_shape(64, 2)), ("conv", "cudnn", conv_shape(64, 2)), ("conv", "im2col", conv_shape(64, 1)),
])
def test_a_point_timed_as_a_graph_is_verified_recorded_and_per_call(cuda, data, op, name, shape):
    alone = _point(cuda, data, op, name, shape, POLICY)
    if name == "cublas":  # CuPy's cuBLAS calls refuse a capturing stream (seen on an H200): a skip, saying why
        with pytest.raises(Skip, match="cannot be captured in a CUDA graph"):
            _point(cuda, data, op, name, shape, replace(POLICY, graph=10))
        return
    graphed = _point(cuda, data, op, name, shape, replace(POLICY, graph=10))
    assert alone.status == graphed.status == Status.OK, (alone.reason, graphed.reason)
    assert graphed.details.graph == 10 and alone.details.graph is None
    # a call in a graph runs without its launch and warm: never slower than alone by much, never 10× faster
    assert 0.1 * alone.median_ms < graphed.median_ms < 1.5 * alone.median_ms
    assert cuda.launch_stream is None  # every launch back on the legacy stream after the capture


def test_both_clocks_record_each_calls_kernels_and_their_names(cuda, data):
    from gpubench.backends.cuda import cupti_clock

    if cupti_clock.missing():
        pytest.skip(cupti_clock.missing())
    policy = replace(POLICY, clocks=Clocks.BOTH)
    p = _point(cuda, data, "gemm", "cublas", GemmShape(512, 512, 512), policy)
    assert p.status == Status.OK and len(p.details.kernel_ms) == len(p.samples_ms)
    assert p.details.kernels  # cuBLAS's choice, by name
    ratio = sorted(p.samples_ms)[len(p.samples_ms) // 2] / sorted(p.details.kernel_ms)[len(p.details.kernel_ms) // 2]
    assert 0.9 < ratio < 1.5  # the events hold the kernels, and little besides at 512
    g = _point(cuda, data, "gemm", "global", GemmShape(256, 256, 256), replace(policy, graph=10))
    assert g.status == Status.OK and g.details.kernel_ms and g.details.graph == 10


def test_ab_on_the_gpu_finds_no_difference_between_a_kernel_and_itself(cuda):
    """Both sides write one output on one set of inputs, so a kernel against itself is never found slower (the
    threshold here is loose: what ab decides at 0.5% is tools/gpu/micro.py's to show)."""
    import json

    from click.testing import CliRunner

    from gpubench.cli import cli

    r = CliRunner().invoke(cli, ["ab", "global", "global", "--size", "256", "--rounds", "10", "--threshold", "0.05",
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verdict"] == "same" and len(out["ratios"]) == 10
