"""gpubench/measure/kernel_clock.py: the second clock's records turned into each timed call's kernel time and
names, the tagging of exactly the timed calls, and the two clocks' agreement, on recorded-style fake records."""

import pytest

from gpubench.measure import kernel_clock as kc
from gpubench.measure.kernel_clock import KernelRecord, Tagger, TaggedClock
from gpubench.measure.timing import TimingPolicy, measure
from gpubench.results import Details


def test_a_calls_kernels_are_found_by_tag_and_others_left_out():
    kernels = [
        KernelRecord(0, 50_000, "spin", 1),  # the timer's wait kernel: no tag
        KernelRecord(60_000, 62_000, "im2col_unfold", 2),
        KernelRecord(62_500, 70_500, "sm90_xmma_gemm_f32f32", 3),
        KernelRecord(80_000, 81_000, "im2col_unfold", 5),
        KernelRecord(81_200, 85_200, "sm90_xmma_gemm_f32f32", 6),
        KernelRecord(90_000, 90_000, "broken", 7),  # no duration: dropped
    ]
    links = {2: 10, 3: 10, 5: 11, 6: 11, 7: 12}
    found = kc.calls(kernels, links)
    assert set(found) == {10, 11}
    assert found[10].ms == pytest.approx(0.0105) and found[11].ms == pytest.approx(0.0052)
    assert found[10].names == ("im2col_unfold", "sm90_xmma_gemm_f32f32")
    assert kc.durations(found, [11, 10, 99]) == [pytest.approx(0.0052), pytest.approx(0.0105)]
    assert kc.names(found) == ("im2col_unfold", "sm90_xmma_gemm_f32f32")


def test_long_names_are_cut_and_few_kept():
    found = kc.calls([KernelRecord(i, i + 1, f"k{i}" + "x" * 400, i) for i in range(20)], {i: i for i in range(20)})
    kept = kc.names(found)
    assert len(kept) == kc.MAX_NAMES and all(len(n) <= kc.MAX_NAME for n in kept) and kept[0].endswith("…")


def test_agreement_is_the_ratio_of_the_medians_and_marks_a_big_difference():
    a = kc.agreement([0.0104, 0.0103, 0.0105], [0.0100, 0.0101, 0.0099])
    assert a.ratio == pytest.approx(1.04) and a.n == 3 and not a.differ
    assert kc.agreement([0.012] * 3, [0.010] * 3).differ
    assert kc.agreement([], [0.01]) is None and kc.agreement([0.01], []) is None
    assert kc.spread([1.0, 1.1, 1.2, 1.3, 1.4]) == (pytest.approx(1.2), pytest.approx(1.1), pytest.approx(1.3))
    assert kc.spread([]) is None


class FakeClock:
    """A clock that runs the call (twice for a 'retimed' call, as the CUDA clock does when the host was late) and
    reports its length; it keeps no state the tags depend on."""

    def __init__(self, retime_every=0):
        self.retime_every, self.calls = retime_every, 0

    def sync(self):
        pass

    def flush(self):
        pass

    def time_ms(self, run):
        self.calls += 1
        run()
        if self.retime_every and self.calls % self.retime_every == 0:
            run()  # timed again: only this one's time is returned
        return 0.01

    def time_batch_ms(self, run, n, flush):
        for _ in range(n):
            run()
        return [0.01] * n


def test_only_the_timed_calls_are_tagged_and_a_retimed_call_keeps_its_last_tag():
    pushed = []
    tagger = Tagger(pushed.append, lambda: None)
    calls = []
    run = lambda: calls.append(1)  # noqa: E731
    clock = TaggedClock(FakeClock(retime_every=2), tagger)
    run()  # a warm-up call, not through the clock: not tagged
    assert [clock.time_ms(run) for _ in range(3)] == [0.01] * 3
    assert pushed == [1, 2, 3, 4] and tagger.kept == [1, 3, 4]  # the second sample ran twice: its last call kept
    assert len(calls) == 5


def test_a_measured_point_gets_one_kernel_time_per_sample():
    pushed = []
    tagger = Tagger(pushed.append, lambda: None)
    timing = measure(lambda: None, TaggedClock(FakeClock(), tagger), TimingPolicy(reps=12, min_reps=5, budget_s=10, flush=False,
                                                                          batch_below_ms=1.0))
    # calibration's three single calls are tagged too, then the batches: aligned() keeps the samples' own
    assert len(tagger.kept) == len(timing.samples_ms) + 3
    found = {t: kc.Call(t, 0, 1000 * t, ("k",)) for t in tagger.kept}
    kept = kc.aligned(kc.durations(found, tagger.kept), len(timing.samples_ms))
    assert len(kept) == len(timing.samples_ms) and kept[0] == pytest.approx(tagger.kept[3] / 1000)


def test_details_keep_the_second_clock_and_read_it_back():
    d = Details(kernel_ms=[0.01, 0.011], kernels=["sm90_gemm"], graph=20)
    assert d.kernel_ms == (0.01, 0.011) and d.kernels == ("sm90_gemm",)
    rec = d.record()
    assert rec == {"kernel_ms": [0.01, 0.011], "kernels": ["sm90_gemm"], "graph": 20}
    assert Details(**rec) == d
    assert "kernel_ms" not in Details().record()
    for bad in ({"kernel_ms": [0.0]}, {"kernel_ms": ["x"]}, {"kernels": ["a\nb"]}, {"graph": 0}, {"graph": True}):
        with pytest.raises(ValueError):
            Details(**bad)


def test_an_interleaved_rounds_tags_are_split_by_side_and_kept_pair_by_pair():
    kept = [1, 2, 3, 4, 5, 6, 7, 8, 9]  # a calibration call first, then the round's eight samples
    sides = [1, 0, 1, 0, 1, 0, 1, 0]  # B A B A ...: an odd round
    tags = kc.split(kept, sides)
    assert tags == ([3, 5, 7, 9], [2, 4, 6, 8])
    found = {t: kc.Call(t, 0, 1000 * t, ("a" if t % 2 else "b",)) for t in kept if t != 6}  # 6 (B's) not recorded
    a_ms, b_ms = kc.paired_durations(found, tags)
    assert a_ms == pytest.approx([0.003, 0.005, 0.009]) and b_ms == pytest.approx([0.002, 0.004, 0.008])  # pair 3 out
    assert kc.split([1, 2], [0, 1, 0]) == ([], [])  # fewer tags than samples: no side gets another's times
