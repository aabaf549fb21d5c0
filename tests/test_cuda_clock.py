"""The CUDA clock on a simulated GPU: one stream whose work starts when the host has queued it and the work ahead
has finished, events that complete when the stream reaches them. A call whose launch the host takes longer to
queue than the work ahead of it covers must not be timed with the GPU's idle wait inside its interval (a Triton
launcher takes tens of µs; the flush's memset covers about 35)."""

import pytest

from gpubench.backends.cuda.clock import STARVED_LIMIT, CudaClock
from gpubench.core.errors import Skip


class Gpu:
    """A host clock and one in-order stream, in microseconds."""

    def __init__(self):
        self.now = 0.0  # the host
        self.tail = 0.0  # when the stream runs dry
        self.memsets = self.calls = 0

    def enqueue(self, us: float) -> None:
        self.tail = max(self.now, self.tail) + us


class FakeCupy:
    def __init__(self, gpu: Gpu):
        gpu_ = gpu

        class Event:
            def record(self):
                gpu_.tail = self.t = max(gpu_.now, gpu_.tail)

            def synchronize(self):
                gpu_.now = max(gpu_.now, self.t)

            @property
            def done(self):
                return gpu_.now >= self.t

        class Runtime:
            @staticmethod
            def memsetAsync(ptr, value, nbytes, stream):
                gpu_.memsets += 1
                gpu_.enqueue(35.0)

        class Cuda:
            runtime = Runtime

            @staticmethod
            def get_elapsed_time(a, b):
                return (b.t - a.t) / 1000

        Cuda.Event = Event
        self.cuda = Cuda
        self.uint8 = "uint8"

    @staticmethod
    def empty(n, dtype):
        class Buffer:
            nbytes = n

            class data:
                ptr = 0

        return Buffer()


def clock_on(gpu: Gpu) -> CudaClock:
    return CudaClock(FakeCupy(gpu), 50 << 20, spin=lambda ns: gpu.enqueue(ns / 1000), host_time=lambda: gpu.now / 1e6)


def call(gpu: Gpu, launch_us: float, kernel_us: float):
    def run():
        gpu.calls += 1
        gpu.now += launch_us  # the host queues the kernel (a Python launcher's overhead) ...
        gpu.enqueue(kernel_us)  # ... which runs when the stream gets to it

    return run


def flushed_samples(clock, run, n):
    samples = []
    for _ in range(n):
        clock.flush()
        samples.append(clock.time_ms(run))
    return samples


@pytest.mark.parametrize("launch_us", [10.0, 120.0, 400.0])
def test_a_slow_launcher_is_not_timed_with_its_launch(launch_us):
    gpu = Gpu()
    clock = clock_on(gpu)
    assert flushed_samples(clock, call(gpu, launch_us, kernel_us=1000.0), 6) == [pytest.approx(1.0)] * 6


def test_a_call_queued_too_late_for_its_wait_is_timed_again_after_its_own_flush():
    gpu = Gpu()
    clock = clock_on(gpu)
    flushed_samples(clock, call(gpu, 5.0, kernel_us=1000.0), 8)  # a quick launcher sets the clock's wait short
    gpu.memsets = gpu.calls = 0
    assert flushed_samples(clock, call(gpu, 300.0, kernel_us=1000.0), 3) == [pytest.approx(1.0)] * 3
    assert gpu.calls == 4 and gpu.memsets == 4  # the first slow call once more, flushed again; then none
    gpu.memsets = gpu.calls = 0
    clock.time_ms(call(gpu, 900.0, kernel_us=1000.0))  # not flushed: not flushed when timed again either
    assert gpu.calls == 2 and gpu.memsets == 0


def test_a_batch_of_short_calls_is_timed_without_the_host():
    gpu = Gpu()
    clock = clock_on(gpu)
    assert clock.time_batch_ms(call(gpu, 5.0, kernel_us=20.0), 8, flush=True) == [pytest.approx(0.02)] * 8


def test_the_launch_floor_is_the_middle_half_of_unflushed_batches_after_one_to_warm():
    import itertools

    from gpubench.backends.cuda import clock as clock_module

    gpu = Gpu()
    clock = clock_on(gpu)
    pattern = itertools.cycle([3.2, 3.3, 3.4, 9.0])  # a batch (a multiple of 4 calls) draws the pattern whole
    kernels = itertools.chain([50.0] * clock_module.FLOOR_BATCH, pattern)

    def empty():
        gpu.calls += 1
        gpu.now += 5.0
        gpu.enqueue(next(kernels))

    floor = clock.floor_us(empty)
    assert gpu.memsets == 0  # unflushed
    # every batch timed, the warm one first (a batch the loaded host queued too slowly is timed again, whole)
    assert gpu.calls >= clock_module.FLOOR_BATCH * (clock_module.FLOOR_BATCHES + 1)
    assert gpu.calls % clock_module.FLOOR_BATCH == 0
    assert floor == pytest.approx(3.35)  # the warm batch (50 µs) and the slowest and fastest quarters left out


