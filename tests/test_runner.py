"""Running one shape's points inside a worker: skips, errors and unhealthy backends are events, not crashes."""

import pytest

from gpubench.specs import catalog
from gpubench.specs import files
from gpubench.backends.cpu import CpuBackend
from gpubench.core.errors import Skip
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.execution.messages import Begin, Broken, Finished
from gpubench.execution.tasks import SETUP, PointTask, ShapeTask, run_task, verify
from gpubench.measure.timing import Stop, TimingPolicy
from gpubench.specs.variant import NO_CONFIG

FAST = TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=0.0)
CATALOG = catalog.Catalog(catalog.builtin())


def task(shape, names=("numpy",), op="gemm", seed=0):
    points = tuple(PointTask(i, CATALOG.get(op, "cpu", n), NO_CONFIG, FAST) for i, n in enumerate(names))
    return ShapeTask("t", shape, seed, points)


class Flaky(CpuBackend):
    """The CPU backend, except where told otherwise."""

    def __init__(self, skip_inputs=False, raise_in=None, sick=False, error=None):
        super().__init__()
        self.skip_inputs, self.raise_in, self.sick = skip_inputs, raise_in, sick
        self.error = error or RuntimeError("illegal memory access\nsecond line")

    def inputs(self, shape, seed):
        if self.skip_inputs:
            raise Skip("the inputs would not fit in device memory (0.1 GiB free)")
        return super().inputs(shape, seed)

    def prepare(self, variant, config, shape, inputs):
        if self.raise_in == variant.name:
            raise self.error
        return super().prepare(variant, config, shape, inputs)

    def healthy(self):
        return not self.sick


class Searching(Flaky):
    """A backend whose every point searches a library's plans where `due` (as cuDNN's `cudnn` does where no choice
    is kept), counting the searches in prepare."""

    def __init__(self, due=True, **kw):
        super().__init__(**kw)
        self.due, self.plan_searches = due, 0

    def plan_search_due(self, variant, shape):
        return self.due

    def prepare(self, variant, config, shape, inputs):
        prepared = super().prepare(variant, config, shape, inputs)
        self.plan_searches += 1
        return prepared


def test_events_say_what_runs_and_what_finished():
    events = list(run_task(CpuBackend(), task(GemmShape(20, 30, 40))))
    assert [type(e) for e in events] == [Begin, Begin, Finished]
    assert events[0] == Begin(SETUP) and events[1] == Begin(0)
    point = events[2].point
    assert point.status == "ok" and point.rel_err < 1e-5 and len(point.samples_ms) == 5
    assert point.details.stop in (Stop.BUDGET, Stop.REPS) and point.details.flushed is False


def test_a_shape_that_does_not_fit_skips_all_its_points_with_the_reason():
    events = list(run_task(Flaky(skip_inputs=True), task(conv_shape(20, 1), ("sliding", "im2col"), op="conv")))
    points = [e.point for e in events if isinstance(e, Finished)]
    assert [p.status for p in points] == ["skipped", "skipped"]
    assert "would not fit in device memory" in points[0].reason


def test_an_error_is_recorded_and_the_next_point_runs():
    events = list(run_task(Flaky(raise_in="sliding"), task(conv_shape(20, 2), ("sliding", "im2col"), op="conv")))
    points = [e.point for e in events if isinstance(e, Finished)]
    assert [(p.variant, p.status) for p in points] == [("sliding", "error"), ("im2col", "ok")]
    assert points[0].reason == "RuntimeError: illegal memory access"


class Unsayable(Exception):
    def __str__(self):
        raise ValueError("a user's __str__ that raises")


@pytest.mark.parametrize("error, reason", [
    (KeyboardInterrupt(), "KeyboardInterrupt: "),  # a user's function raising what Ctrl-C raises (the worker
    (BaseException("bare"), "BaseException: bare"),  # takes no signal of its own), or a bare BaseException
    (Unsayable(), "Unsayable: (its message could not be read)"),
    (RuntimeError("\x1b[31mred\x00\ud800"), "RuntimeError: \\x1b[31mred\\x00\\ud800"),  # printable, UTF-8
])
def test_whatever_a_users_function_raises_is_the_points_error_and_the_next_point_runs(error, reason):
    from gpubench.execution.tasks import first_call

    shapes = task(conv_shape(20, 2), ("sliding", "im2col"), op="conv")
    assert [type(e) for e in first_call(Searching(raise_in="sliding", error=error), shapes)] == [Begin, Begin]
    points = [e.point for e in run_task(Flaky(raise_in="sliding", error=error), shapes) if isinstance(e, Finished)]
    assert [(p.variant, p.status) for p in points] == [("sliding", "error"), ("im2col", "ok")]
    assert points[0].reason == reason and points[0].reason.encode()


