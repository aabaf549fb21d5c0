"""The CUDA backend's clock: events on the default stream around each call, L2 flushed by a memset, short calls
timed in queued batches behind a wait kernel (see cuda_src/probes.cu), and, for the sustained pace, calls back to
back in a stream the host keeps ahead of the GPU (SustainedStream); with --graph, a CUDA graph of N captured calls
launched in place of each call (GraphClock)."""

from __future__ import annotations

import math
import statistics
import time
from collections import deque

from gpubench.core.errors import Skip

SPIN_NS = 50_000  # the least cover for the host's launch latency ahead of a timed call (see probes.cu)
FLOOR_BATCH, FLOOR_BATCHES = 40, 6  # the launch floor's samples: 240 empty kernels, a few ms of the GPU
RETIMES = 3  # a call the host queued too late for its wait is timed again, at most this many times
CHUNK_MS = 10.0  # sustained: the calls queued at a time last about this long on the GPU ...
MAX_CHUNK = 256  # ... and are at most this many
AHEAD = 2  # chunks kept queued behind the one the host waits for: ~20 ms of work while it reads telemetry
STARVED_LIMIT = 5  # chunks in a row the GPU may have waited for the host in before the point is given up
BLOCKING_NS = 5_000_000  # a call that takes the host longer than this to return is not slow to launch: it waits
# for the GPU (a library call that synchronizes). No wait in front of it can keep the host out of its interval, so
# it is neither timed again nor allowed to size the waits of the calls after it (each would spin that long)


