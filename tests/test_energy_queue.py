"""Energy windows that wait for a refresh while the next points run (gpubench/execution/energy_queue.py): the points still
go out once each, in the task's order, each with its own energy; a point held back is sent as provisional first,
and the coordinator keeps it, as it is, when the process is lost. No GPU: a CPU backend that pretends to read
power, and the simulated GPU of test_energy_alignment."""

import pytest

from gpubench.execution.messages import Begin, Broken, End, Finished, Provisional
from gpubench.execution.energy_queue import MAX_WAITING, EnergyQueue, Held
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.results import Point, Status
from gpubench.execution.tasks import run_task
from gpubench.measure.telemetry import Sample
from gpubench.measure.timing import Timing, TimingPolicy
from test_energy_alignment import PERIOD, Facts, Sim
from test_runner import Flaky, task
from test_worker import Scripted, shape_task, variants  # noqa: F401 - the fixture


class Readings:
    """Telemetry that reads a steady clock and power after every sample."""

    available = has_instant = True
    expected_mhz = None

    def sample(self):
        return Sample(1980, 2619, 300.0, 0)


class Metered(Flaky):
    """The CPU backend as if it read power: every point wants a window, and a refresh is due at the moments
    `due` says (one answer per time the queue asks). Each window records whose call it ran."""

    def __init__(self, due, **kw):
        super().__init__(**kw)
        self.due, self.windows, self.waits = list(due), [], 0
        self.telemetry = Readings()

    def window_due(self):
        return self.due.pop(0) if self.due else False

    def wait_for_window(self):
        self.waits += 1

    def window_wanted(self, timing):
        return bool(timing.samples_ms)

    def prepare(self, variant, config, shape, inputs):
        prepared = super().prepare(variant, config, shape, inputs)
        prepared.run.name = variant.name
        return prepared

    def energy_later(self, run, flush, flops, timing):
        self.windows.append(run.name)
        return {"joules_per_call": 0.001 * len(self.windows), "energy_from": "instant power"}


def named_runs(monkeypatch):
    """Each prepared call a function object that can carry its variant's name."""
    import gpubench.backends.cpu as cpu

    original = cpu.CpuBackend.prepare

    def prepare(self, variant, config, shape, inputs):
        prepared = original(self, variant, config, shape, inputs)
        run = prepared.run
        prepared.run = lambda: run()
        return prepared

    monkeypatch.setattr(cpu.CpuBackend, "prepare", prepare)


def conv_task(names=("sliding", "im2col", "sliding")):
    return task(conv_shape(20, 1), names, op="conv")


def test_points_go_out_once_in_order_each_with_its_own_energy(monkeypatch):
    named_runs(monkeypatch)
    backend = Metered(due=[False] * 40)  # no refresh is ever due: every window waits for the end of the task
    events = list(run_task(backend, conv_task()))
    finals = [e.point for e in events if isinstance(e, Finished)]
    assert [p.variant for p in finals] == ["sliding", "im2col", "sliding"]
    assert backend.windows == ["sliding", "im2col", "sliding"]
    assert [p.telemetry["joules_per_call"] for p in finals] == [0.001, 0.002, 0.003]
    provisional = [e for e in events if isinstance(e, Provisional)]
    assert [e.point.variant for e in provisional] == ["sliding", "im2col", "sliding"]
    assert all("joules_per_call" not in e.point.telemetry for e in provisional)
    kinds = [type(e) for e in events]
    assert kinds.index(Provisional) < kinds.index(Finished)  # held back first, sent whole later
    assert backend.waits == 3  # one wait for its moment per window, at the end of the task


def test_a_refresh_due_during_a_later_point_takes_the_oldest_waiting_window(monkeypatch):
    named_runs(monkeypatch)
    backend = Metered(due=[False, False, True] + [False] * 40)
    events = list(run_task(backend, conv_task()))
    assert backend.windows == ["sliding", "im2col", "sliding"]
    assert [e.index for e in events if isinstance(e, Finished)] == [0, 1, 2]
    assert backend.waits == 2  # sliding's window came at a due moment during im2col; the other two at the end


def test_no_more_than_max_waiting_points_keep_their_buffers():
    released = []
    queue = EnergyQueue(Metered(due=[]))
    point = Point(GemmShape(8, 8, 8), "v", "-", Status.SKIPPED)
    events = []
    for i in range(MAX_WAITING + 2):
        events += queue.add(Held(i, point, window=lambda: {}, release=lambda i=i: released.append(i)))
        assert sum(not h.ready for h in queue.held) <= MAX_WAITING
    assert released == [0, 1]  # the oldest window was taken (after a wait) to make room, each time
    events += queue.drain()
    assert [e.index for e in events if isinstance(e, Finished)] == list(range(MAX_WAITING + 2))
    assert released == list(range(MAX_WAITING + 2))


def test_a_broken_backend_sends_the_held_points_as_they_are_before_its_own(monkeypatch):
    named_runs(monkeypatch)
    backend = Metered(due=[False] * 40, raise_in="sliding", sick=True)
    events = list(run_task(backend, conv_task(("im2col", "im2col", "sliding"))))
    assert [type(e) for e in events if not isinstance(e, Begin)] == [Provisional, Provisional, Finished, Finished,
                                                                     Finished, Broken]
    finals = [e.point for e in events if isinstance(e, Finished)]
    assert [(p.variant, p.status) for p in finals] == [("im2col", "ok"), ("im2col", "ok"), ("sliding", "error")]
    assert backend.windows == []  # a faulted context takes no window: the points keep what they measured


