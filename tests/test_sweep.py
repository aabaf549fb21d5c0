"""Sweeps become tasks with every configuration resolved before anything runs; finished points are saved as they
come and Ctrl-C keeps them."""

import pytest

from gpubench import results
from gpubench.specs import catalog
from gpubench.execution import sweep
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.results import Details, Point, Run, RunWriter, Status
from gpubench.execution.sweep import Sweep
from gpubench.measure.timing import TimingPolicy
from gpubench.specs.variant import Axis

FAST = TimingPolicy(warmup=0, reps=5, min_reps=5)
CATALOG = catalog.Catalog(catalog.builtin())


def test_length_counts_block_and_tile_configurations():
    s = Sweep("t", "gemm", CATALOG.select("gemm", "cuda", None), [GemmShape(64, 64, 64)], (8, 16), FAST)
    # global and shared × 2 block sizes, tiled × 2 tile configs, cublas × 1
    assert len(s) == 2 * 2 + 2 + 1


def test_one_task_per_shape_seeded_by_its_index_in_sweep_order():
    s = Sweep("t", "conv", CATALOG.select("conv", "cpu", None), [conv_shape(20, 1), conv_shape(20, 2)], (16,), FAST)
    work = sweep.tasks([s], seed=5)
    assert [t.seed for t in work] == [5, 6]
    assert [[p.variant.name for p in t.points] for t in work] == [["sliding", "im2col"]] * 2
    assert [p.index for p in work[0].points] == [0, 1]


def test_tuned_configurations_are_resolved_before_the_backend_sees_them():
    tuned = CATALOG.get("gemm", "cuda", "tuned")
    assert tuned.space.axis == Axis.TUNED
    s = Sweep("t", "gemm", [tuned, CATALOG.get("gemm", "cuda", "tiled")], [GemmShape(64, 64, 64)], (16,), FAST)
    chosen = tuned.space.config({**tuned.space.configs[0].values, "BM": 256})

    def resolve(variant, shape, config):
        return (chosen, Details(tuned=True)) if variant.space.axis == Axis.TUNED else (config, Details())

    (task,) = sweep.tasks([s], 0, resolve)
    assert task.points[0].config == chosen and task.points[0].note == Details(tuned=True)
    assert task.points[1].config.label == "128x128x8/8x8"


class Replay:
    """An executor that reports prepared points, then maybe a Ctrl-C."""

    def __init__(self, n, interrupt_after=None):
        self.n, self.interrupt_after = n, interrupt_after

    def run_all(self, work, on_point):
        for i in range(self.n):
            if i == self.interrupt_after:
                raise KeyboardInterrupt
            on_point(Point(GemmShape(i + 1, 1, 1), "numpy", "-", Status.SKIPPED, reason="test"))


def test_every_point_is_on_disk_when_it_is_reported(tmp_path):
    writer = RunWriter(Run(backend="cpu", environment={}, settings={}), tmp_path / "r.json")
    seen = []
    status = sweep.run(Replay(3), [], writer, on_point=lambda p: seen.append(len(results.load(tmp_path / "r.json")
                                                                                      .points)))
    assert status == "complete" and seen == [1, 2, 3]
    assert results.load(tmp_path / "r.json").status == "complete"


def test_ctrl_c_keeps_the_finished_points(tmp_path):
    writer = RunWriter(Run(backend="cpu", environment={}, settings={}), tmp_path / "r.json")
    with pytest.raises(KeyboardInterrupt):
        sweep.run(Replay(5, interrupt_after=2), [], writer)
    saved = results.load(tmp_path / "r.json")
    assert saved.status == "interrupted" and [p.problem.m for p in saved.points] == [1, 2]
