"""gpubench/measure/interleaved.py: a round of an A/B times A's and B's calls in turn, call by call, so that a state of
the card that lasts longer than a call is seen by both sides alike and cancels in the round's ratio. These tests run it
on a fake card whose state flips every K calls between normal and 2% slow (what an H200 showed: round ratios near
1.02 or 0.98 for a kernel against itself). They also run it against the former layout, a block of A's calls and then
a block of B's (the `blocks` helper below, measure.timing.measure for each side in turn), which fails the same test."""

import itertools
import random

import pytest

from gpubench.analysis.compare import Verdict, verdict
from gpubench.measure import interleaved
from gpubench.measure.interleaved import Alternating, SideFailed, abba, calibrate, measure_round
from gpubench.measure.paired import paired_ratio, round_ratio
from gpubench.measure.telemetry import Sample
from gpubench.measure.timing import MAX_BATCH, Stop, TimingPolicy, measure

SLOW = 1.02  # the card's slow state: every call 2% longer
POLICY = TimingPolicy(reps=30, min_reps=5, budget_s=10.0, flush=True, batch_below_ms=1.0)


class Card:
    """A fake GPU: each call takes its side's time, times SLOW while the card is in its slow state. The state flips
    every `k` calls, or after each of the lengths in `k` in turn (warm-up calls count: the card does not know which
    calls are timed). `log` lists the sides called, in order."""

    def __init__(self, k, a_ms: float = 0.010, b_ms: float = 0.010):
        self.lengths = itertools.cycle([k] if isinstance(k, int) else k)
        self.left, self.slow = next(self.lengths), False
        self.base, self.log, self.last_ms = (a_ms, b_ms), [], None

    def run(self, side: int):
        def call():
            self.log.append(side)
            self.last_ms = self.base[side] * (SLOW if self.slow else 1.0)
            self.left -= 1
            if self.left == 0:
                self.slow, self.left = not self.slow, next(self.lengths)

        return call

    def runs(self):
        return self.run(0), self.run(1)


class SingleClock:
    """A clock without batches (as the CPU backend's HostClock): times one call, the card's time of it."""

    def __init__(self, card: Card):
        self.card, self.flushes = card, 0

    def sync(self):
        pass

    def flush(self):
        self.flushes += 1

    def time_ms(self, run) -> float:
        run()
        return self.card.last_ms


class BatchClock(SingleClock):
    """A clock with queued batches (as the CUDA clock's time_batch_ms): n calls, each after its flush. With
    `late` > 0, that many batches are timed again (the host fell behind its wait): only the last run's times are
    returned, as the CUDA clock does."""

    def __init__(self, card: Card, late: int = 0):
        super().__init__(card)
        self.late, self.batches = late, []

    def time_batch_ms(self, run, n, flush):
        while True:
            times = []
            for _ in range(n):
                if flush:
                    self.flush()
                run()
                times.append(self.card.last_ms)
            if self.late == 0:
                self.batches.append(n)
                return times
            self.late -= 1


def interleaved_rounds(card: Card, clock, rounds: int, policy=POLICY):
    """Rounds as the product times them: the batch decided once, then A B B A ... (B A A B ... in odd rounds)."""
    batch = calibrate(card.runs(), clock, policy)
    return [measure_round(card.runs(), clock, policy, r % 2, batch).timings for r in range(rounds)]


def blocks(card: Card, clock, rounds: int, policy=POLICY):
    """The former layout, here only to show that the tests below fail with it: each round a block of one side's
    calls, then a block of the other's (measure.timing.measure of each), AB in even rounds and BA in odd ones."""
    out = []
    for r in range(rounds):
        first = r % 2
        timed = {side: measure(card.run(side), clock, policy) for side in (first, 1 - first)}
        out.append((timed[0], timed[1]))
    return out


LAYOUTS = [interleaved_rounds,
           pytest.param(blocks, marks=pytest.mark.xfail(strict=True, reason="a block of A's calls and a block of "
                                                                             "B's see different card states"))]


IRREGULAR = [random.Random(7).randint(10, 150) for _ in range(50)]  # states of 10 to 150 calls


