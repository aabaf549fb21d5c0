"""gpubench/analysis/limiter.py: what limits a point, in words, by its rules (the recorded fixtures, then one
profile per rule)."""

from pathlib import Path

import pytest

from gpubench.analysis.limiter import Limit, verdict
from gpubench.measure import ncu
from gpubench.results.profile import Gap, Profile

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"


@pytest.mark.parametrize("name,words", [
    ("set-nvjet-bf16-h100.txt", "compute-bound: SM at 90% of peak, stalled on barrier"),
    ("set-sliding-stream-h200.txt", "L2-bound: L2 at 75% of peak"),
    ("set-tc-wgmma-14-h100.txt", "occupancy 12%"),
    ("sliding-stream-h200.txt", "latency-bound: DRAM 57% of peak"),
    ("tf32-tma-l2-sectors-h100.txt", "no throughput counters"),
])
def test_recorded_launches_in_words(name, words):
    assert verdict(ncu.profile_from(ncu.parse((FIXTURES / name).read_text()), "sm_90")).words == words


def profile(**metrics) -> Profile:
    stalls = metrics.pop("stalls", ())
    totals = metrics.pop("totals", {})
    return Profile(kernel="k", launches=1, kernels=("k",), metrics=metrics, totals=totals, stalls=stalls)


@pytest.mark.parametrize("p,limit,words", [
    (profile(sm_pct=40.0, dram_pct=91.0, l2_pct=70.0), Limit.DRAM, "memory-bound: DRAM at 91% of peak"),
    (profile(sm_pct=40.0, dram_pct=30.0, l2_pct=84.0), Limit.L2, "L2-bound: L2 at 84% of peak"),
    (profile(sm_pct=70.0, tensor_pct=78.0, stalls=(("barrier", 4.0),)), Limit.TENSOR,
     "tensor pipe 78%, stalled on barrier"),
    (profile(sm_pct=50.0, tensor_pct=20.0, tensor_imma_pct=81.0), Limit.TENSOR, "tensor pipe 81%"),
    (profile(sm_pct=85.0, dram_pct=10.0, stalls=(("math_pipe_throttle", 2.0),)), Limit.COMPUTE,
     "compute-bound: SM at 85% of peak, stalled on math pipe throttle"),
    (profile(sm_pct=20.0, dram_pct=10.0, occupancy_pct=12.0, registers=232.0), Limit.OCCUPANCY,
     "occupancy 12%: 232 registers a thread"),
    (profile(sm_pct=20.0, dram_pct=10.0, occupancy_pct=12.0, registers=40.0, stalls=(("long_scoreboard", 9.0),)),
     Limit.OCCUPANCY, "occupancy 12%, stalled on long scoreboard (global or local memory)"),
    (profile(sm_pct=31.0, dram_pct=12.0, occupancy_pct=50.0, stalls=(("long_scoreboard", 9.0),)), Limit.LATENCY,
     "latency-bound: SM 31%, DRAM 12% of peak, stalled on long scoreboard (global or local memory)"),
    (profile(sm_pct=85.0, totals={"local_load_sectors": 20000.0, "local_store_sectors": 17500.0}), Limit.COMPUTE,
     "compute-bound: SM at 85% of peak; spills 1.2 MB to local memory"),
])
def test_each_rule_in_words(p, limit, words):
    found = verdict(p)
    assert found.limit == limit and found.words == words


def test_memory_wins_only_where_it_is_the_busiest_unit():
    assert verdict(profile(sm_pct=95.0, dram_pct=70.0)).limit == Limit.COMPUTE
    assert verdict(profile(sm_pct=60.0, dram_pct=60.0)).limit == Limit.DRAM  # a tie goes to memory


def test_a_point_without_a_profile_says_why():
    assert verdict(None).words == "not profiled"
    missing = Profile.missing(Gap.NO_NCU, "ncu not found")
    assert verdict(missing).limit == Limit.UNPROFILED and verdict(missing).words == "not profiled: ncu not found"
