"""The CUDA backend's second clock: CUPTI's activity records (the `cupti-python` package, imported as `cupti`).

A thin layer: it opens CUPTI once per process (buffer callbacks that turn each record into a plain
`kernel_clock.KernelRecord` or a correlation link at once, since CUPTI reuses the buffer), and for each point
enables the kernel and external-correlation records, tags the timed calls (kernel_clock.Tagger through CUPTI's
external correlation ids), then flushes, disables, and hands the records to kernel_clock's pure functions. What
it costs: CUPTI's instrumentation of every launch while a point is timed (host side, a microsecond or two; the
kernels' own times are the GPU's), and two calls per timed call to push and pop the tag.
"""

from __future__ import annotations

import threading

from gpubench.measure import kernel_clock
from gpubench.measure.kernel_clock import KernelRecord, Tagger, TaggedClock

BUFFER_BYTES = 8 << 20


def missing() -> str | None:
    """Why there is no second clock here (one line), or None where `cupti` imports."""
    try:
        import cupti  # noqa: F401
    except Exception as e:  # noqa: BLE001 - ImportError, or a library the package loads that is not there
        return f"CUPTI is not available ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); " \
               "pip install cupti-python to record kernel times beside the events"
    return None


def version() -> str | None:
    """The cupti-python package's version, None where it is not installed (what a run records)."""
    try:
        from importlib.metadata import version as of

        return of("cupti-python")
    except Exception:  # noqa: BLE001 - not installed
        return None


class CuptiClock:
    """One per process: CUPTI's callbacks registered once, its records enabled around each point's timing."""

    def __init__(self):
        from cupti import cupti

        self.cupti = cupti
        kind = cupti.ActivityKind
        self.kernel, self.link = kind.CONCURRENT_KERNEL, kind.EXTERNAL_CORRELATION
        # CUPTI writes an external-correlation record beside an API record only: with the kernels and the links
        # alone enabled it traced every kernel and linked none on an H200 (tools/gpu/cupti_probe.py). The driver's
        # and the runtime's API records are enabled for that (CuPy and PyCUDA launch through the driver, cuBLAS and
        # cuDNN through the runtime) and dropped as they arrive.
        self.kinds = (self.kernel, self.link, kind.DRIVER, kind.RUNTIME)
        self.external = cupti.ExternalCorrelationKind.CUSTOM0
        self.lock = threading.Lock()  # CUPTI may deliver buffers from a thread of its own
        self.kernels: list[KernelRecord] = []
        self.links: dict[int, int] = {}
        cupti.activity_register_callbacks(self._requested, self._completed)

    def _requested(self):
        return BUFFER_BYTES, 0

    def _completed(self, activities) -> None:
        kernel, link = self.kernel, self.link
        kernels, links = [], {}
        for a in activities:
            if a.kind == kernel:
                kernels.append(KernelRecord(int(a.start), int(a.end), str(a.name), int(a.correlation_id)))
            elif a.kind == link and a.external_kind == self.external:
                links[int(a.correlation_id)] = int(a.external_id)
        with self.lock:
            self.kernels += kernels
            self.links.update(links)

    def point(self) -> PointTrace:
        """The tracing of one point's timed calls (its records so far dropped)."""
        with self.lock:
            self.kernels, self.links = [], {}
        try:
            for kind in self.kinds:
                self.cupti.activity_enable(kind)
        except Exception:
            self.stop()
            raise
        return PointTrace(self)

    def stop(self) -> None:
        """Flush what is recorded, then record no more (each kind disabled whatever the others do)."""
        try:
            self.cupti.activity_flush_all(1)
        finally:
            for kind in self.kinds:
                try:
                    self.cupti.activity_disable(kind)
                except Exception:  # noqa: BLE001 - one that was never enabled
                    pass

    def push(self, tag: int) -> None:
        self.cupti.activity_push_external_correlation_id(self.external, tag)

    def pop(self) -> None:
        self.cupti.activity_pop_external_correlation_id(self.external)


class PointTrace:
    """One point's second clock (or an A/B round's): clock(inner) for its tagged clock, then finish(samples) for
    what its details record (finish_sides(sides) for both sides of a round)."""

    def __init__(self, owner: CuptiClock):
        self.owner = owner
        self.tagger = Tagger(owner.push, owner.pop)
        self.done = False

    def clock(self, inner) -> TaggedClock:
        """The point's clock, its timed calls tagged."""
        return TaggedClock(inner, self.tagger)

    def finish(self, samples: int, per: int = 1) -> dict:
        """Flush and stop the records; the point's kernel durations (aligned with its samples, each over `per`: a
        graph's launch holds that many calls) and kernel names."""
        found = self._stopped()
        if not found:
            return {}
        ms = kernel_clock.aligned([t / per for t in kernel_clock.durations(found, self.tagger.kept)], samples)
        return {"kernel_ms": tuple(ms), "kernels": kernel_clock.names(found)} if ms else {}

    def finish_sides(self, sides: list[int]) -> tuple[dict, dict]:
        """Flush and stop the records of an interleaved round (measure/interleaved.py): A's and B's kernel
        durations, pair by pair (kernel_clock.paired_durations; `sides` says which side each sample was), and
        the names of each side's kernels."""
        found = self._stopped()
        if not found:
            return {}, {}
        tags = kernel_clock.split(self.tagger.kept, sides)
        times = kernel_clock.paired_durations(found, tags)
        return tuple({"kernel_ms": tuple(ms), "kernels": kernel_clock.names({t: found[t] for t in mine if t in found})}
                     if ms else {} for ms, mine in zip(times, tags))

    def _stopped(self) -> dict:
        """The calls recorded (kernel_clock.calls), recording stopped; {} after the first time, or where CUPTI
        refused the flush."""
        if self.done:
            return {}
        self.done = True
        owner = self.owner
        try:
            owner.stop()
        except Exception:  # noqa: BLE001 - a flush CUPTI refused: this point has no kernel times
            return {}
        with owner.lock:
            found = kernel_clock.calls(owner.kernels, owner.links)
            owner.kernels, owner.links = [], {}
        return found
