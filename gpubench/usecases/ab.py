"""`gpubench ab`: two versions of a call compared inside one process, round by round (the use case).

The two sides are two variants (`gpubench ab tiled vec`, a configuration after `@`: `tiled@64x64x8/4x4`), two
sources of one kernel (`--kernel old.cu:sym --kernel new.cu:sym`, the --kernel machinery of gemm and conv), or one
kernel file at two git revisions (`--rev HEAD~1 --rev HEAD FILE:SYMBOL`, each revision written out by `git show
REV:PATH` into a temporary directory; the file's own directory stays on the include path, so its relative
includes resolve as in the working tree). Both run in one worker process on the same inputs
(gpubench/execution/paired.py). Each round times their calls in turn, call by call, counterbalanced (A B B A ...,
B A A B ... in odd rounds: gpubench/measure/interleaved.py), and gives one ratio B/A: the median over its quartets.
The rounds decide (gpubench/measure/paired.py: the sign test's interval for the median ratio, judged by
`compare`'s rule at --threshold). Exit codes as compare's: B slower → 1, same or faster → 0, inconclusive → 3;
a side that fails verification or cannot run → 1, as a sweep's failed point.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpubench.analysis.compare import Verdict, verdict
from gpubench.core.errors import GpubenchError
from gpubench.core.exit_codes import Exit
from gpubench.execution import neighbours
from gpubench.execution.executors import open_executor
from gpubench.execution.paired import PairedTask, order
from gpubench.execution.tasks import PointTask
from gpubench.measure.paired import PairedRatio, paired_ratio, round_ratio
from gpubench.measure.timing import TimingPolicy
from gpubench import ops
from gpubench.planning import plan
from gpubench.results import Point, Status
from gpubench.results.neighbours import GpuNeighbours
from gpubench.specs.variant import Variant
from gpubench.usecases.session import precompile

THRESHOLD = 0.005  # ab's default: an A/B inside one process decides changes far below compare's 5% between runs
LEVEL = 0.95
# Rounds: at most ROUNDS, within MAX_TIME_S. A round is 2 × ROUND_REPS timed calls, a warm-up, one telemetry reading
# and two points sent to the coordinator. On an H200, 40 rounds of the former layout (two blocks, more calls) of a
# 24 µs kernel fitted in a 3.7 s command (docs/evidence/micro-h200.log.txt), so a ~10 µs kernel gets its ROUNDS well
# within the time; a ~1 ms kernel's rounds (60 ms of calls, ~0.1 s in all) fill about MAX_TIME_S. With
# the worker's start, the compile and the verification, the command stays within a minute.
ROUNDS = 400
MAX_TIME_S = 40.0
ROUND_REPS = 30  # timed calls per side per round, at most ...
ROUND_BUDGET_S = 0.2  # ... or, past the least, this many seconds per side (the round: twice as long)
SIDES = ("A", "B")


@dataclass(frozen=True)
class Side:
    """One side of the A/B: the variant as named in the points (`A: tiled`), what it was asked as, its config."""

    variant: Variant
    asked: str
    config_label: str | None = None  # the configuration asked for (`@LABEL`), None: the variant's first


@dataclass
class ABOutcome:
    """What the view shows: the two sides, every round's points, the test and the verdict, and the exit code."""

    shape: object
    sides: tuple[str, str]  # what each side was asked as
    names: tuple[str, str]  # the points' variant names
    configs: tuple[str, str]
    device: str
    points: list[Point] = field(default_factory=list)
    threshold: float = THRESHOLD
    level: float = LEVEL
    result: PairedRatio | None = None
    verdict: Verdict | None = None
    problem: str = ""  # why there is no verdict (a side failed, skipped, or too few rounds)
    company: GpuNeighbours | None = None  # the other processes on its GPU at its start and end (CUDA only)

    @property
    def rounds(self) -> list[tuple[Point, Point]]:
        a = [p for p in self.points if p.variant == self.names[0]]
        b = [p for p in self.points if p.variant == self.names[1]]
        return list(zip(a, b))

    @property
    def ratios(self) -> list[float]:
        """Each round's ratio B/A: the median over its pairs of adjacent calls (measure/paired.py's round_ratio)."""
        return [round_ratio(a.samples_ms, b.samples_ms) for a, b in self.rounds if a.status == b.status == Status.OK]

    @property
    def orders(self) -> list[str]:
        """Which side's call came first in each round, as the two letters in order ("AB", "BA")."""
        return ["".join(SIDES[i] for i in order(r)) for r in range(len(self.rounds))]

    @property
    def kernel_ratios(self) -> list[float]:
        """The rounds' ratios by the second clock (CUPTI's kernel times, --clock both, pair by pair), where both
        sides have them."""
        return [round_ratio(a.details.kernel_ms, b.details.kernel_ms)
                for a, b in self.rounds if a.details.kernel_ms and b.details.kernel_ms]

    @property
    def kernel_result(self) -> PairedRatio | None:
        """The same paired test on the kernel times (shown beside the events'; the verdict is the events')."""
        ratios = self.kernel_ratios
        return paired_ratio(ratios, self.level) if ratios else None

    @property
    def exit_code(self) -> int:
        if self.verdict is None:
            return Exit.FAILED
        return {Verdict.SLOWER: Exit.FAILED, Verdict.INCONCLUSIVE: Exit.INCONCLUSIVE}.get(self.verdict, Exit.OK)


