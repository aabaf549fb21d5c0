"""gpubench/analysis/shift.py: the shift most short calls of a comparison share, and compare's note of it."""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpubench import results
from gpubench.analysis import compare
from gpubench.analysis.shift import FEWEST, shared_shift
from gpubench.views.compare import notes

LAB = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200"


def changes(*pairs):
    """Changes of (base median in ms, new / base) each."""
    return [SimpleNamespace(base=SimpleNamespace(median_ms=ms), ratio=ratio) for ms, ratio in pairs]


def test_short_calls_that_all_moved_alike_share_a_shift_in_microseconds():
    shift = shared_shift(changes(*[(0.008, 1.04)] * 12, (0.5, 1.0)))
    assert (shift.moved, shift.short, shift.direction) == (12, 12, "slower")
    assert shift.per_call_us == pytest.approx(0.32) and shift.share == pytest.approx(0.04)


@pytest.mark.parametrize("pairs", [
    [(0.008, 1.04)] * 6 + [(0.008, 0.96)] * 6,  # as many faster as slower: each kernel's own
    [(0.008, 1.04)] * (FEWEST - 1),  # too few short calls to speak of a run's
    [(0.5, 1.04)] * 20,  # long calls: a launch path's microseconds do not move them
    [(0.008, 1.004)] * 20,  # all alike, but by less than a percent
])
def test_no_shared_shift_where_the_short_calls_did_not_move_together_and_far(pairs):
    assert shared_shift(changes(*pairs)) is None


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_compare_notes_a_time_added_to_every_short_call_of_a_saved_lab_run():
    base = results.load(LAB / "lab-b.json.gz")
    new = replace(base, points=[replace(p, samples_ms=tuple(s + 0.0004 for s in p.samples_ms))
                                if p.samples_ms and p.median_ms < 0.02 else p for p in base.points])
    text = " ".join(notes(compare.compare(base, new)))
    assert "calls under 20 µs ran slower, by a median +0.40 µs a call" in text
    assert "calls under 20 µs" not in " ".join(notes(compare.compare(base, base)))