@pytest.mark.parametrize("k", [25, 60, 100, IRREGULAR], ids=["25", "60", "100", "irregular"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_slow_card_state_cancels_in_each_rounds_ratio(layout, k):
    card = Card(k)
    ratios = [round_ratio(a.samples_ms, b.samples_ms) for a, b in layout(card, BatchClock(card), 30)]
    assert ratios == pytest.approx([1.0] * 30, abs=1e-9)
    r = paired_ratio(ratios)
    assert verdict(r.low, r.high, 0.005) == Verdict.SAME


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_slow_card_state_cancels_on_a_clock_without_batches(layout):
    card = Card(60)
    ratios = [round_ratio(a.samples_ms, b.samples_ms) for a, b in layout(card, SingleClock(card), 20)]
    assert ratios == pytest.approx([1.0] * 20, abs=1e-9)


class PlaceCard(Card):
    """A fake GPU whose calls in even places of a queued batch run 3% longer than those in odd places, whichever side
    they are (what an H200 showed within an A/B's rounds: a 16 µs kernel against a copy of itself read 0.96-1.04 by
    the places' parity when the two were timed A B A B)."""

    def __init__(self):
        super().__init__(10 ** 9)
        self.place = 0

    def run(self, side: int):
        inner = super().run(side)

        def call():
            inner()
            self.last_ms *= 1.03 if self.place % 2 == 0 else 1.0
            self.place += 1

        return call


class PlaceClock(BatchClock):
    def time_batch_ms(self, run, n, flush):
        self.card.place = 0  # places count from each batch's first call
        return super().time_batch_ms(run, n, flush)


def alternate_ab(first: int, k: int) -> int:
    return first if k % 2 == 0 else 1 - first


@pytest.mark.parametrize("order", [abba, pytest.param(alternate_ab, marks=pytest.mark.xfail(
    strict=True, reason="A B A B puts each side in places of one parity"))])
def test_a_difference_by_place_in_a_batch_cancels_in_each_rounds_ratio(order, monkeypatch):
    monkeypatch.setattr(interleaved, "abba", order)
    card = PlaceCard()
    ratios = [round_ratio(a.samples_ms, b.samples_ms) for a, b in interleaved_rounds(card, PlaceClock(card), 8)]
    assert ratios == pytest.approx([1.0] * 8, abs=1e-9)


def test_a_planted_two_percent_on_b_is_found_slower_through_the_card_states():
    card = Card(40, b_ms=0.010 * 1.02)
    ratios = [round_ratio(a.samples_ms, b.samples_ms) for a, b in interleaved_rounds(card, BatchClock(card), 30)]
    assert ratios == pytest.approx([1.02] * 30, rel=1e-9)
    r = paired_ratio(ratios)
    assert verdict(r.low, r.high, 0.005) == Verdict.SLOWER


def test_batched_samples_go_back_to_their_sides_even_when_a_batch_is_timed_again():
    card = Card(10 ** 9, a_ms=0.010, b_ms=0.020)  # no state flips: A's calls take 10 µs, B's 20 µs
    clock = BatchClock(card, late=1)
    policy = TimingPolicy(reps=30, min_reps=5, budget_s=10.0, flush=True, batch_below_ms=1.0)
    batch = calibrate(card.runs(), clock, policy)
    assert batch == MAX_BATCH  # 2 ms of 15 µs calls is more than the most a batch holds (even)
    before = len(card.log)
    got = measure_round(card.runs(), clock, policy, 1, batch)
    a, b = got.timings
    assert a.samples_ms == [0.010] * 30 and b.samples_ms == [0.020] * 30
    assert a.batch == b.batch == batch and a.stop == b.stop == Stop.REPS
    assert clock.batches == [60]  # one batch of both sides' calls (30 each), after one timed again
    assert got.sides == [1, 0, 0, 1] * 15  # which side each sample was: B first in this round, counterbalanced
    timed = card.log[before:][-120:]  # the batch timed again, then the batch kept, each B A A B ...
    assert timed == [1, 0, 0, 1] * 30
    assert clock.flushes >= 120 + 6  # every timed call after its own flush (the calibration's six too)


def test_odd_rounds_start_with_b_and_even_ones_with_a():
    for first in (0, 1):
        card = Card(10 ** 9)
        got = measure_round(card.runs(), SingleClock(card), POLICY, first, 1)
        assert card.log[0] == first  # the warm-up too
        assert got.sides[:4] == [first, 1 - first, 1 - first, first]
        assert card.log[-2:] == [1 - first, first]  # 60 calls: fifteen quartets, each ending as it began


def test_alternating_runs_each_side_in_turn_and_records_it():
    card = Card(10 ** 9)
    pair = Alternating(card.runs(), 1)
    for _ in range(5):
        pair()
    assert card.log == pair.sides == [1, 0, 0, 1, 1] and pair.last == 1
    pair.one(0)()
    assert card.log[-1] == 0 and pair.last == 0 and len(pair.sides) == 5  # a side's own call: not in the turn


def test_long_calls_are_timed_one_at_a_time_in_turn():
    card = Card(10 ** 9, a_ms=2.0, b_ms=2.5)
    clock = BatchClock(card)
    assert calibrate(card.runs(), clock, POLICY) == 1  # ~2 ms calls: at or above batch_below_ms (1 ms)
    got = measure_round(card.runs(), clock, POLICY, 0, 1)
    assert clock.batches == [] and got.sides == [0, 1, 1, 0] * 15
    assert got.timings[0].samples_ms == [2.0] * 30 and got.timings[1].samples_ms == [2.5] * 30


def test_a_clock_without_batches_is_not_calibrated():
    card = Card(10 ** 9)
    assert calibrate(card.runs(), SingleClock(card), POLICY) == 1 and card.log == []


def test_the_round_stops_on_its_budget_with_as_many_samples_of_each_side(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(interleaved.time, "perf_counter", lambda: now[0])
    card = Card(10 ** 9)

    class Slow(SingleClock):
        def time_ms(self, run):
            now[0] += 0.05  # each call takes 50 ms of the host's time
            return super().time_ms(run)

    policy = TimingPolicy(reps=30, min_reps=5, budget_s=0.2, flush=False)
    got = measure_round(card.runs(), Slow(card), policy, 0, 1)
    a, b = got.timings
    assert len(a.samples_ms) == len(b.samples_ms) == 5 and a.stop == Stop.BUDGET  # 0.4 s is spent before 5 each


class OneReading:
    """Telemetry that counts its reads and gives one reading each time."""

    expected_mhz = 1980

    def __init__(self, sm_mhz: int):
        self.reads, self.sm_mhz = 0, sm_mhz

    def sample(self):
        self.reads += 1
        return Sample(sm_mhz=self.sm_mhz, mem_mhz=2619, power_w=300.0, reasons=0)


def test_telemetry_is_read_once_per_round_and_given_to_both_sides():
    card = Card(10 ** 9)
    telemetry = OneReading(1980)
    a, b = measure_round(card.runs(), BatchClock(card), POLICY, 0, 2, telemetry).timings
    assert telemetry.reads == 1
    assert a.telemetry()["sm_mhz"] == b.telemetry()["sm_mhz"] == 1980 and a.sm_mhz == [1980] * 30 == b.sm_mhz
    throttled = OneReading(1500)  # below what the card should run at: counted, and kept (an A/B has none to spare)
    a, b = measure_round(card.runs(), BatchClock(card), POLICY, 0, 2, throttled).timings
    assert a.throttled == b.throttled == 30 and len(a.samples_ms) == 30 and a.discarded == 0


def test_a_call_that_raises_names_its_side():
    card = Card(10 ** 9)

    def broken():
        raise RuntimeError("illegal memory access")

    for runs, batch, side in (((card.run(0), broken), 2, 1), ((broken, card.run(1)), 1, 0)):
        with pytest.raises(SideFailed) as failed:
            measure_round(runs, BatchClock(card), POLICY, 0, batch)
        assert failed.value.side == side and "illegal memory access" in str(failed.value.__cause__)
    with pytest.raises(SideFailed) as failed:
        calibrate((card.run(0), broken), BatchClock(card), POLICY)
    assert failed.value.side == 1
