"""How the run's tables show the second clock (gpubench/measure/kernel_clock.py): each point's events/CUPTI ratio in
its details, a mark where the two clocks differ by more than kernel_clock.CLOCKS_DIFFER, and a caption with the
distribution of the ratio over the run's points, the points marked, and a line where both clocks were asked for
but CUPTI was not there."""

from __future__ import annotations

from gpubench.core.backend_kind import BackendKind
from gpubench.analysis.compare import point_label
from gpubench.measure.kernel_clock import CLOCKS_DIFFER, Agreement, Clocks, agreement, spread
from gpubench.results import Point, Run, Status
from gpubench.views.tables import marked_caption

MARK = "≠"  # beside the events/CUPTI ratio of a point whose two clocks differ by more than CLOCKS_DIFFER


def of(p: Point) -> Agreement | None:
    if p.status != Status.OK:
        return None
    return agreement(p.samples_ms, p.details.kernel_ms)


def detail(p: Point) -> str:
    """The point's two clocks in a few words ("" where it has one): its ratio, its kernels' names."""
    a = of(p)
    if a is None:
        return ""
    names = ", ".join(p.details.kernels[:2]) + (" …" if len(p.details.kernels) > 2 else "")
    return f"events/CUPTI {a.ratio:.3f}{' ' + MARK if a.differ else ''}" + (f" ({names})" if names else "")


def caption(run: Run) -> str:
    """The ratio's median and quartiles over the run's points, the points past CLOCKS_DIFFER; or one line saying the
    second clock was asked for and not recorded (no CUPTI here); "" where no sweep asked for it."""
    found = [(p, a) for p in run.points if (a := of(p)) is not None]
    if not found:
        asked = any((s.get("timing") or {}).get("clocks") == Clocks.BOTH for s in run.settings.get("sweeps") or []
                    if isinstance(s, dict))
        if asked and run.backend == BackendKind.CUDA:
            version = ((run.environment.get("software") or {}).get("cupti"))
            why = f"cupti-python {version} is installed, but CUPTI could not trace there" if version else \
                "cupti-python is not installed where the run ran: pip install cupti-python"
            return f"clock both: no CUPTI kernel times were recorded ({why}); the events alone timed the points"
        return ""
    mid, q1, q3 = spread([a.ratio for _, a in found])
    head = (f"two clocks on {len(found)} point(s): events/CUPTI median {mid:.3f} (quartiles {q1:.3f}-{q3:.3f}, "
            f"range {min(a.ratio for _, a in found):.3f}-{max(a.ratio for _, a in found):.3f})")
    differ = [f"{point_label(p)}: events {a.events_ms * 1e3:.2f} µs, kernels {a.kernel_ms * 1e3:.2f} µs "
              f"({a.ratio:.3f})" for p, a in found if a.differ]
    if not differ:
        return head
    return head + "\n" + marked_caption(MARK, f"marks a point whose event time and CUPTI kernel time differ by more "
                                              f"than {CLOCKS_DIFFER:.0%}", differ, "the JSON keeps every point's "
                                                                                   "kernel_ms")