def test_a_window_that_raises_leaves_its_point_measured_without_energy():
    queue = EnergyQueue(Metered(due=[]))
    point = Point.measured(GemmShape(8, 8, 8), "v", "-", samples_ms=[1.0], rel_err=0.0, tolerance=1e-3,
                           telemetry={"sm_mhz": 1980})

    def fails():
        raise RuntimeError("the window's call failed")

    list(queue.add(Held(0, point, window=fails)))
    (event,) = list(queue.drain())
    assert event.point.telemetry == {"sm_mhz": 1980} and event.point.status == Status.OK


class Lost(Scripted):
    """Scripted events, then the process dies (EOF) where a script ends without End."""

    def start(self):
        info = super().start()
        recv = self.conn.recv

        def dying_recv():
            try:
                return recv()
            except IndexError:
                raise EOFError from None

        self.conn.recv = dying_recv
        return info


def test_the_coordinator_keeps_a_provisional_point_when_its_process_dies(variants):  # noqa: F811
    t = shape_task(variants, ["good", "good", "good"])
    p = [Point(GemmShape(24, 24, 24), "good", "-", Status.SKIPPED, reason=f"point {i}") for i in range(3)]
    dying = [Begin(-1), Begin(0), Provisional(0, p[0]), Begin(1)]
    fresh = [Begin(-1), Begin(2), Finished(2, p[2]), End()]
    worker = Lost([dying, fresh])
    got = []
    worker.run(t, got.append)
    assert got[0] == p[0]  # kept as it was sent, before the point the death is blamed on
    assert got[1].status == Status.ERROR and "died" in got[1].reason
    assert got[2] == p[2] and len(got) == 3


def test_a_provisional_point_sent_whole_later_is_recorded_once(variants):  # noqa: F811
    t = shape_task(variants, ["good", "good"])
    p = [Point(GemmShape(24, 24, 24), "good", "-", Status.SKIPPED, reason=f"point {i}") for i in range(2)]
    whole = Point(GemmShape(24, 24, 24), "good", "-", Status.SKIPPED, reason="point 0, with its energy")
    script = [Begin(-1), Begin(0), Provisional(0, p[0]), Begin(1), Finished(0, whole),
              Finished(1, p[1]), End()]
    got = []
    Scripted([script]).run(t, got.append)
    assert got == [whole, p[1]]


# --- on the simulated GPU: what the queue buys ------------------------------------------------------------------


class PausingFacts(Facts):
    def __init__(self, sim):
        super().__init__(sim)
        self.clock.pause = lambda s: sim.advance(s)


def simulate(n_points: int, queued: bool):
    """Short points (host work, then batches of 5 ms, each followed by the timing loop's aside: 6 of them, and 24
    for every third point, as a longer call's loop), their energy taken through the queue or, without it, after
    each point's own samples. Every point needs a refresh of its own, so only a timeline with more refreshes than
    points (here, the longer loops) has moments to spare. Returns the simulated seconds after the refreshes are
    learnt and every energy reading."""
    sim = Sim()
    facts = PausingFacts(sim)
    queue = EnergyQueue(facts)
    readings, started = [], None
    for i in range(n_points):
        if i == 10:
            started = sim.t
        sim.advance(0.004 + 0.011 * (i % 7))  # the host's work before the samples (a check, a plan search)
        timing = Timing([], None, batch=64)
        aside = facts.energy_aside(lambda: None, TimingPolicy(reps=12), queue.moment if queued else None)
        for _ in range(6 if i % 3 else 24):
            sim.advance(0.005)
            sim.instant_mw()
            timing.samples_ms += [0.01] * 64
            aside(timing)
        point = Point.measured(GemmShape(8, 8, 8), "v", "-", samples_ms=[0.01], rel_err=0.0, tolerance=1e-3,
                               telemetry={"sm_mhz": 1980})
        if queued and facts.window_wanted(timing):
            events = list(queue.add(Held(i, point, window=lambda t=timing: facts.energy_later(lambda: None, True, 1e6,
                                                                                              t))))
        else:
            energy = facts.energy(lambda: None, True, 1e6, timing)
            events = [Finished(i, Point.measured(GemmShape(8, 8, 8), "v", "-", samples_ms=[0.01], rel_err=0.0,
                                                  tolerance=1e-3, telemetry={"sm_mhz": 1980, **energy}))]
        readings += [e.point.telemetry["window_power_w"] for e in events if isinstance(e, Finished)]
    readings += [e.point.telemetry["window_power_w"] for e in queue.drain() if isinstance(e, Finished)]
    assert sim.refreshes.period == pytest.approx(PERIOD, abs=0.002)
    return sim.t - started, readings


def test_waiting_windows_cost_less_and_still_read_their_own_calls():
    queued_s, queued_readings = simulate(70, queued=True)
    plain_s, plain_readings = simulate(70, queued=False)
    assert len(queued_readings) == len(plain_readings) == 70
    assert min(queued_readings) >= 400.0  # every reading describes the window's own calls back to back
    # seconds: at least 10 ms a point less (12.5 as written: in the plain run 27 of 70 windows came after their
    # point's samples, at 103 ms each, against 65 ms for one at its moment; queued, none did)
    assert queued_s < plain_s - 60 * 0.010, (queued_s, plain_s)