def test_a_reason_is_one_printable_line_of_bounded_length():
    from gpubench.results.model import MAX_REASON, Point, Status

    point = Point(GemmShape(2, 2, 2), "v", "-", Status.ERROR, reason="RuntimeError: " + "x" * 10**6)
    assert len(point.reason) == MAX_REASON and point.reason.endswith("…")
    assert Point(GemmShape(2, 2, 2), "v", "-", Status.ERROR, reason="a\nb\x00").reason == "a b\\x00"


def test_an_unhealthy_backend_stops_after_recording_the_point():
    events = list(run_task(Flaky(raise_in="sliding", sick=True),
                           task(conv_shape(20, 2), ("sliding", "im2col"), op="conv")))
    assert [type(e) for e in events] == [Begin, Begin, Finished, Broken]
    assert events[2].point.status == "error" and "illegal memory access" in events[3].reason


def test_inputs_are_random_not_zero_and_follow_the_seed(cpu):
    x = cpu.inputs(GemmShape(64, 64, 64), seed=1)["A"]
    assert x.min() < -0.5 and x.max() > 0.5 and abs(float(x.mean())) < 0.1
    assert not (cpu.inputs(GemmShape(64, 64, 64), seed=2)["A"] == x).all()


@pytest.mark.parametrize("op", ["gemm", "conv"])
def test_cpu_variants_pass_their_own_check(cpu, op):
    shape = GemmShape(33, 17, 9) if op == "gemm" else conv_shape(17, 2, batch=2, in_channels=3, out_channels=4)
    inputs = cpu.inputs(shape, 0)
    ref = cpu.reference(shape, inputs)
    for v in CATALOG.variants(op, "cpu"):
        assert verify(cpu, cpu.prepare(v, NO_CONFIG, shape, inputs), ref, shape) < 1e-5


def test_a_point_that_writes_nothing_fails_verification(cpu):
    shape = GemmShape(16, 16, 16)
    inputs = cpu.inputs(shape, 0)
    prepared = cpu.prepare(CATALOG.get("gemm", "cpu", "numpy"), NO_CONFIG, shape, inputs)
    prepared.run = lambda: None
    assert verify(cpu, prepared, cpu.reference(shape, inputs), shape) == float("inf")


def test_cpu_memory_is_checked_before_allocating(cpu):
    with pytest.raises(Skip, match="would not fit in host memory"):
        cpu.inputs(GemmShape(99999999, 99999999, 99999999), 0)


def test_a_problem_outside_a_variants_requires_is_skipped_saying_why(tmp_path):
    (tmp_path / "f.py").write_text("def f(x, w, y, N, C, H, W, K, R, S, stride, pad, OH, OW):\n    y[...] = 0\n")
    table = {"name": "s1-only", "op": "conv", "source": "f.py", "kernel": "f", "requires": ["stride == 1"],
             "args": ["x", "w", "y", "N", "C", "H", "W", "K", "R", "S", "stride", "pad", "OH", "OW"]}
    (mine,) = files.parse_specs({"variant": [table]}, "gpubench.toml", tmp_path)
    shape = conv_shape(20, 2)
    events = list(run_task(CpuBackend(), ShapeTask("t", shape, 0, (PointTask(0, mine, NO_CONFIG, FAST),))))
    (point,) = [e.point for e in events if isinstance(e, Finished)]
    assert (point.status, point.reason) == ("skipped", "s1-only requires stride == 1")


class WithPart(CpuBackend):
    """The CPU backend, with a sub-step whose calls are counted (as im2col's unfold is on the GPU)."""

    def __init__(self):
        super().__init__()
        self.part_calls = 0

    def prepare(self, variant, config, shape, inputs):
        prepared = super().prepare(variant, config, shape, inputs)

        def part():
            self.part_calls += 1

        prepared.parts["unfold"] = part
        return prepared


