"""The sweep engine: points are saved as they finish; skips, errors and Ctrl-C never lose finished work."""

import pytest

from gpubench import registry, results
from gpubench.backends import Skip
from gpubench.backends.cpu import CpuBackend
from gpubench.problems import GemmShape
from gpubench.results import Run, RunWriter
from gpubench.sweep import Sweep, run_sweeps
from gpubench.timing import TimingPolicy

FAST = TimingPolicy(warmup=0, reps=2, min_reps=2)


def sweep(sizes):
    return Sweep("t", "gemm", registry.select("gemm", "cpu", None), [GemmShape(s, s, s) for s in sizes], (16,),
                 FAST)


def writer(tmp_path):
    return RunWriter(Run(backend="cpu", environment={}, settings={}), tmp_path / "r.json")


class Flaky(CpuBackend):
    """Behaves like the CPU backend except at chosen shapes."""

    def __init__(self, skip=(), error=(), interrupt=(), oom=()):
        self.skip, self.error, self.interrupt, self.oom = skip, error, interrupt, oom

    def inputs(self, shape, seed):
        if shape.m in self.oom:
            raise Skip("the inputs would not fit in device memory (0.1 GiB free)")
        return super().inputs(shape, seed)

    def prepare(self, variant, config, shape, inputs):
        if shape.m in self.skip:
            raise Skip("not launchable here")
        if shape.m in self.error:
            raise RuntimeError("illegal memory access\nsecond line")
        if shape.m in self.interrupt:
            raise KeyboardInterrupt
        return super().prepare(variant, config, shape, inputs)


def test_skips_and_errors_are_recorded_and_the_sweep_goes_on(tmp_path):
    w = writer(tmp_path)
    status = run_sweeps(Flaky(skip=(16,), error=(24,), oom=(40,)), [sweep([16, 24, 32, 40])], w, seed=0)
    assert status == "complete"
    saved = results.load(tmp_path / "r.json")
    assert [(p.params["m"], p.status) for p in saved.points] == [(16, "skipped"), (24, "error"), (32, "ok"),
                                                                   (40, "skipped")]
    assert saved.points[0].reason == "not launchable here"
    assert saved.points[1].reason == "RuntimeError: illegal memory access"
    assert "would not fit in device memory" in saved.points[3].reason
    assert saved.status == "complete"


def test_ctrl_c_keeps_the_finished_points(tmp_path):
    w = writer(tmp_path)
    status = run_sweeps(Flaky(interrupt=(48,)), [sweep([16, 32, 48, 64])], w, seed=0)
    assert status == "interrupted"
    saved = results.load(tmp_path / "r.json")
    assert saved.status == "interrupted"
    assert [p.params["m"] for p in saved.points] == [16, 32]


def test_points_follow_sweep_order_and_each_gets_fresh_inputs(tmp_path):
    seen = []

    class Recording(CpuBackend):
        def inputs(self, shape, seed):
            seen.append(seed)
            return super().inputs(shape, seed)

    s = Sweep("t", "conv", registry.select("conv", "cpu", None), [], (16,), FAST)
    from gpubench.problems import conv_shape

    s.shapes = [conv_shape(20, 1), conv_shape(20, 2)]
    run_sweeps(Recording(), [s], writer(tmp_path), seed=5)
    saved = results.load(tmp_path / "r.json")
    assert [(p.variant, p.params["stride"]) for p in saved.points] == [("sliding", 1), ("im2col", 1), ("sliding", 2),
                                                                       ("im2col", 2)]
    assert seen == [5, 6]
    assert all(p.status == "ok" for p in saved.points)


def test_inputs_are_random_not_zero(cpu):
    x = cpu.inputs(GemmShape(64, 64, 64), seed=1)["a"]
    assert x.min() < -0.5 and x.max() > 0.5 and abs(float(x.mean())) < 0.1
    assert not (cpu.inputs(GemmShape(64, 64, 64), seed=2)["a"] == x).all()


def test_sweep_length_counts_block_configs():
    s = Sweep("t", "gemm", registry.select("gemm", "cuda", None), [GemmShape(64, 64, 64)], (8, 16), FAST)
    # global and shared × 2 block sizes, tiled × 2 tile configs, cublas × 1
    assert len(s) == 2 * 2 + len(registry.TILED_CONFIGS) + 1


@pytest.mark.parametrize("op", ["gemm", "conv"])
def test_cpu_variants_pass_their_own_check(cpu, op):
    from gpubench.problems import conv_shape
    from gpubench.sweep import verify

    shape = GemmShape(33, 17, 9) if op == "gemm" else conv_shape(17, 2, batch=2, in_channels=3, out_channels=4)
    inputs = cpu.inputs(shape, 0)
    ref = cpu.reference(shape, inputs)
    for v in registry.variants(op, "cpu"):
        assert verify(cpu, cpu.prepare(v, registry.NO_CONFIG, shape, inputs), ref) < 1e-5
