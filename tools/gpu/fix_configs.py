"""The rounds' suite of a target, from its pass 0: the suite that pass ran, each sweep given a `configs` table that
keeps, of each variant with several configurations, each problem's fastest in the pass: one list where the sweep's
problems share it, else a table of the problems, each with its own, so that a round times nothing that was not fixed
(docs/evidence/int8-attention-rounds.md says why the configuration is fixed before the rounds). It prints, per
problem, the configuration fixed for it.

    python3 tools/gpu/fix_configs.py SUITE.toml PASS0.json.gz ROUNDS.toml [--timing "reps = 30"...]
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.core.backend_kind import BackendKind  # noqa: E402
from gpubench.planning import suites  # noqa: E402
from gpubench.results import Status, load  # noqa: E402

CONFIGS_LINE = re.compile(r"\nconfigs = ([^\n]*)")  # a sweep's `configs` table, on one line as these suites write it
ROUNDS_TIMING = {"warmup": 3, "reps": 30, "budget": 0.5, "max_time": 3.0}  # the shipped suites' timing, deciding on


def fastest_points(points, wanted) -> dict[tuple, object]:
    """{(variant, problem record as text): point} of each wanted(point)'s fastest configuration (its median; failed
    points never count). The rounds' suite (here) and their judge (judge_rounds.py) read pass 0 through this."""
    best: dict[tuple, object] = {}
    for p in points:
        if not wanted(p) or not p.samples_ms or p.status != Status.OK:
            continue
        key = (p.variant, json.dumps(p.problem.record(), sort_keys=True))
        if key not in best or statistics.median(p.samples_ms) < statistics.median(best[key].samples_ms):
            best[key] = p
    return best


def fastest(run, sweep) -> dict[str, dict[str, str]]:
    """{variant: {problem text: label}} of the sweep's variants with several configurations: each problem's
    fastest configuration in the pass."""
    problems = {json.dumps(s.record(), sort_keys=True): s for s in sweep.shapes}
    several = {v.name for v in sweep.variants if len(v.space.configs) > 1}
    best = fastest_points(run.points, lambda p: p.variant in several
                          and json.dumps(p.problem.record(), sort_keys=True) in problems)
    out: dict[str, dict[str, str]] = {}
    for (variant, key), p in best.items():
        out.setdefault(variant, {})[problems[key].full_label] = p.config
    return out


def toml_value(value) -> str:
    """A list of labels, or a table of problems to such lists, as an inline TOML value."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return "[" + ", ".join(json.dumps(v) for v in value) + "]"


def pinned(sweep, variant: str, by_problem: dict[str, str]):
    """What the rounds run of a variant: its one fixed configuration, or, where the sweep's problems differ, each
    problem its own (a problem with no passing point in pass 0 runs every fixed one), so that no round times a
    configuration on a problem it was not fixed for."""
    labels = list(dict.fromkeys(by_problem.values()))
    if len(labels) == 1:
        return labels
    v = next(x for x in sweep.variants if x.name == variant)
    return {s.full_label: [by_problem[s.full_label]] if s.full_label in by_problem else labels
            for s in sweep.shapes if v.scope.takes(s) is None}


def main(suite_path: str, pass0: str, target: str) -> None:
    suite, run = suites.load(suite_path, BackendKind.CUDA), load(pass0)
    text = Path(suite_path).read_text(encoding="utf-8")
    for key, value in ROUNDS_TIMING.items():  # the rounds sample as the shipped suites do, and decide
        text = text.replace(f"\n{key} = ", f"\n#pass 0: {key} = ")
    text = text.replace("\ndecide = 0", "\n#pass 0: decide = 0")
    text = text.replace("[defaults]\n", "[defaults]\n" + "".join(f"{k} = {v}\n" for k, v in ROUNDS_TIMING.items()), 1)
    blocks = text.split("[[sweep]]")
    fixed_any = False
    for i, sweep in enumerate(suite.sweeps):
        fixed = fastest(run, sweep)
        fixed_any |= bool(fixed)
        for variant, by_problem in fixed.items():
            for problem, label in by_problem.items():
                print(f"{sweep.name}: {problem}: {variant} {label}")
        if fixed:  # in the pass's own list of configurations, where it had one, the fixed variants' give way
            own = CONFIGS_LINE.search(blocks[i + 1])
            kept = tomllib.loads(f"configs = {own.group(1)}")["configs"] if own else {}
            kept.update({v: pinned(sweep, v, by) for v, by in fixed.items()})
            table = ", ".join(f"{json.dumps(v)} = {toml_value(labels)}" for v, labels in kept.items())
            blocks[i + 1] = CONFIGS_LINE.sub("", blocks[i + 1]).rstrip("\n")
            blocks[i + 1] += f"\nconfigs = {{ {table} }}\n\n"
    if not fixed_any:  # the rounds would time every configuration: no series
        raise SystemExit(f"fix_configs: pass 0 ({pass0}) fixed nothing: no configuration of a variant with several "
                         "passed its check there; no rounds' suite written")
    # The rounds' suite appears only once it loads, its labels checked: a failed fixing leaves no suite to run.
    draft = Path(f"{target}.draft")
    draft.write_text("[[sweep]]".join(blocks), encoding="utf-8")
    try:
        suites.load(draft, BackendKind.CUDA)
    except BaseException:
        draft.unlink()  # nothing of a failed fixing is left for a round to pick up
        raise
    draft.replace(target)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
