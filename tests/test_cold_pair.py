"""tools/gpu/cold_pair.py: a cold-then-warm pair read per duration class. On two saved H200 lab runs, and with a
time added to every call of one of them, which the per-call difference must show as itself."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest

from gpubench import results

REPO = Path(__file__).resolve().parent.parent
LAB = REPO / "results" / "nvidia-h200"


def cold_pair():
    spec = importlib.util.spec_from_file_location("cold_pair", REPO / "tools" / "gpu" / "cold_pair.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_time_added_to_every_call_shows_as_itself_in_each_class():
    warm = results.load(LAB / "lab-b.json.gz")
    cold = replace(warm, points=[replace(p, samples_ms=tuple(s + 0.0005 for s in p.samples_ms)) if p.samples_ms
                                 else p for p in warm.points])
    lines = cold_pair().by_class(cold, warm)
    assert lines and all("cold - warm +0.500 µs" in line for line in lines)
    assert any(line.startswith("  < 10 µs") for line in lines) and any("> 0.1 ms" in line for line in lines)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_pair_of_saved_runs_prints_compares_counts_and_both_floors(capsys):
    cold_pair().main(str(LAB / "lab-a.json.gz"), str(LAB / "lab-b.json.gz"))
    first = capsys.readouterr().out.splitlines()[0]
    assert "1 slower, 0 faster, 347 same, 4 inconclusive" in first and "floor 4.288 -> 4.256 µs" in first


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_time_added_from_one_point_on_shows_after_it_and_not_before():
    warm = results.load(LAB / "lab-b.json.gz")
    first = next(i for i, p in enumerate(warm.points) if p.variant == "cudnn")
    cold = replace(warm, points=[replace(p, samples_ms=tuple(s + 0.0004 for s in p.samples_ms))
                                 if p.samples_ms and i >= first else p for i, p in enumerate(warm.points)])
    lines = cold_pair().around(cold, warm, "cudnn")
    assert lines[0].startswith(f"  before the first cudnn point (#{first}): +0.000 µs")
    assert len(lines) > 2 and all(line.startswith("  after it, ") and "+0.400 µs" in line for line in lines[1:])
    assert cold_pair().around(cold, warm, "no-such-variant") == ["  no no-such-variant point in the cold run"]