class CudaClock:
    """CUDA events on the default stream around each call; L2 flushed by a memset of twice its size."""

    def __init__(self, cp, l2_bytes: int, spin, host_time=time.perf_counter):
        self.cp = cp
        self.host_time = host_time  # seconds on the host (a test's simulated clock)
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()
        self.scratch = cp.empty(max(2 * l2_bytes, 64 << 20), dtype=cp.uint8)
        self.value = 0
        self.spin = spin  # spin(nanoseconds): a kernel that waits on the GPU
        self.events: list = []
        self.enqueue_us: deque[float] = deque([30.0], maxlen=8)  # the host's time to queue one flush + call
        self.launch_us: deque[float] = deque([10.0], maxlen=8)  # the host's time to queue one call behind its wait
        self.flushed = False  # L2 was flushed since the last timed call (a call timed again is flushed again)

    def sync(self) -> None:
        self.cp.cuda.Stream.null.synchronize()

    def pause(self, seconds: float) -> None:
        """The host waits (the GPU runs whatever is queued)."""
        time.sleep(seconds)

    def flush(self) -> None:
        self.value ^= 0x5A  # a different byte each time, so no write is ever a no-op
        self.cp.cuda.runtime.memsetAsync(self.scratch.data.ptr, self.value, self.scratch.nbytes, 0)
        self.flushed = True

    def time_ms(self, run) -> float:
        """One call between two events, queued behind a wait kernel long enough for the host to queue the call:
        otherwise the GPU idles inside the interval while the host launches (a flush's memset, ~35 µs, once
        covered PyCUDA's ~10 µs launch, but not a Python launcher's: Triton's takes tens of µs, and such calls
        read that much too long). The wait follows the host's own recent times to queue a call; a call the host
        queued later than its wait covered (a launcher slower than the calls before it, a hiccup) is timed again,
        after a flush of its own where it had one, behind a wait long enough: its GPU may have idled in the
        interval. The order on the stream: [flush] wait, start, the call, end."""
        flushed, self.flushed = self.flushed, False
        wait_ns = max(SPIN_NS, int(1.5 * statistics.median(self.launch_us) * 1000) + 20_000)
        for attempt in range(RETIMES + 1):
            if attempt and flushed:
                self.flush()
            t0 = self.host_time()
            self.spin(wait_ns)  # it starts on the GPU no sooner than now, so it ends no sooner than now + wait
            self.start.record()
            run()
            queued_ns = (self.host_time() - t0) * 1e9  # by now the start event and the whole call are queued
            self.end.record()
            self.end.synchronize()
            if queued_ns >= BLOCKING_NS:
                break
            if queued_ns < wait_ns:
                self.launch_us.append(queued_ns / 1000)
                break
            self.launch_us.clear()  # the calls before were quicker to queue than this one: forget them
            self.launch_us.append(queued_ns / 1000)
            wait_ns = 2 * int(queued_ns) + 20_000
        self.flushed = False
        return self.cp.cuda.get_elapsed_time(self.start, self.end)

    def time_batch_ms(self, run, n: int, flush: bool) -> list[float]:
        """n calls queued behind one wait kernel, each between its own pair of events (and after its own
        flush): the GPU never waits for the host inside an interval, so short calls are timed without the
        host's launch jitter. A batch the host was too slow to queue in time is timed again, with a longer wait."""
        while len(self.events) < 2 * n:
            self.events.append(self.cp.cuda.Event())
        wait_ns = int(1.5 * statistics.median(self.enqueue_us) * 1000 * n) + 20_000  # from the last few batches
        while True:
            self.spin(wait_ns)
            t0 = time.perf_counter()
            for i in range(n):
                if flush:
                    self.flush()
                self.events[2 * i].record()
                run()
                self.events[2 * i + 1].record()
            queued_ns = (time.perf_counter() - t0) * 1e9
            self.events[2 * n - 1].synchronize()
            self.enqueue_us.append(queued_ns / n / 1000)
            if queued_ns < wait_ns:
                self.flushed = False
                return [self.cp.cuda.get_elapsed_time(self.events[2 * i], self.events[2 * i + 1]) for i in range(n)]
            wait_ns = 2 * int(queued_ns) + 20_000  # the host fell behind (a hiccup): again, with room to spare

    def floor_us(self, call) -> float:
        """µs of `call` (an empty kernel) timed as a short call is, unflushed, FLOOR_BATCHES batches of FLOOR_BATCH
        after one to warm: the mean of the middle half of the samples, finer than the events' 32 ns steps."""
        self.time_batch_ms(call, FLOOR_BATCH, False)
        samples = sorted(s for _ in range(FLOOR_BATCHES) for s in self.time_batch_ms(call, FLOOR_BATCH, False))
        middle = samples[len(samples) // 4:len(samples) - len(samples) // 4]
        return 1000 * sum(middle) / len(middle)

    def stream(self, run, flush: bool, call_ms: float) -> SustainedStream:
        """Calls back to back, each (after its flush) between its own events: the sustained pace's stream."""
        return SustainedStream(self, run, flush, max(1, min(MAX_CHUNK, math.ceil(CHUNK_MS / max(call_ms, 1e-3)))))

    def busy(self, run, chunk: int, go_on) -> tuple[int, float]:
        """Calls back to back, queued `chunk` at a time with one chunk always queued ahead, until go_on() (asked
        each time the GPU finishes a chunk) says stop: an energy window's work. Returns (calls, GPU seconds from
        the first call to the last)."""
        start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
        queued: deque = deque()
        calls = 0
        start.record()
        while True:
            for _ in range(chunk):
                run()
            done = self.cp.cuda.Event()
            done.record()
            queued.append(done)
            calls += chunk
            if len(queued) < 2:
                continue
            queued.popleft().synchronize()
            if not go_on():
                break
        end.record()
        end.synchronize()
        return calls, self.cp.cuda.get_elapsed_time(start, end) / 1e3

    def run_many(self, run, n: int, flush: bool) -> None:
        """n calls back to back (each after a flush where flushing), then wait: the energy window's work."""
        for _ in range(n):
            if flush:
                self.flush()
            run()
        self.sync()


class SustainedStream:
    """Calls back to back on the timed stream, queued a chunk at a time with AHEAD chunks always queued behind the
    one the host waits for, so that the GPU never waits for the host and stays as hot as the calls make it. Each
    call has its own events (and its own flush before its start event), so each is a sample. A chunk the host
    finished queuing only after the work queued before it had all run may hold host time inside its intervals
    (the GPU ran dry while the host queued it): its times are dropped; STARVED_LIMIT such chunks in a row mean the
    host cannot keep this call's stream ahead (a call shorter than its launch), and the point is skipped."""

    def __init__(self, clock: CudaClock, run, flush: bool, chunk: int):
        self.clock, self.run, self.flush, self.chunk = clock, run, flush, chunk
        self.pending: deque[tuple[list, bool]] = deque()  # (the chunk's events, whether it may have starved)
        self.spare: list[list] = []
        self.starved = 0  # chunks dropped (the first one, queued from idle, among them)
        self.in_a_row = 0
        for _ in range(AHEAD):
            self._queue()

    def _queue(self) -> None:
        events = self.spare.pop() if self.spare else [self.clock.cp.cuda.Event() for _ in range(2 * self.chunk)]
        before = self.pending[-1][0][-1] if self.pending else None
        for i in range(self.chunk):
            if self.flush:
                self.clock.flush()
            events[2 * i].record()
            self.run()
            events[2 * i + 1].record()
        self.pending.append((events, before is None or before.done))

    def take(self) -> list[float]:
        """The times of the oldest queued chunk's calls, once it has run (another chunk queued first)."""
        while True:
            self._queue()
            events, starved = self.pending.popleft()
            events[-1].synchronize()
            self.spare.append(events)
            if not starved:
                self.in_a_row = 0
                get = self.clock.cp.cuda.get_elapsed_time
                return [get(events[2 * i], events[2 * i + 1]) for i in range(self.chunk)]
            self.starved += 1
            self.in_a_row += 1
            if self.in_a_row > STARVED_LIMIT:
                raise Skip(f"pace sustained: the GPU ran out of work while the host queued each chunk of "
                           f"{self.chunk} call(s) (a call shorter than its launch, or one that waits for the GPU), "
                           "so no stream of this call can be kept ahead of it (time it at the idle pace)")

    def close(self) -> None:
        """Wait for the chunks still queued (their times are not wanted)."""
        self.clock.flushed = False
        if self.pending:
            self.pending[-1][0][-1].synchronize()


class GraphClock:
    """--graph N: each timed call is one launch of a CUDA graph of N captured calls, and each sample is the graph's
    time over N. For calls whose launch costs more than they run: the graph puts N calls on the GPU for one launch,
    back to back, so a sample is what a call costs inside a stream of them (L2 is flushed once per graph, where the
    policy flushes). `capture(run, n)` (the backend's: it moves every launch to a capturing stream) returns
    (launch, release); a call is captured the first time it is timed, and its graph kept until close()."""

    def __init__(self, inner, capture, n: int):
        self.inner, self.capture, self.n = inner, capture, n
        self.graphs: dict = {}  # the call -> (launch its graph, release it)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def launch(self, run):
        if run not in self.graphs:
            self.graphs[run] = self.capture(run, self.n)
        return self.graphs[run][0]

    def time_ms(self, run) -> float:
        return self.inner.time_ms(self.launch(run)) / self.n

    def time_batch_ms(self, run, n: int, flush: bool) -> list[float]:
        return [t / self.n for t in self.inner.time_batch_ms(self.launch(run), n, flush)]

    def stream(self, run, flush: bool, call_ms: float):
        return PerCall(self.inner.stream(self.launch(run), flush, call_ms * self.n), self.n)

    def close(self) -> None:
        while self.graphs:
            _, (_, release) = self.graphs.popitem()
            release()


class PerCall:
    """A stream of graph launches whose times are given per captured call."""

    def __init__(self, inner, n: int):
        self.inner, self.n = inner, n

    def take(self) -> list[float]:
        return [t / self.n for t in self.inner.take()]

    def close(self) -> None:
        self.inner.close()
