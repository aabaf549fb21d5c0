"""`gpubench ab`: A against B inside one process on the CPU backend, end to end (a planted 2×-slower Python
variant is found slower, exit 1; A against A is the same, exit 0), the three ways of giving the sides, and the
verdict's exit codes."""

import json
import subprocess

import pytest
from click.testing import CliRunner

from gpubench.analysis.compare import Verdict
from gpubench.cli import cli
from gpubench.core.exit_codes import Exit
from gpubench.execution.paired import order
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point
from gpubench.usecases.ab import ABOutcome, decided

FAST = "import numpy as np\n\ndef mm(A, B, C, M, N, K):\n    np.matmul(A, B, out=C)\n"
SLOW = FAST + "    np.matmul(A, B, out=C)  # planted: the product twice\n"
CPU = ("--backend", "cpu", "--args", "A,B,C,M,N,K", "--size", "96", "--reps", "10")


def invoke(*args):
    return CliRunner().invoke(cli, ["ab", *args])


@pytest.fixture
def sources(tmp_path):
    (tmp_path / "fast.py").write_text(FAST)
    (tmp_path / "slow.py").write_text(SLOW)
    return tmp_path


def test_a_planted_twice_slower_kernel_is_found_slower(sources):
    r = invoke("--kernel", f"a={sources}/fast.py:mm", "--kernel", f"b={sources}/slow.py:mm", *CPU,
               "--threshold", "0.2", "--format", "json", "--rounds", "8")
    assert r.exit_code == Exit.FAILED, r.output
    out = json.loads(r.output)
    assert out["verdict"] == "slower" and len(out["ratios"]) == 8
    assert out["test"]["above"] == 8 and out["test"]["low"] > 1.2


def test_a_against_itself_is_never_slower(sources):
    """A against A: never a false "slower" (exit 1). On a quiet machine it reads "same"; on a CPU shared with other
    test workers the rounds can scatter past the threshold, which reads as inconclusive, never as a verdict."""
    r = invoke("--kernel", f"a={sources}/fast.py:mm", "--kernel", f"b={sources}/fast.py:mm", *CPU,
               "--threshold", "0.3", "--rounds", "16")
    assert r.exit_code in (Exit.OK, Exit.INCONCLUSIVE), r.output
    assert "verdict: same at ±30%" in r.output or "verdict: inconclusive at ±30%" in r.output
    assert "B/A by round:" in r.output


def test_two_git_revisions_of_one_file(sources):
    repo = sources / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (repo / "mm.py").write_text(FAST)
    git("add", "mm.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fast")
    (repo / "mm.py").write_text(SLOW)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "slow")
    r = invoke("--rev", "HEAD~1", "--rev", "HEAD", f"{repo}/mm.py:mm", *CPU, "--threshold", "0.2", "--rounds", "8")
    assert r.exit_code == Exit.FAILED, r.output
    assert "A  HEAD~1:mm.py" in r.output and "B is slower than A" in r.output
    bad = invoke("--rev", "nosuchrev", "--rev", "HEAD", f"{repo}/mm.py:mm", *CPU)
    assert bad.exit_code == Exit.USAGE and "git show nosuchrev:mm.py failed" in bad.output


def test_two_variants_by_name_on_the_cpu(sources):
    r = invoke("numpy", "numpy", "--backend", "cpu", "--size", "64", "--rounds", "6", "--reps", "5",
               "--threshold", "0.5")
    assert r.exit_code in (Exit.OK, Exit.INCONCLUSIVE), r.output
    assert "A  numpy [-]" in r.output


@pytest.mark.parametrize("args, words", [
    ((), "ab compares two things"),
    (("numpy",), "exactly two"),
    (("numpy", "numpy", "numpy"), "exactly two"),
    (("numpy", "nosuch"), "unknown gemm variant 'nosuch'"),
    (("numpy@", "numpy"), "nothing after @"),
    (("numpy@x9", "numpy"), "no configuration 'x9'"),
    (("--rev", "HEAD", "--rev", "HEAD~1"), "give the kernel file as the one argument"),
    (("numpy", "numpy", "--kernel", "a.py:f"), "got two variants and --kernel"),
    (("numpy", "numpy", "--dtype", "fp32,bf16"), "ab runs one problem: give one precision"),
])
def test_bad_sides_are_one_line_and_exit_2(args, words):
    r = invoke(*args, "--backend", "cpu")
    assert r.exit_code == Exit.USAGE, r.output
    assert words in r.output


def test_rounds_alternate_which_side_goes_first():
    assert [order(r) for r in range(4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]


def _outcome(ratios, threshold=0.005):
    shape = GemmShape(64, 64, 64)
    points = []
    for r in ratios:
        points.append(Point.measured(shape, "A: x", "-", samples_ms=[1.0] * 5, rel_err=0, tolerance=1e-3))
        points.append(Point.measured(shape, "B: x", "-", samples_ms=[r] * 5, rel_err=0, tolerance=1e-3))
    return decided(ABOutcome(shape, ("x", "x"), ("A: x", "B: x"), ("-", "-"), "cpu", points, threshold=threshold))


def test_the_verdict_gives_compares_exit_codes():
    assert _outcome([1.02] * 20).verdict == Verdict.SLOWER and _outcome([1.02] * 20).exit_code == Exit.FAILED
    assert _outcome([1.0] * 20).verdict == Verdict.SAME and _outcome([1.0] * 20).exit_code == Exit.OK
    assert _outcome([0.97] * 20).exit_code == Exit.OK
    wide = _outcome([1.0, 1.03] * 10)
    assert wide.verdict == Verdict.INCONCLUSIVE and wide.exit_code == Exit.INCONCLUSIVE
    few = _outcome([1.5] * 3)
    assert few.verdict == Verdict.INCONCLUSIVE  # too few rounds for the interval's level


def test_the_kernel_clocks_rounds_are_tested_beside_the_events():
    from gpubench.results import Details
    from gpubench.views import ab as view

    shape = GemmShape(64, 64, 64)
    points = []
    for _ in range(10):
        for name, ms, kernel in (("A: x", 1.0, 0.90), ("B: x", 1.01, 0.9 * 1.02)):
            points.append(Point.measured(shape, name, "-", samples_ms=[ms] * 5, rel_err=0, tolerance=1e-3,
                                         details=Details(kernel_ms=[kernel] * 5, kernels=("k",))))
    o = decided(ABOutcome(shape, ("x", "x"), ("A: x", "B: x"), ("-", "-"), "cuda", points))
    assert o.kernel_ratios == pytest.approx([1.02] * 10) and o.kernel_result.median == pytest.approx(1.02)
    assert "by CUPTI's kernel times (10 rounds): median B/A 1.0200 (+2.00%)" in "\n".join(view.lines(o))
    assert o.verdict == Verdict.SLOWER  # the events' own (1%)


def test_a_side_that_fails_has_no_verdict_and_exits_1():
    shape = GemmShape(64, 64, 64)
    bad = Point.measured(shape, "B: x", "-", samples_ms=[1.0] * 5, rel_err=1.0, tolerance=1e-3)
    o = decided(ABOutcome(shape, ("x", "x"), ("A: x", "B: x"), ("-", "-"), "cpu", [bad]))
    assert o.verdict is None and o.exit_code == Exit.FAILED and "B: x fail" in o.problem
