"""gpubench/measure/ncu.py: the metric set, the command line, and ncu's output read from recorded fixtures
(tests/fixtures/ncu/README.md says where each came from)."""

from pathlib import Path

import pytest

from gpubench.measure import ncu
from gpubench.results.profile import Gap

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_the_recorded_metrics_page_is_read_launch_by_launch_in_base_units():
    launches = ncu.parse(fixture("tf32-tma-l2-sectors-h100.txt"))
    assert [la.name for la in launches] == ["gemm_tf32_tma"] * 4
    assert launches[0].grid == (32, 16, 1) and launches[0].block == (384, 1, 1)
    first, last = launches[0].values, launches[-1].values
    assert first["gpu__time_duration.sum"] == pytest.approx(586_110)  # 586.11 us, in ns
    assert first["l1tex__m_xbar2l1tex_read_bytes.sum"] == pytest.approx(3.22e9)  # 3.22 Gbyte
    assert first["lts__t_sectors.sum"] == 123_949_623  # grouped digits
    assert first["launch__cluster_dim_x"] == 0 and last["launch__cluster_dim_x"] == 2  # no unit
    assert last["gpu__time_duration.sum"] == pytest.approx(863_710)


def test_section_rows_and_the_programs_own_output_are_not_metrics():
    launches = ncu.parse(fixture("sections-nvjet-h100.txt"))
    assert [la.name for la in launches] == ["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"]
    assert launches[0].grid == (2, 66, 1) and launches[0].values == {}


def test_a_profile_takes_the_longest_launch_and_sums_the_additive_metrics():
    profile = ncu.profile_from(ncu.parse(fixture("set-tc-wgmma-14-h100.txt")), "sm_90")
    assert profile.taken and profile.launches == 2 and profile.kernels == ("conv_tc_wgmma",)
    assert profile.metrics["duration_ns"] == 102_720  # the second launch is the longer
    assert profile.metrics["tensor_pct"] == 51.38 and profile.metrics["occupancy_pct"] == 12.45
    assert profile.totals["duration_ns"] == 90_688 + 102_720
    assert profile.dram_bytes == 14_061_312 + 597_760 + 14_071_808 + 383_488
    assert "lts__t_sectors_op_read.sum" not in profile.metrics  # not of the set


def test_stalls_are_the_largest_three_without_selected_warps():
    text = fixture("set-nvjet-bf16-h100.txt").replace(
        "    ---------------------------------------------------------------- ----------- ------------\n\n",
        "    smsp__average_warps_issue_stalled_selected_per_issue_active.ratio     9.0\n"
        "    smsp__average_warps_issue_stalled_wait_per_issue_active.ratio     2.5\n"
        "    smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio     1.5\n"
        "    smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio     0.5\n", 1)
    profile = ncu.profile_from(ncu.parse(text), "sm_90")
    assert profile.stalls == (("barrier", 6.0), ("wait", 2.5), ("math_pipe_throttle", 1.5))


def test_no_launch_in_the_bracket_is_a_gap():
    profile = ncu.profile_from([], "sm_90", "ncu 2025.1")
    assert profile.gap == Gap.NO_KERNEL and profile.tool == "ncu 2025.1"


@pytest.mark.parametrize("name,gap,words", [
    ("not-permitted.txt", Gap.NOT_PERMITTED, "ERR_NVGPUCTRPERM"),
    ("replay-failed-h100.txt", Gap.NO_REPLAY, "could not profile the call's kernel: Failed to prepare kernel"),
    ("unknown-error.txt", Gap.FAILED, "ncu: Unknown Error on device 0."),
])
def test_refusals_are_one_line_with_their_gap(name, gap, words):
    profile = ncu.refusal(fixture(name))
    assert profile.gap == gap and words in profile.reason and "\n" not in profile.reason


def test_a_clean_log_is_no_refusal():
    assert ncu.refusal(fixture("set-nvjet-bf16-h100.txt")) is None


def test_the_command_brackets_one_call_with_the_fixed_set():
    line = ncu.command("/opt/ncu", "sm_90", "/tmp/log", ["python", "-m", "x"])
    assert line[:2] == ["/opt/ncu", "--profile-from-start"] and line[2] == "off"
    assert line[line.index("--clock-control") + 1] == "none" and line[-3:] == ["python", "-m", "x"]
    asked = line[line.index("--metrics") + 1].split(",")
    assert asked == [m.ncu for m in ncu.METRICS]  # sm_90: every row, the GMMA pipe too
    assert "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active" not in \
           [m.ncu for m in ncu.metrics_for("sm_80")]


def test_the_metric_table_has_one_row_per_key_and_names_the_set_of_the_issue():
    keys = [m.key for m in ncu.METRICS]
    assert len(keys) == len(set(keys))
    for key in ("sm_pct", "dram_pct", "l2_pct", "occupancy_pct", "registers", "local_store_sectors", "tensor_pct",
                "dram_read_bytes", "l2_bytes", "instructions", "stall_barrier"):
        assert key in keys


def test_the_version_line():
    assert ncu.version("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.1.1.0 (build 1)") == \
           "ncu 2025.1.1.0"
    assert ncu.version("nothing") is None


def test_the_documented_metric_table_is_the_code_s():
    """docs/measuring/profiling.md lists every row of METRICS (its key and ncu metric), so they never drift apart."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "measuring" / "profiling.md").read_text()
    for m in ncu.METRICS:
        if not m.key.startswith(ncu.STALL_PREFIX):
            assert f"| `{m.key}` | `{m.ncu}` |" in page, m.key
    for reason in ncu.STALL_REASONS:
        assert reason in page


def test_the_pages_an_h200_printed_read_back_as_they_did_there():
    """The ncu pages gpubench's own profile run printed on an H200 (tools/gpu/profile.sh, recorded as they came):
    each point's one launch, its kernel named, and the figures that run's table showed (ncu by hand read the same
    within 0.5%: docs/evidence/profile-h200.log.txt.gz)."""
    from pathlib import Path

    from gpubench.measure import ncu

    text = (Path(__file__).parent / "fixtures" / "ncu" / "recorded-pages-gemm-h200.txt").read_text()
    points = {c.splitlines()[0]: ncu.profile_from(ncu.parse(c), "sm_90") for c in text.split("# point ")[1:]}
    assert points["global-16-gemm-4096"].metrics["sm_pct"] == pytest.approx(64.91, abs=0.01)
    assert points["shared-16-gemm-4096"].metrics["dram_pct"] == pytest.approx(20.89, abs=0.01)
    assert points["tiled-128x128x8-8x8-gemm-4096"].metrics["occupancy_pct"] == pytest.approx(24.15, abs=0.01)
    assert "cublas" in points["cublas---gemm-4096"].kernel and points["global-16-gemm-4096"].kernel == "gemm_global"
