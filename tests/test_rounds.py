"""gpubench/analysis/rounds.py and `gpubench ab FILE...`: a kernel's ratio to the baseline over saved rounds, clean
pairs only, on synthetic runs."""

import pytest
from click.testing import CliRunner

from gpubench.core.dtypes import DType
from gpubench.ops.gemm import GemmLayout
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Run, RunStatus, Status

from gpubench.analysis import rounds as saved
from gpubench.cli import cli


def ab(*args):
    return CliRunner().invoke(cli, ["ab", *args])

SHAPE = GemmShape(4096, 4096, 4096, DType.BF16, GemmLayout.TN)


def point(variant, config, ms, mhz=1980.0, capped=0, shape=SHAPE):
    return Point.measured(shape, variant, config, samples_ms=[ms] * 5, rel_err=1e-3, tolerance=3e-3,
                          telemetry={"sm_mhz": mhz, "throttled": capped})


def run(*points):
    return Run("cuda", {}, {}, points=list(points), status=RunStatus.COMPLETE)


def test_each_round_pairs_the_kernel_with_the_baseline_of_its_own_run():
    rounds = [run(point("cublas", "-", 0.175), point("wgmma-tma", "o1", ms)) for ms in (0.176, 0.174, 0.175, 0.1745,
                                                                                         0.1755)]
    [row] = saved.rows(rounds, "cublas")
    assert row.problem == "bf16 tn 4096" and row.kernel == "wgmma-tma o1"
    assert row.ratios == pytest.approx([0.175 / ms for ms in (0.176, 0.174, 0.175, 0.1745, 0.1755)])
    m = row.interval(0.9)
    assert (m.n, m.median, m.low, m.high) == (5, 1.0, pytest.approx(0.175 / 0.176), pytest.approx(0.175 / 0.174))
    assert saved.verdict(m, 0.9) == "within the interval of 1.00"


def test_capped_or_unequal_clocks_leave_the_round_out_and_say_why():
    rounds = [run(point("cublas", "-", 0.175, capped=22, mhz=1515), point("wgmma-tma", "o1", 0.170)),
              run(point("cublas", "-", 0.175), point("wgmma-tma", "o1", 0.170, mhz=1965)),
              run(point("cublas", "-", 0.175), point("wgmma-tma", "o1", 0.180))]
    [row] = saved.rows(rounds, "cublas")
    assert row.ratios[:2] == (None, None) and row.ratios[2] == pytest.approx(0.175 / 0.180)
    assert row.why_not[0] == "cublas 1515 MHz, 22 capped" and row.why_not[1] == "clocks 1980 / 1965 MHz"
    assert row.baseline_tflops == pytest.approx(SHAPE.flops / 0.175 / 1e9)  # the capped round's is not counted
    assert "too few" in saved.verdict(row.interval(0.9), 0.9)


def test_any_power_state_counts_capped_pairs_but_not_failed_points():
    rounds = [run(point("cudnn", "-", 0.0467), point("tc-wgmma-tma", "ping1", 0.0454, mhz=1890, capped=46)),
              run(point("cudnn", "-", 0.0467), point("tc-wgmma-tma", "ping1", 0.0476, mhz=1860, capped=43)),
              run(point("cudnn", "-", 0.0467),  # over its tolerance: a failed point pairs in no state
                  Point.measured(SHAPE, "tc-wgmma-tma", "ping1", samples_ms=[0.0450] * 5, rel_err=1.0,
                                 tolerance=3e-3, telemetry={"sm_mhz": 1890, "throttled": 40}))]
    [row] = saved.rows(rounds, "cudnn", any_state=True)
    assert row.ratios[:2] == pytest.approx([0.0467 / 0.0454, 0.0467 / 0.0476]) and row.ratios[2] is None
    assert row.why_not[2].startswith("tc-wgmma-tma")
    [strict] = saved.rows(rounds, "cudnn")
    assert strict.ratios == (None, None, None)  # without it, a capped side leaves every round out


def test_a_kernel_slower_in_every_round_is_below_one_with_its_margin():
    rounds = [run(point("cublas", "-", 0.175), point("wgmma-tma", "o1", 0.175 / r)) for r in
              (0.990, 0.992, 0.994, 0.991, 0.993)]
    [row] = saved.rows(rounds, "cublas")
    assert saved.verdict(row.interval(0.9), 0.9) == "below 1.00 by 0.8% (at most 0.6%)"


