"""gpubench/backends/cuda/cupti_clock.py over a stand-in `cupti` module: the records CUPTI would deliver (kernels
and external correlations, as its buffer callback gives them) become a point's kernel times and names, and CUPTI's
refusal leaves the events alone."""

import sys
import types
from enum import IntEnum

import pytest

from gpubench.measure.timing import TimingPolicy, measure


class Kind(IntEnum):
    CONCURRENT_KERNEL = 10
    EXTERNAL_CORRELATION = 20
    DRIVER = 30
    RUNTIME = 40


class External(IntEnum):
    CUSTOM0 = 4


class FakeCupti:
    """Enough of cupti.cupti: activities enabled or not, a correlation id per launch, the external id pushed around
    it (linked to the launch only where an API kind is enabled too, as the real CUPTI does), and the records handed
    to the buffer callback at a forced flush."""

    ActivityKind, ExternalCorrelationKind = Kind, External

    def __init__(self, refuse=False):
        self.enabled, self.stack, self.pending, self.refuse = set(), [], [], refuse
        self.correlation, self.clock_ns = 0, 1000

    def activity_register_callbacks(self, requested, completed):
        self.requested, self.completed = requested, completed

    def activity_enable(self, kind):
        if self.refuse:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.enabled.add(kind)

    def activity_disable(self, kind):
        self.enabled.discard(kind)

    def activity_push_external_correlation_id(self, kind, tag):
        self.stack.append(tag)

    def activity_pop_external_correlation_id(self, kind):
        return self.stack.pop()

    def launch(self, name, ns):
        """A kernel the GPU ran for `ns`, as CUPTI records it where enabled."""
        self.correlation += 1
        start, self.clock_ns = self.clock_ns, self.clock_ns + ns + 500
        if Kind.CONCURRENT_KERNEL in self.enabled:
            self.pending.append(types.SimpleNamespace(kind=Kind.CONCURRENT_KERNEL, start=start, end=start + ns,
                                                      name=name, correlation_id=self.correlation))
            api = self.enabled & {Kind.DRIVER, Kind.RUNTIME}
            if api:  # the launch's own API record: what the clock drops
                self.pending.append(types.SimpleNamespace(kind=min(api), correlation_id=self.correlation))
            if self.stack and api:  # as on an H200: a link is written beside an API record only
                self.pending.append(types.SimpleNamespace(kind=Kind.EXTERNAL_CORRELATION, external_kind=External.CUSTOM0,
                                                          external_id=self.stack[-1],
                                                          correlation_id=self.correlation))

    def activity_flush_all(self, flag):
        records, self.pending = self.pending, []
        self.completed(records)


@pytest.fixture
def fake(monkeypatch):
    def install(**kw):
        cupti = FakeCupti(**kw)
        package = types.ModuleType("cupti")
        package.cupti = cupti
        monkeypatch.setitem(sys.modules, "cupti", package)
        return cupti

    return install


class HostishClock:
    """Runs each call; 'times' it as the fake GPU's last kernels took."""

    def __init__(self, gpu):
        self.gpu = gpu

    def sync(self):
        pass

    def flush(self):
        self.gpu.launch("flush_memset_like_kernel", 30_000)  # not one of the call's: never tagged

    def time_ms(self, run):
        before = self.gpu.clock_ns
        run()
        return (self.gpu.clock_ns - before) / 1e6


def test_each_timed_call_gets_its_kernels_time_and_the_names(fake):
    from gpubench.backends.cuda import cupti_clock

    gpu = fake()
    owner = cupti_clock.CuptiClock()
    trace = owner.point()

    def call():  # what a library might do: two kernels per call
        gpu.launch("im2col_unfold", 2_000)
        gpu.launch("sm90_xmma_gemm", 8_000)

    timing = measure(call, trace.clock(HostishClock(gpu)), TimingPolicy(warmup=2, reps=6, min_reps=5, budget_s=10,
                                                                         batch_below_ms=0.0))
    got = trace.finish(len(timing.samples_ms))
    assert got["kernels"] == ("im2col_unfold", "sm90_xmma_gemm")
    assert len(got["kernel_ms"]) == len(timing.samples_ms) == 6
    assert got["kernel_ms"] == pytest.approx([0.0105] * 6)  # first start to last end: 2 µs, a 0.5 µs gap, 8 µs
    assert gpu.enabled == set()  # recording stops with the point
    assert trace.finish(6) == {}  # once


def test_a_graph_launch_gives_the_time_per_captured_call(fake):
    from gpubench.backends.cuda import cupti_clock

    gpu = fake()
    trace = cupti_clock.CuptiClock().point()
    clock = trace.clock(HostishClock(gpu))
    for _ in range(5):
        clock.time_ms(lambda: [gpu.launch("k", 1_000) for _ in range(10)])  # a graph of 10 calls, one tag
    got = trace.finish(5, per=10)
    assert got["kernel_ms"] == pytest.approx([(10 * 1_000 + 9 * 500) / 1e6 / 10] * 5)


def test_where_cupti_refuses_the_backend_times_with_the_events_alone(fake):
    from gpubench.backends.cuda import backend, cupti_clock
    from gpubench.measure.kernel_clock import Clocks

    gpu = fake(refuse=True)
    with pytest.raises(RuntimeError):
        cupti_clock.CuptiClock().point()
    assert gpu.enabled == set()

    class Bare:  # the backend's own method, without a GPU behind it
        _cupti = None
        kernel_tracer = backend.CudaBackend.kernel_tracer

    b = Bare()
    assert b.kernel_tracer(TimingPolicy(clocks=Clocks.BOTH)) is None and b._cupti is False
    assert b.kernel_tracer(TimingPolicy(clocks=Clocks.BOTH)) is None  # not tried again in this process
    assert Bare().kernel_tracer(TimingPolicy()) is None  # events only: CUPTI is not even opened


def test_an_interleaved_rounds_kernels_are_split_between_the_sides(fake):
    from gpubench.backends.cuda import cupti_clock
    from gpubench.measure.interleaved import measure_round

    gpu = fake()
    trace = cupti_clock.CuptiClock().point()
    runs = (lambda: gpu.launch("gemm_a", 10_000), lambda: gpu.launch("gemm_b", 12_000))
    got = measure_round(runs, trace.clock(HostishClock(gpu)), TimingPolicy(reps=6, min_reps=5, budget_s=10), 1, 1)
    a, b = trace.finish_sides(got.sides)
    assert a["kernels"] == ("gemm_a",) and b["kernels"] == ("gemm_b",)
    assert a["kernel_ms"] == pytest.approx([0.010] * 6) and b["kernel_ms"] == pytest.approx([0.012] * 6)
    assert gpu.enabled == set() and trace.finish_sides(got.sides) == ({}, {})  # once