def test_a_part_is_timed_with_its_few_repetitions_even_when_the_point_samples_until_decidable():
    from dataclasses import replace

    from gpubench.execution.tasks import PART_POLICY_REPS

    backend = WithPart()
    policy = TimingPolicy(warmup=0, reps=5, min_reps=5, budget_s=0.0, decide=0.0001, family=1000, max_time_s=0.3)
    t = task(GemmShape(20, 30, 40))
    t = ShapeTask(t.sweep, t.shape, t.seed, tuple(replace(p, policy=policy) for p in t.points))
    point = [e.point for e in run_task(backend, t) if isinstance(e, Finished)][0]
    assert "unfold" in point.details.parts_ms
    assert backend.part_calls <= PART_POLICY_REPS + 1  # its median is a note: no sampling on to decide


def test_the_first_call_of_each_python_variant_configuration_precision_and_layout_is_made_before_the_sweep():
    from gpubench.core.dtypes import DType
    from gpubench.ops.gemm import GemmLayout
    from gpubench.execution.tasks import first_call_key, first_calls, with_first_calls
    from gpubench.specs.runners import PythonRunner
    from gpubench.specs.variant import Code, Config, Program, Variant

    mine = Variant(name="mine", op="gemm", backend="cpu",
                   code=Code(PythonRunner(), Program(kernel="f", args=("A", "B", "C", "M", "N", "K"))))
    builtin = next(v for v in catalog.builtin() if v.name == "numpy")
    shapes = [GemmShape(16, 16, 16), GemmShape(24, 24, 24), GemmShape(16, 16, 16, dtype=DType.BF16),
              GemmShape(16, 16, 16, layout=GemmLayout.NT)]
    configs = [Config("a", (("T", 1),)), Config("b", (("T", 2),))]
    work = [ShapeTask("s", shape, i, tuple(PointTask(j, v, c, TimingPolicy())
                                             for j, (v, c) in enumerate([(builtin, builtin.space.configs[0]),
                                                                         (mine, configs[0]), (mine, configs[1])])))
            for i, shape in enumerate(shapes)]
    firsts = first_calls(work)
    # the numpy variant compiles nothing; mine once per configuration at the first size of each precision and layout
    assert [(t.shape, t.points[0].config.label) for t in firsts] == [(s, c) for s in (shapes[0], shapes[2], shapes[3])
                                                                    for c in "ab"]
    made = {first_call_key(firsts[0], firsts[0].points[0]): 1234.5}
    done = {first_call_key(firsts[1], firsts[1].points[0])}
    after = with_first_calls(work, made, done)
    assert after[0].points[1].note.first_call_ms == 1234.5 and [p.index for p in after[0].points] == [0, 1]
    assert after[1:] == work[1:]


def test_a_plan_search_is_made_before_the_sweep_and_says_it_searched_and_a_kept_choice_costs_nothing():
    from gpubench.execution.messages import Made
    from gpubench.execution.tasks import first_call

    shapes = task(conv_shape(20, 2), ("sliding",), op="conv")
    assert list(first_call(Searching(), shapes)) == [Begin(SETUP), Begin(0), Made(0, None, True)]
    assert list(first_call(Searching(due=False), shapes)) == []  # no inputs made, nothing prepared


def test_every_point_of_a_variant_that_searches_cudnns_plans_is_prepared_before_the_sweep():
    from gpubench.execution.tasks import first_calls

    builtin = catalog.Catalog(catalog.builtin())
    cudnn, heuristic = (builtin.get("conv", "cuda", name) for name in ("cudnn", "cudnn-heuristic"))
    work = [ShapeTask("s", conv_shape(size, 2), 0, (PointTask(0, heuristic, heuristic.space.configs[0], TimingPolicy()),
                                                   PointTask(1, cudnn, cudnn.space.configs[0], TimingPolicy())))
            for size in (32, 64)]
    firsts = first_calls(work)
    assert [(t.shape, t.points[0].variant.name) for t in firsts] == [(w.shape, "cudnn") for w in work]