# --- the sides --------------------------------------------------------------------------------------------------


def _by_name(catalog, op: str, backend: str, text: str) -> Side:
    name, at, label = text.partition("@")
    known = {v.name: v for v in catalog.variants(op, backend)}
    if name not in known:
        raise GpubenchError(f"ab: unknown {op} variant {name!r} for the {backend} backend; allowed are "
                            f"{', '.join(sorted(known))} (see `gpubench list`)")
    if at and not label:
        raise GpubenchError(f"ab: {text!r} has nothing after @: give NAME@CONFIGURATION, or NAME alone")
    return Side(known[name], text, label or None)


def materialise(rev: str, path: Path, into: Path) -> Path:
    """The file at a git revision (`git show REV:./NAME` from the file's directory), written under `into`."""
    if not rev.strip() or rev.startswith("-") or not rev.isprintable():
        raise GpubenchError(f"--rev {rev!r}: give a git revision such as HEAD~1, a branch, a tag or a commit")
    try:
        shown = subprocess.run(["git", "-C", str(path.parent), "show", f"{rev}:./{path.name}"],
                               capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GpubenchError(f"--rev {rev}: git could not be run ({e})") from None
    if shown.returncode != 0:
        words = shown.stderr.decode(errors="replace").strip().splitlines()
        raise GpubenchError(f"--rev {rev}: git show {rev}:{path.name} failed: {words[0] if words else 'no output'}")
    folder = into / re.sub(r"[^A-Za-z0-9._-]+", "_", rev)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    target.write_bytes(shown.stdout)
    return target


def _kernels(catalog, op: str, backend: str, texts: list[str], args: str | None, dtypes) -> list[Side]:
    mine = plan.lab_kernels(catalog, op, backend, texts, args, dtypes)
    return [Side(v, t) for v, t in zip(mine, texts)]


def _revisions(catalog, op: str, backend: str, revs: list[str], file: str, args: str | None, dtypes,
               scratch: Path) -> list[Side]:
    target, sep, symbol = file.rpartition(":")
    if not sep or not target or not symbol:
        raise GpubenchError(f"ab --rev: give the kernel as FILE:SYMBOL (e.g. kernels/gemm.cu:my_gemm), got {file!r}")
    try:
        path = Path(target).resolve()
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL
        is_file = False
    if not is_file:
        raise GpubenchError(f"ab --rev: {target} is not a file in the working tree (its directory names the "
                            "repository)")
    sides = []
    for i, rev in enumerate(revs):
        written = materialise(rev, path, scratch / f"r{i}")
        (v,) = plan.lab_kernels(catalog, op, backend, [f"rev{i}={written}:{symbol}"], args, dtypes)
        program = replace(v.code.program, includes=(*v.code.program.includes, path.parent))
        sides.append(Side(replace(v, code=replace(v.code, program=program)), f"{rev}:{path.name}"))
    return sides


def sides_of(catalog, op: str, backend: str, names: list[str], kernels: list[str], revs: list[str],
             file: str | None, args: str | None, dtypes, scratch: Path) -> list[Side]:
    """The two sides, from exactly one of: two names, two --kernel, two --rev with FILE."""
    given = [what for what, n in (("two variants", names), ("--kernel", kernels), ("--rev", revs)) if n]
    if len(given) != 1:
        raise GpubenchError("ab compares two things: give two variant names (A B), or --kernel twice, or --rev twice "
                            "with FILE:SYMBOL" + (f"; got {' and '.join(given)}" if given else ""))
    if file is not None and not revs:
        raise GpubenchError(f"ab: {file!r} is the kernel file for --rev: give --rev twice, or name two variants")
    count = len(names or kernels or revs)
    if count != 2:
        raise GpubenchError(f"ab compares exactly two: got {count}")
    if names:
        return [_by_name(catalog, op, backend, n) for n in names]
    if kernels:
        return _kernels(catalog, op, backend, kernels, args, dtypes)
    if file is None:
        raise GpubenchError("ab --rev: give the kernel file too, as FILE:SYMBOL after the revisions")
    return _revisions(catalog, op, backend, revs, file, args, dtypes, scratch)


def op_of(catalog, backend: str, names: list[str], op: str | None) -> str:
    """--op where given; else the op whose variants hold both names (the first op, gemm, for --kernel and --rev)."""
    if op is not None:
        try:
            return ops.get(op).name
        except GpubenchError:
            raise GpubenchError(f"--op {op!r}; allowed: {', '.join(ops.names())}") from None
    first = ops.names()[0]
    if not names:
        return first
    bare = [n.partition("@")[0] for n in names]
    found = [o for o in ops.names() if all(b in {v.name for v in catalog.variants(o, backend)} for b in bare)]
    return found[0] if len(found) == 1 else first if not found else _ambiguous(bare, found)


def _ambiguous(names, found) -> str:
    raise GpubenchError(f"ab: {', '.join(names)} name variants of {' and '.join(found)}: give --op")


def config_of(side: Side, block: int):
    """The side's configuration: the one named after @, or its first (a block-axis variant: `block`)."""
    configs = side.variant.space.configs_for((block,))
    if side.config_label is None:
        return configs[0]
    every = side.variant.space.configs_for(plan.DEFAULTS.block_sizes + (block,))
    chosen = next((c for c in every if c.label == side.config_label), None)
    if chosen is None:
        raise GpubenchError(f"ab: {side.variant.name} has no configuration {side.config_label!r}; it has "
                            f"{', '.join(dict.fromkeys(c.label for c in every))}")
    return chosen


# --- the run ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ABRequest:
    names: list[str]
    kernels: list[str]
    revs: list[str]
    file: str | None
    op: str | None
    shape_of: object  # op -> the problem (the command line's sizes, in its precision and layout)
    backend: str = "cuda"
    args: str | None = None
    block: int = 16
    rounds: int = ROUNDS
    max_time_s: float = MAX_TIME_S
    policy: TimingPolicy = TimingPolicy(reps=ROUND_REPS, budget_s=ROUND_BUDGET_S)
    threshold: float = THRESHOLD
    level: float = LEVEL
    seed: int = 0
    timeout_s: float = 300.0
    config: str | None = None
    dtypes: tuple = ()


def problem(op: str, size: int, stride: int, dtype: str | None, layout: str | None, tf32: bool):
    """The one problem an A/B runs: the op's first problem of `size` (and `stride`, where it has strides) with its
    own defaults for the rest (a square GEMM; the lab's convolution), in the precision and layout asked."""
    dtypes, layouts = plan.dtypes_asked(dtype, tf32), plan.layouts_asked(layout, op)
    if len(dtypes) > 1 or len(layouts) > 1:
        raise GpubenchError(f"ab runs one problem: give one precision and one layout, got --dtype {dtype} "
                            f"--layout {layout}" if layout else f"ab runs one problem: give one precision, got "
                                                                 f"--dtype {dtype}")
    definition = ops.get(op)
    given = {k: v for k, v in {"sizes": [size], "strides": [stride]}.items() if k in definition.suite_keys}
    shapes, _ = definition.problems(given, "--size", strict=True)
    return replace(shapes[0], dtype=dtypes[0], layout=layouts[0])


def run_ab(request: ABRequest) -> ABOutcome:
    from gpubench.specs import project as projects
    from gpubench.specs.catalog import Catalog

    refuse_graph(request.policy.graph)
    proj = projects.load(request.config)
    catalog = Catalog.with_user(proj.variants)
    op = op_of(catalog, request.backend, request.names, request.op)
    shape = request.shape_of(op)
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpubench-ab-")))
        sides = sides_of(catalog, op, request.backend, request.names, request.kernels, request.revs, request.file,
                         request.args, request.dtypes or (shape.dtype,), scratch)
        for s in sides:
            if s.variant.op != op:
                raise GpubenchError(f"ab: {s.asked} is a {s.variant.op} variant, not {op}")
            why = s.variant.scope.takes(shape)
            if why is not None:
                raise GpubenchError(f"ab: {s.variant.name} {why}")
        configs = [config_of(s, request.block) for s in sides]
        named = [replace(s.variant, name=f"{tag}: {s.variant.name}") for tag, s in zip(SIDES, sides)]
        points = tuple(PointTask(i, v, c, request.policy) for i, (v, c) in enumerate(zip(named, configs)))
        task = PairedTask("ab", shape, request.seed, points, rounds=request.rounds, max_time_s=request.max_time_s)
        outcome = ABOutcome(shape, (sides[0].asked, sides[1].asked), (named[0].name, named[1].name),
                            (configs[0].label, configs[1].label), "?", threshold=request.threshold,
                            level=request.level)
        with open_executor(request.backend, timeout_s=request.timeout_s) as worker:
            info = worker.start()
            outcome.device = str(info.get("device", "?"))
            precompile([task], info.get("arch"))
            worker.check(named)
            watch = neighbours.watch_for(request.backend, info)
            company = watch.start(worker) if watch else None  # before the rounds, as a run looks before its points
            worker.run(task, outcome.points.append)
            outcome.company = watch.end(worker, company) if watch else None
    return decided(outcome)


def refuse_graph(graph: int) -> None:
    """--graph is not for ab: a round times A's and B's calls in turn, one call at a time, and a captured graph would
    hold N calls of one side."""
    if graph:
        raise GpubenchError(f"ab --graph {graph}: an A/B times A's and B's calls in turn, one call at a time, which a "
                            "graph of one side's calls cannot do; leave --graph out (gemm, conv and run take it)")


def decided(outcome: ABOutcome) -> ABOutcome:
    """The verdict from the rounds' ratios, or why there is none."""
    bad = [p for p in outcome.points if p.status != Status.OK]
    if bad:
        p = bad[0]
        outcome.problem = f"{p.variant} {p.status}: {p.reason}"
        return outcome
    ratios = outcome.ratios
    if not ratios:
        outcome.problem = "no round finished"
        return outcome
    outcome.result = paired_ratio(ratios, outcome.level)
    outcome.verdict = verdict(outcome.result.low, outcome.result.high, outcome.threshold) \
        if outcome.result.enough else Verdict.INCONCLUSIVE
    return outcome


# --- rounds saved as files (one process each) -------------------------------------------------------------------

ROUNDS_LEVEL = 0.9  # the interval's coverage over saved rounds (five rounds reach 94%)


@dataclass
class RoundsOutcome:
    baseline: str
    level: float
    table: list
    screen: str | None = None
    screened: tuple | None = None  # (scores, passing) of the screening rule


def is_rounds(sides) -> bool:
    """Whether `ab`'s arguments are saved rounds (results files) rather than two things to run."""
    from gpubench.results import SUFFIXES

    return bool(sides) and all(str(s).lower().endswith(tuple(SUFFIXES)) for s in sides)


def from_rounds(paths, baseline: str, level: float | None, any_state: bool, screen: str | None,
                keep: int) -> RoundsOutcome:
    """Each kernel's ratio to `baseline` over the rounds saved in `paths` (analysis/rounds.py)."""
    from gpubench import results
    from gpubench.analysis import rounds

    level = ROUNDS_LEVEL if level is None else level
    runs = [results.load(p) for p in paths]
    names = {p.variant for run in runs for p in run.points}
    if baseline not in names or names == {baseline}:
        raise GpubenchError(f"ab: the rounds hold {', '.join(sorted(names)) or 'no points'}: --baseline must name one "
                            "of them, and another variant must be there to compare")
    table = rounds.rows(runs, baseline, any_state)
    outcome = RoundsOutcome(baseline, level, table)
    if screen is not None:
        if screen not in {r.kernel for r in table}:
            raise GpubenchError(f"ab --screen {screen!r} is none of the rounds' kernels (VARIANT CONFIG, e.g. "
                                f"{next((r.kernel for r in table), 'wgmma-tma u1')!r})")
        outcome.screen, outcome.screened = screen, rounds.screen(table, screen, keep)
    return outcome
