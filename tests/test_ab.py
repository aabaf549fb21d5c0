"""`gpubench ab`: A against B inside one process on the CPU backend, end to end (a planted 2×-slower Python
variant is found slower, exit 1; A against A is the same, exit 0), the three ways of giving the sides, the
verdict's exit codes, and the rounds as gpubench/execution/paired.py runs them on a fake card whose state flips
every few tens of calls (a 2% slow state, as an H200 showed)."""

import json
import subprocess
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gpubench.analysis.compare import Verdict
from gpubench.cli import cli
from gpubench.core.exit_codes import Exit
from gpubench.execution.paired import order
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Status
from gpubench.results.neighbours import GpuNeighbours, Neighbour
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
    rounds = out["rounds"]  # each round's order and both sides' samples, kept to be looked at afterwards
    assert [x["order"] for x in rounds] == ["AB", "BA"] * 4
    assert all(len(x["a_ms"]) == len(x["b_ms"]) >= 5 for x in rounds)
    assert [x["ratio"] for x in rounds] == out["ratios"]


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


def test_graph_is_refused_in_one_line():
    r = invoke("numpy", "numpy", "--backend", "cpu", "--graph", "20")
    assert r.exit_code == Exit.USAGE, r.output
    assert "ab --graph 20: an A/B times A's and B's calls in turn" in r.output and "Traceback" not in r.output


def test_many_rounds_are_summarised_in_the_text_and_split_by_order():
    from gpubench.views import ab as view

    o = _outcome([1.0, 1.01] * 30)  # AB rounds read 1.00, BA rounds 1.01
    text = "\n".join(view.lines(o))
    assert "B/A by round: quartiles" in text and "1.0000 1.0050 1.0100" in text
    assert "median B/A by order: AB 1.0000 (30 rounds), BA 1.0100 (30 rounds)" in text
    assert o.orders[:3] == ["AB", "BA", "AB"]


# --- the rounds on a fake card (gpubench/execution/paired.py) --------------------------------------------------