def test_a_sustained_stream_keeps_the_gpu_busy_and_its_intervals_free_of_the_host():
    gpu = Gpu()
    clock = clock_on(gpu)
    run = call(gpu, 300.0, kernel_us=1000.0)  # a slow launcher, but quicker than the call: the queue stays ahead
    stream = clock.stream(run, True, call_ms=1.0)
    assert stream.chunk == 10  # CHUNK_MS of calls
    samples = [s for _ in range(5) for s in stream.take()]
    stream.close()
    assert samples == [pytest.approx(1.0)] * 50  # the first chunk (queued from idle) dropped, no launch in any
    assert gpu.calls == 80 and gpu.memsets == 80  # 8 chunks queued (the dropped one, 2 ahead): each call flushed
    assert stream.starved == 1  # only the first


def test_a_stream_the_host_cannot_keep_ahead_is_given_up():
    gpu = Gpu()
    clock = clock_on(gpu)
    run = call(gpu, 300.0, kernel_us=50.0)  # the GPU runs a call and its flush faster than the host queues one
    stream = clock.stream(run, True, call_ms=0.05)
    with pytest.raises(Skip, match="ran out of work while the host queued"):
        stream.take()
    assert stream.starved == STARVED_LIMIT + 1


def test_a_stream_that_ran_dry_once_drops_that_chunk_only():
    gpu = Gpu()
    clock = clock_on(gpu)
    run = call(gpu, 10.0, kernel_us=1000.0)
    stream = clock.stream(run, False, call_ms=1.0)
    stream.take()
    gpu.now += 50_000  # the host away for 50 ms (a hiccup): the GPU runs everything queued and waits
    stream.take()  # the chunks queued before the hiccup are whole
    assert stream.starved == 1
    assert stream.take() == [pytest.approx(1.0)] * 10 and stream.starved == 1  # not yet seen: the last one queued
    assert stream.take() == [pytest.approx(1.0)] * 10 and stream.starved == 2  # queued after it: dropped


def blocking_call(gpu: Gpu, kernel_us: float):
    """A library call that returns only once the GPU has run it (it synchronizes)."""

    def run():
        gpu.calls += 1
        gpu.now += 10.0
        gpu.enqueue(kernel_us)
        gpu.now = gpu.tail

    return run


def test_a_call_that_waits_for_the_gpu_is_timed_once_and_does_not_slow_the_calls_after_it():
    """On the H100 lab such calls (200 ms each) were timed four times over, behind ever longer waits, and then set
    the wait in front of every call after them: its calibration went from 7 to 48 s."""
    gpu = Gpu()
    clock = clock_on(gpu)
    flushed_samples(clock, call(gpu, 5.0, kernel_us=100.0), 4)
    gpu.calls = 0
    flushed_samples(clock, blocking_call(gpu, kernel_us=200_000.0), 2)
    assert gpu.calls == 2
    before = gpu.now
    assert flushed_samples(clock, call(gpu, 5.0, kernel_us=100.0), 4) == [pytest.approx(0.1)] * 4
    assert gpu.now - before < 4 * 1000.0  # µs: each quick call behind a wait of tens of µs, not of 200 ms


def test_a_call_that_waits_for_the_gpu_has_no_sustained_stream():
    """Each call returns only once the GPU has run it, so the queue is empty whenever the host queues the next: its
    intervals would hold the host's launch, and the point is given up rather than timed."""
    gpu = Gpu()
    clock = clock_on(gpu)
    stream = clock.stream(blocking_call(gpu, kernel_us=1000.0), True, call_ms=1.0)
    with pytest.raises(Skip, match="ran out of work while the host queued"):
        stream.take()


# --- --graph: a CUDA graph of N captured calls timed in place of each call ------------------------------------


class _Inner:
    """A clock that returns what the graph's launch says it took."""

    def __init__(self):
        self.timed = []

    def time_ms(self, run):
        self.timed.append(run)
        return run()

    def time_batch_ms(self, run, n, flush):
        return [run() for _ in range(n)]

    def sync(self):
        pass


def test_a_graph_clock_captures_each_call_once_and_gives_per_call_times():
    from gpubench.backends.cuda.clock import GraphClock

    captured, released = [], []

    def capture(run, n):
        captured.append((run, n))
        return (lambda: 8.0 * n), (lambda: released.append(run))  # each captured call takes 8 ms

    def call():
        pass

    clock = GraphClock(_Inner(), capture, 4)
    assert clock.time_ms(call) == 8.0 and clock.time_batch_ms(call, 3, True) == [8.0] * 3
    assert captured == [(call, 4)]  # captured once, launched four times
    clock.sync()  # the rest is the inner clock's
    clock.close()
    assert released == [call] and clock.graphs == {}


@pytest.mark.parametrize("flush", [True, False])
def test_a_short_call_measured_in_batches_is_flushed_before_every_timed_call(flush):
    """measure() on the CUDA clock, a 20 µs call: timed in queued batches, where each call must still follow its own
    flush when the policy flushes (the saved point then says flushed) and none when it does not."""
    from gpubench.measure.timing import TimingPolicy, measure

    gpu = Gpu()
    clock = clock_on(gpu)
    clock.sync = lambda: setattr(gpu, "now", max(gpu.now, gpu.tail))  # the host waits for the stream
    timing = measure(call(gpu, 5.0, kernel_us=20.0), clock,
                     TimingPolicy(warmup=0, reps=50, min_reps=5, budget_s=100, flush=flush))
    assert timing.batch > 1 and timing.samples_ms == [pytest.approx(0.02)] * len(timing.samples_ms)
    warm_up = 1  # the one untimed call before calibration, never flushed
    assert gpu.memsets == (gpu.calls - warm_up if flush else 0)