def test_the_table_marks_the_baselines_fastest_layout_and_the_command_reads_files(tmp_path):
    from gpubench import results

    nn = GemmShape(4096, 4096, 4096, DType.BF16, GemmLayout.NN)
    paths = []
    for i in range(5):
        r = run(point("cublas", "-", 0.176, shape=nn), point("wgmma-tma", "o1", 0.175, shape=nn),
                point("cublas", "-", 0.174), point("wgmma-tma", "o1", 0.1735))
        paths.append(str(results.save(r, tmp_path / f"r{i}.json")))
    r = ab(*paths, "--format", "markdown")
    assert r.exit_code == 0, r.output
    out = r.output
    assert "| bf16 tn 4096 (baseline's fastest) | wgmma-tma o1 |" in out
    assert "| bf16 nn 4096 | wgmma-tma o1 |" in out
    assert "5/5" in out and "at or past 1.00" in out
    assert ab(*paths, "--baseline", "wgmma-tma", "--level", "0.9").exit_code == 0  # any variant as baseline
    bad = ab(paths[0], "--baseline", "nothing")
    assert bad.exit_code == 2 and "--baseline must name one of them" in bad.output
    data = __import__("json").loads(ab(*paths, "--format", "json").output)
    assert data["baseline"] == "cublas" and data["level"] == 0.9 and len(data["rows"]) == 2


def test_the_screen_passes_the_kernels_at_or_above_the_reference_at_most_keep(tmp_path):
    from gpubench import results

    nn = GemmShape(4096, 4096, 4096, DType.BF16, GemmLayout.NN)
    paths = []
    for i, capped in enumerate((0, 22)):
        # tn: a +0.4% and a +0.1% kernel, one at -0.2%, one equal; nn: the +0.1% one capped in round 2 and, in
        # round 1, 1% behind: its mean over the two problems is below the reference's
        r = run(point("cublas", "-", 0.175), point("wgmma-tma", "u1", 0.176), point("wgmma-tma", "d1", 0.176 / 1.004),
                point("wgmma-tma", "q1", 0.176 / 1.001), point("wgmma-tma", "c1", 0.176 * 1.002),
                point("wgmma-tma", "o1", 0.176),
                point("cublas", "-", 0.175, shape=nn), point("wgmma-tma", "u1", 0.176, shape=nn),
                point("wgmma-tma", "d1", 0.176 / 1.004, shape=nn), point("wgmma-tma", "o1", 0.176, shape=nn),
                point("wgmma-tma", "q1", 0.176 * 1.01, shape=nn, capped=capped),
                point("wgmma-tma", "c1", 0.176 * 1.002, shape=nn))
        paths.append(str(results.save(r, tmp_path / f"s{i}.json")))
    table = saved.rows([results.load(p) for p in paths], "cublas")
    scores, passing = saved.screen(table, "wgmma-tma u1", keep=2)
    assert [k for k, _, _ in scores] == ["wgmma-tma d1", "wgmma-tma o1", "wgmma-tma c1", "wgmma-tma q1"]
    assert scores[0][1] == pytest.approx(0.175 / 0.176 * 0.004) and scores[0][2] == 2
    assert scores[1][1] == pytest.approx(0)
    assert passing == ["wgmma-tma d1", "wgmma-tma o1"]  # c1 behind (-0.2%), q1 further (-1% in nn)
    assert saved.screen(table, "wgmma-tma u1", keep=1)[1] == ["wgmma-tma d1"]
    r = ab(*paths, "--screen", "wgmma-tma u1")
    assert r.exit_code == 0 and "PASSING: wgmma-tma d1; wgmma-tma o1" in r.output
    bad = ab(*paths, "--screen", "wgmma-tma x9")
    assert bad.exit_code == 2 and "--screen 'wgmma-tma x9' is none of the rounds' kernels" in bad.output


def test_a_baseline_of_several_libraries_stands_by_the_fastest_that_passed_in_each_round():
    loop_fails = Point.measured(SHAPE, "cublas-loop", "-", samples_ms=[0.150] * 5, rel_err=1.0, tolerance=3e-3,
                                telemetry={"sm_mhz": 1980.0, "throttled": 0})
    rounds = [run(point("library", "-", 0.180), point("cublas-loop", "-", 0.170), point("mine", "c1", 0.172)),
              run(point("library", "-", 0.165), point("cublas-loop", "-", 0.170), point("mine", "c1", 0.172)),
              run(point("library", "-", 0.180), loop_fails, point("mine", "c1", 0.172)),  # the faster one failed
              run(point("cublas-loop", "-", 0.171), point("mine", "c1", 0.172))]  # one library missing
    [row] = saved.rows(rounds, ("library", "cublas-loop"))
    assert row.kernel == "mine c1"  # neither library is taken for a kernel
    assert row.ratios == pytest.approx([0.170 / 0.172, 0.165 / 0.172, 0.180 / 0.172, 0.171 / 0.172])
    assert row.baselines == ("cublas-loop", "library", "library", "cublas-loop")
    alone = {r.kernel: r for r in saved.rows(rounds, "library")}  # one name still works: the loop is a kernel
    assert set(alone) == {"mine c1", "cublas-loop -"}
    assert alone["mine c1"].ratios[3] is None and alone["mine c1"].why_not[3] == "not in this round"


def test_a_baseline_of_several_libraries_none_of_which_passed_says_why():
    skipped = [Point(SHAPE, name, "-", Status.SKIPPED, reason="takes no block scales")
               for name in ("library", "cublas-loop")]
    [row] = saved.rows([run(*skipped, point("mine", "c1", 0.172))], ("library", "cublas-loop"), any_state=True)
    assert row.ratios == (None,) and row.why_not == ("library skipped",)