class Card:
    """A fake GPU whose state flips every `k` calls between normal and 2% slow; B's calls take `plant` times A's."""

    def __init__(self, k=60, plant=1.0):
        self.k, self.plant, self.calls, self.log, self.last_ms = k, plant, 0, [], None

    def run(self, side, real):
        def call():
            real()  # the variant's own call too: the verification reads its output
            self.log.append(side)
            self.last_ms = 0.010 * (self.plant if side else 1.0) * (1.02 if (self.calls // self.k) % 2 else 1.0)
            self.calls += 1

        return call


class CardClock:
    def __init__(self, card):
        self.card = card

    def sync(self):
        pass

    def flush(self):
        pass

    def time_ms(self, run):
        run()
        return self.card.last_ms

    def time_batch_ms(self, run, n, flush):
        return [self.time_ms(run) for _ in range(n)]


def card_rounds(card, rounds=12, b_writes=True):
    """An A/B of the CPU backend's numpy GEMM against itself, its calls timed by the card's clock (B's writing
    nothing where not `b_writes`)."""
    from gpubench.backends.cpu import CpuBackend
    from gpubench.execution.messages import Begin, Finished
    from gpubench.execution.paired import PairedTask
    from gpubench.execution.tasks import PointTask, run_task
    from gpubench.measure.timing import TimingPolicy
    from gpubench.specs import catalog
    from gpubench.specs.variant import NO_CONFIG

    class OnTheCard(CpuBackend):
        clock = CardClock(card)
        sides = 0

        def prepare(self, variant, config, shape, inputs, output=None):
            made = super().prepare(variant, config, shape, inputs, output)
            self.sides += 1
            real = made.run if b_writes or self.sides == 1 else lambda: None
            return replace(made, run=card.run(self.sides - 1, real))

    numpy = catalog.Catalog(catalog.builtin()).get("gemm", "cpu", "numpy")
    policy = TimingPolicy(reps=30, min_reps=5, budget_s=10, batch_below_ms=1.0)
    points = tuple(PointTask(i, replace(numpy, name=f"{side}: numpy"), NO_CONFIG, policy)
                   for i, side in enumerate("AB"))
    task = PairedTask("ab", GemmShape(32, 32, 32), 0, points, rounds=rounds, max_time_s=60)
    events = list(run_task(OnTheCard(), task))
    finished = [e.point for e in events if isinstance(e, Finished)]
    begun = [e.index for e in events if isinstance(e, Begin)][3:]  # after the setup and the two verifications
    outcome = decided(ABOutcome(task.shape, ("numpy", "numpy"), ("A: numpy", "B: numpy"), ("-", "-"), "fake",
                                finished))
    return outcome, begun


def test_the_rounds_cancel_a_slow_card_state_and_say_same():
    card = Card()
    o, begun = card_rounds(card)
    assert len(o.rounds) == 12 and all(a.samples_ms and len(a.samples_ms) == len(b.samples_ms) for a, b in o.rounds)
    assert o.ratios == pytest.approx([1.0] * 12, abs=1e-9)
    assert o.verdict == Verdict.SAME and o.exit_code == Exit.OK
    assert begun == [0, 1] * 6  # each round begins with the side whose call comes first
    assert {a.details.batch for a, _ in o.rounds} == {64}  # queued batches of both sides' calls (60 fill a round)


def test_the_rounds_find_a_planted_two_percent_through_the_card_states():
    o, _ = card_rounds(Card(plant=1.02))
    assert o.ratios == pytest.approx([1.02] * 12, rel=1e-9)
    assert o.verdict == Verdict.SLOWER and o.exit_code == Exit.FAILED


def test_odd_rounds_begin_with_b():
    card = Card()
    card_rounds(card, rounds=2)
    calls = card.log[2:]  # after the two verifications: the calibration, then two rounds of 3 warm-up pairs + 30 pairs
    assert len(calls) == 12 + 2 * 66
    # each round: three warm-up pairs in turn, then thirty pairs counterbalanced
    assert calls[-132:-66] == [0, 1] * 3 + [0, 1, 1, 0] * 15 and calls[-66:] == [1, 0] * 3 + [1, 0, 0, 1] * 15


def test_a_side_that_fails_its_check_ends_the_rounds_after_one():
    o, _ = card_rounds(Card(), b_writes=False)
    assert len(o.points) == 2 and o.points[1].status == Status.FAIL  # one round's points, then no more
    assert o.verdict is None and o.exit_code == Exit.FAILED and o.problem.startswith("B: numpy fail")


class CompanyWatch:
    """A watch that sees one other process at the start and another at the end (NVML's view, faked)."""

    def start(self, executor):
        return GpuNeighbours(start=(Neighbour(4242, "python burn.py", 512),))

    def end(self, executor, record):
        return record.ended((Neighbour(4343, "python other.py"),))


def test_other_processes_on_the_gpu_during_the_rounds_are_named_in_text_and_json(sources, monkeypatch):
    """ab looks for other processes before its rounds and after them, as a run does, and says so in one line;
    the JSON keeps the record."""
    from gpubench.usecases import ab as ab_module

    monkeypatch.setattr(ab_module.neighbours, "watch_for", lambda backend, info: CompanyWatch())
    args = ("--kernel", f"a={sources}/fast.py:mm", "--kernel", f"b={sources}/fast.py:mm", *CPU, "--threshold", "0.5",
            "--rounds", "4")
    text = invoke(*args)
    assert "2 other processes were computing on this GPU during the run (pids 4242 (python burn.py), 4343 " \
           "(python other.py); seen at its start and end)" in text.output, text.output
    data = json.loads(invoke(*args, "--format", "json").output)
    assert [p["pid"] for p in data["gpu_neighbours"]["start"]] == [4242] and data["gpu_neighbours"]["checked"]


def test_an_ab_alone_on_its_gpu_says_nothing_of_company(sources):
    r = invoke("--kernel", f"a={sources}/fast.py:mm", "--kernel", f"b={sources}/fast.py:mm", *CPU, "--rounds", "4",
               "--format", "json")
    assert json.loads(r.output)["gpu_neighbours"] is None  # the CPU backend: no GPU to look at
